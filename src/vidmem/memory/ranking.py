"""Pure ranking rules shared by the retrieval policies: order, fusion, diversity.

Each follows the VMem-Bench reference code where the protocol card is silent
(``src/vmem_bench/baseline_adapters/external/retrieval/retrieval_baselines.py`` and
``scripts/evaluate_baselines/trackA/baseline_adapters/causal/runner.py``):

* ties in a score ranking keep the candidates' given order (the reference sorts
  with Python's stable ``sort(reverse=True)``), which for frames is time order;
* reciprocal-rank fusion adds ``1 / (k + rank)`` (rank from 1, the position in each
  list) per candidate over the lists it appears in; ties keep first-seen order;
* greedy farthest-point selection starts from the first (earliest) candidate and
  adds the one whose highest cosine to the chosen set is lowest; ties go to the
  earliest.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from vidmem.errors import UserInputError

__all__ = ["SEGMENT_TIEBREAK", "farthest_point", "rrf_fuse", "segment_frame_score", "stable_order"]

#: Score step that orders a segment's frames below it (reference: ``1e-6 * (r + f)``).
SEGMENT_TIEBREAK = 1e-6


def stable_order(scores: np.ndarray) -> np.ndarray:
    """Positions of ``scores`` from highest to lowest; equal scores keep their order.

    Example:
        >>> stable_order(np.array([0.2, 0.9, 0.2, 0.9])).tolist()
        [1, 3, 0, 2]
    """
    return np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")


def segment_frame_score(segment_score: float, segment_rank: int, frame_rank: int) -> float:
    """The score a segment-level policy gives frame ``frame_rank`` of segment ``segment_rank``.

    ``segment_score - 1e-6 * (segment_rank + frame_rank)``, ranks from 1 (reference
    ``SegUniformRetriever``): a segment's frames follow it in order, and segments
    whose scores differ by less than about 1e-6 per frame interleave their frames.

    Example:
        >>> round(segment_frame_score(0.5, 2, 3), 7)
        0.499995
    """
    return float(segment_score) - SEGMENT_TIEBREAK * (int(segment_rank) + int(frame_rank))


def rrf_fuse(rankings: Sequence[Sequence[Hashable]], k: int = 60) -> list[tuple[Hashable, float]]:
    """Reciprocal-rank fusion of ranked lists of candidate keys.

    Args:
        rankings: lists of keys, best first; a key's rank in a list is its position
            from 1. A key missing from a list gets nothing from it.
        k: the RRF constant (60).

    Returns:
        ``(key, sum of 1 / (k + rank))`` from highest to lowest fused score; ties keep
        the order in which keys were first seen (list by list).

    Example:
        >>> rrf_fuse([["a", "b", "c"], ["c", "a"]], k=1)  # a: 1/2+1/3, c: 1/4+1/2, b: 1/3
        [('a', 0.8333333333333333), ('c', 0.75), ('b', 0.3333333333333333)]
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise UserInputError(f"rrf_fuse: k must be an int >= 0, found {k!r}", hint="the protocol uses 60")
    scores: dict[Hashable, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda kv: kv[1], reverse=True)


def farthest_point(embeddings: np.ndarray, m: int) -> list[int]:
    """Greedy farthest-point selection of ``m`` rows by cosine distance.

    Starts from row 0; then repeatedly adds the row whose largest cosine similarity to
    the rows chosen so far is smallest (distance ``1 - max cos``), ties to the lowest
    row. With ``m >= n`` every row is returned.

    Args:
        embeddings: ``(n, D)`` unit rows, in time order.
        m: how many to choose, ``>= 0``.

    Returns:
        Chosen row indices in the order chosen (callers sort them by time).

    Example:
        >>> pts = np.array([[1, 0], [0.8, 0.6], [0, 1], [-0.6, 0.8]])
        >>> farthest_point(pts, 3)   # start at 0; -0.6,0.8 is farthest; then 0,1 vs 0.8,0.6
        [0, 3, 1]
    """
    emb = np.asarray(embeddings, dtype=np.float64)
    n = emb.shape[0]
    if m <= 0 or n == 0:
        return []
    if m >= n:
        return list(range(n))
    sims = emb @ emb.T
    chosen = [0]
    nearest = sims[0].copy()  # highest cosine of each row to the chosen set
    taken = np.zeros(n, dtype=bool)
    taken[0] = True
    while len(chosen) < m:
        dist = np.where(taken, -np.inf, 1.0 - nearest)
        best = int(np.argmax(dist))  # argmax returns the first of equal maxima
        chosen.append(best)
        taken[best] = True
        nearest = np.maximum(nearest, sims[best])
    return chosen
