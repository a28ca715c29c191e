"""A model-level Memory Half-Life: one decay time fitted over all cases of a run.

This is **vidmem's estimate, beyond the protocol card**. The card fits each video on
its own (:func:`vidmem.stats.halflife.fit_half_life`) and a run is summarised by the
median of those per-case ``t_half``; within one 60 s loop the gaps often span 2-40 s,
so single fits trade the floor against ``tau`` and land far off (or below / beyond
the observed gaps). Here every case of a run (or of one loop) shares one decay time:

    f_c(dt) = a_c * exp(-dt / tau) + b_c

with a free amplitude ``a_c`` and floor ``b_c`` per case (start images and loops look
different, so they neither start nor end at the same fidelity) and one ``tau``. For a
fixed ``tau`` each case's ``(a_c, b_c)`` is a closed-form least-squares line in
``exp(-dt / tau)``, so the fit is a one-dimensional search: the summed error is
profiled on :data:`N_GRID` decay times log-spaced over the identifiable range
(``[gap_min / 10, 1e4 x gap span]`` of the pooled gaps) and the best point is polished
by :func:`scipy.optimize.minimize_scalar` (bounded, in ``log tau``) between its grid
neighbours.

Checks (first failure -> ``not_applicable`` with ``reason``): at least
:data:`MIN_INFORMATIVE_CASES` cases with three or more distinct gaps
(``informative_cases``), at least 3 distinct gaps pooled, the minimum strictly inside
the range (``tau``: a minimum on an edge is a straight line or a step, not a decay),
decay (the shared amplitude, the covariance of ``exp(-dt / tau)`` with fidelity within
cases, is positive) and ``R^2 >= 0.3`` against the per-case means.

The interval is a **case-clustered** percentile bootstrap: cases are drawn with
replacement (pairs of one video stay together) and the decay time refitted; each
case's error curve does not depend on the draw, so a draw is a weighted sum of the
precomputed curves (:func:`vidmem.stats.paired_bootstrap.multiplicities` counts the
draws) and its minimum is refined by a parabola in ``log tau`` through the grid
neighbours. A draw whose minimum lies on the upper edge counts as an unbounded
``t_half``; when a percentile falls there the bound is ``None`` and the note says so.
Percentiles are read off the sorted draws without interpolation (``numpy.quantile``,
``method="inverted_cdf"``), so an unbounded draw never becomes NaN.

As with the per-case fit, a larger value is not a longer causal memory and the pairs
are not independent events.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.optimize import minimize_scalar

from vidmem.stats.halflife import DEFAULT_MIN_R2, DEFAULT_T_REF_SECONDS
from vidmem.stats.paired_bootstrap import multiplicities

__all__ = ["LABEL", "METHOD", "MIN_INFORMATIVE_CASES", "N_GRID", "fit_model_half_life"]

#: How every result is labelled (never to be read as the protocol's number).
LABEL = "vidmem model-level estimate (beyond the protocol card; not the official per-case half-life)"
METHOD = ("one decay time shared by all cases, f_c(dt) = a_c exp(-dt / tau) + b_c with a free "
          "amplitude and floor per case; least squares profiled over tau and polished with "
          "scipy minimize_scalar; case-clustered percentile bootstrap")
#: Decay times on the profile grid.
N_GRID = 400
#: Fewest cases with >= 3 distinct gaps.
MIN_INFORMATIVE_CASES = 2
_K_LO, _K_HI = 0.1, 1e4  # grid: [gap_min * 0.1 (or 0.1 x finest spacing), 1e4 x span]


def _case_curves(cases: Sequence[tuple[np.ndarray, np.ndarray]], taus: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per case and decay time: residual SSE, covariance term and total SS."""
    sse = np.empty((len(cases), taus.size))
    cov = np.empty_like(sse)
    ss = np.empty(len(cases))
    for k, (g, f) in enumerate(cases):
        with np.errstate(over="ignore", under="ignore"):
            e = np.exp(-g[None, :] / taus[:, None])
        ec = e - e.mean(axis=1, keepdims=True)
        fc = f - f.mean()
        n = ec @ fc
        d = np.einsum("kn,kn->k", ec, ec)
        ok = d > 1e-300
        ss[k] = float(fc @ fc)
        sse[k] = ss[k] - np.where(ok, n * n / np.where(ok, d, 1.0), 0.0)
        cov[k] = n
    return np.maximum(sse, 0.0), cov, ss


def _refine(log_t: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Parabolic minimum in ``log tau`` through each row's grid argmin and neighbours."""
    k = np.clip(np.argmin(total, axis=1), 1, log_t.size - 2)
    rows = np.arange(total.shape[0])
    y0, y1, y2 = total[rows, k - 1], total[rows, k], total[rows, k + 1]
    h = log_t[1] - log_t[0]
    den = y0 - 2 * y1 + y2
    shift = np.where(den > 0, 0.5 * (y0 - y2) / np.where(den > 0, den, 1.0), 0.0)
    return log_t[k] + np.clip(shift, -1.0, 1.0) * h


def _na(out: dict[str, Any], reason: str) -> dict[str, Any]:
    out.update(status="not_applicable", reason=reason)
    return out


def fit_model_half_life(cases: Mapping[str, tuple[Sequence[float], Sequence[float]]], *,
                        t_ref: float = DEFAULT_T_REF_SECONDS, min_r2: float = DEFAULT_MIN_R2,
                        n_resamples: int = 2000, confidence: float = 0.95,
                        seed: int = 0) -> dict[str, Any]:
    """Fit one decay time over all cases' revisit pairs, with a case-clustered CI.

    Args:
        cases: case id -> ``(gap_seconds, fidelity)`` of its pairs (finite numbers;
            cases with no pair are ignored).
        t_ref: reference window of ``value = clamp(t_half / t_ref, 0, 1)``.
        min_r2: smallest ``R^2`` against the per-case means.
        n_resamples: bootstrap draws (0: no interval).
        confidence: interval level.
        seed: bootstrap generator seed.

    Returns:
        Plain JSON data: ``label``, ``method``, ``status`` (``estimate`` or
        ``not_applicable``), ``reason``, ``t_half_seconds``, ``tau_seconds``,
        ``value``, ``r2``, ``ci_low_seconds``, ``ci_high_seconds`` (``None`` when not
        identified), ``n_cases``, ``n_informative_cases``, ``n_pairs``, ``gap_min``,
        ``gap_max``, ``t_half_below_gaps``, ``t_half_beyond_gaps``, ``bootstrap``
        (draws, seed, confidence, draws at the upper edge), ``note``.

    Example:
        >>> g = np.array([2.0, 5.0, 10.0, 20.0, 40.0])
        >>> cases = {"a": (g, 0.5 * np.exp(-g / 12.0) + 0.4),   # shared tau 12 s,
        ...          "b": (g, 0.3 * np.exp(-g / 12.0) + 0.6)}   # own amplitude and floor
        >>> m = fit_model_half_life(cases, n_resamples=200)
        >>> m["status"], round(m["tau_seconds"], 3), m["n_informative_cases"]
        ('estimate', 12.0, 2)
    """
    kept = []
    for cid, (g, f) in sorted(cases.items()):
        ga, fa = np.asarray(g, np.float64).ravel(), np.asarray(f, np.float64).ravel()
        if ga.size != fa.size or not (np.isfinite(ga).all() and np.isfinite(fa).all()):
            raise ValueError(f"fit_model_half_life: case {cid}: gaps and fidelities must be "
                             "finite and of equal length")
        if ga.size:
            kept.append((ga, fa))
    out: dict[str, Any] = {
        "label": LABEL, "method": METHOD, "status": "not_applicable", "reason": None,
        "t_half_seconds": None, "tau_seconds": None, "value": None, "r2": None,
        "ci_low_seconds": None, "ci_high_seconds": None, "n_cases": len(kept),
        "n_informative_cases": sum(np.unique(g).size >= 3 for g, _ in kept),
        "n_pairs": int(sum(g.size for g, _ in kept)), "gap_min": None, "gap_max": None,
        "t_half_below_gaps": None, "t_half_beyond_gaps": None, "t_ref": float(t_ref),
        "bootstrap": {"n_resamples": int(n_resamples), "seed": int(seed),
                      "confidence": float(confidence), "unit": "case", "n_upper_edge": None},
        "event_independence_verified": False, "note": None,
    }
    if out["n_informative_cases"] < MIN_INFORMATIVE_CASES:
        return _na(out, f"informative_cases: {out['n_informative_cases']} case(s) with >= 3 "
                   f"distinct gaps, need {MIN_INFORMATIVE_CASES}")
    gaps = np.unique(np.concatenate([g for g, _ in kept]))
    out["gap_min"], out["gap_max"] = float(gaps[0]), float(gaps[-1])
    span = float(gaps[-1] - gaps[0])
    positive = gaps[gaps > 0]
    finest = min(float(positive[0]) if positive.size else math.inf, float(np.diff(gaps).min()))
    log_t = np.linspace(math.log(_K_LO * finest), math.log(_K_HI * span), N_GRID)
    sse, cov, ss = _case_curves(kept, np.exp(log_t))
    total = sse.sum(axis=0)
    k = int(np.argmin(total))
    if k in (0, N_GRID - 1):
        edge = "past the longest" if k else "below the shortest"
        return _na(out, f"tau: the shared fit runs to the edge of the identifiable range "
                   f"({edge} decay time the gaps can resolve)")

    def profile(lt: float) -> float:
        s, _, _ = _case_curves(kept, np.array([math.exp(lt)]))
        return float(s.sum())

    best = minimize_scalar(profile, bounds=(log_t[k - 1], log_t[k + 1]), method="bounded",
                           options={"xatol": 1e-10})
    tau = math.exp(float(best.x))
    s_best, c_best, _ = _case_curves(kept, np.array([tau]))
    r2 = 1.0 - float(s_best.sum()) / float(ss.sum()) if ss.sum() > 0 else math.nan
    t_half = tau * math.log(2.0)
    out.update(tau_seconds=tau, t_half_seconds=t_half, r2=r2 if math.isfinite(r2) else None,
               t_half_below_gaps=bool(t_half < gaps[0]), t_half_beyond_gaps=bool(t_half > gaps[-1]))
    if not float(c_best.sum()) > 0:
        return _na(out, "decay: fidelity does not fall with the gap within cases at the "
                   "best decay time")
    if not (math.isfinite(r2) and r2 >= min_r2):
        return _na(out, f"r2: R^2 = {r2:.4g} against the per-case means, need >= {min_r2:g}")
    out.update(status="estimate", value=min(max(t_half / float(t_ref), 0.0), 1.0))
    if n_resamples > 0:
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, len(kept), size=(int(n_resamples), len(kept)))
        draws = multiplicities(idx, len(kept)) @ sse
        at_top = np.argmin(draws, axis=1) == N_GRID - 1
        t_draw = np.exp(_refine(log_t, draws)) * math.log(2.0)
        t_draw[at_top] = math.inf
        alpha = (1.0 - confidence) / 2.0
        lo, hi = (float(np.quantile(t_draw, q, method="inverted_cdf")) for q in (alpha, 1 - alpha))
        out["ci_low_seconds"] = lo if math.isfinite(lo) else None
        out["ci_high_seconds"] = hi if math.isfinite(hi) else None
        out["bootstrap"]["n_upper_edge"] = int(at_top.sum())
        if out["ci_high_seconds"] is None:
            out["note"] = (f"{int(at_top.sum())} of {n_resamples} draws ran past the longest "
                           "identifiable decay time: the upper bound is not identified")
    return out
