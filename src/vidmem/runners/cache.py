"""A content-addressed on-disk cache for arrays (embeddings, masks, logits...).

Layout: one ``.npy`` file per key, in a folder sharded by the key's first two
characters::

    <root>/<namespace>/ab/abcdef0123....npy

A folder of files, not SQLite, because the cache lives in ``~/.cache`` by default,
which on clusters is often a network file system where SQLite locking is unreliable;
one write-to-temp-then-``os.replace`` per array is atomic on local and network file
systems alike. Readers therefore never see a half-written array, and processes that
compute the same key at the same time simply replace one identical file with another.

Keys should be content hashes of *everything* that determines the array: the input
(e.g. the crop's pixels) and the model (backend name, weights hash, settings). Use a
``namespace`` per backend to keep caches apart and easy to delete.
"""

from __future__ import annotations

import os
import re
import tempfile
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vidmem.errors import StoreError, UserInputError

__all__ = ["ArrayCache", "default_cache_dir"]

_KEY = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,199}$")


def default_cache_dir() -> Path:
    """``$VIDMEM_CACHE_DIR`` when set and non-empty, else ``~/.cache/vidmem``."""
    env = os.environ.get("VIDMEM_CACHE_DIR", "").strip()
    return Path(env).expanduser() if env else Path.home() / ".cache" / "vidmem"


def _check_name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not _KEY.match(value) or ".." in value:
        raise UserInputError(
            f"ArrayCache: expected {what} made of letters, digits, '_', '-' or '.' "
            f"(1-200 characters, no '..'), found {value!r}",
            hint="use a content hash (vidmem.io.hashing.content_hash) as the key",
        )
    return value


class ArrayCache:
    """Content-addressed cache of numpy arrays on disk, safe for concurrent processes.

    Args:
        path: the cache folder; defaults to ``default_cache_dir() / "arrays"``.
        namespace: an optional sub-folder (e.g. ``"dinov2-small-3f2a..."``) that keeps
            one backend's arrays apart from another's.

    Attributes:
        root: the folder arrays are stored in (``path`` / ``namespace``).
        hits: lookups that found an array (per unique key in ``get_or_compute``).
        misses: lookups that did not.

    Example:
        >>> import tempfile
        >>> cache = ArrayCache(tempfile.mkdtemp())
        >>> calls = []
        >>> def embed(keys):
        ...     calls.append(list(keys))
        ...     return np.ones((len(keys), 4), dtype=np.float32)
        >>> [a.shape for a in cache.get_or_compute(["k1", "k2", "k1"], embed)]
        [(4,), (4,), (4,)]
        >>> _ = cache.get_or_compute(["k2", "k3"], embed)
        >>> calls, cache.stats()
        ([['k1', 'k2'], ['k3']], {'hits': 1, 'misses': 3})
    """

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, namespace: str | None = None
    ) -> None:
        root = Path(path).expanduser() if path is not None else default_cache_dir() / "arrays"
        if namespace is not None:
            root = root / _check_name(namespace, "a namespace")
        if root.exists() and not root.is_dir():
            raise StoreError(
                f"{root}: expected a cache directory, found a file",
                hint="set VIDMEM_CACHE_DIR (or pass a path) to a directory",
            )
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"{root}: cannot create the array cache directory ({exc})",
                hint="set VIDMEM_CACHE_DIR to a writable directory",
            ) from None
        self.root = root
        self.hits = 0
        self.misses = 0

    def __repr__(self) -> str:
        return f"ArrayCache({str(self.root)!r}, hits={self.hits}, misses={self.misses})"

    def _path(self, key: str) -> Path:
        _check_name(key, "a key")
        return self.root / key[:2] / f"{key}.npy"

    def __contains__(self, key: str) -> bool:
        return self._path(key).is_file()

    def stats(self) -> dict[str, int]:
        """``{"hits": ..., "misses": ...}`` since creation or :meth:`reset_stats`."""
        return {"hits": self.hits, "misses": self.misses}

    def reset_stats(self) -> None:
        """Zero the hit and miss counters."""
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> np.ndarray | None:
        """The cached array for ``key``, or ``None`` (counted as a hit or a miss).

        A file that cannot be read as ``.npy`` (damaged on disk) is deleted with a
        warning and reported as a miss, so it is recomputed.
        """
        path = self._path(key)
        try:
            with path.open("rb") as fh:
                array = np.load(fh, allow_pickle=False)
        except FileNotFoundError:
            self.misses += 1
            return None
        except (OSError, ValueError, EOFError) as exc:
            warnings.warn(
                f"{path}: unreadable cached array ({exc}); deleting it and recomputing",
                RuntimeWarning,
                stacklevel=2,
            )
            path.unlink(missing_ok=True)
            self.misses += 1
            return None
        self.hits += 1
        return array

    def _check_array(self, key: str, array: Any, allow_nonfinite: bool) -> np.ndarray:
        arr = np.asarray(array)
        if arr.dtype.hasobject:
            raise UserInputError(
                f"ArrayCache({self.root}): key {key}: expected a numeric or boolean array, "
                f"found dtype {arr.dtype}",
                hint="cache plain numeric arrays only (object arrays would need pickle)",
            )
        if not allow_nonfinite and arr.dtype.kind in "fc":
            bad = int(arr.size - np.count_nonzero(np.isfinite(arr)))
            if bad:
                raise StoreError(
                    f"ArrayCache({self.root}): key {key}: expected finite values, found {bad} "
                    f"NaN/inf of {arr.size} in an array of shape {arr.shape}; refusing to cache it",
                    hint="check the model output (e.g. float16 overflow); pass "
                    "allow_nonfinite=True if NaN is meaningful here",
                )
        return arr

    def _write(self, key: str, arr: np.ndarray) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp", dir=path.parent)
        except OSError as exc:
            raise StoreError(
                f"{path.parent}: cannot write to the array cache ({exc})",
                hint="check free space and permissions, or set VIDMEM_CACHE_DIR elsewhere",
            ) from None
        try:
            with os.fdopen(fd, "wb") as fh:
                np.save(fh, arr, allow_pickle=False)
            os.replace(tmp, path)
        except BaseException as exc:
            Path(tmp).unlink(missing_ok=True)
            if isinstance(exc, OSError):
                raise StoreError(
                    f"{path}: cannot write to the array cache ({exc})",
                    hint="check free space and permissions, or set VIDMEM_CACHE_DIR elsewhere",
                ) from None
            raise

    def put(self, key: str, array: Any, *, allow_nonfinite: bool = False) -> None:
        """Store ``array`` under ``key`` (atomically; replaces an existing entry).

        Raises:
            UserInputError: a bad key or an object array.
            StoreError: NaN/inf values (unless ``allow_nonfinite``) or a write failure.
        """
        self._write(key, self._check_array(key, array, allow_nonfinite))

    def get_or_compute(
        self,
        keys: Iterable[str],
        compute_fn: Callable[[list[str]], Sequence[Any] | np.ndarray],
        *,
        allow_nonfinite: bool = False,
    ) -> list[np.ndarray]:
        """Arrays for ``keys`` in order, computing only the missing ones in one call.

        Args:
            keys: cache keys; duplicates are looked up and computed once.
            compute_fn: called once with the list of missing unique keys (in first-seen
                order), only when some are missing; returns one array per key, as a
                sequence or as an array whose first axis runs over the keys.
            allow_nonfinite: allow NaN/inf in computed arrays.

        Returns:
            One array per entry of ``keys``.

        Raises:
            UserInputError: ``compute_fn`` returned the wrong number of arrays.
            StoreError: a computed array has NaN/inf (nothing from that batch is stored).
        """
        keys = list(keys)
        found: dict[str, np.ndarray] = {}
        missing: list[str] = []
        for key in dict.fromkeys(keys):
            array = self.get(key)
            if array is None:
                missing.append(key)
            else:
                found[key] = array
        if missing:
            out = compute_fn(list(missing))
            if isinstance(out, np.ndarray) and out.ndim == 0:
                raise UserInputError(
                    f"ArrayCache: compute_fn returned a 0-d array for {len(missing)} keys; "
                    "expected one array per missing key",
                )
            arrays = list(out)
            if len(arrays) != len(missing):
                raise UserInputError(
                    f"ArrayCache: compute_fn returned {len(arrays)} arrays for "
                    f"{len(missing)} missing keys; expected one per key, in the order given",
                    hint="return a list (or a stacked array) with one entry per key passed in",
                )
            checked = [
                self._check_array(k, a, allow_nonfinite)
                for k, a in zip(missing, arrays, strict=True)
            ]
            for key, arr in zip(missing, checked, strict=True):
                self._write(key, arr)
                found[key] = arr
        return [found[k] for k in keys]
