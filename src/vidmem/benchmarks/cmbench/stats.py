"""CMBench dataset statistics: task and video counts, compared with the official release."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vidmem.benchmarks.cmbench.schema import TASK_TYPES, VIDEO_TYPES, CMBenchDataset

__all__ = ["OFFICIAL_COUNTS", "CMBenchStats", "dataset_stats"]

#: Counts of the official release (CMBench dataset card).
OFFICIAL_COUNTS: Mapping[str, int] = {
    "videos": 58,
    "videos/synthetic": 50,
    "videos/real": 8,
    "tasks": 116,
    "tasks/synthetic": 102,
    "tasks/real": 14,
    "tasks/reappear": 77,
    "tasks/revisit": 39,
    "tasks/synthetic/reappear": 67,
    "tasks/synthetic/revisit": 35,
    "tasks/real/reappear": 10,
    "tasks/real/revisit": 4,
}


@dataclass(frozen=True)
class CMBenchStats:
    """Counts of a dataset, to compare with the official release.

    Attributes:
        tasks: number of tasks.
        videos: number of distinct context videos.
        by_type: tasks per ``type``.
        by_task_type: tasks per ``task_type``.
        by_cell: tasks per ``(type, task_type)``.
        videos_by_type: distinct videos per ``type`` (of the first task using each).
    """

    tasks: int
    videos: int
    by_type: Mapping[str, int]
    by_task_type: Mapping[str, int]
    by_cell: Mapping[tuple[str, str], int]
    videos_by_type: Mapping[str, int]

    def as_counts(self) -> dict[str, int]:
        """Flat counts keyed like :data:`OFFICIAL_COUNTS`."""
        out = {"videos": self.videos, "tasks": self.tasks}
        for vt in VIDEO_TYPES:
            out[f"videos/{vt}"] = self.videos_by_type.get(vt, 0)
            out[f"tasks/{vt}"] = self.by_type.get(vt, 0)
        for tt in TASK_TYPES:
            out[f"tasks/{tt}"] = self.by_task_type.get(tt, 0)
        for vt in VIDEO_TYPES:
            for tt in TASK_TYPES:
                out[f"tasks/{vt}/{tt}"] = self.by_cell.get((vt, tt), 0)
        return out

    def differences_from_official(self) -> list[str]:
        """One line per count that differs from the official release (empty: same)."""
        mine = self.as_counts()
        return [
            f"{key}: {mine.get(key, 0)} here, {value} in the official release"
            for key, value in OFFICIAL_COUNTS.items()
            if mine.get(key, 0) != value
        ]

    def table(self) -> list[dict[str, Any]]:
        """Rows ``type, videos, reappear, revisit, tasks`` plus a ``total`` row."""
        rows: list[dict[str, Any]] = [
            {
                "type": vt,
                "videos": self.videos_by_type.get(vt, 0),
                **{tt: self.by_cell.get((vt, tt), 0) for tt in TASK_TYPES},
                "tasks": self.by_type.get(vt, 0),
            }
            for vt in VIDEO_TYPES
        ]
        rows.append(
            {
                "type": "total",
                "videos": self.videos,
                **{tt: self.by_task_type.get(tt, 0) for tt in TASK_TYPES},
                "tasks": self.tasks,
            }
        )
        return rows


def dataset_stats(ds: CMBenchDataset) -> CMBenchStats:
    """Count tasks by ``type`` x ``task_type`` and distinct videos.

    The official release has 58 videos (50 synthetic, 8 real) and 116 tasks: 77
    reappear + 39 revisit, 102 synthetic + 14 real (see :data:`OFFICIAL_COUNTS` and
    :meth:`CMBenchStats.differences_from_official`).

    Args:
        ds: a loaded dataset.

    Returns:
        The counts.
    """
    video_type: dict[str, str] = {}
    for t in ds.tasks:
        video_type.setdefault(t.video, t.type)
    return CMBenchStats(
        tasks=len(ds.tasks),
        videos=len(video_type),
        # Plain dicts: a Counter would answer 0, not KeyError, for a type the dataset lacks.
        by_type=dict(Counter(t.type for t in ds.tasks)),
        by_task_type=dict(Counter(t.task_type for t in ds.tasks)),
        by_cell=dict(Counter((t.type, t.task_type) for t in ds.tasks)),
        videos_by_type=dict(Counter(video_type.values())),
    )
