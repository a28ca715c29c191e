"""KV-cache pruning ratio (PR) and continuation throughput for memory-compression runs.

A generator that compresses its historical key-value (KV) cache reports, for every
generated chunk ``i``, layer ``l`` and attention head ``h``, how many historical KV
token positions that head could attend to (``k_visible``) and how many it would have
seen with the full history kept (``k_full``). The row format is described in
``docs/kv_log_format.md``; :mod:`vidmem.metrics.kv_log` validates rows that have
already been read (reading the file is the job of
``vidmem.benchmarks.cmbench.data.read_kv_log``) and this module turns them into
numbers. :class:`KVLog`, :class:`KVTiming` and :func:`parse_kv_log` are importable from
here as well.

Definitions (CMBench card):

* **Per-task PR** = ``1 - sum(k_visible) / sum(k_full)``, both sums over every
  ``(i, l, h)`` row of the task except rows flagged ``current`` (the noisy chunk being
  denoised). A head that sees nothing contributes ``0`` to the numerator and its full
  count to the denominator. PR is undefined (``None``) when ``sum(k_full) == 0``: there
  was no history to prune, so neither ``0`` nor ``1`` would be honest.
* **Headline PR** = arithmetic mean of the per-task PR values
  (:func:`mean_pruning_ratio`); tasks with an undefined PR are left out of the mean.
* **Pooled PR** (secondary, what the published code computes) = one ratio over the rows
  of all tasks together (:func:`pooled_pruning_ratio`); large tasks weigh more.
* **FPS** = decoded continuation frames / continuation generation seconds, context
  prefix excluded (:func:`fps`); **speedup** = FPS of a run / FPS of the full-history
  baseline on the same tasks (:func:`speedup`).

Everything here is pure: no I/O, no models, only numpy and the standard library.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vidmem.values import is_int_like, is_number_like

__all__ = [
    "KVLogError",
    "KVRow",
    "fps",
    "mean_pruning_ratio",
    "pooled_pruning_ratio",
    "pruning_ratio",
    "speedup",
]

#: At most this many problems are spelled out in a :class:`KVLogError` message.
MAX_LISTED_PROBLEMS = 20

# The log records and their parser live in kv_log (built on the functions here); KVRow and
# KVLogError stay here because pooled_pruning_ratio takes KVRow rows.


class KVLogError(ValueError):
    """KV-log rows that break the format of ``docs/kv_log_format.md``.

    Attributes:
        problems: one line per problem, each naming the line number and the field.
    """

    def __init__(self, source: str, problems: Sequence[str]) -> None:
        self.source = source
        self.problems = tuple(problems)
        shown = "\n".join(f"  {p}" for p in self.problems[:MAX_LISTED_PROBLEMS])
        more = len(self.problems) - MAX_LISTED_PROBLEMS
        tail = f"\n  ... and {more} more" if more > 0 else ""
        super().__init__(f"{source}: {len(self.problems)} problem(s) in the KV log:\n{shown}{tail}")


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class KVRow:
    """Visible and full-history KV counts for one (task, chunk, layer[, head]).

    Attributes:
        task_id: the benchmark task the row belongs to.
        chunk: index ``i`` of the generated chunk being denoised (0-based).
        layer: transformer layer ``l`` (0-based).
        head: attention head ``h`` (0-based), or ``None`` for a per-layer row whose
            counts are the sums over all heads of that layer.
        k_visible: historical KV token positions the head(s) could attend to.
        k_full: the same count with the full history kept; ``k_visible <= k_full``.
        current: True when the row counts the positions of the noisy chunk being
            denoised itself; such rows are excluded from PR.
        line: 1-based line number in the log file, when known.
    """

    task_id: str
    chunk: int
    layer: int
    head: int | None
    k_visible: int
    k_full: int
    current: bool
    line: int | None = None


# --------------------------------------------------------------------------- numbers


def _count_array(values: Any, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D sequence of counts, found shape {arr.shape}")
    if arr.size and (arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(
            f"{name}: expected integer counts, found dtype {arr.dtype}; "
            "counts of KV positions are whole numbers"
        )
    arr = arr.astype(np.int64)
    if arr.size and int(arr.min()) < 0:
        bad = int(np.flatnonzero(arr < 0)[0])
        raise ValueError(f"{name}[{bad}] = {int(arr[bad])}: counts must be >= 0")
    return arr


def pruning_ratio(
    k_visible: Sequence[int] | np.ndarray,
    k_full: Sequence[int] | np.ndarray,
    current: Sequence[bool] | np.ndarray | None = None,
) -> float | None:
    """Fraction of historical KV positions pruned: ``1 - sum(k_visible) / sum(k_full)``.

    Each position ``j`` of the three sequences is one ``(chunk, layer, head)`` row of
    one task. Rows with ``current[j]`` True (the noisy chunk being denoised) are left
    out of both sums. A row with ``k_visible == 0`` (a head that sees no history)
    counts fully: 0 in the numerator, ``k_full`` in the denominator.

    Args:
        k_visible: ``(N,)`` ints >= 0, visible historical positions per row.
        k_full: ``(N,)`` ints >= 0, full-history positions per row; ``k_visible <=
            k_full`` element-wise.
        current: ``(N,)`` bools, or ``None`` when no row is a current-chunk row.

    Returns:
        PR in ``[0, 1]`` (0 = nothing pruned, 1 = no history seen), or ``None`` when the
        non-current rows hold no history at all (``sum(k_full) == 0``, including no
        rows): the ratio is undefined there.

    Raises:
        ValueError: lengths differ, counts are negative or not integers, or a row has
            ``k_visible > k_full``.

    Example:
        >>> pruning_ratio([3, 0, 8], [4, 4, 8], [False, False, True])
        0.625
        >>> pruning_ratio([5], [5], [True]) is None
        True
    """
    vis = _count_array(k_visible, "k_visible")
    full = _count_array(k_full, "k_full")
    if vis.shape != full.shape:
        raise ValueError(
            f"k_visible has {vis.size} rows but k_full has {full.size}; pass one value per "
            "(chunk, layer, head) row in both"
        )
    if current is None:
        cur = np.zeros(vis.shape, dtype=bool)
    else:
        cur = np.asarray(current)
        if cur.shape != vis.shape:
            raise ValueError(
                f"current has shape {cur.shape} but the counts have {vis.shape}; pass one "
                "flag per row"
            )
        if cur.size and cur.dtype != np.bool_:
            raise ValueError(f"current: expected booleans, found dtype {cur.dtype}")
        cur = cur.astype(bool)
    over = np.flatnonzero(vis > full)
    if over.size:
        j = int(over[0])
        raise ValueError(
            f"row {j}: k_visible = {int(vis[j])} > k_full = {int(full[j])}; a head cannot "
            "see more history than the full history"
        )
    keep = ~cur
    total_full = int(full[keep].sum())
    if total_full == 0:
        return None
    total_visible = int(vis[keep].sum())
    return (total_full - total_visible) / total_full


def mean_pruning_ratio(per_task: Mapping[str, float | None]) -> float | None:
    """Headline PR: the arithmetic mean of per-task PR values (the CMBench card).

    Tasks whose PR is ``None`` (no history to prune) are left out of the mean; the
    result is ``None`` when no task has a PR.

    Args:
        per_task: PR of each task, e.g. from :meth:`KVLog.pruning_ratios`.

    Returns:
        The mean PR in ``[0, 1]``, or ``None``.

    Raises:
        ValueError: a value is not a number in ``[0, 1]``.

    Example:
        >>> mean_pruning_ratio({"small": 1.0, "large": 0.1, "empty": None})
        0.55
        >>> mean_pruning_ratio({"empty": None}) is None
        True
    """
    values: list[float] = []
    for task, v in per_task.items():
        if v is None:
            continue
        if not is_number_like(v):
            raise ValueError(f"task {task!r}: PR must be a number or None, found {v!r}")
        fv = float(v)
        if not (math.isfinite(fv) and 0.0 <= fv <= 1.0):
            raise ValueError(f"task {task!r}: PR must lie in [0, 1], found {fv}")
        values.append(fv)
    if not values:
        return None
    return math.fsum(values) / len(values)


def pooled_pruning_ratio(rows: Iterable[KVRow]) -> float | None:
    """Secondary PR: one ratio over the rows of all tasks together.

    ``1 - (total visible) / (total full)`` over every non-current row of every task.
    This is what the published CMBench code reports; tasks with more chunks, layers or
    history weigh more than in the headline :func:`mean_pruning_ratio`.

    Args:
        rows: count rows of any number of tasks (e.g. ``KVLog.rows``).

    Returns:
        The pooled PR, or ``None`` when the non-current rows hold no history.

    Example:
        >>> rows = [KVRow("small", 0, 0, None, 0, 10, False),
        ...         KVRow("large", 0, 0, None, 900, 1000, False)]
        >>> round(pooled_pruning_ratio(rows), 6)  # 1 - 900 / 1010
        0.108911
    """
    rows = list(rows)
    return pruning_ratio(
        np.array([r.k_visible for r in rows], dtype=np.int64),
        np.array([r.k_full for r in rows], dtype=np.int64),
        np.array([r.current for r in rows], dtype=bool),
    )


def fps(frames: int | None, seconds: float | None) -> float | None:
    """Frames per second of a continuation: ``frames / seconds``.

    Args:
        frames: decoded continuation frames (>= 0), or ``None`` when unknown.
        seconds: continuation generation time in seconds (context prefix excluded), or
            ``None`` when unknown.

    Returns:
        FPS, or ``None`` when either input is missing or ``seconds`` is 0 or not finite.

    Raises:
        ValueError: negative or non-numeric inputs.

    Example:
        >>> fps(120, 4.0)
        30.0
        >>> fps(120, 0.0) is None, fps(None, 4.0) is None
        (True, True)
    """
    if frames is None or seconds is None:
        return None
    if not is_int_like(frames):
        raise ValueError(f"frames must be an int >= 0, found {frames!r}")
    if not is_number_like(seconds):
        raise ValueError(f"seconds must be a number >= 0, found {seconds!r}")
    if frames < 0:
        raise ValueError(f"frames must be >= 0, found {frames}")
    s = float(seconds)
    if math.isnan(s) or s < 0:
        raise ValueError(f"seconds must be >= 0, found {s}")
    if s == 0 or not math.isfinite(s):
        return None
    return int(frames) / s


def speedup(fps_run: float | None, fps_baseline: float | None) -> float | None:
    """Throughput gain of a run over the full-history baseline: ``fps_run / fps_baseline``.

    Compute both FPS values on the same tasks (see :meth:`KVLog.fps`).

    Args:
        fps_run: FPS of the compressed-memory run, or ``None``.
        fps_baseline: FPS of the full-history baseline, or ``None``.

    Returns:
        The speedup, or ``None`` when either value is missing or the baseline is 0.

    Raises:
        ValueError: a negative or non-numeric FPS.

    Example:
        >>> speedup(45.0, 30.0)
        1.5
        >>> speedup(45.0, 0.0) is None, speedup(None, 30.0) is None
        (True, True)
    """
    if fps_run is None or fps_baseline is None:
        return None
    for name, v in (("fps_run", fps_run), ("fps_baseline", fps_baseline)):
        if not is_number_like(v):
            raise ValueError(f"{name} must be a number >= 0 or None, found {v!r}")
        if math.isnan(float(v)) or float(v) < 0:
            raise ValueError(f"{name} must be >= 0, found {float(v)}")
    base = float(fps_baseline)
    if base == 0 or not math.isfinite(base):
        return None
    return float(fps_run) / base
