"""Motion smoothness and dynamic degree from a flow function (VBench's rules).

Part of :mod:`vidmem.metrics.clip_quality` (the overview and rules are there). VBench
interpolates with AMT and measures motion with RAFT; here both rest on the flow
function passed in (offline: OpenCV Farneback,
``vidmem.models.backends.classic_flow.FarnebackFlow``), as ``PROTOCOL`` says.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy import ndimage

from vidmem.errors import UserInputError
from vidmem.metrics.clip_quality.frames import Flow, as_clip, mean_abs_diff

#: (i, j) -> the flow from frame i to frame j of one clip
PairFlow = Callable[[int, int], np.ndarray]

__all__ = ["DynamicDegree", "backward_warp", "dynamic_degree", "dynamic_degree_detail",
           "dynamic_degree_from", "flow_peak", "midpoint_frame", "motion_smoothness",
           "motion_smoothness_from", "pair_flows"]


def pair_flows(clip: np.ndarray, flow: Flow) -> PairFlow:
    """A memoised ``(i, j) -> flow(clip[i], clip[j])`` with its shape checked, so two
    metrics of one clip never compute a flow twice."""
    h, w = clip.shape[1:3]

    @cache
    def get(i: int, j: int) -> np.ndarray:
        f = np.asarray(flow(clip[i], clip[j]), dtype=np.float64)
        if f.shape != (h, w, 2) or not np.isfinite(f).all():
            raise UserInputError(f"flow: frames {i} -> {j} gave shape {f.shape} (finite: "
                                 f"{bool(np.isfinite(f).all())}); expected ({h}, {w}, 2)",
                                 hint="pass a flow function (frame0, frame1) -> (H, W, 2)")
        return f

    return get


def backward_warp(image: np.ndarray, flow: np.ndarray) -> np.ndarray:
    """``out(y, x) = image(y + dy, x + dx)``, bilinear, coordinates clamped to the border.

    Example:
        >>> img = np.arange(4.0).reshape(1, 4, 1)
        >>> backward_warp(img, np.full((1, 4, 2), [0.5, 0.0]))[0, :, 0].tolist()
        [0.5, 1.5, 2.5, 3.0]
    """
    img = np.asarray(image, dtype=np.float64)
    h, w = img.shape[:2]
    yy, xx = np.mgrid[0:h, 0:w]
    coords = np.stack([np.clip(yy + flow[..., 1], 0, h - 1), np.clip(xx + flow[..., 0], 0, w - 1)])
    if img.ndim == 2:
        return ndimage.map_coordinates(img, coords, order=1, mode="nearest")
    return np.stack([ndimage.map_coordinates(img[..., c], coords, order=1, mode="nearest")
                     for c in range(img.shape[2])], axis=-1)


def midpoint_frame(f0: np.ndarray, f2: np.ndarray, flow02: np.ndarray,
                   flow20: np.ndarray) -> np.ndarray:
    """The frame halfway between ``f0`` and ``f2`` (uint8), from their two flows.

    Super SloMo's approximation at t = 1/2: ``F_t0 = -F02/4 + F20/4`` and
    ``F_t2 = F02/4 - F20/4``; the midpoint is the mean of both frames warped to it.

    Example:
        >>> f0 = np.zeros((1, 6, 3), np.uint8); f0[0, 1] = 200
        >>> f2 = np.zeros((1, 6, 3), np.uint8); f2[0, 3] = 200
        >>> fl = np.zeros((1, 6, 2)); fl[..., 0] = 2.0
        >>> midpoint_frame(f0, f2, fl, -fl)[0, :, 0].tolist()
        [0, 0, 200, 0, 0, 0]
    """
    ft0 = -0.25 * flow02 + 0.25 * flow20
    ft2 = 0.25 * flow02 - 0.25 * flow20
    mid = 0.5 * (backward_warp(f0, ft0) + backward_warp(f2, ft2))
    return np.clip(np.rint(mid), 0, 255).astype(np.uint8)


def motion_smoothness_from(clip: np.ndarray, flows: PairFlow) -> float:
    """:func:`motion_smoothness` of a checked clip with shared :func:`pair_flows`."""
    diffs = []
    for k in range(1, clip.shape[0] - 1, 2):  # each odd frame between two kept frames
        mid = midpoint_frame(clip[k - 1], clip[k + 1], flows(k - 1, k + 1),
                             flows(k + 1, k - 1))
        diffs.append(mean_abs_diff(clip[k], mid))
    return float((255.0 - np.mean(diffs)) / 255.0)


def motion_smoothness(frames: np.ndarray | Sequence[np.ndarray], flow: Flow) -> float:
    """VBench motion smoothness with a flow-based interpolator: 1.0 when every odd frame
    is exactly the midpoint of its neighbours.

    Example:
        >>> still = np.full((5, 4, 4, 3), 90, np.uint8)
        >>> motion_smoothness(still, lambda a, b: np.zeros((4, 4, 2)))
        1.0
    """
    clip = as_clip(frames, min_frames=3, what="motion smoothness")
    return motion_smoothness_from(clip, pair_flows(clip, flow))


def flow_peak(flow: np.ndarray) -> float:
    """VBench's motion of one frame pair: the mean of the top 5% flow magnitudes
    (``int(H * W * 0.05)`` pixels, at least one).

    Example:
        >>> f = np.zeros((10, 10, 2)); f[0, :5] = [3.0, 4.0]
        >>> flow_peak(f)
        5.0
    """
    mag = np.hypot(flow[..., 0], flow[..., 1]).ravel()
    k = max(1, int(mag.size * 0.05))
    return float(np.partition(mag, mag.size - k)[mag.size - k:].mean())


@dataclass(frozen=True)
class DynamicDegree:
    """Whether a clip moves, and the numbers behind the call.

    Attributes:
        moving: at least ``needed`` sampled pairs have a peak over ``threshold``.
        peaks: :func:`flow_peak` of each sampled pair, pixels.
        threshold: pixels, ``max(1, 8 / fps) * 6 * min(H, W) / 256``.
        needed: ``max(1, round(4 * n_sampled / 16))`` pairs.
        interval: frames between samples, ``max(1, round(fps / 8))``.
    """

    moving: bool
    peaks: tuple[float, ...]
    threshold: float
    needed: int
    interval: int

    def to_dict(self) -> dict[str, object]:
        return {"moving": self.moving, "peaks": list(self.peaks), "threshold": self.threshold,
                "needed": self.needed, "interval": self.interval}


def dynamic_degree_from(clip: np.ndarray, fps: float, flows: PairFlow) -> DynamicDegree:
    """:func:`dynamic_degree_detail` of a checked clip with shared :func:`pair_flows`."""
    if isinstance(fps, bool) or not isinstance(fps, int | float) or not fps > 0:
        raise UserInputError(f"dynamic degree: fps must be a number > 0, found {fps!r}",
                             hint="pass the clip's frame rate, e.g. fps=16")
    interval = max(1, round(fps / 8))
    idx = list(range(0, clip.shape[0], interval))
    threshold = max(1.0, 8.0 / fps) * 6.0 * (min(clip.shape[1:3]) / 256.0)
    needed = max(1, round(4 * (len(idx) / 16.0)))
    peaks = tuple(flow_peak(flows(i, j)) for i, j in zip(idx[:-1], idx[1:], strict=True))
    moving = sum(p > threshold for p in peaks) >= needed
    return DynamicDegree(bool(moving), peaks, float(threshold), int(needed), int(interval))


def dynamic_degree_detail(frames: np.ndarray | Sequence[np.ndarray], fps: float,
                          flow: Flow) -> DynamicDegree:
    """VBench's dynamic-degree call of one clip with its numbers (rules in ``PROTOCOL``).

    Example:
        >>> still = np.zeros((17, 256, 256, 3), np.uint8)
        >>> d = dynamic_degree_detail(still, 16, lambda a, b: np.zeros((256, 256, 2)))
        >>> d.moving, d.threshold, d.needed, d.interval, len(d.peaks)
        (False, 6.0, 2, 2, 8)
    """
    clip = as_clip(frames, what="dynamic degree")
    return dynamic_degree_from(clip, fps, pair_flows(clip, flow))


def dynamic_degree(frames: np.ndarray | Sequence[np.ndarray], fps: float, flow: Flow) -> bool:
    """Whether the clip moves (VBench's dynamic degree; :func:`dynamic_degree_detail`).

    Example:
        >>> clip = np.zeros((9, 64, 64, 3), np.uint8)
        >>> dynamic_degree(clip, 8, lambda a, b: np.full((64, 64, 2), 3.0))
        True
    """
    return dynamic_degree_detail(frames, fps, flow).moving
