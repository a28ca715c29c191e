"""Strict JSON encoding for everything a run stores: no NaN, no infinity, no guessing.

numpy scalars and arrays become plain numbers and lists and ``Path`` becomes a string;
anything else that is not JSON data is refused with :class:`UnstorableValueError`,
naming where in the value the offending part sits.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from vidmem.errors import StoreError

__all__ = ["UnstorableValueError", "to_json_text"]


class UnstorableValueError(StoreError):
    """A value that cannot be stored as strict JSON (NaN, infinity, or a non-JSON type)."""


def _json_default(obj: Any) -> Any:
    """Turn numpy scalars/arrays and paths into plain JSON values."""
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"object of type {type(obj).__name__} is not JSON-serialisable")


def _find_bad_value(obj: Any, where: str) -> str | None:
    """Path (like ``score['recall'][2]``) of the first NaN/inf or non-JSON value."""
    if obj is None or isinstance(obj, (str, int, np.integer, np.bool_, Path)):
        return None
    if isinstance(obj, (float, np.floating)):
        return None if math.isfinite(float(obj)) else f"{where} = {float(obj)!r}"
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in "fc" and not np.isfinite(obj).all():
            return f"{where} (array with non-finite values)"
        return None
    if isinstance(obj, Mapping):
        children = ((f"{where}[{k!r}]", v) for k, v in obj.items())
    elif isinstance(obj, (list, tuple)):
        children = ((f"{where}[{i}]", v) for i, v in enumerate(obj))
    else:
        return f"{where} (a {type(obj).__name__}, not JSON)"
    for child_where, child in children:
        found = _find_bad_value(child, child_where)
        if found:
            return found
    return None


def to_json_text(value: Any, *, where: str) -> str:
    """Encode ``value`` as strict JSON (no NaN/inf), naming ``where`` on failure.

    numpy scalars and arrays become plain numbers and lists; ``Path`` becomes a string.

    Raises:
        UnstorableValueError: the value holds NaN/infinity or a non-JSON type.

    Example:
        >>> to_json_text({"b": 1, "a": [1.5, None]}, where="score")
        '{"a":[1.5,null],"b":1}'
    """
    try:
        return json.dumps(
            value,
            allow_nan=False,
            default=_json_default,
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )
    except (ValueError, TypeError) as exc:
        bad = _find_bad_value(value, where) or where
        if isinstance(exc, ValueError) and "JSON compliant" in str(exc):
            raise UnstorableValueError(
                f"{bad}: expected a finite number, found NaN or infinity; "
                "vidmem never stores NaN silently",
                hint="return None (JSON null) for an undefined value, or fix the computation",
            ) from None
        raise UnstorableValueError(
            f"{bad}: expected JSON data (dict, list, str, number, bool, None), found: {exc}",
            hint="convert the value to plain Python data before returning it",
        ) from None
