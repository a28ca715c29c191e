"""The six closed camera loops of the memory-loop benchmark, as planned trajectories.

Each loop is a path of camera *offsets* from the start pose, as a function of the
normalised time ``s`` in ``[0, 1]``, made of legs eased with a smoothstep (zero speed
at each leg's ends). Frame ``k`` of ``n`` is at ``s = k / (n - 1)``, so the first and
the last frames are exactly the start pose: every loop closes.

========================  ==========  ===============================================
loop id                   difficulty  path (offsets from the start pose)
========================  ==========  ===============================================
``yaw_loop_360``          easy        yaw 0 -> 360 (one full turn to the right)
``yaw_loop_180``          easy        yaw 0 -> 180, short hold, 180 -> 0
``dolly_loop``            medium      zoom x1 -> x1.9, short hold, -> x1 (in and out)
``palindrome_loop``       medium      yaw 0 -> 100 while dollying in to x1.35 and
                                      tilting up to 2 degrees and back down, then the
                                      same path exactly reversed
``square_loop``           hard        a square on the ground: truck right 0.3, dolly
                                      in 0.35, truck left 0.3, dolly out 0.35 (radii)
``double_yaw_loop``       hard        yaw 0 -> 120 -> 0, twice
========================  ==========  ===============================================

The prompt targets are plain sentences the ``sim`` generator recognises (see
:data:`LOOPS`); ``double_yaw_loop``'s is the published one.

Pose distance (used by :func:`revisit_schedule`, the sim's own pairing of a frame with
an earlier view of the same place): ``|c_i - c_j| / D + rotation_weight * theta / 180``
where ``c`` are camera centres from the camera-to-world matrices, ``D`` is the
largest distance of any centre from frame 0's (the translation term is 0 when the
camera never moves, ``D = 0``) and ``theta`` is the geodesic angle in degrees between
the two rotations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vidmem.errors import UnknownNameError, UserInputError
from vidmem.registry import unknown_name_message
from vidmem.sim.world import Pose, smoothstep

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


@dataclass(frozen=True)
class LoopDef:
    """One closed camera loop.

    Attributes:
        id: the loop id (``loop_id`` in ``cases.jsonl``).
        difficulty: ``easy``, ``medium`` or ``hard``.
        prompt: the prompt target text a generator receives.
        legs: ``(s_end, offsets)`` pairs: at normalised time ``s_end`` the offsets
            ``(d_yaw deg, d_pitch deg, zoom factor, d_tx, d_dolly)`` are reached,
            eased from the previous leg's offsets (the path starts at zero offset).
        mirror: the second half of the path is the first half reversed in time.
    """

    id: str
    difficulty: str
    prompt: str
    legs: tuple[tuple[float, tuple[float, float, float, float, float]], ...]
    mirror: bool = False


_ZERO = (0.0, 0.0, 1.0, 0.0, 0.0)

LOOPS: dict[str, LoopDef] = {
    d.id: d
    for d in (
        LoopDef("yaw_loop_360", "easy",
                "Turn all the way around to the right until you face the start again.",
                ((1.0, (360.0, 0.0, 1.0, 0.0, 0.0)),)),
        LoopDef("yaw_loop_180", "easy",
                "Turn around to look behind you, then turn back to where you started.",
                ((0.45, (180.0, 0.0, 1.0, 0.0, 0.0)), (0.55, (180.0, 0.0, 1.0, 0.0, 0.0)),
                 (1.0, _ZERO))),
        LoopDef("dolly_loop", "medium",
                "Move straight forward toward the scene, then back up to the starting spot.",
                ((0.45, (0.0, 0.0, 1.9, 0.0, 0.0)), (0.55, (0.0, 0.0, 1.9, 0.0, 0.0)),
                 (1.0, _ZERO))),
        LoopDef("palindrome_loop", "medium",
                "Pan right while moving in, then retrace exactly the same path back to the "
                "start.",
                ((0.5, (100.0, 0.0, 1.35, 0.0, 0.0)),), mirror=True),
        LoopDef("square_loop", "hard",
                "Walk a square: step right, step forward, step left, then step back to the "
                "start.",
                ((0.25, (0.0, 0.0, 1.0, 0.3, 0.0)), (0.5, (0.0, 0.0, 1.0, 0.3, 0.35)),
                 (0.75, (0.0, 0.0, 1.0, 0.0, 0.35)), (1.0, _ZERO))),
        LoopDef("double_yaw_loop", "hard", "Turn away and back to the start twice in a row.",
                ((0.22, (120.0, 0.0, 1.0, 0.0, 0.0)), (0.28, (120.0, 0.0, 1.0, 0.0, 0.0)),
                 (0.5, _ZERO), (0.72, (120.0, 0.0, 1.0, 0.0, 0.0)),
                 (0.78, (120.0, 0.0, 1.0, 0.0, 0.0)), (1.0, _ZERO))),
    )
}
#: loop ids in the benchmark's order.
LOOP_IDS: tuple[str, ...] = tuple(LOOPS)


def _get(loop_id: str) -> LoopDef:
    try:
        return LOOPS[loop_id]
    except KeyError:
        raise UnknownNameError(unknown_name_message("loop", loop_id, list(LOOP_IDS))) from None


def _norm_prompt(text: str) -> str:
    return " ".join(text.lower().replace("\u2019", "'").split()).rstrip(".! ")


def loop_for_prompt(prompt: str) -> str | None:
    """The loop whose prompt target is ``prompt`` (case and spacing ignored), or None.

    Example:
        >>> loop_for_prompt("turn away and back to the start  twice in a row")
        'double_yaw_loop'
        >>> loop_for_prompt("Fly to the moon.") is None
        True
    """
    want = _norm_prompt(prompt)
    for d in LOOPS.values():
        if _norm_prompt(d.prompt) == want:
            return d.id
    return None


def _offsets(d: LoopDef, s: np.ndarray) -> np.ndarray:
    """``(len(s), 5)`` offsets (d_yaw, d_pitch, zoom factor, d_tx, d_dolly) at ``s``."""
    if d.mirror:
        s = np.where(s <= 0.5, s, 1.0 - s)
    out = np.tile(np.asarray(_ZERO, np.float64), (len(s), 1))
    start_s, start = 0.0, np.asarray(_ZERO, np.float64)
    for s_end, target in d.legs:
        tgt = np.asarray(target, np.float64)
        inside = (s >= start_s) & (s <= s_end)
        if s_end > start_s:
            e = smoothstep((s[inside] - start_s) / (s_end - start_s))
            out[inside] = start + np.outer(e, tgt - start)
        start_s, start = s_end, tgt
    out[s > start_s] = start
    if d.mirror:
        # The palindrome's outbound leg also tilts up and back down along the way.
        out[:, 1] += 2.0 * np.sin(np.pi * np.clip(s / 0.5, 0.0, 1.0))
    return out


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
    d = _get(loop_id)
    if isinstance(n_frames, bool) or not isinstance(n_frames, (int, np.integer)) or n_frames < 2:
        raise UserInputError(f"loop {loop_id}: n_frames must be an int >= 2, found {n_frames!r}",
                             hint="pass round(duration_seconds * fps)")
    s = np.linspace(0.0, 1.0, int(n_frames))
    off = _offsets(d, s)
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
    """All pairwise pose distances (definition in the module docstring).

    Args:
        c2w: ``(N, 4, 4)`` camera-to-world matrices.
        rotation_weight: weight of the rotation term (per 180 degrees).

    Returns:
        ``(N, N)`` float64, symmetric, zero on the diagonal.

    Example:
        >>> from vidmem.sim.world import Pose
        >>> m = np.stack([Pose(yaw=a).c2w() for a in (0.0, 90.0, 360.0)])
        >>> pose_distance_matrix(m).round(6).tolist()[0]
        [0.0, 0.5, 0.0]
    """
    c2w = np.asarray(c2w, np.float64)
    centres = c2w[:, :3, 3]
    rots = c2w[:, :3, :3]
    span = float(np.max(np.linalg.norm(centres - centres[0], axis=1))) if len(c2w) else 0.0
    if span > 1e-9:
        trans = np.linalg.norm(centres[:, None, :] - centres[None, :, :], axis=2) / span
    else:
        trans = np.zeros((len(c2w), len(c2w)))
    tr = np.einsum("iab,jab->ij", rots, rots)
    theta = np.degrees(np.arccos(np.clip((tr - 1.0) / 2.0, -1.0, 1.0)))
    return trans + rotation_weight * theta / 180.0


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

    Frame ``j`` revisits frame ``i < j`` when ``i`` is at least ``min_gap_seconds``
    older, the camera went at least ``departure`` away from pose ``i`` somewhere
    between them, and the pose distance ``d(i, j) <= radius``. Among such ``i`` the
    nearest in pose wins; ties go to the most recent.

    Args:
        c2w: ``(N, 4, 4)`` camera-to-world matrices, one per frame.
        fps: frames per second (converts the minimum gap to frames).
        radius: largest pose distance of a revisit.
        min_gap_seconds: smallest time between the two frames.
        departure: how far the camera must have gone in between.
        rotation_weight: see :func:`pose_distance_matrix`.

    Returns:
        ``(match, distance)``: ``(N,)`` int64 index of the revisited frame (``-1`` when
        none) and ``(N,)`` float64 pose distance to it (``inf`` when none).
    """
    m = np.asarray(c2w, np.float64)
    n = len(m)
    dist = pose_distance_matrix(m, rotation_weight=rotation_weight)
    gap = max(1, int(np.ceil(min_gap_seconds * fps - 1e-9)))
    upper = np.triu(dist, k=1)
    # far[i, j] = max over i < k <= j of dist[i, k]; the departure test uses k < j.
    far = np.maximum.accumulate(upper, axis=1)
    went = np.zeros((n, n), bool)
    went[:, 1:] = far[:, :-1] >= departure
    i_idx, j_idx = np.indices((n, n))
    ok = (j_idx - i_idx >= gap) & went & (dist <= radius)
    masked = np.where(ok, dist, np.inf)
    best = masked.min(axis=0)
    match = np.full(n, -1, np.int64)
    has = np.isfinite(best)
    if has.any():
        ties = ok & (masked <= best[None, :] + 1e-12)
        latest = np.where(ties, i_idx, -1).max(axis=0)
        match[has] = latest[has]
    return match, np.where(has, best, np.inf)
