"""Embeddings of a film's frames and of texts, computed once per backend and kept.

One :class:`EmbeddingCache` belongs to one film (its frame source holds it), and every
memory store built on that source reads from it: six policies, each replayed at one
budget, never embed the same frame or text twice with the same backend. A backend is
identified by its :meth:`~vidmem.models.protocols.BackendInfo.to_dict` (name, weights,
hash, device, dtype, settings), so two instances of the same model share rows, and a
frame by its source time in whole milliseconds.

Rows live in one contiguous float32 matrix per backend that grows by doubling, so the
scores of a query against every stored frame are one matrix-vector product.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Any, Protocol

import numpy as np

from vidmem.errors import UserInputError
from vidmem.memory._arrays import GrowingArray
from vidmem.models.protocols import ImageEmbedder, TextEmbedder

__all__ = [
    "DEFAULT_BATCH_SIZE", "EmbeddableFrame", "EmbeddingCache", "backend_key", "scores_for_rows",
]

#: Frames per ``embed_images`` call when filling in missing rows.
DEFAULT_BATCH_SIZE = 64


class EmbeddableFrame(Protocol):
    """What the cache needs of a frame: a key (source time in ms) and its pixels."""

    @property
    def key(self) -> int: ...

    def pixels(self) -> np.ndarray: ...


def backend_key(embedder: ImageEmbedder | TextEmbedder) -> str:
    """The identity of a backend's embedding space: its ``info()`` as sorted JSON."""
    info = embedder.info()
    return json.dumps(info.to_dict(), sort_keys=True, default=str)


class _Table:
    """Rows of one backend: item key -> row of a growing ``(n, D)`` float32 matrix."""

    def __init__(self) -> None:
        self.row_of: dict[Hashable, int] = {}
        self.matrix: GrowingArray | None = None  # created when the width is known

    def add(self, keys: Sequence[Hashable], block: np.ndarray) -> None:
        if self.matrix is None:
            self.matrix = GrowingArray(np.float32, width=int(block.shape[1]))
        start = len(self.matrix)
        self.matrix.extend(block)
        for i, k in enumerate(keys):
            self.row_of[k] = start + i

    def view(self) -> np.ndarray:
        return np.zeros((0, 0), np.float32) if self.matrix is None else self.matrix.view()


class EmbeddingCache:
    """Per-film embedding rows for every backend used, filled on first request.

    Args:
        batch_size: items per backend call when filling in missing rows.

    Attributes:
        calls: ``(backend name, "image"|"text"|"query") -> number of embed calls made``.
        items: ``(backend name, "image"|"text"|"query") -> number of items embedded``.
    """

    def __init__(self, *, batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        self.batch_size = int(batch_size)
        self.calls: Counter[tuple[str, str]] = Counter()
        self.items: Counter[tuple[str, str]] = Counter()
        self._keys: dict[int, tuple[object, str, str]] = {}  # id -> (embedder, key, name)
        self._tables: dict[tuple[str, str], _Table] = {}

    def _identify(self, embedder: object) -> tuple[str, str]:
        found = self._keys.get(id(embedder))
        if found is None or found[0] is not embedder:
            info = getattr(embedder, "info", None)
            if not callable(info):
                raise UserInputError(
                    f"memory embeddings: {type(embedder).__name__} has no info() method",
                    hint="pass an ImageEmbedder / TextEmbedder backend (vidmem.models.protocols)")
            # The embedder is kept alive with its key so that its id is never reused.
            found = (embedder, backend_key(embedder), str(info().name))  # type: ignore[arg-type]
            self._keys[id(embedder)] = found
        return found[1], found[2]

    def key_of(self, embedder: ImageEmbedder | TextEmbedder) -> str:
        """The backend key under which ``embedder``'s rows are kept."""
        return self._identify(embedder)[0]

    def _table(self, kind: str, key: str) -> _Table:
        return self._tables.setdefault((kind, key), _Table())

    def _checked(self, out: Any, n: int, table: _Table, name: str, kind: str) -> np.ndarray:
        arr = np.asarray(out)
        width = None if table.matrix is None else table.matrix.width
        if arr.ndim != 2 or arr.shape[0] != n or (width is not None and arr.shape[1] != width):
            want = f"({n}, {width if width is not None else 'D'})"
            raise UserInputError(
                f"memory embeddings: backend {name} returned shape {arr.shape} for {n} "
                f"{kind}s, expected {want}",
                hint="embed_images / embed_texts return one row per input, same width every call")
        if not np.issubdtype(arr.dtype, np.number) or not np.all(np.isfinite(arr)):
            raise UserInputError(
                f"memory embeddings: backend {name} returned non-finite or non-numeric "
                f"values for {kind}s",
                hint="check the backend's weights and inputs")
        return np.ascontiguousarray(arr, dtype=np.float32)

    def _fill(self, kind: str, embedder: Any, keys: Sequence[Hashable],
              inputs: Sequence[Any], load: Any) -> np.ndarray:
        key, name = self._identify(embedder)
        table = self._table(kind, key)
        todo: dict[Hashable, Any] = {}
        for k, item in zip(keys, inputs, strict=True):
            if k not in table.row_of and k not in todo:
                todo[k] = item
        pending = list(todo.items())
        for lo in range(0, len(pending), self.batch_size):
            loaded = [(k, load(item)) for k, item in pending[lo: lo + self.batch_size]]
            # Loading may have filled rows already (a frame source that embeds what it
            # decodes, FilmFrames.require): never embed those twice.
            chunk = [(k, x) for k, x in loaded if k not in table.row_of]
            if not chunk:
                continue
            batch = [x for _, x in chunk]
            fn = {"image": getattr(embedder, "embed_images", None),
                  "text": getattr(embedder, "embed_texts", None),
                  "query": getattr(embedder, "embed_queries", None)}[kind]
            self.calls[name, kind] += 1
            self.items[name, kind] += len(chunk)
            table.add([k for k, _ in chunk], self._checked(fn(batch), len(chunk), table, name, kind))
        return np.fromiter((table.row_of[k] for k in keys), dtype=np.int64, count=len(keys))

    def image_rows(self, embedder: ImageEmbedder, frames: Sequence[EmbeddableFrame]) -> np.ndarray:
        """Rows of ``frames`` in :meth:`image_matrix`, embedding the missing ones first.

        Returns:
            ``(len(frames),)`` int64 row indices, in the order of ``frames``.
        """
        return self._fill("image", embedder, [f.key for f in frames], frames, lambda f: f.pixels())

    def text_rows(self, embedder: TextEmbedder, texts: Sequence[str]) -> np.ndarray:
        """Rows of ``texts`` in :meth:`text_matrix`, embedding the missing ones first."""
        texts = [str(t) for t in texts]
        return self._fill("text", embedder, texts, texts, lambda t: t)

    def _query_kind(self, embedder: TextEmbedder) -> str:
        # A backend that embeds queries differently (an instructed query, as Qwen3-
        # Embedding does) says so with embed_queries; the reference store does the same
        # (_embed_query falls back to embed_text). Otherwise a query is a plain text.
        return "query" if callable(getattr(embedder, "embed_queries", None)) else "text"

    def query_rows(self, embedder: TextEmbedder, texts: Sequence[str]) -> np.ndarray:
        """Rows of ``texts`` embedded as queries in :meth:`query_matrix`."""
        texts = [str(t) for t in texts]
        return self._fill(self._query_kind(embedder), embedder, texts, texts, lambda t: t)

    def query_matrix(self, embedder: TextEmbedder) -> np.ndarray:
        """Every query row of this backend (a view; the text rows when queries are texts)."""
        return self._table(self._query_kind(embedder), self._identify(embedder)[0]).view()

    def queries(self, embedder: TextEmbedder, texts: Sequence[str]) -> np.ndarray:
        """Query embeddings of ``texts``: ``embed_queries`` when the backend has it,
        else ``embed_texts``; ``(len(texts), D)`` float32 (a copy)."""
        rows = self.query_rows(embedder, texts)
        return self.query_matrix(embedder)[rows]

    def image_matrix(self, embedder: ImageEmbedder) -> np.ndarray:
        """Every image row of this backend, ``(n_rows, D)`` float32; a view, valid until
        the next row is added."""
        return self._table("image", self._identify(embedder)[0]).view()

    def text_matrix(self, embedder: TextEmbedder) -> np.ndarray:
        """Every text row of this backend, ``(n_rows, D)`` float32 (a view)."""
        return self._table("text", self._identify(embedder)[0]).view()

    def texts(self, embedder: TextEmbedder, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts``, ``(len(texts), D)`` float32 (a copy, in order)."""
        rows = self.text_rows(embedder, texts)
        return self.text_matrix(embedder)[rows]

    def has_image(self, embedder: ImageEmbedder, key: int) -> bool:
        """Whether the frame with source time ``key`` (ms) has a row for this backend."""
        return key in self._table("image", self._identify(embedder)[0]).row_of

    @property
    def nbytes(self) -> int:
        """Bytes held by the embedding matrices (unused capacity included)."""
        return sum(t.matrix.nbytes for t in self._tables.values() if t.matrix is not None)


def scores_for_rows(matrix: np.ndarray, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``matrix[rows] @ query`` without copying most of ``matrix``.

    When the rows are a large share of the matrix, one product over the whole
    contiguous matrix and a gather of the scores is cheaper than gathering the rows.

    Args:
        matrix: ``(n, D)`` float32.
        rows: ``(m,)`` int row indices.
        query: ``(D,)`` float32.

    Returns:
        ``(m,)`` float32 dot products.

    Example:
        >>> m = np.eye(3, dtype=np.float32)
        >>> scores_for_rows(m, np.array([2, 0]), np.array([1, 2, 3], np.float32)).tolist()
        [3.0, 1.0]
    """
    if len(rows) == 0:
        return np.zeros(0, np.float32)
    q = np.ascontiguousarray(query, dtype=np.float32)
    if 4 * len(rows) >= matrix.shape[0]:
        return (matrix @ q)[rows]
    return matrix[rows] @ q

