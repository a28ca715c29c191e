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

#: Round-off allowed in the threshold, gap and nearest-pose comparisons.
CMP_EPS = 1e-9
#: Smallest gap span (s) of the bucket cap, as in the reference (all gaps equal).
GAP_SPAN_FLOOR = 1e-8


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
    # Blocks of rows (earlier frames i) are visited from the last to the first, so a
    # block's rows are earlier than every row seen before it: the earliest of its rows
    # that ties with the smallest candidate distance so far (if any) becomes the pair.
    # When this block lowers the minimum, the row that does so ties with it, so a stale
    # later choice never survives; the result is the earliest row within CMP_EPS of
    # the column's smallest candidate distance.
    for r0 in reversed(range(0, n, step)):
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
        low = np.minimum(low, dc.min(axis=0))
        tie = ok & (dc <= low[None, :] + CMP_EPS)
        hit = tie.any(axis=0)
        first = np.argmax(tie, axis=0)
        cj = cols[hit]
        best_i[cj] = r0 + first[hit]
        best_d[cj] = d[first[hit], cj]
        best_e[cj] = exc[first[hit], cj]
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
    """Keep at most ``max_pairs`` pairs spread over gap lengths: one per gap bucket.

    Rule (the protocol's reference implementation, WorldAtlas Arena ``memory_loop``):
    sort by ``(gap_seconds, j)``. If there are at most ``max_pairs``, keep all.
    Otherwise cut ``[lo, hi]`` (the shortest and the longest gap) into ``max_pairs``
    equal-width buckets; a pair with gap ``g`` falls in bucket
    ``min(int((g - lo) / span * max_pairs), max_pairs - 1)`` with
    ``span = max(hi - lo, 1e-8)`` s (so the longest gap is in the last bucket). Each
    non-empty bucket keeps its **nearest pair in pose** (smallest ``distance``; ties
    within ``1e-9``: the first in ``(gap_seconds, j)`` order). Then the first bucket
    keeps the shortest-gap pair (the first in that order) and the last bucket the
    longest-gap pair (the last in that order) instead, so both ends of the gap range
    always stay. Empty buckets keep nothing, so fewer than ``max_pairs`` pairs remain
    when the gaps have holes.

    Args:
        pairs: Revisit pairs, any order.
        max_pairs: Most pairs to keep (``>= 2``).

    Returns:
        The kept pairs sorted by ``(gap_seconds, j)``.

    Raises:
        UserInputError: if ``max_pairs`` is not an int ``>= 2``.

    Example:
        >>> ps = [RevisitPair(0, 10 * g, float(g), 0.01 * ((g + 1) % 3), 0.5) for g in range(13)]
        >>> [p.gap_seconds for p in spread_by_gap(ps, 4)]  # buckets of 3 s: 0-3, 3-6, ...
        [0.0, 5.0, 8.0, 12.0]
    """
    cap = _check_max_pairs(max_pairs, "spread_by_gap")
    ordered = sorted(pairs, key=lambda p: (p.gap_seconds, p.j))
    if len(ordered) <= cap:
        return ordered
    lo, hi = ordered[0].gap_seconds, ordered[-1].gap_seconds
    span = max(hi - lo, GAP_SPAN_FLOOR)
    buckets: dict[int, list[int]] = {}
    for k, p in enumerate(ordered):
        buckets.setdefault(min(int((p.gap_seconds - lo) / span * cap), cap - 1), []).append(k)
    kept: dict[int, int] = {}
    for b, members in buckets.items():
        low = min(ordered[k].distance for k in members)
        kept[b] = next(k for k in members if ordered[k].distance <= low + CMP_EPS)
    kept[0] = 0
    kept[cap - 1] = len(ordered) - 1
    return [ordered[k] for k in sorted(kept.values())]


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
