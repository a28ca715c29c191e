"""Content hashes for requests, arrays and files.

A request is cached under the hash of its *content*, never of its position in a run,
so that the same crop embedded by two benchmarks, or by a resumed run, is computed once.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

_CHUNK = 1 << 20


def _canonical(obj: Any) -> Any:
    """Turn ``obj`` into JSON-able data with one spelling per value."""
    if isinstance(obj, np.ndarray):
        digest = hashlib.sha256(np.ascontiguousarray(obj).tobytes()).hexdigest()
        return {"__ndarray__": [str(obj.dtype), list(obj.shape), digest]}
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        value = float(obj)
        if math.isnan(value) or math.isinf(value):
            return {"__float__": repr(value)}
        return value
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, dict):
        return {str(k): _canonical(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    if isinstance(obj, (list, tuple)):
        return [_canonical(v) for v in obj]
    if hasattr(obj, "model_dump"):  # pydantic models
        return _canonical(obj.model_dump(mode="python"))
    if obj is None or isinstance(obj, (str, int, bool)):
        return obj
    raise TypeError(f"cannot hash object of type {type(obj).__name__}: {obj!r}")


def content_hash(obj: Any, *, length: int = 32) -> str:
    """Hash JSON-like data (dicts, lists, numbers, strings, numpy arrays, pydantic models).

    Key order does not matter; array contents, dtypes and shapes do.

    Example:
        >>> content_hash({"b": 1, "a": [1, 2]}) == content_hash({"a": [1, 2], "b": 1})
        True
        >>> content_hash({"a": 1}) == content_hash({"a": 2})
        False
    """
    text = json.dumps(_canonical(obj), sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file's bytes, read in 1 MiB chunks.

    Remembered per (path, size, modification time in ns) within the process, because
    benchmarks hash the same inputs many times (a context video shared by several tasks,
    a start image shared by six loops); a rewritten file has a new mtime and is read again.
    """
    p = Path(path)
    st = p.stat()
    return _file_sha256(str(p.resolve()), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=4096)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def tree_sha256(path: str | Path, *, patterns: tuple[str, ...] = ("*",)) -> str:
    """SHA-256 over a directory's files (relative names and contents), or of one file.

    Used to record the exact weights a backend loaded.
    """
    root = Path(path)
    if root.is_file():
        return file_sha256(root)
    h = hashlib.sha256()
    files = sorted({p for pat in patterns for p in root.rglob(pat) if p.is_file()})
    for p in files:
        h.update(str(p.relative_to(root)).encode("utf-8") + b"\0")
        h.update(file_sha256(p).encode("ascii"))
    return h.hexdigest()
