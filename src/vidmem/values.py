"""Type checks for plain values: JSON values, and numbers passed in from Python code.

Two families, because a bool is an ``int`` in Python but never a count or a number
here, and because numpy scalars are welcome in some places and not in others:

* :func:`is_int`, :func:`is_number` and :func:`type_name` speak of **JSON values**
  (what :func:`json.loads` returns): only Python ``int`` and ``float`` count, so a
  numpy scalar is *not* a number to them. The validators of the JSONL benchmarks use
  these, and name a wrong value's type in JSON words.
* :func:`is_int_like` and :func:`is_number_like` also admit **numpy scalars**
  (``np.int64``, ``np.float32``, ...), for arguments and rows that come from Python
  code, such as frame indices or KV-log counts.

This module sits at the bottom of the package (numpy only), so every layer may use it.
"""

from __future__ import annotations

import math
import sys

import numpy as np

__all__ = ["is_int", "is_int_like", "is_number", "is_number_like", "type_name"]

_JSON_TYPE_NAMES: dict[type, str] = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}


def is_int(v: object) -> bool:
    """True for a JSON integer: a Python ``int`` that is not a ``bool``.

    Example:
        >>> [is_int(x) for x in (3, -1, True, 3.0, "3", np.int64(3))]
        [True, True, False, False, False, False]
    """
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v: object) -> bool:
    """True for a JSON number: a Python ``int`` or ``float`` that is not a ``bool``.

    NaN and infinity count (check :func:`math.isfinite` where they must not).

    Example:
        >>> [is_number(x) for x in (3, 2.5, float("nan"), False, None, np.float32(1))]
        [True, True, True, False, False, False]
    """
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def is_finite_number(v: object) -> bool:
    """True for a JSON number that is a finite float value (an ``int`` too big for a
    float is not: ``math.isfinite`` would raise ``OverflowError`` on it).

    Example:
        >>> [is_finite_number(x) for x in (3, 2.5, float("inf"), float("nan"), 10**400, True)]
        [True, True, False, False, False, False]
    """
    if not is_number(v):
        return False
    if isinstance(v, int):
        return abs(v) <= sys.float_info.max
    return math.isfinite(v)


def type_name(v: object) -> str:
    """The JSON name of a value's type, for messages; other types give their class name.

    Example:
        >>> [type_name(x) for x in ({}, [], "a", True, 1, 1.5, None)]
        ['object', 'array', 'string', 'boolean', 'integer', 'number', 'null']
        >>> type_name((1, 2))
        'tuple'
    """
    return _JSON_TYPE_NAMES.get(type(v), type(v).__name__)


def is_int_like(v: object) -> bool:
    """True for a Python ``int`` or a numpy integer; False for bools (Python or numpy).

    Example:
        >>> [is_int_like(x) for x in (3, np.int64(3), np.uint8(0), True, np.bool_(1), 3.0)]
        [True, True, True, False, False, False]
    """
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def is_number_like(v: object) -> bool:
    """True for a Python ``int`` or ``float`` or any numpy number; False for bools.

    Example:
        >>> [is_number_like(x) for x in (3, 2.5, np.float32(1), np.int64(2), True, "1")]
        [True, True, True, True, False, False]
    """
    return isinstance(v, (int, float, np.number)) and not isinstance(v, bool)
