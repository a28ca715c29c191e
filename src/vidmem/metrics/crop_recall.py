"""CMBench scores: per-task recall from per-frame similarities, and their aggregates.

The dataset card defines the task score as the maximum, over continuation frames, of the
cosine between the embedding of the reference crop and the embedding of the target crop
found in that frame; a task whose target is never detected scores 0. The benchmark score
is the mean over tasks, also reported by ``type`` x ``task_type``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TaskScore:
    """Score of one task.

    Attributes:
        score: max cosine over frames with a detection; 0.0 when none had one.
        best_frame: index (in the continuation) of the best frame, ``None`` when none.
        best_reference: which reference produced the best cosine (tasks normally have one).
        n_frames: frames scored.
        n_detected: frames where the target was detected.
    """

    score: float
    best_frame: int | None
    best_reference: int | None
    n_frames: int
    n_detected: int


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine between every row of ``a`` (R, D) and every row of ``b`` (F, D) -> (R, F).

    Rows need not be normalised; a zero row has cosine 0 with everything.

    Example:
        >>> cosine_rows(np.array([[1.0, 0.0]]), np.array([[2.0, 0.0], [0.0, 3.0], [-1.0, 0.0]]))
        array([[ 1.,  0., -1.]])
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    na = np.linalg.norm(a, axis=1, keepdims=True)
    nb = np.linalg.norm(b, axis=1, keepdims=True)
    a = np.divide(a, na, out=np.zeros_like(a), where=na > 0)
    b = np.divide(b, nb, out=np.zeros_like(b), where=nb > 0)
    return a @ b.T


def task_score(similarities: np.ndarray | Sequence[Sequence[float | None]]) -> TaskScore:
    """Max-over-frames score from a (references, frames) similarity table.

    A frame without a detection has similarity ``NaN`` (or ``None``) and is skipped.
    With several references (the official release has one per task) the best
    (reference, frame) pair counts.

    Example:
        >>> s = task_score([[0.2, float("nan"), 0.7, 0.5]])
        >>> s.score, s.best_frame, s.n_detected
        (0.7, 2, 3)
        >>> task_score([[float("nan"), float("nan")]]).score
        0.0
    """
    table = np.array(similarities, dtype=np.float64)
    if table.ndim == 1:
        table = table[None, :]
    if table.ndim != 2:
        raise ValueError(f"task_score: expected a (references, frames) table, found shape {table.shape}")
    n_frames = int(table.shape[1])
    detected = np.isfinite(table)
    n_detected = int(detected.any(axis=0).sum())
    if not detected.any():
        return TaskScore(0.0, None, None, n_frames, 0)
    masked = np.where(detected, table, -np.inf)
    ref, frame = np.unravel_index(int(np.argmax(masked)), masked.shape)
    return TaskScore(float(table[ref, frame]), int(frame), int(ref), n_frames, n_detected)


def group_scores(rows: Iterable[Mapping[str, object]], keys: Sequence[str], value: str = "score") -> dict[tuple, list[float]]:
    """Values of ``value`` per combination of ``keys`` (e.g. ``type`` x ``task_type``), sorted by key.

    Example:
        >>> rows = [{"type": "synthetic", "score": 0.5}, {"type": "synthetic", "score": 0.7},
        ...         {"type": "real", "score": 0.1}]
        >>> group_scores(rows, ["type"])
        {('real',): [0.1], ('synthetic',): [0.5, 0.7]}
    """
    groups: dict[tuple, list[float]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in keys), []).append(float(row[value]))  # type: ignore[arg-type]
    return dict(sorted(groups.items()))
