"""What a rewrite must keep: the invariant check of the M3-Agent (pure functions).

Seed 001 section 5: a rewrite may change only the failed operation and its last-frame
evidence clause; the actor, the object, the target state and the temporal order of
events are kept. :func:`check_rewrite` holds a new instruction against the one it
replaces and returns every broken rule (an empty list: accepted). The rules:

* **not empty, not unchanged**: an empty text, or the old instruction again (same words
  after case and spacing are folded), is no rewrite.
* **kept nouns**: the actor (``record["actor"]``), the object (``record["object"]``,
  singular or plural) and the container (``scene["container"]["noun"]``) that the old
  instruction names must still be named (whole words, any case, a leading article
  ignored). A noun the old text did not name is not required: the failed clause may
  have been the only place it would go.
* **target kept** (target not withheld): every target term (:func:`target_terms`) the
  old instruction states stays, and no number is put in front of a target noun other
  than its count (``three snake signs`` when s* is two).
* **target withheld**: the new text states no target term at all -- no target noun,
  colour or count (seed 001 section 4: the withheld arm forbids all three). When the
  object *is* the target (sim cards), withholding wins over keeping it.
* **temporal order**: the events (:data:`EVENTS`: open, close, put, move, take, hold,
  show, leave, return, look, plus each content word of ``record["operation"]``) that
  both texts name keep their order of first mention. Events may be added or dropped:
  changing the failed operation is the point of the rewrite.

Matching is by whole words, case-insensitive, multi-word terms across spaces or hyphens
(the same rule as the prompt-channel audit). These are string rules: they catch a
swapped actor, a leaked or changed target and reordered events, not every paraphrase;
the diagnosis of the next clip is the check of what the rewrite meant.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["EMPTY_TERMS", "EVENTS", "NUMBER_WORDS", "check_rewrite", "describe_terms",
           "event_order", "find_terms", "target_terms"]

NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
                "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen",
                "sixteen", "seventeen", "eighteen", "nineteen", "twenty")
#: the terms that state an empty target
EMPTY_TERMS = ("empty", "nothing", "none", "zero", "0")
_ARTICLES = ("the ", "a ", "an ")
_STOPWORDS = frozenset((
    "a", "an", "the", "and", "or", "of", "in", "on", "at", "to", "into", "onto", "from", "with",
    "without", "by", "for", "what", "which", "who", "whom", "whose", "that", "this", "these",
    "those", "each", "every", "its", "it", "is", "are", "be", "been", "was", "were", "after",
    "before", "then", "until", "while", "when", "where", "inside", "outside", "them", "they",
    "their", "there", "than", "also", "just", "very", "some", "thing", "things"))


def _forms(base: str) -> set[str]:
    """A verb's regular forms: ``drop`` -> drop, drops, dropped, dropping."""
    if " " in base:
        return {base}
    if base.endswith("e"):
        return {base, base + "s", base + "d", base[:-1] + "ing"}
    # one-syllable consonant-vowel-consonant verbs double the last letter (dropped)
    double = (len(re.findall(r"[aeiou]+", base)) == 1 and base[-1] not in "aeiouwxy"
              and base[-2] in "aeiou" and (len(base) < 3 or base[-3] not in "aeiou"))
    stem = base + base[-1] if double else base
    return {base, base + ("es" if base.endswith(("s", "sh", "ch")) else "s"),
            stem + "ed", stem + "ing"}


def _event(*bases: str, extra: Iterable[str] = ()) -> frozenset[str]:
    words: set[str] = set(extra)
    for b in bases:
        words |= _forms(b)
    return frozenset(words)


#: event name -> the words that mention it
EVENTS: dict[str, frozenset[str]] = {
    "open": _event("open"),
    "close": _event("close", "shut", "seal"),
    "put": _event("put", "drop", "place", "insert", "add"),
    "move": _event("move", "transfer", "shift"),
    "take": _event("take", "remove", "lift", "pick", "grab", extra=("took", "taken")),
    "hold": _event("hold", "keep", extra=("held", "kept")),
    "show": _event("show", "reveal", "display", extra=("shown",)),
    "leave": _event("leave", "depart", "exit", extra=("walks away", "walk away", "moves away")),
    "return": _event("return", extra=("come back", "comes back", "came back", "coming back")),
    "look": _event("look", "pan", "tilt", "glance"),
}


def _pattern(term: str) -> re.Pattern[str]:
    words = [re.escape(w) for w in re.split(r"[\s-]+", term.strip()) if w]
    return re.compile(r"(?<!\w)" + r"[\s-]+".join(words) + r"(?!\w)", re.IGNORECASE)


def find_terms(text: str, terms: Iterable[str]) -> tuple[str, ...]:
    """The terms found in ``text`` (whole words, any case), in the order given.

    Example:
        >>> find_terms("Two Snake-signs rest on the stone.", ["two", "snake sign", "one"])
        ('two',)
    """
    return tuple(t for t in terms if t.strip() and _pattern(t).search(text))


def _bare(noun: str) -> str:
    """``the cat`` -> ``cat``; the article is not part of the name."""
    low = noun.strip()
    for article in _ARTICLES:
        if low.lower().startswith(article):
            return low[len(article):].strip()
    return low


def target_terms(scene: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The words that state the target ``scene["target"]``, sorted, lower case.

    For each item of ``target.contents``: its noun, the plural and colour of the scene
    object with that noun (plural default ``noun + "s"``), and its count as digits and
    as a number word. An empty ``contents``: :data:`EMPTY_TERMS`. No target: ``()``.

    Example:
        >>> scene = {"objects": [{"noun": "snake sign", "plural": "snake signs"}],
        ...          "target": {"contents": [{"noun": "snake sign", "count": 2}]}}
        >>> target_terms(scene)
        ('2', 'snake sign', 'snake signs', 'two')
        >>> target_terms({"target": {"contents": []}})[:3], target_terms({})
        (('empty', 'nothing', 'none'), ())
    """
    target = (scene or {}).get("target")
    if not isinstance(target, Mapping):
        return ()
    contents = target.get("contents") or []
    if not contents:
        return EMPTY_TERMS
    objects = {str(o.get("noun", "")).lower(): o for o in (scene or {}).get("objects") or []
               if isinstance(o, Mapping)}
    terms: set[str] = set()
    for item in contents:
        noun = str(item.get("noun", "")).strip()
        obj = objects.get(noun.lower(), {})
        terms |= {noun, str(item.get("plural") or obj.get("plural") or noun + "s")}
        terms |= {str(c) for c in (obj.get("colour"), item.get("colour")) if c}
        count = item.get("count")
        if isinstance(count, int) and not isinstance(count, bool):
            terms.add(str(count))
            if 0 <= count < len(NUMBER_WORDS):
                terms.add(NUMBER_WORDS[count])
    return tuple(sorted(t.strip().lower() for t in terms if t.strip()))


def event_order(text: str, events: Mapping[str, frozenset[str]]) -> list[str]:
    """The events ``text`` mentions, in the order of their first mention.

    Example:
        >>> event_order("The cat opens the box, holds it open, then closes it.", EVENTS)
        ['open', 'hold', 'close']
    """
    first: dict[str, int] = {}
    for name, words in events.items():
        hits = [m.start() for w in words for m in _pattern(w).finditer(text)]
        if hits:
            first[name] = min(hits)
    return sorted(first, key=first.__getitem__)


def _record_events(operation: str) -> dict[str, frozenset[str]]:
    events = dict(EVENTS)
    known = set().union(*EVENTS.values())
    for word in re.findall(r"[a-z]+", operation.lower()):
        if len(word) >= 4 and word not in _STOPWORDS and word not in known:
            events.setdefault(word, _event(word))
    return events


def _nouns(record: Mapping[str, Any], scene: Mapping[str, Any] | None) -> list[tuple[str, list[str]]]:
    """``(what, spellings)`` of the actor, the object and the container."""
    scene = scene or {}
    out: list[tuple[str, list[str]]] = []
    actor = str(record.get("actor") or scene.get("actor") or "").strip()
    if actor:
        out.append((f"the actor '{actor}'", [_bare(actor)]))
    obj = _bare(str(record.get("object") or ""))
    if obj:
        plural = next((str(o.get("plural")) for o in scene.get("objects") or []
                       if isinstance(o, Mapping) and str(o.get("noun", "")).lower() == obj.lower()
                       and o.get("plural")), obj + "s")
        out.append((f"the object '{obj}'", [obj, plural]))
    container = scene.get("container")
    noun = _bare(str(container.get("noun") or "")) if isinstance(container, Mapping) else ""
    if noun:
        out.append((f"the container '{noun}'", [noun]))
    return out


def _fold(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def _said_count(before: list[str]) -> tuple[int | None, list[str]]:
    """The number the words just before a noun give it, and those words: the word right
    before (``two``, ``2``, ``a``, ``no``) or, past one adjective, a number word or digits
    (``three small``)."""
    numbers = {w: k for k, w in enumerate(NUMBER_WORDS)} | {"a": 1, "an": 1, "no": 0}
    if before and (before[-1].isdigit() or before[-1] in numbers):
        w = before[-1]
        return (int(w) if w.isdigit() else numbers[w]), before[-1:]
    if len(before) >= 2 and (before[-2].isdigit() or before[-2] in NUMBER_WORDS):
        w = before[-2]
        return (int(w) if w.isdigit() else numbers[w]), before[-2:]
    return None, []


def _count_conflicts(text: str, scene: Mapping[str, Any] | None) -> list[str]:
    """``"three snake signs"`` when the target holds two: a number given to a target noun
    (singular or plural, not its colour) that is not its count (see :func:`_said_count`)."""
    target = (scene or {}).get("target") or {}
    objects = {str(o.get("noun", "")).lower(): o for o in (scene or {}).get("objects") or []
               if isinstance(o, Mapping)}
    found: list[str] = []
    for item in target.get("contents") or []:
        noun = str(item.get("noun", "")).strip()
        plural = str(item.get("plural") or objects.get(noun.lower(), {}).get("plural")
                     or noun + "s")
        for spelling in {noun, plural} - {""}:
            for m in _pattern(spelling).finditer(text):
                said, words = _said_count(re.findall(r"\w+", text[:m.start()].lower())[-2:])
                if said is not None and said != item.get("count"):
                    found.append(" ".join([*words, m.group(0)]))
    return sorted(found)


def check_rewrite(old: str, new: str, record: Mapping[str, Any], *,
                  scene: Mapping[str, Any] | None = None,
                  withhold_target: bool = False) -> list[str]:
    """Every rule (module docstring) that ``new`` breaks as a rewrite of ``old``.

    Args:
        old: the instruction that produced the failed clip.
        new: the rewriter's text.
        record: the task record (``actor``, ``object``, ``operation`` are read).
        scene: ``{"container": {"noun"}, "objects": [...], "target": {"contents"}}``;
            without ``target`` the target rules cannot be checked.
        withhold_target: the new text must not state the target.

    Returns:
        One sentence per broken rule; ``[]`` when the rewrite is accepted.

    Example:
        >>> rec = {"actor": "the cat", "object": "snake sign", "operation": "count what is inside"}
        >>> scene = {"container": {"noun": "red box"},
        ...          "target": {"contents": [{"noun": "snake sign", "count": 2}]}}
        >>> old = "The cat opens the red box."
        >>> check_rewrite(old, "The cat opens the red box and holds the lid open.", rec, scene=scene)
        []
        >>> check_rewrite(old, "The woman opens the red box and holds it open.", rec, scene=scene)
        ["drops the actor 'the cat'"]
        >>> check_rewrite(old, "The cat opens the red box: two snake signs lie inside.", rec,
        ...               scene=scene, withhold_target=True)
        ["states the withheld target: 'snake signs', 'two'"]
        >>> check_rewrite("The cat opens the box, then closes it.",
        ...               "The cat closes the box, then opens it.", rec)
        ['changes the order of events: open, close before; close, open now']
    """
    problems: list[str] = []
    if not new.strip():
        return ["is empty"]
    if _fold(new) == _fold(old):
        return ["is the old instruction unchanged"]
    terms = target_terms(scene)
    for what, spellings in _nouns(record, scene):
        if withhold_target and any(s.lower() in terms for s in spellings):
            continue
        if find_terms(old, spellings) and not find_terms(new, spellings):
            problems.append(f"drops {what}")
    if withhold_target:
        leaked = find_terms(new, terms)
        if leaked:
            problems.append(f"states the withheld target: {describe_terms(leaked)}")
    elif terms:
        dropped = [t for t in find_terms(old, terms) if not find_terms(new, [t])]
        if dropped:
            problems.append(f"drops the target term(s) {describe_terms(dropped)}")
        for phrase in _count_conflicts(new, scene):
            problems.append(f"states another count than the target's: '{phrase}'")
    events = _record_events(str(record.get("operation") or ""))
    before, now = event_order(old, events), event_order(new, events)
    shared_before = [e for e in before if e in now]
    shared_now = [e for e in now if e in before]
    if shared_before != shared_now:
        problems.append(f"changes the order of events: {', '.join(shared_before)} before; "
                        f"{', '.join(shared_now)} now")
    return problems


def describe_terms(terms: Sequence[str]) -> str:
    """``'a', 'b'`` for messages and prompts.

    Example:
        >>> describe_terms(["two", "snake signs"])
        "'two', 'snake signs'"
    """
    return ", ".join(f"'{t}'" for t in terms)
