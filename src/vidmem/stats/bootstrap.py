"""Bootstrap confidence intervals over benchmark items (tasks, cases, stories)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MeanCI:
    """A mean with a percentile bootstrap interval.

    Attributes:
        mean: arithmetic mean of the values, ``None`` for no values.
        low, high: interval bounds, ``None`` when fewer than two values (no interval).
        n: number of values.
        confidence: e.g. 0.95.
        n_resamples: bootstrap draws.
        seed: the generator seed, so the interval can be reproduced.
    """

    mean: float | None
    low: float | None
    high: float | None
    n: int
    confidence: float
    n_resamples: int
    seed: int

    def to_dict(self) -> dict[str, float | int | None]:
        return {"mean": self.mean, "ci_low": self.low, "ci_high": self.high, "n": self.n,
                "confidence": self.confidence, "n_resamples": self.n_resamples, "seed": self.seed}


def bootstrap_mean_ci(
    values: np.ndarray | list[float],
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> MeanCI:
    """Mean of ``values`` with a percentile bootstrap interval (resampling items).

    Uses :func:`scipy.stats.bootstrap` with ``method="percentile"``. Values must be
    finite; with fewer than two values there is no interval (bounds ``None``). When all
    values are equal the interval collapses to that value.

    Example:
        >>> ci = bootstrap_mean_ci([0.2, 0.4, 0.6, 0.8], n_resamples=999, seed=1)
        >>> round(ci.mean, 3), ci.low <= ci.mean <= ci.high
        (0.5, True)
        >>> bootstrap_mean_ci([1.0]).low is None
        True
    """
    x = np.asarray(values, dtype=float).ravel()
    if not np.all(np.isfinite(x)):
        raise ValueError("bootstrap_mean_ci: values must be finite (found NaN or Inf)")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"bootstrap_mean_ci: confidence must be in (0, 1), found {confidence}")
    n = int(x.size)
    mean = float(x.mean()) if n else None
    low = high = None
    if n >= 2:
        if np.ptp(x) == 0.0:
            low = high = float(x[0])
        else:
            from scipy import stats as _stats  # 1.2 s to import: only when used
            res = _stats.bootstrap(
                (x,), np.mean, confidence_level=confidence, n_resamples=n_resamples,
                method="percentile", random_state=np.random.default_rng(seed), vectorized=True,
            )
            low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
            if not (math.isfinite(low) and math.isfinite(high)):
                low = high = None
    return MeanCI(mean, low, high, n, confidence, n_resamples, seed)
