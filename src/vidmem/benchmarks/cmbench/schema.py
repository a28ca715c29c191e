"""CMBench records: the task schema of ``metadata.jsonl``, validation problems, the dataset.

The pydantic models mirror one row of the official ``metadata.jsonl``; unknown fields are
kept in ``model_extra`` because a later release may add fields. Checking raw rows before
they reach these models is the job of :mod:`vidmem.benchmarks.cmbench.validate`, so
that every problem can be reported at once with its line and field.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from vidmem.benchmarks.jsonl_dataset import MAX_LISTED_ERRORS, Problem, find_row

__all__ = [
    "BENCHMARK",
    "CLIP_FIELDS",
    "CLIP_IDS",
    "MAX_FRAME_INDEX",
    "MAX_LISTED_ERRORS",
    "MAX_REFERENCES",
    "MAX_REFERENCE_SECONDS",
    "METADATA_FILE",
    "REFERENCE_FIELDS",
    "TASK_FIELDS",
    "TASK_TYPES",
    "VIDEO_TYPES",
    "CMBenchClipPrompt",
    "CMBenchDataset",
    "CMBenchReference",
    "CMBenchTask",
    "Problem",
]

#: Benchmark name (registry key, manifest ``benchmark`` field).
BENCHMARK = "cmbench"
METADATA_FILE = "metadata.jsonl"
VIDEO_TYPES = ("synthetic", "real")
TASK_TYPES = ("reappear", "revisit")
CLIP_IDS = ("01", "02", "03", "04", "05", "06")
TASK_FIELDS = (
    "type",
    "task_id",
    "scene",
    "video",
    "context_clip_prompts",
    "continue_prompt",
    "task_type",
    "target_label",
    "target_aliases",
    "references",
)
REFERENCE_FIELDS = ("timestamp_seconds", "frame_index", "bbox_xyxy_normalized")

# Input limits (errors): a reference points into a context video of about a minute
# (PROTOCOLS.md section 3); a value far past any such video is a typo or a hostile row.
#: the latest reference time, seconds: an hour is sixty times the release's context videos
MAX_REFERENCE_SECONDS = 3600.0
#: the largest reference frame index: an hour at 240 fps
MAX_FRAME_INDEX = 3600 * 240
#: the most references one task may hold (the release's tasks hold one or a few)
MAX_REFERENCES = 100
CLIP_FIELDS = ("clip_id", "clip_prompt")


def video_stem(video: str) -> str:
    """The file stem of a release video path: ``syn_001`` for ``videos/synthetic/syn_001.mp4``."""
    # Release paths are POSIX, but a row written on Windows may use backslashes.
    return PurePosixPath(video.replace("\\", "/")).stem


# --------------------------------------------------------------------------- models


class CMBenchClipPrompt(BaseModel):
    """One of the six chronological descriptions of the context video.

    Attributes:
        clip_id: ``"01"`` .. ``"06"``.
        clip_prompt: what happens in that part of the context.
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    clip_id: str
    clip_prompt: str


class CMBenchReference(BaseModel):
    """Where the target is visible in the context video.

    Attributes:
        timestamp_seconds: reference time in seconds from the first frame of the video.
        frame_index: 0-based frame index (presentation order) when annotated, else
            ``None``; it wins over the timestamp.
        bbox_xyxy_normalized: ``(x0, y0, x1, y1)`` as fractions of the frame width and
            height, origin top-left.
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    timestamp_seconds: float
    frame_index: int | None = None
    bbox_xyxy_normalized: tuple[float, float, float, float]


class CMBenchTask(BaseModel):
    """One CMBench task: a context video, a continuation instruction and a target.

    Fields are those of the official ``metadata.jsonl``; unknown fields are kept in
    ``model_extra`` (see :attr:`extra_fields`).

    Attributes:
        type: ``synthetic`` or ``real``.
        task_id: unique id, ``{video_id}_{task_type}_{NN}`` in the release.
        scene: short scene description (not unique).
        video: path of the context video relative to the dataset root.
        context_clip_prompts: six descriptions of the context, in chronological order.
        continue_prompt: the instruction a generator receives.
        task_type: ``reappear`` or ``revisit``.
        target_label: English name of the target (detector query).
        target_aliases: other names of the target.
        references: where the target is visible in the context (one per task in the
            release).
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    type: Literal["synthetic", "real"]
    task_id: str
    scene: str
    video: str
    context_clip_prompts: tuple[CMBenchClipPrompt, ...]
    continue_prompt: str
    task_type: Literal["reappear", "revisit"]
    target_label: str
    target_aliases: tuple[str, ...]
    references: tuple[CMBenchReference, ...]

    @property
    def video_id(self) -> str:
        """The context video's file stem, e.g. ``syn_001``."""
        return video_stem(self.video)

    @property
    def extra_fields(self) -> dict[str, Any]:
        """Fields of the row that this version of vidmem does not know."""
        return dict(self.model_extra or {})


# --------------------------------------------------------------------------- dataset


@dataclass(frozen=True)
class CMBenchDataset:
    """A validated CMBench release.

    Attributes:
        root: absolute path of the dataset folder.
        tasks: tasks in file order.
        warnings: validation warnings (the dataset loaded despite them).
    """

    root: Path
    tasks: tuple[CMBenchTask, ...]
    warnings: tuple[Problem, ...] = ()

    def __len__(self) -> int:
        return len(self.tasks)

    def __iter__(self) -> Iterator[CMBenchTask]:
        return iter(self.tasks)

    @property
    def task_ids(self) -> tuple[str, ...]:
        """Task ids in file order."""
        return tuple(t.task_id for t in self.tasks)

    @property
    def videos(self) -> tuple[str, ...]:
        """Distinct context-video paths (relative to :attr:`root`) in first-use order."""
        return tuple(dict.fromkeys(t.video for t in self.tasks))

    def video_path(self, task: CMBenchTask | str) -> Path:
        """Absolute path of a task's context video."""
        t = self.task(task) if isinstance(task, str) else task
        return self.root / t.video

    def task(self, task_id: str) -> CMBenchTask:
        """The task with this id.

        Raises:
            UserInputError: no such task (with close matches).
        """
        task: CMBenchTask = find_row(self.tasks, task_id, noun="task",
                                     source=self.root / METADATA_FILE)
        return task
