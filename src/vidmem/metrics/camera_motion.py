"""Camera compliance of a memory-loop video: did the camera move when the loop says so?

Revisit fidelity compares a frame with the earlier frame the camera came back to. A
video whose camera never moves (the start image held for 60 s) makes every such pair
identical and scores a near-perfect fidelity without remembering anything. A loop
tests memory only if the camera did go away, so vidmem (beyond the protocol card)
measures the motion in the pixels and compares it with the loop's plan.

**Measured motion** (:func:`vidmem.benchmarks.memory_loop.camera_flow.flow_motion`,
which holds the image work so that this module stays pure). Frames ``step`` apart
(about :data:`STEP_SECONDS`) are turned grey, downscaled to 160 pixels wide (area
averaging) and compared with OpenCV's dense Farneback optical flow (the
``classic/farneback`` backend's settings). The motion of a step is the mean flow magnitude
in frame widths, divided by the step's seconds: *frame widths per second*. A camera
turn moves every pixel; a dolly moves pixels outward from the centre; both register.
On photographs the flow is exact to about 8 px a step (5% of the width); a faster pan
is under-measured, which a gate on a small floor tolerates.

**Planned motion.** The loop's planned camera track on the same frame grid
(:func:`vidmem.metrics.loop_paths.planned_c2w`), and per step the protocol's pose
distance between the two planned poses (translation over the loop's largest
departure plus degrees / 180, :mod:`vidmem.metrics.pose_distance`). A step is a
*planned move* when its distance is at least :data:`MOVING_FRACTION` of the plan's
fastest step (so the eased starts and stops of each leg, where the plan itself
hardly moves, and the holds are not asked to move).

**Gate.** The video is ``evaluable`` when it moved (at least :data:`MIN_RATE` frame
widths per second) on at least :data:`MIN_MOVING_SHARE` of the planned moves, else
``not_evaluable`` with the reason. The rank correlation of measured and planned step
motion is kept as a diagnostic (a real generator need not keep the plan's pace, so
it does not gate).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
from scipy.stats import spearmanr

from vidmem.errors import UserInputError
from vidmem.metrics.pose_distance import DEFAULT_ROTATION_WEIGHT, pose_distance_matrix

__all__ = [
    "MIN_MOVING_SHARE",
    "MIN_RATE",
    "MOVING_FRACTION",
    "STEP_SECONDS",
    "CameraGate",
    "camera_gate",
    "planned_step_motion",
    "step_frames",
]

#: Frames are compared about this many seconds apart (at least one frame).
STEP_SECONDS = 0.25
#: A step moved when the mean flow is at least this many frame widths per second.
MIN_RATE = 0.002
#: A step is a planned move when its pose distance is >= this share of the fastest.
MOVING_FRACTION = 0.25
#: The video is evaluable when it moved on at least this share of the planned moves.
MIN_MOVING_SHARE = 0.5


def step_frames(n_frames: int, fps: float, *, step_seconds: float = STEP_SECONDS) -> np.ndarray:
    """Indices of the frames compared: every ``max(1, round(fps * step_seconds))``-th.

    Example:
        >>> step_frames(9, 8.0).tolist()
        [0, 2, 4, 6, 8]
    """
    step = max(1, round(float(fps) * step_seconds))
    return np.arange(0, int(n_frames), step)


def planned_step_motion(c2w: np.ndarray, indices: np.ndarray, *,
                        rotation_weight: float = DEFAULT_ROTATION_WEIGHT) -> np.ndarray:
    """Protocol pose distance between consecutive sampled frames of a planned track.

    Args:
        c2w: ``(N, 4, 4)`` planned camera-to-world track, one per video frame.
        indices: increasing sampled frame indices (:func:`step_frames`).
        rotation_weight: weight of the rotation term (the protocol's 1).

    Returns:
        ``(len(indices) - 1,)`` float64 distances.

    Example:
        >>> from vidmem.metrics.loop_paths import planned_c2w
        >>> d = planned_step_motion(planned_c2w("yaw_loop_360", 5), np.arange(5))
        >>> d.round(4).tolist()  # 0 -> 56.25 -> 180 -> 303.75 -> 360 degrees
        [0.3125, 0.6875, 0.6875, 0.3125]
    """
    idx = np.asarray(indices, np.int64)
    track = np.asarray(c2w, np.float64)
    # The distance normalises translation by the track's largest departure from frame 0,
    # so the whole plan is passed and only the consecutive entries are read.
    dist = pose_distance_matrix(track, rotation_weight=rotation_weight)
    return np.asarray(dist[idx[:-1], idx[1:]], np.float64)


@dataclass(frozen=True)
class CameraGate:
    """Outcome of :func:`camera_gate`.

    Attributes:
        status: ``evaluable`` or ``not_evaluable``.
        reason: ``None`` when evaluable, else why (starts with ``near_static:`` or
            ``no_planned_motion:`` / ``too_short:``).
        moving_share: share of the planned moves on which the video moved (``None``
            without planned moves).
        n_steps: steps measured; ``n_planned_moves``: of which the plan moves.
        median_rate_planned_moves: median measured motion over the planned moves
            (frame widths per second); ``median_rate_planned_still`` over the others.
        rank_correlation: Spearman correlation of measured and planned step motion
            (diagnostic; ``None`` when either is constant).
        step_seconds: seconds per step.
    """

    status: Literal["evaluable", "not_evaluable"]
    reason: str | None
    moving_share: float | None
    n_steps: int
    n_planned_moves: int
    median_rate_planned_moves: float | None
    median_rate_planned_still: float | None
    rank_correlation: float | None
    step_seconds: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _median(x: np.ndarray) -> float | None:
    return float(np.median(x)) if x.size else None


def camera_gate(measured: Iterable[float], planned: Iterable[float], step_seconds: float, *,
                min_rate: float = MIN_RATE, moving_fraction: float = MOVING_FRACTION,
                min_moving_share: float = MIN_MOVING_SHARE) -> CameraGate:
    """Whether a video moved where its planned camera path moves.

    Args:
        measured: per step, the measured motion (frame widths, :func:`flow_motion`).
        planned: per step, the planned pose distance (:func:`planned_step_motion`).
        step_seconds: seconds between the two frames of a step (``> 0``).
        min_rate: frame widths per second from which a step counts as moving.
        moving_fraction: share of the fastest planned step that makes a planned move.
        min_moving_share: share of planned moves that must move for ``evaluable``.

    Returns:
        A :class:`CameraGate`.

    Raises:
        UserInputError: the two sequences differ in length, hold NaN, or
            ``step_seconds`` is not positive.

    Example:
        >>> plan = [0.0, 0.1, 0.2, 0.2, 0.1, 0.0]
        >>> camera_gate([0.0, 0.02, 0.05, 0.05, 0.02, 0.0], plan, 0.25).status
        'evaluable'
        >>> g = camera_gate([0.0] * 6, plan, 0.25)  # a frozen video
        >>> g.status, g.moving_share
        ('not_evaluable', 0.0)
        >>> g.reason.split(":")[0]
        'near_static'
    """
    m = np.asarray(list(measured), np.float64)
    p = np.asarray(list(planned), np.float64)
    if m.shape != p.shape or m.ndim != 1:
        raise UserInputError(f"camera_gate: {m.size} measured steps but {p.size} planned",
                             hint="measure the frames the plan is sampled on (step_frames)")
    if not (np.isfinite(m).all() and np.isfinite(p).all()):
        raise UserInputError("camera_gate: motion holds NaN or infinity",
                             hint="measure on decodable frames of one size")
    if not (isinstance(step_seconds, (int, float)) and math.isfinite(step_seconds)
            and step_seconds > 0):
        raise UserInputError(f"camera_gate: step_seconds must be > 0, found {step_seconds!r}",
                             hint="pass the seconds between the compared frames")
    rate = m / float(step_seconds)

    def gate(ok: bool, why: str | None, share: float | None, moves: np.ndarray) -> CameraGate:
        rho = None
        if m.size >= 3 and np.ptp(m) > 0 and np.ptp(p) > 0:
            r = float(spearmanr(m, p).statistic)
            rho = r if math.isfinite(r) else None
        return CameraGate("evaluable" if ok else "not_evaluable", None if ok else why, share,
                          int(m.size), int(moves.sum()), _median(rate[moves]),
                          _median(rate[~moves]), rho, float(step_seconds))

    if m.size == 0:
        return gate(False, "too_short: the video has fewer than two sampled frames", None,
                    np.zeros(0, bool))
    peak = float(p.max())
    if peak <= 0:
        return gate(False, "no_planned_motion: the planned camera path never moves, so camera "
                    "compliance cannot be checked", None, np.zeros(p.size, bool))
    moves = p >= moving_fraction * peak
    moved = rate[moves] >= min_rate
    share = float(moved.mean())
    if share >= min_moving_share:
        return gate(True, None, share, moves)
    return gate(False, f"near_static: the video moved (>= {min_rate:g} frame widths/s) on "
                f"{int(moved.sum())} of {int(moves.sum())} steps where the planned camera path "
                f"moves ({share:.0%}, need {min_moving_share:.0%}); a camera that does not go "
                "away and come back tests no memory", share, moves)
