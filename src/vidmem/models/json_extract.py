"""Pull one JSON object out of a language model's free-text answer.

Models asked for "a single JSON object" often wrap it in prose or a Markdown code
fence, or write Python-flavoured JSON. :func:`extract_json_object` finds the first
balanced ``{...}`` in the text that can be read as a JSON object and repairs the usual
slips on the way; it never makes up content. Pure functions, no I/O.

Tolerated slips (each has a doctest below):

* prose before and after the object, and Markdown ```` ``` ```` / ```` ```json ```` fences;
* trailing commas before ``}`` or ``]``;
* single-quoted strings and keys (``{'a': 'b'}``);
* Python literals ``True``, ``False``, ``None`` outside strings;
* typographic ("smart") quotes used as string delimiters;
* bare identifier keys (``{verdict: "yes"}``);
* raw newlines or tabs inside strings.

Braces and quotes inside strings do not count when matching braces. A candidate that
still does not parse is skipped and the scan goes on with the next ``{``, so stray
braces in the prose do not hide a good object after them. Arrays and scalars at the
top level are not objects and give ``None``.

Refused, never repaired (strict JSON, RFC 8259): ``NaN``, ``Infinity`` and
``-Infinity`` (which :func:`json.loads` accepts by default), and number literals that
no float can hold (``1e999`` would become ``inf``; so would a 400-digit integer once a
caller converts it). An object holding one is the model's answer and it is unusable:
neither it nor any object nested in it is returned, and :func:`find_json_object` says
why. :func:`wrong_types` checks the JSON types of an object's values against what the
question expects (the judges' ``JudgeRequest.key_types``); a value of another type is
never coerced.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from vidmem.values import type_name

__all__ = [
    "JSON_TYPES",
    "MAX_CANDIDATES",
    "NO_OBJECT",
    "NON_FINITE",
    "extract_json_object",
    "find_json_object",
    "missing_keys",
    "wrong_types",
]

#: The JSON type names :func:`wrong_types` understands (``"number"`` admits integers).
JSON_TYPES = ("object", "array", "string", "boolean", "integer", "number", "null")

#: What :func:`find_json_object` says when no object parses.
NO_OBJECT = "no JSON object found in the reply"
#: What :func:`find_json_object` says when the object holds NaN, Infinity or 1e999.
NON_FINITE = (
    "the JSON object holds a non-finite number (NaN, Infinity, -Infinity, or a literal "
    "too large for a float such as 1e999); JSON numbers must be finite"
)

# Opening quote -> the characters that may close it. Smart quotes pair loosely because
# models (and keyboards) mix the left and right forms.
_CLOSERS: dict[str, str] = {
    '"': '"',
    "'": "'",
    "\u201c": "\u201d\u201c",  # “ closed by ” (or another “)
    "\u201d": "\u201d\u201c",
    "\u2018": "\u2019\u2018",  # ‘ closed by ’ (or another ‘)
    "\u2019": "\u2019\u2018",
}
_LITERALS = {"True": "true", "False": "false", "None": "null"}

#: Balanced ``{...}`` candidates tried before giving up (bounds the work on
#: pathological text such as thousands of nested braces).
MAX_CANDIDATES = 64


def _string_end(text: str, start: int) -> int | None:
    """Index just past the string opened at ``text[start]``, or ``None`` if unclosed."""
    closers = _CLOSERS[text[start]]
    i = start + 1
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c in closers:
            return i + 1
        i += 1
    return None


def _scan_objects(text: str, start: int, ends: dict[int, int | None]) -> None:
    """Match brackets from the ``{`` at ``text[start]``, outside strings.

    Records in ``ends`` the index just past the matching close of every ``{`` met on
    the way (``None`` when it never closes), including ``start`` itself. A nested
    ``{`` gets the same answer a scan started there would give (same string state,
    same relative depth), so each character is scanned once however many ``{`` the
    text holds.
    """
    stack: list[int] = []
    i = start
    n = len(text)
    while i < n:
        c = text[i]
        if c in _CLOSERS:
            end = _string_end(text, i)
            if end is None:
                break
            i = end
            continue
        if c in "{[":
            stack.append(i if c == "{" else -1)
        elif c in "}]":
            opened = stack.pop()
            if opened >= 0:
                ends[opened] = i + 1
            if not stack:
                return
        i += 1
    for opened in stack:  # never closed
        if opened >= 0:
            ends[opened] = None


def _requote(body: str, delimiter: str) -> str:
    """Turn the inside of a string delimited by ``delimiter`` into a JSON string literal."""
    if delimiter == '"':
        return '"' + body + '"'
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append("'" if nxt == "'" else c + nxt)
            i += 2
            continue
        out.append('\\"' if c == '"' else c)
        i += 1
    return '"' + "".join(out) + '"'


def _drop_trailing_comma(out: list[str]) -> None:
    """Remove a ``,`` that directly follows a value and precedes a closing bracket."""
    j = len(out) - 1
    while j >= 0 and out[j].isspace():
        j -= 1
    if j >= 0 and out[j] == ",":
        k = j - 1
        while k >= 0 and out[k].isspace():
            k -= 1
        if k >= 0 and out[k] not in ("{", "[", ","):
            del out[j]


def _last_significant(out: list[str]) -> str:
    for piece in reversed(out):
        if not piece.isspace():
            return piece
    return ""


def _normalise(candidate: str) -> str:
    """Rewrite a balanced candidate into strict JSON where the slips are known ones."""
    out: list[str] = []
    i = 0
    n = len(candidate)
    while i < n:
        c = candidate[i]
        if c in _CLOSERS:
            end = _string_end(candidate, i)
            if end is None:  # cannot happen for a balanced candidate; keep as is
                out.append(candidate[i:])
                break
            out.append(_requote(candidate[i + 1 : end - 1], c))
            i = end
        elif c in "}]":
            _drop_trailing_comma(out)
            out.append(c)
            i += 1
        elif c.isalpha() or c == "_":
            j = i
            while j < n and (candidate[j].isalnum() or candidate[j] == "_"):
                j += 1
            word = candidate[i:j]
            k = j
            while k < n and candidate[k].isspace():
                k += 1
            is_key = k < n and candidate[k] == ":" and _last_significant(out) in ("{", ",")
            if is_key:
                out.append(json.dumps(word))
            else:
                out.append(_LITERALS.get(word, word))
            i = j
        elif c.isdigit() or c in "+-.":
            j = i + 1
            while j < n and (candidate[j].isalnum() or candidate[j] in "+-._"):
                j += 1
            out.append(candidate[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


class _NonFinite(Exception):
    """Internal: the candidate is JSON but holds a number that is not a finite float."""


def _refuse_constant(name: str) -> Any:
    raise _NonFinite(name)  # NaN, Infinity, -Infinity


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):  # 1e999 -> inf
        raise _NonFinite(literal)
    return value


def _float_sized_int(literal: str) -> int:
    value = int(literal)
    if abs(value) > sys.float_info.max:  # float(value) would overflow
        raise _NonFinite(literal)
    return value


def _loads(text: str) -> Any:
    return json.loads(
        text,
        strict=False,
        parse_constant=_refuse_constant,
        parse_float=_finite_float,
        parse_int=_float_sized_int,
    )


def _parse(candidate: str) -> dict[str, Any] | None | _NonFinite:
    """The object in ``candidate`` (strict, then repaired); ``None`` when neither parses
    to an object; a :class:`_NonFinite` when it parses but holds a non-finite number."""
    for text in (candidate, None):
        if text is None:
            text = _normalise(candidate)
        try:
            value = _loads(text)
        except _NonFinite as exc:
            return exc
        except (ValueError, RecursionError):
            continue
        return value if isinstance(value, dict) else None
    return None


def find_json_object(text: str | None) -> tuple[dict[str, Any] | None, str]:
    """Like :func:`extract_json_object`, and say why nothing was found.

    Returns:
        ``(object, "")``, or ``(None, reason)`` where the reason is :data:`NON_FINITE`
        when an object was found but holds a non-finite number, else :data:`NO_OBJECT`.

    Example:
        >>> find_json_object('{"a": 1}')
        ({'a': 1}, '')
        >>> find_json_object('{"a": NaN}')[1] == NON_FINITE
        True
        >>> find_json_object('nothing')
        (None, 'no JSON object found in the reply')
    """
    if not text:
        return None, NO_OBJECT
    ends: dict[int, int | None] = {}
    tried = 0
    reason = NO_OBJECT
    start = text.find("{")
    while start != -1 and tried < MAX_CANDIDATES:
        if start not in ends:
            _scan_objects(text, start, ends)
        end = ends[start]
        resume = start + 1
        if end is not None:
            tried += 1
            parsed = _parse(text[start:end])
            if isinstance(parsed, _NonFinite):
                # the model's object, and it is not valid JSON: none of it is used
                reason = NON_FINITE
                resume = end
            elif parsed is not None:
                return parsed, ""
        start = text.find("{", resume)
    return None, reason


def extract_json_object(text: str | None) -> dict[str, Any] | None:
    """Return the first JSON object found in ``text``, or ``None``.

    The scan walks the ``{`` characters from left to right; for each it finds the
    matching ``}`` (ignoring brackets inside strings), tries strict JSON, then the
    repaired form, and returns the first that gives an object. A ``{`` whose
    candidate fails is skipped, and the scan resumes after it, so an object nested in
    an unusable one may be returned: callers check the keys they need with
    :func:`missing_keys`. A candidate that parses but holds a non-finite number
    (``NaN``, ``Infinity``, ``1e999``) is refused with everything nested in it, and
    the scan resumes after its end. At most :data:`MAX_CANDIDATES` candidates are
    tried. :func:`find_json_object` also says why nothing was found.

    Args:
        text: the model's reply; ``None`` or empty gives ``None``.

    Returns:
        The parsed object (a ``dict``), or ``None`` when nothing usable was found.

    Example:
        Plain JSON, and JSON after prose and before trailing text:

        >>> extract_json_object('{"present": true, "count": 2}')
        {'present': True, 'count': 2}
        >>> extract_json_object('Sure! Here it is: {"a": 1} Hope this helps.')
        {'a': 1}

        Inside a Markdown fence:

        >>> extract_json_object('```json\\n{"a": [1, 2]}\\n```')
        {'a': [1, 2]}

        Trailing commas:

        >>> extract_json_object('{"a": [1, 2,], "b": 3,}')
        {'a': [1, 2], 'b': 3}

        Single-quoted strings and keys (an apostrophe inside a double-quoted string
        is left alone):

        >>> extract_json_object("{'name': 'it\\\\'s', 'note': \\"don't\\"}")
        {'name': "it's", 'note': "don't"}

        Python literals:

        >>> extract_json_object("{'ok': True, 'bad': False, 'why': None}")
        {'ok': True, 'bad': False, 'why': None}

        Smart quotes and bare keys:

        >>> extract_json_object('{\u201cverdict\u201d: \u201cyes\u201d, score: 3}')
        {'verdict': 'yes', 'score': 3}

        Braces inside strings and stray braces in the prose:

        >>> extract_json_object('set {x} first, then {"s": "a } b", "n": {"m": 1}}')
        {'s': 'a } b', 'n': {'m': 1}}

        Nothing usable:

        >>> extract_json_object('no json here') is None
        True
        >>> extract_json_object('[1, 2, 3]') is None
        True
        >>> extract_json_object('{"a": 1') is None
        True

        Non-finite numbers (not JSON, although :func:`json.loads` reads them):

        >>> extract_json_object('{"a": NaN}') is None
        True
        >>> extract_json_object('{"a": {"b": 1}, "c": 1e999}') is None
        True
    """
    return find_json_object(text)[0]


def missing_keys(obj: Mapping[str, Any] | None, required: Iterable[str]) -> list[str]:
    """Return the ``required`` keys absent from ``obj``, in the order given.

    ``None`` (nothing parsed) misses every key.

    Example:
        >>> missing_keys({"a": 1, "b": None}, ["a", "b", "c"])
        ['c']
        >>> missing_keys(None, ("a",))
        ['a']
        >>> missing_keys({"a": 1}, [])
        []
    """
    if obj is None:
        return list(required)
    return [key for key in required if key not in obj]


def _type_ok(value: Any, expected: str) -> bool:
    found = type_name(value)
    return found == expected or (expected == "number" and found == "integer")


def wrong_types(
    obj: Mapping[str, Any] | None, key_types: Mapping[str, str | Iterable[str]]
) -> list[str]:
    """Describe each value of ``obj`` whose JSON type is not one ``key_types`` allows.

    ``key_types`` maps a top-level key to a name from :data:`JSON_TYPES` or a sequence
    of them; ``"number"`` admits integers, ``"integer"`` does not admit ``2.0``, and
    booleans are neither. Keys absent from ``obj`` are not checked (required keys are
    :func:`missing_keys`' business), nor are keys ``key_types`` does not name. Unknown
    type names raise ``ValueError`` (``JudgeRequest`` refuses them up front).

    Example:
        >>> wrong_types({"a": "yes", "b": 2, "c": 1.5}, {"a": "boolean", "b": "number",
        ...                                              "c": ("integer", "null")})
        ["'a' is a string, expected boolean", "'c' is a number, expected integer or null"]
        >>> wrong_types({"a": True}, {"a": "boolean", "z": "string"})
        []
    """
    if obj is None:
        return []
    problems: list[str] = []
    for key, allowed in key_types.items():
        names = (allowed,) if isinstance(allowed, str) else tuple(allowed)
        unknown = [n for n in names if n not in JSON_TYPES]
        if unknown or not names:
            raise ValueError(f"key {key!r}: unknown JSON type names {unknown or names!r}")
        if key not in obj or any(_type_ok(obj[key], n) for n in names):
            continue
        found = type_name(obj[key])
        article = "" if found == "null" else ("an " if found[0] in "aeiou" else "a ")
        problems.append(f"{key!r} is {article}{found}, expected {' or '.join(names)}")
    return problems
