"""CMBench reference resolution: pin a reference annotation to a decoded frame and a pixel box.

The annotated ``frame_index`` wins when present; otherwise the frame on screen at
``timestamp_seconds`` is found from the video's real presentation timestamps, so
variable-frame-rate and offset-PTS files resolve correctly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from vidmem.benchmarks.cmbench.schema import (
    CMBenchDataset,
    CMBenchReference,
    CMBenchTask,
    Problem,
)
from vidmem.benchmarks.jsonl_dataset import excerpt
from vidmem.errors import UserInputError
from vidmem.io.boxes import normalized_to_pixel
from vidmem.io.video import VideoInfo, index_at_time, probe

__all__ = ["ResolvedReference", "resolve_reference", "resolve_references"]


@dataclass(frozen=True)
class ResolvedReference:
    """A reference annotation pinned to one decoded frame and a pixel box.

    Attributes:
        frame_index: frame to read (presentation order, 0-based).
        box_px: ``(x0, y0, x1, y1)`` half-open pixel box inside that frame.
        note: a warning about the annotation (e.g. frame index and timestamp disagree),
            or ``None``.
        task_id: the task.
        reference: position of the reference in ``task.references``.
        source: ``"frame_index"`` or ``"timestamp"``: which annotation chose the frame.
        time_seconds: presentation time of the chosen frame, relative to frame 0.
    """

    frame_index: int
    box_px: tuple[int, int, int, int]
    note: str | None = None
    task_id: str = ""
    reference: int = 0
    source: Literal["frame_index", "timestamp"] = "frame_index"
    time_seconds: float = 0.0


def _reference_position(task: CMBenchTask, ref: CMBenchReference | int) -> int:
    if isinstance(ref, int) and not isinstance(ref, bool):
        if not 0 <= ref < len(task.references):
            raise UserInputError(
                f"task {excerpt(task.task_id, quote=False)}: reference {ref} does not exist; "
                f"the task has {len(task.references)} reference(s)",
                hint="pass a position 0 <= k < len(task.references) or the reference itself",
            )
        return ref
    for k, r in enumerate(task.references):
        if r is ref:
            return k
    for k, r in enumerate(task.references):
        if r == ref:
            return k
    raise UserInputError(
        f"task {excerpt(task.task_id, quote=False)}: the reference passed is not one of the "
        "task's references",
        hint="pass an element of task.references or its position",
    )


def try_resolve_reference(
    task: CMBenchTask, k: int, info: VideoInfo, line: int | None = None
) -> tuple[ResolvedReference | None, list[Problem]]:
    """Resolve ``task.references[k]`` against ``info``, reporting problems instead of raising.

    Returns ``(resolved, problems)``; ``resolved`` is ``None`` when a problem is an error.
    ``line`` is the metadata line the problems name. :func:`resolve_reference` raises on
    those problems; the validator of :mod:`vidmem.benchmarks.cmbench.data` lists them.
    """
    ref = task.references[k]
    name = f"references[{k}]"
    where = excerpt(task.task_id, quote=False)
    problems: list[Problem] = []
    t = float(ref.timestamp_seconds)
    ts_index = index_at_time(info, t) if 0 <= t < info.duration_seconds else None
    note: str | None = None
    valid_times = f"valid times are 0 <= t < {info.duration_seconds:.6f} s"
    if ref.frame_index is not None:
        fi = ref.frame_index
        if fi >= info.n_frames:
            problems.append(
                Problem(
                    where,
                    f"{name}.frame_index",
                    f"frame_index {fi} is outside the video {info.path}, which has "
                    f"{info.n_frames} frames (0..{info.n_frames - 1}); check the annotation "
                    "or that the video is the released file",
                    "error",
                    line,
                )
            )
            return None, problems
        index, source = fi, "frame_index"
        if ts_index is None:
            note = (
                f"{name}: timestamp_seconds {t} lies outside the video ({valid_times}); "
                "frame_index is used"
            )
        elif abs(ts_index - fi) > 1:
            note = (
                f"{name}: frame_index {fi} and timestamp_seconds {t} (frame {ts_index} is on "
                f"screen then) disagree by {abs(ts_index - fi)} frames; frame_index is used"
            )
    else:
        if ts_index is None:
            problems.append(
                Problem(
                    where,
                    f"{name}.timestamp_seconds",
                    f"timestamp_seconds {t} lies outside the video {info.path} "
                    f"({valid_times}) and there is no frame_index",
                    "error",
                    line,
                )
            )
            return None, problems
        index, source = ts_index, "timestamp"
    if note is not None:
        problems.append(Problem(where, name, note, "warning", line))
    box = normalized_to_pixel(ref.bbox_xyxy_normalized, info.width, info.height)
    resolved = ResolvedReference(
        frame_index=index,
        box_px=box,
        note=note,
        task_id=task.task_id,
        reference=k,
        source=source,  # type: ignore[arg-type]
        time_seconds=info.frame_times[index],
    )
    return resolved, problems


def resolve_reference(
    task: CMBenchTask, ref: CMBenchReference | int, video_info: VideoInfo
) -> ResolvedReference:
    """Pin a reference annotation to a frame index and an integer pixel box.

    The frame is ``ref.frame_index`` when annotated; otherwise the frame on screen at
    ``ref.timestamp_seconds`` (seconds from the first frame), found from the video's
    real presentation timestamps with :func:`vidmem.io.video.index_at_time`, so
    variable-frame-rate and offset-PTS files resolve correctly. When both are given and
    the timestamp points more than one frame away from the index (or outside the
    video), the index is kept and :attr:`ResolvedReference.note` says so.

    The box is ``normalized_to_pixel(bbox, W, H)``: multiplied by ``[W, H, W, H]``,
    snapped within ``1e-8`` of an integer, top-left floored, bottom-right ceiled,
    clipped to the frame.

    Args:
        task: the task.
        ref: one of ``task.references``, or its position.
        video_info: :func:`vidmem.io.video.probe` of the task's context video.

    Returns:
        The resolved reference.

    Raises:
        UserInputError: ``frame_index >= n_frames``, or a timestamp-only reference
            outside the video; the message names the task and the field.
    """
    k = _reference_position(task, ref)
    resolved, problems = try_resolve_reference(task, k, video_info)
    if resolved is None:
        p = problems[0]
        raise UserInputError(
            f"task {excerpt(task.task_id, quote=False)}: field '{p.field}': {p.message}",
            hint="fix the annotation in metadata.jsonl, or re-download the context video",
        )
    return resolved


def resolve_references(ds: CMBenchDataset, task: CMBenchTask | str) -> list[ResolvedReference]:
    """Probe a task's context video and resolve all of its references.

    Args:
        ds: the dataset.
        task: a task or its id.

    Returns:
        One :class:`ResolvedReference` per reference, in order.

    Raises:
        UserInputError, VideoError: the video cannot be read or a reference is outside it.
    """
    t = ds.task(task) if isinstance(task, str) else task
    info = probe(ds.video_path(t))
    return [resolve_reference(t, k, info) for k in range(len(t.references))]
