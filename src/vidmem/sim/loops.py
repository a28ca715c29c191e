"""The six closed camera loops of the memory-loop benchmark, as sim camera poses.

The loops themselves (ids, difficulties, prompt targets and planned offsets) are the
benchmark's and live in :mod:`vidmem.metrics.loop_paths`; this module
re-exports them under their old names and turns a plan into sim :class:`Pose` objects
from a start pose. Every loop closes, and out-and-back loops revisit bit-identical
poses (the plan mirrors and repeats cycles on the frame grid).

Pairing a frame with an earlier view of the same place (:func:`revisit_schedule`) and
the pose distance (:func:`pose_distance_matrix`) delegate to
:mod:`vidmem.metrics.revisit`, the benchmark's own pairing rule:
``|c_i - c_j| / D + rotation_weight * theta / 180`` with ``c`` the camera centres,
``D`` the largest distance of any centre from frame 0's (0 when the camera never
moves) and ``theta`` the geodesic angle in degrees between the two rotations,
computed without ``arccos`` so that exact revisits tie exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vidmem.metrics import revisit as _revisit
from vidmem.metrics.loop_paths import (
    LOOP_IDS,
    LOOPS,
    LoopDef,
    loop_for_prompt,
    loop_offsets,
)
from vidmem.sim.world import Pose

__all__ = [
    "LOOPS",
    "LOOP_IDS",
    "LoopDef",
    "loop_c2w",
    "loop_for_prompt",
    "loop_poses",
    "pose_distance_matrix",
    "revisit_schedule",
]


def loop_poses(loop_id: str, start: Pose, n_frames: int) -> list[Pose]:
    """The planned pose of every frame of a loop.

    Args:
        loop_id: one of :data:`LOOP_IDS`.
        start: the start pose (frame 0 and the last frame).
        n_frames: number of frames (>= 2), e.g. ``round(duration_seconds * fps)``.

    Returns:
        ``n_frames`` poses; ``yaw`` is not wrapped (``yaw_loop_360`` ends at
        ``start.yaw + 360``, the same rotation as the start).

    Raises:
        UnknownNameError: unknown loop id.
        UserInputError: ``n_frames < 2``.
    """
    off = loop_offsets(loop_id, n_frames)
    d0 = 1.0 - 1.0 / start.zoom
    poses = []
    for dyaw, dpitch, zf, dtx, ddolly in off:
        zoom = zf / max(1e-6, 1.0 - (d0 + ddolly))
        poses.append(Pose(start.yaw + dyaw, start.pitch + dpitch, zoom, start.tx + dtx, start.ty))
    return poses


def loop_c2w(loop_id: str, start: Pose, n_frames: int) -> np.ndarray:
    """``(n_frames, 4, 4)`` float64 camera-to-world matrices of :func:`loop_poses`."""
    return np.stack([p.c2w() for p in loop_poses(loop_id, start, n_frames)])


def pose_distance_matrix(c2w: np.ndarray, *, rotation_weight: float = 1.0) -> np.ndarray:
    """All pairwise pose distances (:func:`vidmem.metrics.revisit.pose_distance_matrix`).

    Args:
        c2w: ``(N, 4, 4)`` camera-to-world matrices.
        rotation_weight: weight of the rotation term (per 180 degrees).

    Returns:
        ``(N, N)`` float64 (float32 precision), symmetric, zero on the diagonal.

    Example:
        >>> from vidmem.sim.world import Pose
        >>> m = np.stack([Pose(yaw=a).c2w() for a in (0.0, 90.0, 360.0)])
        >>> pose_distance_matrix(m).round(6).tolist()[0]
        [0.0, 0.5, 0.0]
    """
    d = _revisit.pose_distance_matrix(np.asarray(c2w, np.float64), rotation_weight=rotation_weight)
    return d.astype(np.float64)


def revisit_schedule(
    c2w: np.ndarray | Sequence[np.ndarray],
    fps: float,
    *,
    radius: float = 0.3,
    min_gap_seconds: float = 1.0,
    departure: float = 0.45,
    rotation_weight: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """For every frame, the earlier frame it revisits (the sim's own pairing).

    Frame ``j`` is matched to the earlier frame ``i`` nearest in pose among those at
    least ``min_gap_seconds`` older with ``d(i, j) <= radius`` (ties: the earliest,
    as in the benchmark's reference rule), and revisits it only if the camera went at least ``departure`` away from
    pose ``i`` somewhere between them; otherwise ``j`` revisits nothing (no farther
    frame is tried). This is
    :func:`vidmem.metrics.revisit.revisit_pairs` with ``threshold=radius``,
    ``excursion_factor=departure / radius`` and no cap.

    Args:
        c2w: ``(N, 4, 4)`` camera-to-world matrices, one per frame.
        fps: frames per second (converts frame steps to seconds).
        radius: largest pose distance of a revisit (``> 0``).
        min_gap_seconds: smallest time between the two frames.
        departure: how far the camera must have gone in between.
        rotation_weight: see :func:`pose_distance_matrix`.

    Returns:
        ``(match, distance)``: ``(N,)`` int64 index of the revisited frame (``-1`` when
        none) and ``(N,)`` float64 pose distance to it (``inf`` when none).
    """
    m = np.asarray(c2w, np.float64)
    n = len(m)
    pairs = _revisit.revisit_pairs(
        m, fps, rotation_weight=rotation_weight, threshold=radius,
        excursion_factor=departure / radius, min_gap_seconds=min_gap_seconds,
        max_pairs=max(2, n),
    )
    match = np.full(n, -1, np.int64)
    dist = np.full(n, np.inf)
    for p in pairs:
        match[p.j] = p.i
        dist[p.j] = p.distance
    return match, dist
