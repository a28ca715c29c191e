"""Revisit pairs: frames of a camera loop that look back at a place seen earlier.

A memory-loop video turns or moves the camera away from its start and brings it back.
A *revisit pair* ``(i, j)`` matches a later frame ``j`` with an earlier frame ``i``
taken from (nearly) the same camera pose, after the camera has really been somewhere
else in between. Comparing the two frames (:mod:`vidmem.metrics.fidelity`) asks
whether the generator still remembers the place; the gap between them feeds the
half-life fit (:mod:`vidmem.stats.halflife`).

Poses are camera-to-world ``4x4`` matrices, one per frame. The pose distance of
frames ``i`` and ``j`` is

    d(i, j) = |t_i - t_j| / L  +  rotation_weight * angle(R_i, R_j) / 180

where ``t`` is the camera position, ``L = max_k |t_k - t_0|`` is the trajectory's
largest departure from its first frame (when ``L`` is at most
``1e-6 * max(1, max_k |t_k|)`` world units, :func:`~vidmem.metrics.pose_distance.translation_cutoff`,
the camera only turned, its position jitter is ignored and the translation term is
0), and ``angle`` is the geodesic angle
between the two rotations in degrees. ``d`` is unitless: 1.0 is "as far as the
camera ever went from the start" or a 180 degree turn.

Pairing rule (protocol defaults in brackets). Frame ``i`` is a *candidate* for a
later frame ``j`` when both hold:

* **gap**: ``(frame_j - frame_i) / fps >= min_gap_seconds`` [1 s], native indices;
* **match**: ``d(i, j) <= threshold`` [0.15].

``j`` is paired with the candidate *nearest in pose*. Ties (distances within ``1e-9``
of the smallest, as for a camera that pauses or passes the same view twice) go to the
**earliest** candidate, the first time the view was seen, as in the protocol's
reference implementation (WorldAtlas Arena ``memory_loop``, which takes the first
minimum); a camera that rests on a view after coming back to it therefore pairs
every resting frame with the first sighting, at growing gaps. The pair is then
**kept only if** the excursion holds:

* **excursion**: some frame strictly between ``i`` and ``j`` is at least
  ``excursion_factor * threshold`` [3 x 0.15 = 0.45] away from ``i``, i.e. the camera
  left the view of ``i`` and came back.

Otherwise ``j`` gets no pair at all; the excursion never makes a farther frame the
match. This is the reading of PROTOCOLS.md section 2, "pair each frame j with the
nearest earlier frame i that is at least 1 s older and within pose distance 0.15
(...), and only if the camera went at least 3 x 0.15 away between i and j": the
sentence chooses ``i`` by the gap and the distance alone, and "and only if" is a
condition on keeping that pair, not a third filter on the candidates. Read as a
filter, a return frame whose exact earlier view fails the excursion (e.g. the turning
point of an out-and-back) would be paired with another frame up to 0.15 away, a
near miss that loses most of its SSIM even under a perfect memory; with this reading
every kept pair is the best view match there is. Threshold comparisons allow
``1e-9`` of float round-off (a 27 degree turn is "within 0.15"). Each ``j`` has at
most one pair; one ``i`` may serve several ``j``.

Cap: at most ``max_pairs`` [24] pairs are kept, the nearest in pose of each of
``max_pairs`` equal-width gap buckets (shortest and longest gap always kept), by
:func:`spread_by_gap`; fewer remain when some buckets are empty.

The pairing is vectorised over blocks of rows of the distance matrix (float64, about
``2**18`` entries at a time), so a 2000-frame track needs tens of MB, not the full
``N x N`` float64 matrix and its temporaries at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vidmem.errors import UserInputError
from vidmem.metrics.pose_distance import (
    DEFAULT_ROTATION_WEIGHT,
    PoseTrack,
    check_poses,
    check_positive,
    pose_distance_matrix,
)
from vidmem.metrics.revisit_pairing import (
    CMP_EPS,
    DEFAULT_MAX_PAIRS,
    RevisitPair,
    checked_pairs,
    spread_by_gap,
)

__all__ = [
    "DEFAULT_EXCURSION_FACTOR",
    "DEFAULT_MATCH_THRESHOLD",
    "DEFAULT_MAX_PAIRS",
    "DEFAULT_MIN_GAP_SECONDS",
    "DEFAULT_ROTATION_WEIGHT",
    "ReturnGate",
    "RevisitPair",
    "planned_pairs",
    "pose_distance_matrix",
    "return_gate",
    "revisit_pairs",
    "spread_by_gap",
]

# DEFAULT_MAX_PAIRS and DEFAULT_ROTATION_WEIGHT are defined beside the code that
# needs them (revisit_pairing, pose_distance), so those modules never import this one.
DEFAULT_MATCH_THRESHOLD = 0.15
DEFAULT_EXCURSION_FACTOR = 3.0
DEFAULT_MIN_GAP_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class ReturnGate:
    """Did the camera leave its start and come back? A diagnostic, never averaged in.

    Attributes:
        departed: Some frame is at least ``excursion_factor * threshold`` from frame 0.
        returned: The last frame is within ``threshold`` of frame 0.
        max_departure: Largest pose distance from frame 0 (unitless).
        final_distance: Pose distance of the last frame from frame 0 (unitless).
    """

    departed: bool
    returned: bool
    max_departure: float
    final_distance: float

    @property
    def passed(self) -> bool:
        """``departed and returned``."""
        return self.departed and self.returned


def revisit_pairs(
    poses: np.ndarray,
    fps: float,
    *,
    rotation_weight: float = DEFAULT_ROTATION_WEIGHT,
    threshold: float = DEFAULT_MATCH_THRESHOLD,
    excursion_factor: float = DEFAULT_EXCURSION_FACTOR,
    min_gap_seconds: float = DEFAULT_MIN_GAP_SECONDS,
    max_pairs: int = DEFAULT_MAX_PAIRS,
) -> list[RevisitPair]:
    """Revisit pairs of a per-frame camera pose track (see the module docstring).

    Args:
        poses: Camera-to-world matrices, one per decoded frame, shape ``(N, 4, 4)``;
            row ``k`` is native frame ``k``.
        fps: Native frame rate, frames per second (``> 0``).
        rotation_weight: Weight of the rotation term of the distance (``>= 0``).
        threshold: Largest pose distance for a match (unitless, ``> 0``).
        excursion_factor: The camera must get ``excursion_factor * threshold`` away
            from ``i`` between ``i`` and ``j`` (``>= 0``).
        min_gap_seconds: Smallest gap of a pair, seconds (``>= 0``).
        max_pairs: Most pairs kept, spread over gaps by :func:`spread_by_gap`.

    Returns:
        Up to ``max_pairs`` :class:`RevisitPair`, sorted by ``(gap_seconds, j)``;
        empty when the camera never left and came back. A frame whose nearest match
        fails the excursion has no pair (frames 16 and 17 below: their exact earlier
        views at 60 and 48 degrees are less than 81 degrees from the 120 degree turn).

    Raises:
        UserInputError: on poses that are not a finite ``(N, 4, 4)`` array of rigid
            transforms, or a setting out of range.

    Example:
        >>> import numpy as np
        >>> from scipy.spatial.transform import Rotation
        >>> yaw = np.r_[np.arange(0, 121, 12), np.arange(120, -1, -12)]  # degrees
        >>> poses = np.tile(np.eye(4), (yaw.size, 1, 1))  # 22 frames, 2.2 s at 10 fps
        >>> poses[:, :3, :3] = Rotation.from_rotvec(np.radians(yaw)[:, None] * [0, 1, 0]).as_matrix()
        >>> [(p.i, p.j, p.gap_seconds) for p in revisit_pairs(poses, fps=10.0)]
        [(3, 18, 1.5), (2, 19, 1.7), (1, 20, 1.9), (0, 21, 2.1)]
    """
    where = "revisit_pairs"
    arr = check_poses(poses, where)
    return checked_pairs(
        where,
        np.arange(arr.shape[0], dtype=np.int64),
        arr,
        fps,
        rotation_weight,
        threshold,
        excursion_factor,
        min_gap_seconds,
        max_pairs,
    )


def planned_pairs(
    schedule: object,
    fps: float,
    *,
    rotation_weight: float = DEFAULT_ROTATION_WEIGHT,
    threshold: float = DEFAULT_MATCH_THRESHOLD,
    excursion_factor: float = DEFAULT_EXCURSION_FACTOR,
    min_gap_seconds: float = DEFAULT_MIN_GAP_SECONDS,
    max_pairs: int = DEFAULT_MAX_PAIRS,
) -> list[RevisitPair]:
    """Revisit pairs from a loop's *planned* camera path (the no-pose fallback).

    Same rule as :func:`revisit_pairs` (nearest match first, then the excursion
    decides whether the pair is kept), applied to the plan instead of measured
    poses. The pairs say where the camera *should* have returned, not where it did,
    so the caller must mark anything scored on them as diagnostic.

    Args:
        schedule: Either a planned pose track, shape ``(N, 4, 4)`` (row ``k`` is
            frame ``k``), or a sequence of ``(frame_index, pose_4x4)`` with native
            frame indices ``>= 0`` in strictly increasing order. With a sparse
            schedule the distance scale, matches and excursions use the listed
            frames only.
        fps: Native frame rate of the video the plan is for (``> 0``).
        rotation_weight: As in :func:`revisit_pairs`.
        threshold: As in :func:`revisit_pairs`.
        excursion_factor: As in :func:`revisit_pairs`.
        min_gap_seconds: As in :func:`revisit_pairs`.
        max_pairs: As in :func:`revisit_pairs`.

    Returns:
        Up to ``max_pairs`` :class:`RevisitPair` with native frame indices, sorted by
        ``(gap_seconds, j)``.

    Raises:
        UserInputError: on a malformed schedule (bad poses, indices not
            strictly increasing non-negative ints) or a setting out of range.

    Example:
        >>> import numpy as np
        >>> out, back = np.eye(4), np.eye(4)
        >>> out[:3, 3] = [4.0, 0.0, 0.0]  # the plan: start, go 4 units out, come back
        >>> plan = [(0, np.eye(4)), (30, out), (60, back)]
        >>> [(p.i, p.j, p.gap_seconds) for p in planned_pairs(plan, fps=30.0)]
        [(0, 60, 2.0)]
    """
    where = "planned_pairs"
    frames, poses = _read_schedule(schedule, where)
    return checked_pairs(
        where,
        frames,
        poses,
        fps,
        rotation_weight,
        threshold,
        excursion_factor,
        min_gap_seconds,
        max_pairs,
    )


def _read_schedule(schedule: object, where: str) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(schedule, np.ndarray) and schedule.dtype != object:
        poses = check_poses(schedule, where)
        return np.arange(poses.shape[0], dtype=np.int64), poses
    if isinstance(schedule, (str, bytes)) or not isinstance(schedule, Sequence):
        raise UserInputError(
            f"{where}: schedule must be an (N, 4, 4) pose array or a list of "
            f"(frame_index, pose) pairs, found {type(schedule).__name__}",
            hint="pass the loop plan's poses",
        )
    if len(schedule) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 4, 4))
    first = schedule[0]
    if not (isinstance(first, Sequence) and len(first) == 2 and np.ndim(first[1]) == 2):
        # A plain nested list of 4x4 matrices.
        poses = check_poses(schedule, where)
        return np.arange(poses.shape[0], dtype=np.int64), poses
    frames: list[int] = []
    mats = []
    for k, item in enumerate(schedule):
        if not (isinstance(item, Sequence) and len(item) == 2):
            raise UserInputError(
                f"{where}: schedule entry {k} must be (frame_index, pose), found {item!r}",
                hint="list the plan as (native frame index, 4x4 camera-to-world) pairs",
            )
        idx = item[0]
        if isinstance(idx, bool) or not isinstance(idx, (int, np.integer)) or idx < 0:
            raise UserInputError(
                f"{where}: schedule entry {k} has frame index {idx!r}, expected an int >= 0",
                hint="use native frame indices of the video",
            )
        if frames and idx <= frames[-1]:
            raise UserInputError(
                f"{where}: schedule frame indices must increase strictly; entry {k} has "
                f"{idx} after {frames[-1]}",
                hint="sort the plan by frame index and drop duplicate frames",
            )
        frames.append(int(idx))
        mats.append(item[1])
    return np.asarray(frames, dtype=np.int64), check_poses(mats, where)


def return_gate(
    poses: np.ndarray,
    *,
    rotation_weight: float = DEFAULT_ROTATION_WEIGHT,
    threshold: float = DEFAULT_MATCH_THRESHOLD,
    excursion_factor: float = DEFAULT_EXCURSION_FACTOR,
) -> ReturnGate:
    """Diagnostic: did the camera depart from frame 0 and end where it started?

    ``departed``: some frame is at least ``excursion_factor * threshold`` [0.45] from
    frame 0. ``returned``: the last frame is within ``threshold`` [0.15] of frame 0.
    Report it beside the score; it is never averaged into one.

    Args:
        poses: Camera-to-world matrices, shape ``(N, 4, 4)`` with ``N >= 1``.
        rotation_weight: Weight of the rotation term of the distance (``>= 0``).
        threshold: Largest distance of the last frame from frame 0 to count as back.
        excursion_factor: Departure needed, as a multiple of ``threshold``.

    Returns:
        A :class:`ReturnGate`; ``passed`` is ``departed and returned``.

    Raises:
        UserInputError: on an empty or malformed pose track, or a setting out of range.

    Example:
        >>> import numpy as np
        >>> from scipy.spatial.transform import Rotation
        >>> poses = np.tile(np.eye(4), (3, 1, 1))
        >>> poses[1, :3, :3] = Rotation.from_rotvec([0.0, np.pi / 2, 0.0]).as_matrix()
        >>> gate = return_gate(poses)
        >>> gate.departed, gate.returned, gate.passed, round(gate.max_departure, 6)
        (True, True, True, 0.5)
    """
    where = "return_gate"
    arr = check_poses(poses, where)
    if arr.shape[0] == 0:
        raise UserInputError(
            f"{where}: the pose track is empty", hint="pass at least one frame's pose"
        )
    w = check_positive(rotation_weight, "rotation_weight", where, allow_zero=True)
    thr = check_positive(threshold, "threshold", where)
    exc = check_positive(excursion_factor, "excursion_factor", where, allow_zero=True)
    row = PoseTrack(arr, w).rows(0, 1)[0]
    max_dep = float(row.max())
    final = float(row[-1])
    return ReturnGate(
        departed=max_dep >= exc * thr - CMP_EPS,
        returned=final <= thr + CMP_EPS,
        max_departure=max_dep,
        final_distance=final,
    )
