"""All five quality controls of one clip, sharing the flows they both need.

Part of :mod:`vidmem.metrics.clip_quality` (the overview and rules are there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from vidmem.metrics.clip_quality.consistency import consistency_of
from vidmem.metrics.clip_quality.flicker import frame_differences
from vidmem.metrics.clip_quality.frames import Embed, Flow, as_clip
from vidmem.metrics.clip_quality.motion import (
    dynamic_degree_from,
    motion_smoothness_from,
    pair_flows,
)

__all__ = ["METRICS", "ClipQuality", "clip_quality"]

#: the per-clip quality fields, in report order
METRICS = ("subject_consistency", "background_consistency", "temporal_flickering",
           "motion_smoothness", "dynamic_degree")


@dataclass(frozen=True)
class ClipQuality:
    """One clip's quality controls (``None``: skipped, no embedder or too few frames).

    Attributes:
        subject_consistency, background_consistency: 0..1, VBench's formula.
        temporal_flickering: 0..1, 1 = no change between frames.
        motion_smoothness: 0..1, 1 = odd frames are the midpoints of their neighbours.
        dynamic_degree: whether the clip moves.
        n_frames, fps: what was scored.
    """

    subject_consistency: float | None
    background_consistency: float | None
    temporal_flickering: float
    motion_smoothness: float | None
    dynamic_degree: bool
    n_frames: int
    fps: float

    def to_dict(self) -> dict[str, float | bool | int | None]:
        return asdict(self)


def _consistency(clip: np.ndarray, embed: Embed | None, what: str) -> float | None:
    return None if embed is None else consistency_of(clip, embed, what)


def clip_quality(frames: np.ndarray | Sequence[np.ndarray], fps: float, *, flow: Flow,
                 subject_embed: Embed | None = None,
                 background_embed: Embed | None = None) -> ClipQuality:
    """Score one clip on the five VBench-style controls (rules in ``PROTOCOL``).

    Args:
        frames: ``(T, H, W, 3)`` RGB, 0..255, ``T >= 2``.
        fps: the clip's frame rate (dynamic degree's sampling and threshold).
        flow: a flow function (offline: ``FarnebackFlow()``); each frame pair's flow is
            computed once and shared by motion smoothness and dynamic degree.
        subject_embed, background_embed: frames -> vectors (DINO's and CLIP's places);
            ``None`` skips that metric (its field is ``None``).

    Example:
        >>> still = np.full((4, 8, 8, 3), 70, np.uint8)
        >>> q = clip_quality(still, 8, flow=lambda a, b: np.zeros((8, 8, 2)),
        ...                  subject_embed=lambda fs: [[1.0, 2.0]] * len(fs))
        >>> q.subject_consistency, q.background_consistency, q.temporal_flickering
        (1.0, None, 1.0)
        >>> q.motion_smoothness, q.dynamic_degree
        (1.0, False)
    """
    clip = as_clip(frames, what="clip quality")
    flows = pair_flows(clip, flow)
    return ClipQuality(
        subject_consistency=_consistency(clip, subject_embed, "subject consistency"),
        background_consistency=_consistency(clip, background_embed, "background consistency"),
        temporal_flickering=float((255.0 - frame_differences(clip).mean()) / 255.0),
        motion_smoothness=motion_smoothness_from(clip, flows) if clip.shape[0] >= 3 else None,
        dynamic_degree=dynamic_degree_from(clip, fps, flows).moving,
        n_frames=int(clip.shape[0]), fps=float(fps))
