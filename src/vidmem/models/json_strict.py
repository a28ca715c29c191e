"""Read a model's reply as ONE strict JSON object, as a benchmark's official parser does.

Some official scorers read their judge's reply with nothing but ``json.loads`` on the
stripped text (VMem-Bench's Track-A ``visual_coverage.py`` ``_parse_v3_reference``:
``json.loads(str(raw).strip())``), so a reply in a Markdown fence, with prose before or
after the object, with single quotes or trailing commas, or holding two objects is not
an answer there. :func:`read_strict_json_object` makes the same decision; the tolerant
reader, :func:`vidmem.models.json_extract.find_json_object`, stays for the questions
whose official parser digs the object out of free text.

The rule, step by step (each step is the reference's):

1. strip the reply with :meth:`str.strip` (Unicode whitespace: also U+3000 and
   U+00A0; a byte-order mark U+FEFF is not whitespace and stays);
2. :func:`json.loads` the rest with its default ``strict=True``: a raw control
   character (newline, tab) inside a string is an error, as is anything after the
   value; a duplicated key keeps its last value;
3. the value must be a JSON object.

One addition, vidmem's rule for every judge: ``NaN``, ``Infinity`` and number literals
no float can hold are refused (:data:`~vidmem.models.json_extract.NON_FINITE`), which
``json.loads`` would accept. For an answer whose schema admits no number where they
could stand (Track-A's ``{"entity_ids": [...]}``), this never changes a decision.
"""

from __future__ import annotations

import json
from typing import Any

from vidmem.models.json_extract import (
    NON_FINITE,
    _finite_float,
    _float_sized_int,
    _NonFinite,
    _refuse_constant,
)

__all__ = ["NOT_ONE_OBJECT", "read_strict_json_object"]

#: How :func:`read_strict_json_object`'s reason starts when the text is not one object.
NOT_ONE_OBJECT = "the reply is not one strict JSON object (nothing before or after it)"


def read_strict_json_object(text: str | None) -> tuple[dict[str, Any] | None, str]:
    """The JSON object that the whole reply is, or why it is not one.

    Args:
        text: the model's reply.

    Returns:
        ``(object, "")``, or ``(None, reason)``.

    Example:
        >>> read_strict_json_object(' {"entity_ids": ["char_001"]}\\n')
        ({'entity_ids': ['char_001']}, '')
        >>> read_strict_json_object('{"entity_ids": []} {"entity_ids": ["char_001"]}')[0] is None
        True
        >>> read_strict_json_object('```json\\n{"a": 1}\\n```')[1][:46]
        'the reply is not one strict JSON object (nothi'
        >>> read_strict_json_object('{"a": NaN}')[1] == NON_FINITE
        True
        >>> read_strict_json_object('[1, 2]')
        (None, 'the reply is JSON but not an object (a list)')
    """
    body = (text or "").strip()
    try:
        value = json.loads(body, parse_constant=_refuse_constant, parse_float=_finite_float,
                           parse_int=_float_sized_int)
    except _NonFinite:
        return None, NON_FINITE
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        return None, f"{NOT_ONE_OBJECT}: {exc}"
    if not isinstance(value, dict):
        return None, f"the reply is JSON but not an object (a {type(value).__name__})"
    return value, ""
