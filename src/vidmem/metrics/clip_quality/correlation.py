"""Rank correlation of per-clip quality with per-clip recall (scipy's Spearman).

Part of :mod:`vidmem.metrics.clip_quality` (the overview and rules are there).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from vidmem.errors import UserInputError

#: the fewest clips with both values for which a correlation is reported
MIN_CLIPS = 3


@dataclass(frozen=True)
class Spearman:
    """Spearman's rho of quality vs recall over clips.

    Attributes:
        rho: the rank correlation, ``None`` when undefined (fewer than
            :data:`MIN_CLIPS` clips with both values, or a constant side).
        p_value: scipy's two-sided p-value (``None`` with ``rho``).
        n: clips with both values finite.
        n_dropped: clips left out because a value was missing (``None`` / NaN).
    """

    rho: float | None
    p_value: float | None
    n: int
    n_dropped: int

    def to_dict(self) -> dict[str, float | int | None]:
        return {"rho": self.rho, "p_value": self.p_value, "n": self.n,
                "n_dropped": self.n_dropped}


def _pairs(quality: Sequence[float | None] | Mapping[str, float | None],
           recall: Sequence[float | None] | Mapping[str, float | None]) -> np.ndarray:
    if isinstance(quality, Mapping) or isinstance(recall, Mapping):
        if not (isinstance(quality, Mapping) and isinstance(recall, Mapping)):
            raise UserInputError("spearman_with_recall: pass two mappings (clip -> value) or "
                                 "two sequences, not one of each")
        only_q, only_r = sorted(set(quality) - set(recall)), sorted(set(recall) - set(quality))
        if only_q or only_r:
            raise UserInputError(f"spearman_with_recall: clips without recall {only_q[:5]!r}, "
                                 f"clips without quality {only_r[:5]!r}",
                                 hint="score the same clips on both sides")
        keys = sorted(quality)
        quality, recall = [quality[k] for k in keys], [recall[k] for k in keys]
    if len(quality) != len(recall):
        raise UserInputError(f"spearman_with_recall: {len(quality)} quality values but "
                             f"{len(recall)} recall values", hint="one value per clip on each side")
    try:
        return np.array([[np.nan if q is None else q, np.nan if r is None else r]
                         for q, r in zip(quality, recall, strict=True)],
                        dtype=np.float64).reshape(-1, 2)
    except (TypeError, ValueError) as exc:
        raise UserInputError(f"spearman_with_recall: values must be numbers or None ({exc})"
                             ) from exc


def spearman_with_recall(per_clip_quality: Sequence[float | None] | Mapping[str, float | None],
                         per_clip_recall: Sequence[float | None] | Mapping[str, float | None]
                         ) -> Spearman:
    """Spearman's rho of one quality metric with per-clip recall.

    Args:
        per_clip_quality, per_clip_recall: one value per clip, as two aligned sequences
            or two mappings clip id -> value (same keys); ``None`` / NaN clips are
            dropped and counted.

    Example:
        >>> s = spearman_with_recall([0.9, 0.8, 0.7, None], [0.5, 0.4, 0.6, 1.0])
        >>> round(s.rho, 3), s.n, s.n_dropped
        (-0.5, 3, 1)
    """
    pairs = _pairs(per_clip_quality, per_clip_recall)
    ok = np.isfinite(pairs).all(axis=1)
    both = pairs[ok]
    n, dropped = int(both.shape[0]), int((~ok).sum())
    if n < MIN_CLIPS or np.ptp(both[:, 0]) == 0 or np.ptp(both[:, 1]) == 0:
        return Spearman(None, None, n, dropped)
    res = stats.spearmanr(both[:, 0], both[:, 1])
    return Spearman(float(res.statistic), float(res.pvalue), n, dropped)
