"""Memory Half-Life: an exploratory exponential fit of revisit fidelity against gap.

Given revisit pairs of a memory-loop video, each with a gap (seconds between the two
frames, from native frame indices / fps) and a revisit fidelity in ``[0, 1]``, this
module fits

    f(dt) = a * exp(-dt / tau) + b

and reports ``t_half = tau * ln 2`` and ``raw = clamp(t_half / t_ref, 0, 1)`` with
``t_ref = 60`` s by default.

**Read the number with care.** The fit is exploratory. The pairs of one video are not
shown to be independent revisit events (``event_independence_verified`` is always
``False``), and a larger value is *not* a longer causal memory: it says only that, on
these gaps, fidelity fell slowly (or not much) relative to ``t_ref``.

How the fit is done (all choices are written here so a result can be reproduced):

* **Normalised, centred coordinates.** Gaps are mapped to
  ``s = (dt - mean(dt)) / span`` (``span = max(dt) - min(dt)``) and fidelities to
  ``v = (y - min(y)) / range``. The model ``v = A * exp(-s / k) + B`` is fitted there
  and converted back: ``tau = k * span``, ``b = B * range + min(y)`` and the amplitude
  at the mean gap ``a_centred = A * range``. The answer does not depend on the units
  of either axis, and huge or tiny gaps cannot overflow the fit.
* **Starts.** The profile sum of squared errors (``A``, ``B`` solved in closed form
  for a fixed ``tau``) is evaluated on 32 decay times log-spaced from one tenth of the
  smallest positive gap or gap spacing up to ten times the span. The three best become
  starting points for a Levenberg-Marquardt fit of all three parameters
  (:func:`scipy.optimize.least_squares`, ``method="lm"``); the converged fit with the
  smallest error wins.
* **Identifiable range** (a vidmem check, beyond the card). ``k = tau / span`` must
  lie in ``[|min(s)| / 700, 1e4]``. Below, the exponential would pass ``e^700`` at
  the smallest gap (the decay is faster than the gaps can resolve); above, the curve
  is a straight line over the observed gaps and ``tau`` is not determined. A fit
  outside that range fails the ``tau`` check. When no start converges, the profile
  error is scanned over the range (256 log-spaced decay times): if it is smallest
  at the upper end (a near-linear decline such as ``f = 0.9 - 0.005 dt``, where the
  optimiser chases an ever longer ``tau``), the reason is ``tau: the fit runs past
  the identifiable range ...``; at the lower end, ``tau: the fit runs below ...``;
  only a failure with the minimum inside the range is reported as ``converged``.
  (The protocol's reference implementation fits differently, sweeping the offset
  ``b`` and fitting ``log(f - b)`` by a line, and drops fits with ``tau`` over 10
  gap spans; vidmem keeps its own fit and range.)
* **Amplitude overflow.** ``a`` is reported at ``dt = 0`` when that is a finite
  float64 (checked in the log domain, never computed as ``inf``). When ``a * e^(mean/tau)``
  would overflow, ``a`` is the amplitude at the mean gap instead; ``a_reference_gap``
  always says which, so ``f(dt) = a * exp(-(dt - a_reference_gap) / tau) + b`` holds in
  both cases, and ``a_note`` explains.
* **Three distinct gaps** (a vidmem check). The protocol asks for more than one
  distinct gap; this module asks for at least three, because with two the curve passes through both
  group means for *every* ``tau`` and the fit would report an arbitrary decay time.
* **No decay.** Decay needs ``a > 0``. When fidelity rises with the gap the fit has
  ``a <= 0``; that is "no measurable decay" and the result is ``not_applicable``.
* **Extrapolation flag.** ``t_half_beyond_gaps`` says whether ``t_half`` exceeds the
  longest observed gap: the fitted curve would fall to half its ``dt = 0`` amplitude
  only at a gap longer than any in the data, so that ``t_half`` extends the curve's
  shape beyond what was observed (over a narrow span a nearly straight line passes
  every check with a very long ``tau``). It is a diagnostic only; it never changes the
  status. ``t_half_below_gaps`` is its mirror image: ``t_half`` is shorter than the
  shortest observed gap, so the curve had already fallen past half its amplitude
  before the first pair and ``t_half`` extends its shape *below* the data (a fit on
  gaps of 28-60 s that reports ``t_half = 3 s``). It is as unidentifiable as the
  other, flagged the same way and also never changes the status.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from vidmem.errors import UserInputError
from vidmem.stats.halflife_fit import _fit_stage

__all__ = [
    "BACKEND",
    "CHECKS",
    "DEFAULT_MIN_FIDELITY_RANGE",
    "DEFAULT_MIN_PAIRS",
    "DEFAULT_MIN_R2",
    "DEFAULT_T_REF_SECONDS",
    "HalfLifeFit",
    "fit_half_life",
]

#: Name of the fitting backend written into every result.
BACKEND = "exponential_fit"
#: Reference window for ``raw = clamp(t_half / t_ref, 0, 1)``, seconds.
DEFAULT_T_REF_SECONDS = 60.0
#: Support checks (protocol defaults).
DEFAULT_MIN_PAIRS = 5
DEFAULT_MIN_FIDELITY_RANGE = 0.02
DEFAULT_MIN_R2 = 0.3

#: The checks, in the order they are applied; ``reason`` starts with the failed name.
CHECKS = (
    "shape",  # both inputs 1-D and of equal length
    "min_pairs",  # at least min_pairs observations
    "finite",  # every observation (and every reported number) finite
    "non_negative_gaps",  # no gap below 0 s
    "distinct_gaps",  # at least 3 distinct gaps (protocol: > 1; see the module notes)
    "fidelity_range",  # max - min fidelity >= min_fidelity_range (and > 0)
    "converged",  # the least-squares fit converged (minimum inside the identifiable range)
    "tau",  # tau finite, > 0 and inside the identifiable range (also: fit runs past it)
    "r2",  # R^2 finite and >= min_r2
    "decay",  # a > 0: fidelity falls with the gap
)


@dataclass(frozen=True)
class HalfLifeFit:
    """Outcome of :func:`fit_half_life`.

    Attributes:
        status: ``"official"`` when every support check holds, else
            ``"not_applicable"``.
        reason: ``None`` when official; otherwise ``"<check>: <what failed>"`` where
            ``<check>`` is one of :data:`CHECKS`.
        value: ``clamp(t_half / t_ref, 0, 1)`` when official, else ``None``.
        details: Plain-Python numbers (``float``/``int``/``bool``/``str``/``None``;
            never NaN or infinity) describing support and fit: ``a``, ``b``, ``tau``
            (s), ``t_half`` (s), ``r2``, ``n_points``, ``gap_min``, ``gap_max``,
            ``gap_span`` (s), ``t_ref`` (s), ``event_independence_verified`` (always
            ``False``), ``backend`` (``"exponential_fit"``), ``n_distinct_gaps``,
            ``fidelity_range``, plus ``a_reference_gap`` (s; the gap at which ``a`` is
            the amplitude, 0.0 unless that overflows), ``a_centred``, ``gap_centre``
            (s, the mean gap), ``sse`` (sum of squared residuals, fidelity units),
            ``a_note``, ``t_half_beyond_gaps`` (``t_half > gap_max``; ``None``
            without a fitted ``tau``), ``t_half_below_gaps`` (``t_half < gap_min``;
            ``None`` without a fitted ``tau``) and ``failed_check``. Fit numbers stay in ``details`` for a
            not-applicable result when they were computed, as diagnostics.
    """

    status: Literal["official", "not_applicable"]
    reason: str | None
    value: float | None
    details: dict[str, Any]


def _check_config(t_ref: float, min_pairs: int, min_fidelity_range: float, min_r2: float) -> None:
    def bad(name: str, expected: str, found: object, hint: str) -> UserInputError:
        return UserInputError(
            f"fit_half_life: {name} must be {expected}, found {found!r}", hint=hint
        )

    if isinstance(t_ref, bool) or not isinstance(t_ref, (int, float, np.number)):
        raise bad("t_ref", "a positive number of seconds", t_ref, "use the default t_ref=60.0")
    if not (math.isfinite(float(t_ref)) and float(t_ref) > 0):
        raise bad("t_ref", "a positive finite number of seconds", t_ref, "use t_ref=60.0")
    if isinstance(min_pairs, bool) or not isinstance(min_pairs, (int, np.integer)) or min_pairs < 3:
        raise bad("min_pairs", "an int >= 3 (a 3-parameter fit)", min_pairs, "use the default 5")
    for name, v, lo, hi in (
        ("min_fidelity_range", min_fidelity_range, 0.0, math.inf),
        ("min_r2", min_r2, -math.inf, 1.0),
    ):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.number)):
            raise bad(name, "a number", v, "use the protocol default")
        if not (math.isfinite(float(v)) and lo <= float(v) <= hi):
            raise bad(name, f"finite and in [{lo}, {hi}]", v, "use the protocol default")


def _as_vector(x: object, name: str) -> tuple[np.ndarray | None, str | None]:
    """Return ``x`` as a float64 array, or ``(None, why)`` when it is not 1-D.

    Raises:
        UserInputError: if ``x`` is not numeric at all (``None``, a string, a mapping,
            a ragged or object sequence, complex numbers).
    """
    if x is None or isinstance(x, (str, bytes, dict, set, frozenset)):
        raise UserInputError(
            f"fit_half_life: {name} must be a 1-D sequence or array of real numbers, "
            f"found {type(x).__name__}",
            hint=f"pass {name} as a list or numpy array of floats",
        )
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise UserInputError(
            f"fit_half_life: {name} could not be read as an array of numbers ({exc})",
            hint=f"pass {name} as a flat list or 1-D numpy array of floats",
        ) from exc
    if arr.dtype.kind not in "biuf":
        raise UserInputError(
            f"fit_half_life: {name} must hold real numbers, found dtype {arr.dtype}",
            hint=f"pass {name} as floats (seconds for gaps, [0, 1] for fidelity)",
        )
    if arr.ndim != 1:
        return None, f"{name} must be 1-D, found shape {arr.shape}"
    with np.errstate(all="ignore"):
        return arr.astype(np.float64), None


def _clean(x: Any) -> Any:
    """Return ``x`` as a plain Python number, or ``None`` when it is not finite."""
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, (int, np.integer)):
        return int(x)
    xf = float(x)
    return xf if math.isfinite(xf) else None


def fit_half_life(
    gap_seconds: object,
    fidelity: object,
    *,
    t_ref: float = DEFAULT_T_REF_SECONDS,
    min_pairs: int = DEFAULT_MIN_PAIRS,
    min_fidelity_range: float = DEFAULT_MIN_FIDELITY_RANGE,
    min_r2: float = DEFAULT_MIN_R2,
) -> HalfLifeFit:
    """Fit ``f(dt) = a exp(-dt / tau) + b`` to revisit fidelities and score the half-life.

    The fit is exploratory: a larger value is **not** a longer causal memory, and the
    pairs are not verified to be independent events. See the module docstring for how
    the fit is computed.

    Every support check in :data:`CHECKS` must hold for an ``"official"`` result;
    otherwise the result is ``"not_applicable"`` and ``reason`` names the first check
    that failed. No numeric input makes this function raise, and no NaN or infinity
    ever appears in the result (a non-finite number becomes ``None``, and the result
    ``not_applicable``).

    Args:
        gap_seconds: Gap of each revisit pair, shape ``(n,)``, seconds (native frame
            index difference / fps). Must be finite and ``>= 0``.
        fidelity: Revisit fidelity of each pair, shape ``(n,)``, normally in ``[0, 1]``.
        t_ref: Reference window, seconds (``> 0``).
        min_pairs: Fewest pairs for an official result (``>= 3``).
        min_fidelity_range: Smallest ``max - min`` of ``fidelity`` for a fit.
        min_r2: Smallest coefficient of determination for an official result.

    Returns:
        A :class:`HalfLifeFit`; ``value`` is ``clamp(tau * ln2 / t_ref, 0, 1)`` when
        official.

    Raises:
        UserInputError: only for inputs that are not numbers at all (``None``,
            strings, mappings, ragged or complex sequences) and for bad settings
            (``t_ref`` not positive and finite, ``min_pairs < 3``, ...). Numeric
            trouble of any kind (empty, mismatched lengths, NaN, infinity, 2-D
            arrays) gives ``not_applicable`` instead.

    Example:
        >>> import numpy as np
        >>> gaps = np.linspace(1.0, 30.0, 12)
        >>> fit = fit_half_life(gaps, 0.6 * np.exp(-gaps / 10.0) + 0.3)
        >>> fit.status, round(fit.details["tau"], 6), round(fit.value, 6)
        ('official', 10.0, 0.115525)
        >>> fit.details["t_half_beyond_gaps"], fit.details["t_half_below_gaps"]  # 6.9 s: inside 1-30 s
        (False, False)
        >>> fit_half_life([1, 2, 3, 4], [0.9, 0.8, 0.7, 0.6]).reason
        'min_pairs: 4 pairs, need at least 5'
    """
    _check_config(t_ref, min_pairs, min_fidelity_range, min_r2)
    x, why_x = _as_vector(gap_seconds, "gap_seconds")
    y, why_y = _as_vector(fidelity, "fidelity")

    details: dict[str, Any] = {
        "a": None,
        "b": None,
        "tau": None,
        "t_half": None,
        "r2": None,
        "n_points": None,
        "gap_min": None,
        "gap_max": None,
        "gap_span": None,
        "t_ref": float(t_ref),
        "event_independence_verified": False,
        "backend": BACKEND,
        "n_distinct_gaps": None,
        "fidelity_range": None,
        "a_reference_gap": None,
        "a_centred": None,
        "gap_centre": None,
        "sse": None,
        "a_note": None,
        "t_half_beyond_gaps": None,
        "t_half_below_gaps": None,
        "failed_check": None,
    }

    def result(check: str | None, why: str | None, value: float | None = None) -> HalfLifeFit:
        out = {k: _clean(v) for k, v in details.items()}
        if check is None:
            lost = [k for k, v in details.items() if v is not None and out[k] is None]
            if lost or value is None or not math.isfinite(value):
                check, why = "finite", f"non-finite result in {', '.join(lost) or 'value'}"
        out["failed_check"] = check
        if check is not None:
            return HalfLifeFit("not_applicable", f"{check}: {why}", None, out)
        return HalfLifeFit("official", None, float(value), out)  # type: ignore[arg-type]

    # Support descriptors over whatever is finite, so a failed result still says why.
    with np.errstate(all="ignore"):
        if x is not None:
            fx = x[np.isfinite(x)]
            if fx.size:
                details["gap_min"], details["gap_max"] = float(fx.min()), float(fx.max())
                details["gap_span"] = float(fx.max()) - float(fx.min())
                details["n_distinct_gaps"] = int(np.unique(fx).size)
        if y is not None:
            fy = y[np.isfinite(y)]
            if fy.size:
                details["fidelity_range"] = float(fy.max()) - float(fy.min())

    if x is None or y is None:
        return result("shape", why_x or why_y)
    if x.size != y.size:
        return result(
            "shape",
            f"gap_seconds has {x.size} values but fidelity has {y.size}; pass one of each per pair",
        )
    n = int(x.size)
    details["n_points"] = n
    if n < min_pairs:
        return result("min_pairs", f"{n} pairs, need at least {min_pairs}")
    n_bad = int(np.count_nonzero(~(np.isfinite(x) & np.isfinite(y))))
    if n_bad:
        return result("finite", f"{n_bad} of {n} observations are NaN or infinite")
    if float(x.min()) < 0:
        return result(
            "non_negative_gaps", f"smallest gap is {float(x.min())!r} s, gaps must be >= 0"
        )
    distinct = np.unique(x)
    if distinct.size < 2:
        return result("distinct_gaps", f"all {n} pairs share one gap ({float(x[0])!r} s)")
    if distinct.size < 3:
        return result(
            "distinct_gaps",
            "only 2 distinct gaps: the 3-parameter curve passes through both group means "
            "for every tau, so tau is not determined; need at least 3",
        )
    y_range = details["fidelity_range"]
    if y_range is None or not math.isfinite(y_range):
        return result("fidelity_range", "the fidelity range overflows float64")
    if y_range < min_fidelity_range or y_range <= 0:
        return result("fidelity_range", f"fidelity range {y_range:.6g} < {min_fidelity_range:g}")

    try:
        return _fit_stage(x, y, distinct, float(t_ref), min_r2, details, result)
    except (ArithmeticError, ValueError, np.linalg.LinAlgError) as exc:  # pragma: no cover
        # Defensive: numeric input must never raise; report the failure instead.
        return result("converged", f"numerical failure in the fit ({type(exc).__name__}: {exc})")
