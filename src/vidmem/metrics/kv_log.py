"""KV-cache log records and their validation: JSON rows in, a checked :class:`KVLog` out.

The row format is described in ``docs/kv_log_format.md``; reading the file is the job of
``vidmem.benchmarks.cmbench.data.read_kv_log``. The ratios and throughputs computed
from a log are defined in :mod:`vidmem.metrics.kv_pruning`, where :class:`KVLog`,
:class:`KVTiming` and :func:`parse_kv_log` can be imported as well.

Everything here is pure: no I/O, no models, only numpy and the standard library.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vidmem.metrics.kv_pruning import (
    KVLogError,
    KVRow,
    fps,
    mean_pruning_ratio,
    pooled_pruning_ratio,
)
from vidmem.values import is_int_like, is_number_like

__all__ = ["KVLog", "KVTiming", "parse_kv_log"]

_KV_REQUIRED = ("task_id", "chunk", "layer", "k_visible", "k_full", "current")
_TIMING_REQUIRED = ("task_id", "continuation_seconds", "continuation_frames")
_KNOWN_EVENTS = ("timing",)


# --------------------------------------------------------------------------- records


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
        return {task: pooled_pruning_ratio(rows) for task, rows in by_task.items()}

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


# --------------------------------------------------------------------------- parsing


def _is_count(v: Any) -> bool:
    return is_int_like(v) and v >= 0


def _is_seconds(v: Any) -> bool:
    return is_number_like(v) and math.isfinite(float(v)) and float(v) >= 0


def _numbered(rows: Iterable[Any]) -> Iterable[tuple[int, Any]]:
    for position, item in enumerate(rows, start=1):
        if isinstance(item, tuple) and len(item) == 2 and is_int_like(item[0]):
            yield int(item[0]), item[1]
        else:
            yield position, item


class _Collector:
    """Append ``"<where>: field '<name>': <message>"`` lines to a list, counting them.

    The count lets the parser stop checking a row once it is known to be bad, so that
    later checks can assume the earlier fields are well-formed.
    """

    def __init__(self, where: str, out: list[str]) -> None:
        self.where = where
        self.out = out
        self.found = 0

    def __call__(self, name: str, message: str) -> None:
        self.out.append(f"{self.where}: field '{name}': {message}")
        self.found += 1


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
        bad = _Collector(where, problems)

        event = obj.get("event")
        is_timing = "event" in obj
        required = _TIMING_REQUIRED if is_timing else _KV_REQUIRED
        if is_timing and event not in _KNOWN_EVENTS:
            bad("event", f"expected one of {list(_KNOWN_EVENTS)}, found {event!r}")
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
            if "continuation_seconds" in obj and not _is_seconds(secs):
                bad("continuation_seconds", f"expected a finite number >= 0, found {secs!r}")
            if "continuation_frames" in obj and not _is_count(frames):
                bad("continuation_frames", f"expected an int >= 0, found {frames!r}")
            if prefix is not None and not _is_seconds(prefix):
                bad("context_prefix_seconds", f"expected a finite number >= 0, found {prefix!r}")
            if not bad.found and task in timings:
                bad(
                    "task_id",
                    f"second timing row for this task (the first is on line "
                    f"{timings[task].line}); write one timing row per task with totals",
                )
            if bad.found:
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
            if name in obj and not _is_count(v):
                bad(name, f"expected an int >= 0, found {v!r}")
        head = obj.get("head")
        if head is not None and not _is_count(head):
            bad("head", f"expected an int >= 0, or omit it for a per-layer row; found {head!r}")
        cur = obj.get("current")
        if "current" in obj and not isinstance(cur, (bool, np.bool_)):
            bad("current", f"expected true or false, found {cur!r}")
        if bad.found:
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
        if bad.found:
            continue
        seen[key] = line
        head_kind.setdefault(group, (head_i is None, line))
        kv_rows.append(KVRow(task, chunk, layer, head_i, vis, full, cur_b, line))

    if problems:
        raise KVLogError(source, problems)
    return KVLog(rows=tuple(kv_rows), timings=timings, source=source)
