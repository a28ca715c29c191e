"""The numeric half of the Memory Half-Life fit: least squares and the fit checks.

:func:`vidmem.stats.halflife.fit_half_life` validates the observations and runs the
support checks that need no fit; once the data can support a curve it hands them to
:func:`_fit_stage` here. This module maps them to normalised, centred coordinates,
profiles and polishes the exponential, converts the answer back and applies the
``tau``, ``r2`` and ``decay`` checks. Every choice is documented in the module
docstring of :mod:`vidmem.stats.halflife`; keeping the optimiser apart leaves that
module to the public result type and the input checks.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
from scipy.optimize import least_squares

#: the caller's result type (``HalfLifeFit``); this module never names it, so the import
#: goes one way only: halflife -> halflife_fit.
R = TypeVar("R")

_N_GRID = 32  # decay-time starts on the profile grid
_N_POLISH = 3  # of which this many best are polished with Levenberg-Marquardt
_MAX_EXPONENT = 700.0  # exp(700) ~ 1e304 still fits in float64
_K_MAX = 1e4  # largest identifiable tau / span
_RAIL = 1e-6  # relative distance to a range edge that counts as "on the edge"
_TOL = 1e-15  # LM tolerances (must stay above machine epsilon)
_N_EDGE_GRID = 256  # decay times profiled over the identifiable range after a failed fit
_EDGE_TOL = 1e-12  # profile SSE within this fraction of the total SS counts as the minimum


def _profile(s: np.ndarray, v: np.ndarray, ks: np.ndarray) -> tuple[np.ndarray, ...]:
    """Closed-form best ``(A, B)`` and SSE of ``v ~ A exp(-s/k) + B`` for each ``k``.

    The basis is evaluated as ``exp(-(s - min s) / k)`` (values in ``(0, 1]``, no
    overflow) and the amplitude converted to the centred one, ``A = A_min e^(min s/k)``,
    which can only underflow.
    """
    s0 = float(s.min())
    with np.errstate(all="ignore"):
        e = np.exp(-(s[None, :] - s0) / ks[:, None])  # (K, n)
        ec = e - e.mean(axis=1, keepdims=True)
        vc = v - v.mean()
        see = np.einsum("kn,kn->k", ec, ec)
        sev = ec @ vc
        ok = see > 1e-300
        a_min = np.where(ok, sev / np.where(ok, see, 1.0), 0.0)
        sse = float(vc @ vc) - np.where(ok, sev * a_min, 0.0)
        b = v.mean() - a_min * e.mean(axis=1)
        a_c = a_min * np.exp(s0 / ks)
    return a_c, b, np.maximum(sse, 0.0)


def _residuals(p: np.ndarray, s: np.ndarray, v: np.ndarray) -> np.ndarray:
    a, b, log_k = p
    with np.errstate(all="ignore"):
        inv_k = np.exp(-np.clip(log_k, -_MAX_EXPONENT, _MAX_EXPONENT))
        expo = np.clip(-s * inv_k, -800.0, _MAX_EXPONENT)
        model = a * np.exp(expo) + b
        r = np.nan_to_num(model - v, nan=1e100, posinf=1e100, neginf=-1e100)
    return np.clip(r, -1e100, 1e100)


def _fit_normalised(
    s: np.ndarray, v: np.ndarray, k_lo: float, k_hi: float
) -> tuple[float, float, float, float] | None:
    """Best converged ``(A, B, k, sse)`` in normalised units, or ``None``."""
    ks = np.geomspace(k_lo, k_hi, _N_GRID)
    a_g, b_g, sse_g = _profile(s, v, ks)
    order = np.argsort(sse_g, kind="stable")[:_N_POLISH]
    best: tuple[float, float, float, float] | None = None
    for idx in order:
        x0 = np.array([a_g[idx], b_g[idx], math.log(ks[idx])])
        if not np.all(np.isfinite(x0)):
            continue
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = least_squares(
                    _residuals,
                    x0,
                    args=(s, v),
                    method="lm",
                    xtol=_TOL,
                    ftol=_TOL,
                    gtol=_TOL,
                    max_nfev=400,
                )
        except (ValueError, np.linalg.LinAlgError, FloatingPointError):
            continue
        if res.status <= 0 or not np.all(np.isfinite(res.x)):
            continue
        sse = float(np.sum(_residuals(res.x, s, v) ** 2))
        if not math.isfinite(sse):
            continue
        a, b, log_k = (float(t) for t in res.x)
        if abs(log_k) > _MAX_EXPONENT:
            continue
        cand = (a, b, math.exp(log_k), sse)
        if best is None or sse < best[3]:
            best = cand
    return best


def _profile_edge(s: np.ndarray, v: np.ndarray, k_min: float) -> str | None:
    """Where the profile SSE is smallest over the identifiable range, after a failed fit.

    Returns ``"upper"`` when the error keeps falling up to ``k = _K_MAX`` (the data lie
    on a straight line over these gaps: the best decay time is longer than any the gaps
    can identify), ``"lower"`` when it is smallest at ``k_min`` (a step: faster than
    the gaps resolve), and ``None`` when the minimum is inside the range (the optimiser
    failed on a curve that has a decay time).
    """
    ks = np.geomspace(k_min, _K_MAX, _N_EDGE_GRID)
    _, _, sse = _profile(s, v, ks)
    if not np.all(np.isfinite(sse)):
        return None
    tol = _EDGE_TOL * max(float(np.sum((v - v.mean()) ** 2)), 1e-300)
    best = float(sse.min())
    if sse[-1] <= best + tol:
        return "upper"
    if sse[0] <= best + tol:
        return "lower"
    return None


def _fit_stage(
    x: np.ndarray,
    y: np.ndarray,
    distinct: np.ndarray,
    t_ref: float,
    min_r2: float,
    details: dict[str, Any],
    result: Callable[..., R],
) -> R:
    """Fit validated data (>= 3 distinct gaps, positive fidelity range) and check it.

    ``result(check, why, value=None)`` builds the answer (a ``HalfLifeFit``): ``check``
    and ``why`` name the failed check, or are ``None`` with the value when all hold.
    """
    y_lo = float(y.min())
    y_range = float(details["fidelity_range"])
    # Normalised, centred coordinates (see the module docstring).
    lo = float(distinct[0])
    span = float(distinct[-1]) - lo
    u = (x - lo) / span
    m = float(u.mean())
    s = u - m
    v = (y - y_lo) / y_range
    centre = lo + m * span
    details["gap_centre"] = centre

    positive = distinct[distinct > 0]
    finest = min(float(positive[0]), float(np.diff(distinct).min()))
    k_min = max(abs(float(s.min())), 1e-300) / _MAX_EXPONENT
    k_lo = max(0.1 * finest / span, k_min)
    k_hi = 10.0
    fit = _fit_normalised(s, v, min(k_lo, k_hi), k_hi)
    if fit is None:
        edge = _profile_edge(s, v, k_min)
        if edge == "upper":
            return result(
                "tau",
                f"the fit runs past the identifiable range: its error keeps falling as tau "
                f"grows beyond {_K_MAX * span:.3g} s ({_K_MAX:g} x the {span:.6g} s gap span), "
                "so over these gaps fidelity follows a straight line and tau is not "
                "determined (the least-squares fit diverges towards an infinite tau)",
            )
        if edge == "lower":
            return result(
                "tau",
                f"the fit runs below the identifiable range: its error is smallest at tau = "
                f"{k_min * span:.3g} s, a step faster than these gaps can resolve",
            )
        return result(
            "converged",
            "no start of the least-squares fit converged, although the fit error has its "
            "minimum inside the identifiable range of tau",
        )
    a_n, b_n, k, sse_n = fit

    with np.errstate(all="ignore"):
        tau = k * span
        a_centred = a_n * y_range
        b = b_n * y_range + y_lo
        sst_n = float(np.sum((v - v.mean()) ** 2))
        r2 = 1.0 - sse_n / sst_n if sst_n > 0 else math.nan
        sse = sse_n * y_range * y_range
    t_half = tau * math.log(2.0)
    details.update(tau=tau, t_half=t_half, a_centred=a_centred, b=b, r2=r2, sse=sse)
    if math.isfinite(t_half):
        # Both flags mark an extrapolation: the curve halves outside the observed gaps.
        details["t_half_beyond_gaps"] = bool(t_half > float(distinct[-1]))
        details["t_half_below_gaps"] = bool(t_half < float(distinct[0]))
    # Amplitude at dt = 0, checked in the log domain so it is never computed as inf.
    if a_centred == 0 or not math.isfinite(tau) or tau <= 0:
        details.update(a=a_centred, a_reference_gap=centre)
    elif math.log(abs(a_centred)) + centre / tau < 709.0:
        log_a0 = math.log(abs(a_centred)) + centre / tau
        details.update(a=math.copysign(math.exp(log_a0), a_centred), a_reference_gap=0.0)
    else:
        details.update(
            a=a_centred,
            a_reference_gap=centre,
            a_note="the amplitude at dt = 0 overflows float64; a is the amplitude at the mean gap",
        )

    if not (math.isfinite(tau) and tau > 0):
        return result("tau", f"fitted tau is {tau!r} s, need a finite tau > 0")
    if not (k_min * (1 + _RAIL) <= k <= _K_MAX * (1 - _RAIL)):
        return result(
            "tau",
            f"fitted tau = {tau:.6g} s is outside the identifiable range "
            f"[{k_min * span:.3g}, {_K_MAX * span:.3g}] s for gaps spanning {span:.6g} s",
        )
    if not math.isfinite(r2) or r2 < min_r2:
        return result("r2", f"R^2 = {r2:.4g}, need a finite R^2 >= {min_r2:g}")
    if not a_centred > 0:
        return result(
            "decay",
            f"no decay, fitted a = {a_centred:.4g} <= 0 (fidelity does not fall with the gap)",
        )
    value = min(max(t_half / float(t_ref), 0.0), 1.0)
    return result(None, None, value)
