"""A numpy array that grows by appending, with amortised O(1) cost per row.

The memory store appends a segment's frames (and their embeddings) one segment at a
time, and queries read all rows at once. Keeping the rows in one contiguous buffer
that doubles when full makes a query over every stored frame a single matrix-vector
product on a view, with no per-query copy or concatenation.
"""

from __future__ import annotations

import numpy as np

__all__ = ["GrowingArray"]

_MIN_CAPACITY = 64


class GrowingArray:
    """Rows of a fixed dtype (and width, for a matrix) appended at the end.

    Args:
        dtype: numpy dtype of the rows.
        width: ``None`` for a 1-D array of scalars; an int for ``(n, width)`` rows.
        fill: value of the unused capacity (and of nothing the caller sees).

    Example:
        >>> a = GrowingArray(np.int64)
        >>> a.extend([3, 4]); a.extend([5])
        >>> a.view().tolist(), len(a)
        ([3, 4, 5], 3)
    """

    def __init__(self, dtype: np.dtype | type, width: int | None = None, fill: float = 0) -> None:
        self._width = width
        self._fill = fill
        shape = (_MIN_CAPACITY,) if width is None else (_MIN_CAPACITY, width)
        self._buf = np.full(shape, fill, dtype=dtype)
        self._n = 0

    def __len__(self) -> int:
        return self._n

    @property
    def width(self) -> int | None:
        return self._width

    @property
    def nbytes(self) -> int:
        """Bytes held by the buffer, unused capacity included."""
        return int(self._buf.nbytes)

    def view(self) -> np.ndarray:
        """The filled rows, ``(n,)`` or ``(n, width)``; a view, valid until the next append."""
        return self._buf[: self._n]

    def extend(self, rows: np.ndarray | list) -> None:
        """Append ``rows`` (``(m,)`` or ``(m, width)``), doubling the capacity when full."""
        block = np.asarray(rows, dtype=self._buf.dtype)
        if self._width is not None:
            block = block.reshape(-1, self._width)
        m = block.shape[0]
        need = self._n + m
        if need > self._buf.shape[0]:
            # Doubling keeps the total copy work linear in the final size.
            cap = max(need, 2 * self._buf.shape[0])
            grown = np.full((cap, *self._buf.shape[1:]), self._fill, dtype=self._buf.dtype)
            grown[: self._n] = self._buf[: self._n]
            self._buf = grown
        self._buf[self._n : need] = block
        self._n = need

    def set(self, positions: np.ndarray, values: np.ndarray) -> None:
        """Overwrite filled rows at ``positions`` (used to fill in late-known values)."""
        self._buf[: self._n][positions] = values
