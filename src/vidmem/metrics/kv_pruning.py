"""KV-cache pruning ratio (PR) and continuation throughput for memory-compression runs.

A generator that compresses its historical key-value (KV) cache reports, for every
generated chunk ``i``, layer ``l`` and attention head ``h``, how many historical KV
token positions that head could attend to (``k_visible``) and how many it would have
seen with the full history kept (``k_full``). The row format is described in
``docs/kv_log_format.md``; this module validates rows that have already been read
(reading the file is the job of ``vidmem.data.benchmarks.cmbench_data.read_kv_log``)
and turns them into numbers.

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
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "KVLog",
    "KVLogError",
    "KVRow",
    "KVTiming",
    "fps",
    "mean_pruning_ratio",
    "parse_kv_log",
    "pooled_pruning_ratio",
    "pruning_ratio",
    "speedup",
]

#: At most this many problems are spelled out in a :class:`KVLogError` message.
MAX_LISTED_PROBLEMS = 20

_KV_REQUIRED = ("task_id", "chunk", "layer", "k_visible", "k_full", "current")
_TIMING_REQUIRED = ("task_id", "continuation_seconds", "continuation_frames")
_KNOWN_EVENTS = ("timing",)


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


@dataclass(frozen=True)
class KVTiming:
    """Continuation timing of one task.

    Attributes:
        task_id: the benchmark task.
        continuation_seconds: wall-clock seconds spent generating the continuation,
            context-prefix processing excluded.
        continuation_frames: decoded frames of the continuation.
        context_prefix_seconds: seconds spent encoding the context (prefilling the KV
            cache), reported for information and never part of FPS; ``None`` if absent.
        line: 1-based line number in the log file, when known.
    """

    task_id: str
    continuation_seconds: float
    continuation_frames: int
    context_prefix_seconds: float | None = None
    line: int | None = None

    @property
    def fps(self) -> float | None:
        """Continuation frames per second (``None`` when no time was recorded).

        Example:
            >>> KVTiming("t", continuation_seconds=2.0, continuation_frames=33).fps
            16.5
        """
        return fps(self.continuation_frames, self.continuation_seconds)


@dataclass(frozen=True)
class KVLog:
    """A validated KV log: count rows plus per-task timing.

    Attributes:
        rows: every count row, in log order.
        timings: the timing row of each task that has one, by task id.
        source: where the rows came from (a file path or a label), for messages.
    """

    rows: tuple[KVRow, ...]
    timings: Mapping[str, KVTiming] = field(default_factory=dict)
    source: str = "kv log"

    @property
    def task_ids(self) -> tuple[str, ...]:
        """Task ids in order of first appearance (count rows, then timing-only tasks).

        Example:
            >>> log = parse_kv_log([
            ...     {"task_id": "b", "event": "timing", "continuation_seconds": 1.0,
            ...      "continuation_frames": 8},
            ...     {"task_id": "a", "chunk": 0, "layer": 0, "k_visible": 1, "k_full": 2,
            ...      "current": False},
            ... ])
            >>> log.task_ids
            ('a', 'b')
        """
        seen = dict.fromkeys(r.task_id for r in self.rows)
        seen.update(dict.fromkeys(self.timings))
        return tuple(seen)

    def rows_for(self, task_id: str) -> tuple[KVRow, ...]:
        """The count rows of one task, in log order.

        Example:
            >>> log = parse_kv_log([
            ...     {"task_id": "a", "chunk": 0, "layer": 0, "k_visible": 1, "k_full": 2,
            ...      "current": False},
            ...     {"task_id": "b", "chunk": 0, "layer": 0, "k_visible": 2, "k_full": 2,
            ...      "current": False},
            ... ])
            >>> [(r.task_id, r.k_visible, r.line) for r in log.rows_for("b")]
            [('b', 2, 2)]
        """
        return tuple(r for r in self.rows if r.task_id == task_id)

    def pruning_ratios(self) -> dict[str, float | None]:
        """Per-task PR for every task with count rows (see :func:`pruning_ratio`).

        Example:
            >>> log = parse_kv_log([
            ...     {"task_id": "a", "chunk": 0, "layer": 0, "k_visible": 3, "k_full": 4,
            ...      "current": False},
            ...     {"task_id": "b", "chunk": 0, "layer": 0, "k_visible": 0, "k_full": 0,
            ...      "current": False},
            ... ])
            >>> log.pruning_ratios()
            {'a': 0.25, 'b': None}
        """
        by_task: dict[str, list[KVRow]] = {}
        for r in self.rows:
            by_task.setdefault(r.task_id, []).append(r)
        return {task: _rows_ratio(rows) for task, rows in by_task.items()}

    def mean_pruning_ratio(self) -> float | None:
        """Headline PR: mean of the per-task PR values (:func:`mean_pruning_ratio`).

        Example:
            >>> log = parse_kv_log([
            ...     {"task_id": "small", "chunk": 1, "layer": 0, "k_visible": 0,
            ...      "k_full": 10, "current": False},
            ...     {"task_id": "large", "chunk": 1, "layer": 0, "k_visible": 900,
            ...      "k_full": 1000, "current": False},
            ... ])
            >>> round(log.mean_pruning_ratio(), 6), round(log.pooled_pruning_ratio(), 6)
            (0.55, 0.108911)
        """
        return mean_pruning_ratio(self.pruning_ratios())

    def pooled_pruning_ratio(self) -> float | None:
        """Secondary PR over all rows of all tasks (:func:`pooled_pruning_ratio`).

        Example:
            >>> log = parse_kv_log([
            ...     {"task_id": "a", "chunk": 1, "layer": 0, "k_visible": 1, "k_full": 4,
            ...      "current": False},
            ...     {"task_id": "b", "chunk": 1, "layer": 0, "k_visible": 3, "k_full": 4,
            ...      "current": False},
            ... ])
            >>> log.pooled_pruning_ratio()  # 1 - (1 + 3) / (4 + 4)
            0.5
        """
        return pooled_pruning_ratio(self.rows)

    def fps_by_task(self) -> dict[str, float | None]:
        """Continuation FPS of each task that has a timing row.

        Example:
            >>> log = parse_kv_log([
            ...     {"task_id": "a", "event": "timing", "continuation_seconds": 2.0,
            ...      "continuation_frames": 40},
            ... ])
            >>> log.fps_by_task()
            {'a': 20.0}
        """
        return {task: t.fps for task, t in self.timings.items()}

    def fps(self, task_ids: Iterable[str] | None = None) -> float | None:
        """Pooled continuation throughput: total frames / total seconds.

        Args:
            task_ids: restrict to these tasks (e.g. the tasks shared with a baseline, so
                that a speedup compares like with like); ``None`` uses every timed task.

        Returns:
            Frames per second, or ``None`` when no task has a positive time.

        Raises:
            KeyError: a requested task has no timing row.

        Example:
            >>> log = parse_kv_log([
            ...     {"task_id": "a", "event": "timing", "continuation_seconds": 2.0,
            ...      "continuation_frames": 40},
            ...     {"task_id": "b", "event": "timing", "continuation_seconds": 6.0,
            ...      "continuation_frames": 80},
            ... ])
            >>> log.fps(), log.fps(["a"])
            (15.0, 20.0)
        """
        chosen = list(self.timings) if task_ids is None else list(dict.fromkeys(task_ids))
        missing = [t for t in chosen if t not in self.timings]
        if missing:
            raise KeyError(
                f"{self.source}: no timing row for task(s) {missing}; timed tasks: "
                f"{sorted(self.timings)}"
            )
        frames = sum(self.timings[t].continuation_frames for t in chosen)
        seconds = math.fsum(self.timings[t].continuation_seconds for t in chosen)
        return fps(frames, seconds)


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


def _rows_ratio(rows: Iterable[KVRow]) -> float | None:
    rows = list(rows)
    return pruning_ratio(
        np.array([r.k_visible for r in rows], dtype=np.int64),
        np.array([r.k_full for r in rows], dtype=np.int64),
        np.array([r.current for r in rows], dtype=bool),
    )


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
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.number)):
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
    return _rows_ratio(rows)


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
    if isinstance(frames, (bool, np.bool_)) or not isinstance(frames, (int, np.integer)):
        raise ValueError(f"frames must be an int >= 0, found {frames!r}")
    if isinstance(seconds, (bool, np.bool_)) or not isinstance(seconds, (int, float, np.number)):
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
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.number)):
            raise ValueError(f"{name} must be a number >= 0 or None, found {v!r}")
        if math.isnan(float(v)) or float(v) < 0:
            raise ValueError(f"{name} must be >= 0, found {float(v)}")
    base = float(fps_baseline)
    if base == 0 or not math.isfinite(base):
        return None
    return float(fps_run) / base


# --------------------------------------------------------------------------- parsing


def _is_int(v: object) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_))


def _numbered(rows: Iterable[Any]) -> Iterable[tuple[int, Any]]:
    for position, item in enumerate(rows, start=1):
        if isinstance(item, tuple) and len(item) == 2 and _is_int(item[0]):
            yield int(item[0]), item[1]
        else:
            yield position, item


class _Collector:
    """Append ``"<where>: field '<name>': <message>"`` lines to a list."""

    def __init__(self, where: str, out: list[str]) -> None:
        self.where = where
        self.out = out

    def __call__(self, name: str, message: str) -> None:
        self.out.append(f"{self.where}: field '{name}': {message}")


def parse_kv_log(rows: Iterable[Any], *, source: str = "kv log") -> KVLog:
    """Validate KV-log rows (already read from JSON) and build a :class:`KVLog`.

    Every row is checked and all problems are reported together in one
    :class:`KVLogError`, each naming the line number and the field. Rules (see
    ``docs/kv_log_format.md``): required fields present with the right types
    (``bool`` is not an int); ``chunk``, ``layer``, ``head``, counts >= 0;
    ``k_visible <= k_full``; no duplicate ``(task_id, chunk, layer, head, current)``;
    per-layer and per-head rows not mixed for one ``(task_id, chunk, layer, current)``;
    one timing row per task; ``event``, when present, is ``"timing"``. Other fields are
    ignored, so writers may add their own.

    Args:
        rows: JSON objects, either bare (numbered 1, 2, ... by position) or as
            ``(line_number, object)`` pairs as yielded by ``vidmem.io.jsonl.read_jsonl``.
        source: what to call the rows in messages (e.g. the file path).

    Returns:
        The validated log.

    Raises:
        KVLogError: any row breaks the format.

    Example:
        >>> log = parse_kv_log([
        ...     {"task_id": "t", "chunk": 1, "layer": 0, "head": 0, "k_visible": 6,
        ...      "k_full": 8, "current": False},
        ...     {"task_id": "t", "event": "timing", "continuation_seconds": 4.0,
        ...      "continuation_frames": 80, "context_prefix_seconds": 9.5},
        ... ])
        >>> log.pruning_ratios(), log.fps()
        ({'t': 0.25}, 20.0)
        >>> parse_kv_log([{"task_id": "t", "chunk": 0, "layer": 0, "k_visible": -1,
        ...                "k_full": 8, "current": False}])
        Traceback (most recent call last):
        ...
        vidmem.metrics.kv_pruning.KVLogError: kv log: 1 problem(s) in the KV log:
          line 1 (task 't'): field 'k_visible': expected an int >= 0, found -1
    """
    problems: list[str] = []
    kv_rows: list[KVRow] = []
    timings: dict[str, KVTiming] = {}
    seen: dict[tuple[str, int, int, int | None, bool], int] = {}
    head_kind: dict[tuple[str, int, int, bool], tuple[bool, int]] = {}

    for line, obj in _numbered(rows):
        if not isinstance(obj, Mapping):
            problems.append(f"line {line}: expected a JSON object, found {type(obj).__name__}")
            continue
        task = obj.get("task_id")
        where = f"line {line} (task {task!r})" if isinstance(task, str) and task else f"line {line}"
        row_problems: list[str] = []
        bad = _Collector(where, row_problems)

        event = obj.get("event")
        is_timing = "event" in obj
        required = _TIMING_REQUIRED if is_timing else _KV_REQUIRED
        if is_timing and event not in _KNOWN_EVENTS:
            bad("event", f"expected one of {list(_KNOWN_EVENTS)}, found {event!r}")
            problems.extend(row_problems)
            continue
        for name in required:
            if name not in obj:
                kind = "a timing row" if is_timing else "a count row"
                bad(name, f"missing; {kind} needs {list(required)}")
        if not (isinstance(task, str) and task.strip()) and "task_id" in obj:
            bad("task_id", f"expected a non-empty string, found {task!r}")

        if is_timing:
            secs = obj.get("continuation_seconds")
            frames = obj.get("continuation_frames")
            prefix = obj.get("context_prefix_seconds")
            if "continuation_seconds" in obj and not (
                _is_number(secs) and math.isfinite(float(secs)) and float(secs) >= 0
            ):
                bad("continuation_seconds", f"expected a finite number >= 0, found {secs!r}")
            if "continuation_frames" in obj and not (_is_int(frames) and frames >= 0):
                bad("continuation_frames", f"expected an int >= 0, found {frames!r}")
            if prefix is not None and not (
                _is_number(prefix) and math.isfinite(float(prefix)) and float(prefix) >= 0
            ):
                bad("context_prefix_seconds", f"expected a finite number >= 0, found {prefix!r}")
            if not row_problems and task in timings:
                bad(
                    "task_id",
                    f"second timing row for this task (the first is on line "
                    f"{timings[task].line}); write one timing row per task with totals",
                )
            if row_problems:
                problems.extend(row_problems)
                continue
            timings[task] = KVTiming(
                task_id=task,
                continuation_seconds=float(secs),
                continuation_frames=int(frames),
                context_prefix_seconds=None if prefix is None else float(prefix),
                line=line,
            )
            continue

        for name in ("chunk", "layer", "k_visible", "k_full"):
            v = obj.get(name)
            if name in obj and not (_is_int(v) and v >= 0):
                bad(name, f"expected an int >= 0, found {v!r}")
        head = obj.get("head")
        if head is not None and not (_is_int(head) and head >= 0):
            bad("head", f"expected an int >= 0, or omit it for a per-layer row; found {head!r}")
        cur = obj.get("current")
        if "current" in obj and not isinstance(cur, (bool, np.bool_)):
            bad("current", f"expected true or false, found {cur!r}")
        if row_problems:
            problems.extend(row_problems)
            continue
        vis, full = int(obj["k_visible"]), int(obj["k_full"])
        if vis > full:
            bad(
                "k_visible",
                f"{vis} > k_full = {full}; a head cannot see more history than the full history",
            )
        chunk, layer = int(obj["chunk"]), int(obj["layer"])
        head_i = None if head is None else int(head)
        cur_b = bool(cur)
        key = (task, chunk, layer, head_i, cur_b)
        if key in seen:
            bad(
                "head" if head_i is not None else "layer",
                f"duplicate row for chunk {chunk}, layer {layer}, "
                f"head {'(per-layer)' if head_i is None else head_i}, current {cur_b} "
                f"(first on line {seen[key]})",
            )
        group = (task, chunk, layer, cur_b)
        if group in head_kind and head_kind[group][0] != (head_i is None):
            bad(
                "head",
                f"chunk {chunk}, layer {layer} mixes a per-layer row (no head) with per-head "
                f"rows (other kind on line {head_kind[group][1]}); write one kind per layer, "
                "or the counts would be summed twice",
            )
        if row_problems:
            problems.extend(row_problems)
            continue
        seen[key] = line
        head_kind.setdefault(group, (head_i is None, line))
        kv_rows.append(KVRow(task, chunk, layer, head_i, vis, full, cur_b, line))

    if problems:
        raise KVLogError(source, problems)
    return KVLog(rows=tuple(kv_rows), timings=timings, source=source)
