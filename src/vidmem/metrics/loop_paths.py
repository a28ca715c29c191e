"""The six closed camera loops of the memory-loop benchmark: ids, prompt targets, plans.

A memory-loop case gives a generator one start image and one prompt target; the
generator should move the camera along a closed loop and come back. This module is the
benchmark's own definition of the loops. It needs nothing from the sim world (the sim
generator imports its loops from here), so a real model's videos are paired against
the same plans.

Each loop is a path of camera *offsets* from the start pose, made of legs eased with a
smoothstep (zero speed at each leg's ends). Offsets are ``(d_yaw deg, d_pitch deg,
zoom factor, d_tx, d_dolly)``: turn right, look up, magnify by dollying along the view
axis, truck right, and dolly (both in units of the start's distance to the scene).

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
                                      in 0.35, truck left 0.3, dolly out 0.35
``double_yaw_loop``       hard        yaw 0 -> 120 -> 0, twice
========================  ==========  ===============================================

Sampling on the frame grid. A plan for ``n`` frames has frame 0 and frame ``n - 1`` at
the start pose, so every loop closes. Out-and-back loops are declared by their outbound
half (``mirror``) and mirrored *by frame index* (frame ``k`` and frame ``P - k`` of a
cycle of ``P`` frame steps have bit-identical poses), and a repeated loop
(``double_yaw_loop``) repeats its cycle every ``P = (n - 1) // repeats`` frames (with
an odd ``n - 1`` the last frame holds the start pose). So a return revisits *exactly*
the pose it left, whatever ``n`` is. (Sampling the continuous path at ``k / (n - 1)``
instead puts the second turn of ``double_yaw_loop`` half a frame off the first when
``n`` is even, 0.2 to 0.7 degrees, which alone halves SSIM with a perfect memory.)

Camera convention of :func:`planned_c2w` (the sim world's, OpenCV axes: ``x`` right,
``y`` down, ``z`` forward): ``R = R_y(yaw) @ R_x(pitch)`` and camera centre
``c = R @ (tx, 0, 1 - (1 - d_dolly) / zoom_factor)`` for a start pose at the origin
looking along ``+z``. Revisit pairing (:mod:`vidmem.metrics.revisit`) only uses
relative poses, so a plan made from this canonical start pairs the same frames as the
plan of any start pose.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from vidmem.errors import UnknownNameError, UserInputError
from vidmem.registry import unknown_name_message

__all__ = [
    "DIFFICULTIES",
    "LOOPS",
    "LOOP_IDS",
    "LoopDef",
    "loop_for_prompt",
    "loop_offsets",
    "offsets_c2w",
    "planned_c2w",
]

Offsets = tuple[float, float, float, float, float]

#: Zero offset: the start pose.
ZERO: Offsets = (0.0, 0.0, 1.0, 0.0, 0.0)


@dataclass(frozen=True)
class LoopDef:
    """One closed camera loop.

    Attributes:
        id: the loop id (``loop_id`` in ``cases.jsonl``).
        difficulty: ``easy``, ``medium`` or ``hard``.
        prompt: the prompt target text a generator receives.
        legs: ``(phase_end, offsets)`` pairs over one cycle: at cycle phase
            ``phase_end`` (in ``[0, 1]``, or ``[0, 0.5]`` with ``mirror``) the offsets
            are reached, eased from the previous leg's (the cycle starts at zero).
        mirror: the second half of each cycle is the first half reversed in time.
        repeats: how many times the cycle is run.
        tilt_degrees: a pitch bump ``tilt * sin(pi * phase / 0.5)`` added over the
            outbound half (mirrored with it).
    """

    id: str
    difficulty: str
    prompt: str
    legs: tuple[tuple[float, Offsets], ...]
    mirror: bool = False
    repeats: int = 1
    tilt_degrees: float = 0.0


LOOPS: dict[str, LoopDef] = {
    d.id: d
    for d in (
        LoopDef("yaw_loop_360", "easy",
                "Turn all the way around to the right until you face the start again.",
                ((1.0, (360.0, 0.0, 1.0, 0.0, 0.0)),)),
        LoopDef("yaw_loop_180", "easy",
                "Turn around to look behind you, then turn back to where you started.",
                ((0.45, (180.0, 0.0, 1.0, 0.0, 0.0)), (0.5, (180.0, 0.0, 1.0, 0.0, 0.0))),
                mirror=True),
        LoopDef("dolly_loop", "medium",
                "Move straight forward toward the scene, then back up to the starting spot.",
                ((0.45, (0.0, 0.0, 1.9, 0.0, 0.0)), (0.5, (0.0, 0.0, 1.9, 0.0, 0.0))),
                mirror=True),
        LoopDef("palindrome_loop", "medium",
                "Pan right while moving in, then retrace exactly the same path back to the "
                "start.",
                ((0.5, (100.0, 0.0, 1.35, 0.0, 0.0)),), mirror=True, tilt_degrees=2.0),
        LoopDef("square_loop", "hard",
                "Walk a square: step right, step forward, step left, then step back to the "
                "start.",
                ((0.25, (0.0, 0.0, 1.0, 0.3, 0.0)), (0.5, (0.0, 0.0, 1.0, 0.3, 0.35)),
                 (0.75, (0.0, 0.0, 1.0, 0.0, 0.35)), (1.0, ZERO))),
        LoopDef("double_yaw_loop", "hard", "Turn away and back to the start twice in a row.",
                ((0.44, (120.0, 0.0, 1.0, 0.0, 0.0)), (0.5, (120.0, 0.0, 1.0, 0.0, 0.0))),
                mirror=True, repeats=2),
    )
}
#: Loop ids in the benchmark's order.
LOOP_IDS: tuple[str, ...] = tuple(LOOPS)
#: Difficulty levels in order.
DIFFICULTIES: tuple[str, ...] = ("easy", "medium", "hard")


def get_loop(loop_id: str) -> LoopDef:
    """The loop ``loop_id``.

    Raises:
        UnknownNameError: unknown id (with "did you mean" and the list).
    """
    try:
        return LOOPS[loop_id]
    except (KeyError, TypeError):
        raise UnknownNameError(unknown_name_message("loop", str(loop_id), list(LOOP_IDS))) from None


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


def _ease(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


def _phases(d: LoopDef, n_frames: int) -> np.ndarray:
    """Cycle phase of every frame, computed from integer frame steps (see module notes)."""
    k = np.arange(n_frames)
    period = max(1, (n_frames - 1) // d.repeats)
    local = np.where(k >= d.repeats * period, period, k % period)
    if d.mirror:
        local = np.minimum(local, period - local)
    return local / period


def loop_offsets(loop_id: str, n_frames: int) -> np.ndarray:
    """The planned offsets of every frame of a loop.

    Args:
        loop_id: one of :data:`LOOP_IDS`.
        n_frames: number of frames (``>= 2``), e.g. the video's frame count.

    Returns:
        ``(n_frames, 5)`` float64: ``d_yaw`` (degrees, not wrapped: ``yaw_loop_360``
        ends at 360), ``d_pitch`` (degrees), zoom factor, ``d_tx``, ``d_dolly``. Row 0
        and the last row are the zero offset ``(0, 0, 1, 0, 0)``.

    Raises:
        UnknownNameError: unknown loop id.
        UserInputError: ``n_frames`` is not an int ``>= 2``.

    Example:
        >>> off = loop_offsets("yaw_loop_180", 5)
        >>> off[:, 0].round(3).tolist()
        [0.0, 104.938, 180.0, 104.938, 0.0]
    """
    d = get_loop(loop_id)
    if isinstance(n_frames, bool) or not isinstance(n_frames, (int, np.integer)) or n_frames < 2:
        raise UserInputError(
            f"loop {loop_id}: n_frames must be an int >= 2, found {n_frames!r}",
            hint="pass the video's frame count, e.g. round(duration_seconds * fps)",
        )
    s = _phases(d, int(n_frames))
    out = np.tile(np.asarray(ZERO, np.float64), (len(s), 1))
    start_s, start = 0.0, np.asarray(ZERO, np.float64)
    for s_end, target in d.legs:
        tgt = np.asarray(target, np.float64)
        inside = (s >= start_s) & (s <= s_end)
        if s_end > start_s:
            out[inside] = start + np.outer(_ease((s[inside] - start_s) / (s_end - start_s)),
                                           tgt - start)
        start_s, start = s_end, tgt
    out[s > start_s] = start
    if d.tilt_degrees:
        out[:, 1] += d.tilt_degrees * np.sin(np.pi * np.clip(s / 0.5, 0.0, 1.0))
    return out


def offsets_c2w(offsets: np.ndarray) -> np.ndarray:
    """Camera-to-world matrices of offsets from a canonical start pose.

    Args:
        offsets: ``(N, 5)`` rows of :func:`loop_offsets`.

    Returns:
        ``(N, 4, 4)`` float64 rigid camera-to-world matrices (convention in the module
        docstring); the zero offset is the identity.

    Example:
        >>> offsets_c2w(np.array([[90.0, 0.0, 2.0, 0.0, 0.0]]))[0, :3, 2:].round(6).tolist()
        [[1.0, 0.5], [0.0, 0.0], [0.0, 0.0]]
    """
    off = np.asarray(offsets, np.float64).reshape(-1, 5)
    out = np.tile(np.eye(4), (len(off), 1, 1))
    for k, (dyaw, dpitch, zf, dtx, ddolly) in enumerate(off):
        a, b = math.radians(dyaw), math.radians(dpitch)
        ry = np.array([[math.cos(a), 0.0, math.sin(a)], [0.0, 1.0, 0.0],
                       [-math.sin(a), 0.0, math.cos(a)]])
        rx = np.array([[1.0, 0.0, 0.0], [0.0, math.cos(b), -math.sin(b)],
                       [0.0, math.sin(b), math.cos(b)]])
        r = ry @ rx
        zoom = zf / max(1e-6, 1.0 - ddolly)
        out[k, :3, :3] = r
        out[k, :3, 3] = r @ np.array([dtx, 0.0, 1.0 - 1.0 / zoom])
    return out


def planned_c2w(loop_id: str, n_frames: int) -> np.ndarray:
    """The planned camera track of a loop for a video of ``n_frames`` frames.

    Used to pair frames when a video comes without a pose track (the result is then
    diagnostic: it says where the camera *should* have returned, not where it did).

    Args:
        loop_id: one of :data:`LOOP_IDS`.
        n_frames: the video's real frame count (``>= 2``); the loop spans the whole
            video.

    Returns:
        ``(n_frames, 4, 4)`` float64 camera-to-world matrices from the canonical start.

    Raises:
        UnknownNameError: unknown loop id.
        UserInputError: ``n_frames < 2``.

    Example:
        >>> m = planned_c2w("double_yaw_loop", 10)
        >>> bool(np.array_equal(m[0], m[-1])), bool(np.array_equal(m[1], m[5]))
        (True, True)
    """
    return offsets_c2w(loop_offsets(loop_id, n_frames))
