"""The revisit pairing rule and the gap-spread cap, on already-checked poses.

:mod:`vidmem.metrics.revisit` documents the rule and offers the public entry points;
this module holds the machinery they share: the :class:`RevisitPair` record, the
blocked nearest-match search with its excursion test, and :func:`spread_by_gap`.
It sits below :mod:`vidmem.metrics.revisit` so that the measured-pose and the
planned-pose entry points can both build on it without importing each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vidmem.errors import UserInputError
from vidmem.metrics import pose_distance
from vidmem.metrics.pose_distance import PoseTrack, check_positive

__all__ = ["DEFAULT_MAX_PAIRS", "RevisitPair", "spread_by_gap"]

DEFAULT_MAX_PAIRS = 24

#: Round-off allowed in the threshold and gap comparisons.
CMP_EPS = 1e-9


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


def _check_max_pairs(max_pairs: object, where: str) -> int:
    if isinstance(max_pairs, bool) or not isinstance(max_pairs, (int, np.integer)) or max_pairs < 2:
        raise UserInputError(
            f"{where}: max_pairs must be an int >= 2 (the shortest and the longest gap are "
            f"always kept), found {max_pairs!r}",
            hint=f"use the default {DEFAULT_MAX_PAIRS}",
        )
    return int(max_pairs)


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
    track = PoseTrack(poses, rotation_weight)
    need_exc = excursion_factor * threshold - CMP_EPS
    max_d = threshold + CMP_EPS
    low = np.full(n, np.inf)
    best_d = np.full(n, np.inf)
    best_i = np.full(n, -1, dtype=np.int64)
    best_e = np.zeros(n)
    cols = np.arange(n)
    # Read through the module: one block size governs this search and
    # pose_distance_matrix, and a test can shrink it for both at once.
    step = max(1, pose_distance.BLOCK_ENTRIES // n)
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
        ok = later & (gap_s >= min_gap_seconds - CMP_EPS) & (d <= max_d)
        dc = np.where(ok, d, np.inf)
        # Smallest candidate distance so far per column; the rows of this block that
        # tie with it are later than every earlier block's, so the latest of them (if
        # any) becomes the pair. When this block lowers the minimum, the row that does
        # so ties with it, so a stale earlier choice never survives.
        low = np.minimum(low, dc.min(axis=0))
        tie = ok & (dc <= low[None, :] + CMP_EPS)
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


def checked_pairs(
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
    """Check the pairing settings (naming ``where`` in errors), then find and spread the pairs."""
    fps_v = check_positive(fps, "fps", where)
    w = check_positive(rotation_weight, "rotation_weight", where, allow_zero=True)
    thr = check_positive(threshold, "threshold", where)
    exc = check_positive(excursion_factor, "excursion_factor", where, allow_zero=True)
    gap = check_positive(min_gap_seconds, "min_gap_seconds", where, allow_zero=True)
    cap = _check_max_pairs(max_pairs, where)
    pairs = _find_pairs(frames, poses, fps_v, w, thr, exc, gap)
    return spread_by_gap(pairs, cap)
