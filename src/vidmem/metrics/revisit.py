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
largest departure from its first frame (when ``L <= 1e-9`` world units the camera
did not move and the translation term is 0), and ``angle`` is the geodesic angle
between the two rotations in degrees. ``d`` is unitless: 1.0 is "as far as the
camera ever went from the start" or a 180 degree turn.

Pairing rule (protocol defaults in brackets). Frame ``i`` is a *candidate* for a
later frame ``j`` when both hold:

* **gap**: ``(frame_j - frame_i) / fps >= min_gap_seconds`` [1 s], native indices;
* **match**: ``d(i, j) <= threshold`` [0.15].

``j`` is paired with the candidate *nearest in pose*. Ties (distances within ``1e-9``
of the smallest, as for a camera that pauses or passes the same view twice) go to the
**latest** candidate, the most recent time the view was seen, so that a pause never
lengthens a gap. The pair is then **kept only if** the excursion holds:

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

Cap: at most ``max_pairs`` [24] pairs are kept, spread over gap lengths by
:func:`spread_by_gap`.

The pairing is vectorised over blocks of rows of the distance matrix (float64, about
``2**18`` entries at a time), so a 2000-frame track needs tens of MB, not the full
``N x N`` float64 matrix and its temporaries at once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vidmem.errors import UserInputError

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

DEFAULT_MATCH_THRESHOLD = 0.15
DEFAULT_EXCURSION_FACTOR = 3.0
DEFAULT_MIN_GAP_SECONDS = 1.0
DEFAULT_MAX_PAIRS = 24
DEFAULT_ROTATION_WEIGHT = 1.0

#: Below this largest departure (world units) the translation term is 0.
TRANSLATION_EPS = 1e-9
#: Round-off allowed in the threshold and gap comparisons.
_CMP_EPS = 1e-9
#: Largest allowed |R^T R - I| entry and |det R - 1| for a rotation block.
_ORTHO_TOL = 1e-3
#: Distance-matrix entries computed per block.
_BLOCK_ENTRIES = 2**18


@dataclass(frozen=True, slots=True)
class RevisitPair:
    """One revisit: frame ``j`` looks at the place frame ``i`` saw.

    Attributes:
        i: Native frame index of the earlier frame.
        j: Native frame index of the later frame (``j > i``).
        gap_seconds: ``(j - i) / fps``, seconds.
        distance: Pose distance ``d(i, j)`` (unitless, ``<= threshold``).
        excursion: Largest ``d(i, k)`` over frames ``k`` strictly between (unitless).
    """

    i: int
    j: int
    gap_seconds: float
    distance: float
    excursion: float


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


# --------------------------------------------------------------------- validation


def _check_poses(poses: object, where: str) -> np.ndarray:
    """Return ``poses`` as a float64 ``(N, 4, 4)`` array of rigid camera-to-world poses."""
    try:
        arr = np.asarray(poses, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise UserInputError(
            f"{where}: poses must be numbers of shape (N, 4, 4), could not read them ({exc})",
            hint="pass one camera-to-world 4x4 matrix per frame as a numpy array",
        ) from exc
    if arr.ndim != 3 or arr.shape[1:] != (4, 4):
        raise UserInputError(
            f"{where}: poses must have shape (N, 4, 4), found {arr.shape}",
            hint="stack one camera-to-world 4x4 matrix per frame",
        )
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr).all(axis=(1, 2)))[0])
        raise UserInputError(
            f"{where}: pose of frame {bad} holds NaN or infinity",
            hint="drop or repair frames whose camera pose could not be estimated",
        )
    if arr.shape[0]:
        rot = arr[:, :3, :3]
        ortho = np.abs(np.einsum("nki,nkj->nij", rot, rot) - np.eye(3)).max(axis=(1, 2))
        det = np.linalg.det(rot)
        bad_mask = (ortho > _ORTHO_TOL) | (np.abs(det - 1.0) > _ORTHO_TOL)
        if bad_mask.any():
            bad = int(np.flatnonzero(bad_mask)[0])
            raise UserInputError(
                f"{where}: the 3x3 block of pose {bad} is not a rotation "
                f"(max |R^T R - I| = {ortho[bad]:.3g}, det = {det[bad]:.6g})",
                hint="pass rigid camera-to-world poses; remove any scale from the rotation",
            )
    return arr


def _check_positive(value: object, name: str, where: str, *, allow_zero: bool = False) -> float:
    ok_type = not isinstance(value, bool) and isinstance(value, (int, float, np.number))
    v = float(value) if ok_type else math.nan  # type: ignore[arg-type]
    if not (math.isfinite(v) and (v >= 0 if allow_zero else v > 0)):
        need = "a finite number >= 0" if allow_zero else "a finite number > 0"
        raise UserInputError(
            f"{where}: {name} must be {need}, found {value!r}",
            hint=f"pass {name} as a plain number",
        )
    return v


def _check_max_pairs(max_pairs: object, where: str) -> int:
    if isinstance(max_pairs, bool) or not isinstance(max_pairs, (int, np.integer)) or max_pairs < 2:
        raise UserInputError(
            f"{where}: max_pairs must be an int >= 2 (the shortest and the longest gap are "
            f"always kept), found {max_pairs!r}",
            hint=f"use the default {DEFAULT_MAX_PAIRS}",
        )
    return int(max_pairs)


# --------------------------------------------------------------------- distances


class _Track:
    """Pose features for fast distance rows: scaled positions and flat rotations."""

    def __init__(self, poses: np.ndarray, rotation_weight: float) -> None:
        t = poses[:, :3, 3]
        scale = float(np.linalg.norm(t - t[0], axis=1).max()) if len(t) else 0.0
        self.pos = (t - t[0]) / scale if scale > TRANSLATION_EPS else np.zeros_like(t)
        self.rot = poses[:, :3, :3].reshape(-1, 9)
        self.w = rotation_weight

    def rows(self, start: int, stop: int) -> np.ndarray:
        """Distances ``d(i, k)`` for ``i`` in ``[start, stop)`` and every ``k``, float64.

        The angle comes from ``|R_i - R_k|_F = 2 sqrt(2) sin(theta / 2)``, computed from
        the element differences, which is exact for equal rotations and accurate to
        float64 round-off for small angles (``arccos`` of the trace is off by about
        ``1e-8`` there, enough to decide ties by noise).
        """
        diff = self.pos[start:stop, None, :] - self.pos[None, :, :]
        trans = np.sqrt(np.einsum("bnk,bnk->bn", diff, diff))
        if self.w == 0:
            return trans
        rdiff = self.rot[start:stop, None, :] - self.rot[None, :, :]
        fro = np.sqrt(np.einsum("bnk,bnk->bn", rdiff, rdiff))
        angle = np.degrees(2.0 * np.arcsin(np.clip(fro / (2.0 * math.sqrt(2.0)), 0.0, 1.0)))
        return trans + self.w * angle / 180.0


def pose_distance_matrix(
    poses: np.ndarray, *, rotation_weight: float = DEFAULT_ROTATION_WEIGHT
) -> np.ndarray:
    """All pairwise pose distances of a camera track.

    ``d(i, j) = |t_i - t_j| / L + rotation_weight * angle_deg(R_i, R_j) / 180`` with
    ``L`` the largest departure from frame 0 (translation term 0 when ``L <= 1e-9``).

    Args:
        poses: Camera-to-world matrices, shape ``(N, 4, 4)``, rigid (rotation block
            orthonormal to ``1e-3``), translation in world units.
        rotation_weight: Weight of the rotation term (``>= 0``).

    Returns:
        Symmetric ``(N, N)`` float32 matrix, unitless, zero on the diagonal.

    Raises:
        UserInputError: if ``poses`` is not a finite ``(N, 4, 4)`` array of rigid poses
            or ``rotation_weight`` is negative or not finite.

    Example:
        >>> import numpy as np
        >>> poses = np.stack([np.eye(4)] * 2)
        >>> poses[1, :3, 3] = [2.0, 0.0, 0.0]  # move 2 units: the whole departure
        >>> np.round(pose_distance_matrix(poses), 6).tolist()
        [[0.0, 1.0], [1.0, 0.0]]
    """
    where = "pose_distance_matrix"
    arr = _check_poses(poses, where)
    w = _check_positive(rotation_weight, "rotation_weight", where, allow_zero=True)
    n = arr.shape[0]
    track = _Track(arr, w)
    out = np.empty((n, n), dtype=np.float32)
    step = max(1, _BLOCK_ENTRIES // max(n, 1))
    for r0 in range(0, n, step):
        out[r0 : r0 + step] = track.rows(r0, min(n, r0 + step))
    return out


# --------------------------------------------------------------------- pairing


def _find_pairs(
    frames: np.ndarray,
    poses: np.ndarray,
    fps: float,
    rotation_weight: float,
    threshold: float,
    excursion_factor: float,
    min_gap_seconds: float,
) -> list[RevisitPair]:
    """Nearest candidate ``i`` for every ``j``, kept if its excursion holds (no cap).

    ``frames`` are strictly increasing native indices."""
    n = poses.shape[0]
    if n < 2:
        return []
    track = _Track(poses, rotation_weight)
    need_exc = excursion_factor * threshold - _CMP_EPS
    max_d = threshold + _CMP_EPS
    low = np.full(n, np.inf)
    best_d = np.full(n, np.inf)
    best_i = np.full(n, -1, dtype=np.int64)
    best_e = np.zeros(n)
    cols = np.arange(n)
    step = max(1, _BLOCK_ENTRIES // n)
    for r0 in range(0, n, step):
        r1 = min(n, r0 + step)
        rows = np.arange(r0, r1)
        d = track.rows(r0, r1)  # (B, n)
        later = cols[None, :] > rows[:, None]
        # Excursion: max d(i, k) over i < k < j; the empty max is 0 (distances are >= 0).
        run = np.maximum.accumulate(np.where(later, d, 0.0), axis=1)
        exc = np.concatenate([np.zeros((r1 - r0, 1)), run[:, :-1]], axis=1)
        gap_s = (frames[None, :] - frames[r0:r1, None]) / fps
        # Candidates: gap and match only; the excursion is checked on the chosen pair.
        ok = later & (gap_s >= min_gap_seconds - _CMP_EPS) & (d <= max_d)
        dc = np.where(ok, d, np.inf)
        # Smallest candidate distance so far per column; the rows of this block that
        # tie with it are later than every earlier block's, so the latest of them (if
        # any) becomes the pair. When this block lowers the minimum, the row that does
        # so ties with it, so a stale earlier choice never survives.
        low = np.minimum(low, dc.min(axis=0))
        tie = ok & (dc <= low[None, :] + _CMP_EPS)
        hit = tie.any(axis=0)
        last = (r1 - r0 - 1) - np.argmax(tie[::-1], axis=0)
        cj = cols[hit]
        best_i[cj] = r0 + last[hit]
        best_d[cj] = d[last[hit], cj]
        best_e[cj] = exc[last[hit], cj]
    # Keep a pair only if the camera left the view of its nearest match in between.
    js = np.flatnonzero((best_i >= 0) & (best_e >= need_exc))
    return [
        RevisitPair(
            i=int(frames[best_i[j]]),
            j=int(frames[j]),
            gap_seconds=float((frames[j] - frames[best_i[j]]) / fps),
            distance=float(best_d[j]),
            excursion=float(best_e[j]),
        )
        for j in js
    ]


def spread_by_gap(
    pairs: Sequence[RevisitPair], max_pairs: int = DEFAULT_MAX_PAIRS
) -> list[RevisitPair]:
    """Keep at most ``max_pairs`` pairs spread evenly over gap lengths.

    Rule: sort by ``(gap_seconds, j)``. If there are at most ``max_pairs``, keep all.
    Otherwise always keep the shortest (``lo``) and the longest (``hi``) and fill the
    other ``max_pairs - 2`` places from the target gaps
    ``lo + (hi - lo) * k / (max_pairs - 1)``, ``k = 1 .. max_pairs - 2``: with the two
    ends these are ``max_pairs`` evenly spaced gaps, the centres of ``max_pairs``
    equal-width buckets. In order of increasing target, each takes the not-yet-kept
    pair whose gap is closest to it (ties: the shorter gap, then the smaller ``j``).
    Equal-width (not quantile) targets cover the whole gap range, which is what the
    half-life fit needs, instead of crowding where pairs are dense; where the range
    has holes, a target takes the nearest pair left, so exactly ``max_pairs`` are kept.

    Args:
        pairs: Revisit pairs, any order.
        max_pairs: Most pairs to keep (``>= 2``).

    Returns:
        The kept pairs sorted by ``(gap_seconds, j)``.

    Raises:
        UserInputError: if ``max_pairs`` is not an int ``>= 2``.

    Example:
        >>> ps = [RevisitPair(0, 10 * g, float(g), 0.0, 0.5) for g in range(1, 11)]
        >>> [p.gap_seconds for p in spread_by_gap(ps, 4)]
        [1.0, 4.0, 7.0, 10.0]
    """
    cap = _check_max_pairs(max_pairs, "spread_by_gap")
    ordered = sorted(pairs, key=lambda p: (p.gap_seconds, p.j))
    if len(ordered) <= cap:
        return ordered
    gaps = np.array([p.gap_seconds for p in ordered])
    used = np.zeros(len(ordered), dtype=bool)
    used[0] = used[-1] = True
    lo, hi = gaps[0], gaps[-1]
    for k in range(1, cap - 1):
        target = lo + (hi - lo) * k / (cap - 1)
        dist = np.where(used, np.inf, np.abs(gaps - target))
        used[int(np.argmin(dist))] = True  # first minimum: shorter gap, then smaller j
    return [p for p, keep in zip(ordered, used, strict=True) if keep]


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
    arr = _check_poses(poses, where)
    return _pairs_checked(
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


def _pairs_checked(
    where: str,
    frames: np.ndarray,
    poses: np.ndarray,
    fps: object,
    rotation_weight: object,
    threshold: object,
    excursion_factor: object,
    min_gap_seconds: object,
    max_pairs: object,
) -> list[RevisitPair]:
    fps_v = _check_positive(fps, "fps", where)
    w = _check_positive(rotation_weight, "rotation_weight", where, allow_zero=True)
    thr = _check_positive(threshold, "threshold", where)
    exc = _check_positive(excursion_factor, "excursion_factor", where, allow_zero=True)
    gap = _check_positive(min_gap_seconds, "min_gap_seconds", where, allow_zero=True)
    cap = _check_max_pairs(max_pairs, where)
    pairs = _find_pairs(frames, poses, fps_v, w, thr, exc, gap)
    return spread_by_gap(pairs, cap)


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
    return _pairs_checked(
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
        poses = _check_poses(schedule, where)
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
        poses = _check_poses(schedule, where)
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
    return np.asarray(frames, dtype=np.int64), _check_poses(mats, where)


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
    arr = _check_poses(poses, where)
    if arr.shape[0] == 0:
        raise UserInputError(
            f"{where}: the pose track is empty", hint="pass at least one frame's pose"
        )
    w = _check_positive(rotation_weight, "rotation_weight", where, allow_zero=True)
    thr = _check_positive(threshold, "threshold", where)
    exc = _check_positive(excursion_factor, "excursion_factor", where, allow_zero=True)
    row = _Track(arr, w).rows(0, 1)[0]
    max_dep = float(row.max())
    final = float(row[-1])
    return ReturnGate(
        departed=max_dep >= exc * thr - _CMP_EPS,
        returned=final <= thr + _CMP_EPS,
        max_departure=max_dep,
        final_distance=final,
    )
