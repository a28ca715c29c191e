"""Paired statistics over cases: an arm against the baseline on the same cases.

* :func:`paired_case_bootstrap` -- percentile interval of the mean paired difference
  ``arm - baseline``: ``numpy.random.default_rng(seed).integers(0, n, (n_resamples, n))``
  draws case indices (the same draw for both arms, cases sorted by id when given as a
  mapping), each row's mean difference is one draw, the interval is the
  ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of the draws
  (``numpy.quantile``, linear interpolation). 4,000 resamples, seed 0.
* :func:`paired_wilcoxon` -- :func:`scipy.stats.wilcoxon` on the differences, two-sided,
  ``zero_method="wilcox"`` (zero differences are dropped before ranking, scipy's
  default), ``method="auto"``. When **every** difference is zero there is nothing to
  rank: scipy is not called and the result is ``statistic=0.0, p_value=1.0,
  n_nonzero=0`` (what scipy 1.17 returns, with a warning; older versions raised).
* :func:`running_best_of_k` -- per try k = 1..K, the mean over cases of the best score
  among the original and the first k tries (keep-best with the original eligible). It is
  an **oracle** estimate: the same scorer that reports the result picks the clip.
* :func:`paired_arms` -- both tests for every arm against the baseline.

Every choice is in :data:`PROTOCOL`, with its reason and its source, for the run log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["DEFAULT_RESAMPLES", "DEFAULT_SEED", "PROTOCOL", "PairedDiff", "PairedWilcoxon",
           "RunningBest", "paired_arms", "paired_case_bootstrap", "paired_wilcoxon",
           "running_best_of_k"]

DEFAULT_RESAMPLES = 4000
DEFAULT_SEED = 0

PROTOCOL: dict[str, dict[str, str]] = {
    "bootstrap": {
        "rule": "paired bootstrap over cases, 4000 resamples, seed 0, percentile interval of "
                "the mean difference arm - baseline; numpy default_rng(seed).integers over "
                "cases sorted by id",
        "reason": "the protocol's paired intervals; sorting makes the draw order-free",
        "source": "PROTOCOLS.md section 5; seed 001 Table 7 text (4,000 resamples, seed 0); "
                  "generator and order decided here",
    },
    "wilcoxon": {
        "rule": "scipy.stats.wilcoxon on the same pairs, two-sided, zero_method='wilcox', "
                "method='auto'; all-zero differences -> statistic 0, p 1, scipy not called",
        "reason": "the protocol's paired test; 'wilcox' (scipy's default) since the paper "
                  "names none; no difference at all is no evidence of one",
        "source": "PROTOCOLS.md section 5; seed 001 Table 7 text; zero handling decided here",
    },
    "running_best": {
        "rule": "for k = 1..K the mean over cases of max(original, tries 1..k); missing "
                "tries (NaN) are not eligible; labelled an oracle estimate",
        "reason": "keep-best with the original always in the set; chosen by the reporting "
                  "scorer, so an oracle coverage estimate, not a deployable critic",
        "source": "PROTOCOLS.md section 5 (M3-Agent); seed 001 sections 4-5 and App. A",
    },
}


def _pairs(arm: Sequence[float] | Mapping[str, float],
           baseline: Sequence[float] | Mapping[str, float]) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(arm, Mapping) != isinstance(baseline, Mapping):
        raise ValueError("arm and baseline: give both as mappings case_id -> value or both "
                         "as aligned sequences")
    if isinstance(arm, Mapping) and isinstance(baseline, Mapping):
        if set(arm) != set(baseline):
            only_a = sorted(set(arm) - set(baseline))[:5]
            only_b = sorted(set(baseline) - set(arm))[:5]
            raise ValueError(f"arm and baseline must cover the same cases; only in the arm: "
                             f"{only_a}, only in the baseline: {only_b}")
        ids = sorted(arm)
        a = np.array([arm[k] for k in ids], dtype=float)
        b = np.array([baseline[k] for k in ids], dtype=float)
    else:
        a, b = np.asarray(arm, dtype=float).ravel(), np.asarray(baseline, dtype=float).ravel()
        if a.shape != b.shape:
            raise ValueError(f"arm and baseline: expected the same number of cases, found "
                             f"{a.size} and {b.size}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("arm and baseline: every value must be finite (found NaN or Inf)")
    return a, b


@dataclass(frozen=True)
class PairedDiff:
    """Mean paired difference with its percentile bootstrap interval."""

    mean_diff: float | None
    low: float | None
    high: float | None
    n: int
    confidence: float
    n_resamples: int
    seed: int

    def to_dict(self) -> dict[str, object]:
        return {"mean_diff": self.mean_diff, "ci_low": self.low, "ci_high": self.high,
                "n": self.n, "confidence": self.confidence, "n_resamples": self.n_resamples,
                "seed": self.seed}


def paired_case_bootstrap(
    arm: Sequence[float] | Mapping[str, float],
    baseline: Sequence[float] | Mapping[str, float],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
) -> PairedDiff:
    """Paired percentile bootstrap of ``mean(arm - baseline)`` over cases.

    Args:
        arm, baseline: per-case scores, as mappings case_id -> score (paired by id) or
            as aligned sequences of floats.

    Returns:
        the mean difference and its interval (bounds None with fewer than two cases).

    Example:
        >>> r = paired_case_bootstrap({"a": 1.0, "b": 0.5, "c": 1.0}, {"a": 0.0, "b": 0.5, "c": 0.0})
        >>> round(r.mean_diff, 4), r.n_resamples, r.seed, 0.0 <= r.low <= r.high <= 1.0
        (0.6667, 4000, 0, True)
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence: expected a number in (0, 1), found {confidence}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples: expected >= 1, found {n_resamples}")
    a, b = _pairs(arm, baseline)
    d = a - b
    n = int(d.size)
    if n == 0:
        return PairedDiff(None, None, None, 0, confidence, n_resamples, seed)
    mean = float(d.mean())
    if n < 2:
        return PairedDiff(mean, None, None, n, confidence, n_resamples, seed)
    idx = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))
    draws = d[idx].mean(axis=1)
    lo, hi = np.quantile(draws, [(1 - confidence) / 2, (1 + confidence) / 2])
    return PairedDiff(mean, float(lo), float(hi), n, confidence, n_resamples, seed)


@dataclass(frozen=True)
class PairedWilcoxon:
    """A paired Wilcoxon signed-rank test (two-sided)."""

    statistic: float | None
    p_value: float | None
    n: int
    n_nonzero: int
    zero_method: str

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def paired_wilcoxon(
    arm: Sequence[float] | Mapping[str, float],
    baseline: Sequence[float] | Mapping[str, float],
    *,
    zero_method: str = "wilcox",
) -> PairedWilcoxon:
    """Paired Wilcoxon signed-rank test of ``arm - baseline`` (module docstring).

    Example:
        >>> r = paired_wilcoxon([1.0, 0.8, 0.9, 0.7, 0.6, 1.0], [0.0, 0.1, 0.2, 0.1, 0.6, 0.0])
        >>> r.n_nonzero, r.statistic, round(r.p_value, 4)
        (5, 0.0, 0.0625)
        >>> paired_wilcoxon([0.5, 0.5], [0.5, 0.5]).p_value
        1.0
    """
    a, b = _pairs(arm, baseline)
    d = a - b
    nz = int(np.count_nonzero(d))
    if d.size == 0:
        return PairedWilcoxon(None, None, 0, 0, zero_method)
    if nz == 0:
        return PairedWilcoxon(0.0, 1.0, int(d.size), 0, zero_method)
    from scipy import stats as _stats  # 1.2 s to import: only when used
    res = _stats.wilcoxon(d, zero_method=zero_method, alternative="two-sided", method="auto")
    return PairedWilcoxon(float(res.statistic), float(res.pvalue), int(d.size), nz, zero_method)


@dataclass(frozen=True)
class RunningBest:
    """Running best-of-k per try; ``means[k-1]`` uses the original and tries 1..k."""

    means: tuple[float, ...]
    per_case: np.ndarray
    original_mean: float
    oracle_estimate: bool = True
    note: str = ("keep-best chosen by the reporting scorer with the original always "
                 "eligible: an oracle coverage estimate, not a deployable critic")

    def to_dict(self) -> dict[str, object]:
        return {"means": list(self.means), "original_mean": self.original_mean,
                "oracle_estimate": self.oracle_estimate, "note": self.note}


def running_best_of_k(original: Sequence[float], tries: Sequence[Sequence[float]] | np.ndarray
                      ) -> RunningBest:
    """Running best over tries, the original clip always eligible (an oracle estimate).

    Args:
        original: ``(n_cases,)`` the original (baseline) clip's score per case.
        tries: ``(n_cases, K)`` the score of try k per case; NaN = not run.

    Returns:
        ``means`` of length K and ``per_case`` ``(n_cases, K)``.

    Example:
        >>> r = running_best_of_k([0.5, 0.0], [[0.2, 0.9, 0.1], [0.0, 0.0, 1.0]])
        >>> r.means, r.original_mean, r.oracle_estimate
        ((0.25, 0.45, 0.95), 0.25, True)
    """
    o = np.asarray(original, dtype=float).ravel()
    t = np.asarray(tries, dtype=float)
    if t.ndim != 2 or t.shape[0] != o.size:
        raise ValueError(f"tries: expected shape (n_cases={o.size}, K), found {t.shape}")
    if not np.all(np.isfinite(o)):
        raise ValueError("original: every case needs a finite score (the original is always "
                         "eligible)")
    if np.any(np.isinf(t)):
        raise ValueError("tries: scores must be finite or NaN (not run)")
    filled = np.where(np.isnan(t), -np.inf, t)
    per_case = np.maximum(o[:, None], np.maximum.accumulate(filled, axis=1))
    means = tuple(float(x) for x in per_case.mean(axis=0)) if o.size else ()
    return RunningBest(means, per_case, float(o.mean()) if o.size else float("nan"))


def paired_arms(
    scores: Mapping[str, Mapping[str, float]],
    *,
    baseline: str = "baseline",
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> dict[str, dict[str, object]]:
    """Bootstrap and Wilcoxon of every arm against ``baseline``.

    Args:
        scores: arm -> (case_id -> score); every arm must cover the baseline's cases.

    Example:
        >>> out = paired_arms({"baseline": {"a": 0.0, "b": 0.0}, "x": {"a": 1.0, "b": 0.5}})
        >>> list(out), out["x"]["bootstrap"]["mean_diff"], out["x"]["wilcoxon"]["n_nonzero"]
        (['x'], 0.75, 2)
    """
    if baseline not in scores:
        raise ValueError(f"scores: no {baseline!r} arm among {sorted(scores)}")
    base = scores[baseline]
    return {arm: {"bootstrap": paired_case_bootstrap(s, base, n_resamples=n_resamples,
                                                     seed=seed).to_dict(),
                  "wilcoxon": paired_wilcoxon(s, base).to_dict()}
            for arm, s in scores.items() if arm != baseline}
