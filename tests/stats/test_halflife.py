"""Memory Half-Life fit: exact recovery, noisy recovery, every support check, no NaN out."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidmem.errors import UserInputError
from vidmem.stats.halflife import BACKEND, CHECKS, HalfLifeFit, fit_half_life

REQUIRED_DETAILS = {
    "a",
    "b",
    "tau",
    "t_half",
    "r2",
    "n_points",
    "gap_min",
    "gap_max",
    "gap_span",
    "t_ref",
    "event_independence_verified",
    "backend",
    "n_distinct_gaps",
    "fidelity_range",
}


def _curve(gaps, a, tau, b):
    return a * np.exp(-np.asarray(gaps, dtype=float) / tau) + b


def _assert_clean(fit: HalfLifeFit) -> None:
    """No NaN/inf anywhere; status, reason and value consistent."""
    assert fit.status in ("official", "not_applicable")
    assert set(fit.details) >= REQUIRED_DETAILS
    for key, v in fit.details.items():
        assert v is None or isinstance(v, (bool, int, float, str)), (key, v)
        if isinstance(v, float):
            assert math.isfinite(v), (key, v)
    assert fit.details["event_independence_verified"] is False
    assert fit.details["backend"] == BACKEND
    if fit.status == "official":
        assert fit.reason is None and fit.details["failed_check"] is None
        assert isinstance(fit.value, float) and 0.0 <= fit.value <= 1.0
    else:
        assert fit.value is None
        assert isinstance(fit.reason, str)
        check = fit.reason.split(":", 1)[0]
        assert check in CHECKS and fit.details["failed_check"] == check


# ---------------------------------------------------------------- exact recovery


@pytest.mark.parametrize("tau", [0.5, 2.0, 10.0, 60.0, 600.0])
@pytest.mark.parametrize("b", [0.0, 0.3, 0.9])
@pytest.mark.parametrize("n", [8, 24])
def test_noise_free_recovery_across_scales(tau, b, n):
    gaps = np.linspace(0.1 * tau, 3.0 * tau, n)
    a = 1.0 - b  # f(0) = 1, f(inf) = b: all values stay in [0, 1]
    fit = fit_half_life(gaps, _curve(gaps, a, tau, b))
    _assert_clean(fit)
    assert fit.status == "official", fit.reason
    d = fit.details
    assert d["tau"] == pytest.approx(tau, rel=1e-6)
    assert d["a"] == pytest.approx(a, rel=1e-6)
    assert d["b"] == pytest.approx(b, abs=1e-6)
    assert d["r2"] == pytest.approx(1.0, abs=1e-9)
    assert d["a_reference_gap"] == 0.0
    assert d["t_half"] == pytest.approx(tau * math.log(2), rel=1e-6)
    assert fit.value == pytest.approx(min(tau * math.log(2) / 60.0, 1.0), rel=1e-6)


def test_uneven_gaps_and_repeats_recovered():
    rng = np.random.default_rng(3)
    gaps = np.repeat(np.sort(rng.uniform(1.0, 40.0, 8)), 2)  # 16 pairs, 8 distinct gaps
    fit = fit_half_life(gaps, _curve(gaps, 0.5, 12.0, 0.4))
    assert fit.status == "official"
    assert fit.details["tau"] == pytest.approx(12.0, rel=1e-6)
    assert fit.details["n_points"] == 16 and fit.details["n_distinct_gaps"] == 8


def test_support_details_and_t_ref():
    gaps = np.array([2.0, 4.0, 8.0, 16.0, 32.0])
    fit = fit_half_life(gaps, _curve(gaps, 0.7, 20.0, 0.2), t_ref=10.0)
    d = fit.details
    assert (d["gap_min"], d["gap_max"], d["gap_span"]) == (2.0, 32.0, 30.0)
    assert d["gap_centre"] == pytest.approx(12.4)
    assert d["t_ref"] == 10.0
    assert fit.value == 1.0  # t_half = 13.9 s > t_ref = 10 s: clamped
    assert d["fidelity_range"] == pytest.approx(float(np.ptp(_curve(gaps, 0.7, 20.0, 0.2))))


def test_t_half_beyond_gaps_flags_extrapolated_fits():
    inside = np.linspace(1.0, 30.0, 12)  # tau 10 s: t_half 6.9 s, inside the gaps
    assert fit_half_life(inside, _curve(inside, 0.6, 10.0, 0.3)).details["t_half_beyond_gaps"] is False
    # Gaps 17-40 s, tau 200 s: t_half 139 s, the amplitude never halves in the data.
    narrow = np.linspace(17.0, 40.0, 8)
    fit = fit_half_life(narrow, _curve(narrow, 0.9, 200.0, 0.05))
    assert fit.status == "official" and fit.details["t_half_beyond_gaps"] is True
    # No fit, no flag.
    assert fit_half_life([1, 2, 3], [0.9, 0.8, 0.7]).details["t_half_beyond_gaps"] is None


def test_t_half_below_gaps_flags_fits_that_halve_before_the_first_gap():
    # Hand-computed: f = 0.6 e^(-dt / 2) + 0.3 observed at 4..30 s. tau = 2 s, so
    # t_half = 2 ln 2 = 1.386 s, shorter than the shortest gap (4 s): an extrapolation
    # below the data, flagged like one beyond it; the status stays official.
    gaps = np.linspace(4.0, 30.0, 10)
    fit = fit_half_life(gaps, _curve(gaps, 0.6, 2.0, 0.3))
    assert fit.status == "official"
    assert fit.details["t_half"] == pytest.approx(2.0 * math.log(2.0), rel=1e-6)
    assert fit.details["t_half_below_gaps"] is True
    assert fit.details["t_half_beyond_gaps"] is False
    # tau 10 s on 1-30 s: t_half 6.9 s lies inside the gaps, neither flag.
    inside = np.linspace(1.0, 30.0, 12)
    assert fit_half_life(inside, _curve(inside, 0.6, 10.0, 0.3)).details["t_half_below_gaps"] is False
    # The same tau seen only from 8 s on: 6.9 s < 8 s, flagged.
    late = np.linspace(8.0, 30.0, 12)
    assert fit_half_life(late, _curve(late, 0.6, 10.0, 0.3)).details["t_half_below_gaps"] is True
    # No fit, no flag.
    assert fit_half_life([1, 2, 3], [0.9, 0.8, 0.7]).details["t_half_below_gaps"] is None


def test_amplitude_at_zero_overflow_reports_centred_amplitude():
    # Gaps far from 0 relative to tau: a * e^(1e6 / 10) overflows float64.
    gaps = 1e6 + np.linspace(1.0, 30.0, 12)
    fit = fit_half_life(gaps, _curve(gaps - 1e6, 0.6, 10.0, 0.3))
    _assert_clean(fit)
    assert fit.status == "official"
    d = fit.details
    assert d["tau"] == pytest.approx(10.0, rel=1e-6)
    assert d["a_reference_gap"] == pytest.approx(d["gap_centre"])
    assert d["a"] == pytest.approx(d["a_centred"])
    assert d["a"] == pytest.approx(0.6 * math.exp(-(d["gap_centre"] - 1e6) / 10.0), rel=1e-6)
    assert "overflows" in d["a_note"]


def test_curve_formula_with_reference_gap_reproduces_data():
    gaps = np.linspace(3.0, 90.0, 10)
    y = _curve(gaps, 0.55, 25.0, 0.35)
    d = fit_half_life(gaps, y).details
    pred = d["a"] * np.exp(-(gaps - d["a_reference_gap"]) / d["tau"]) + d["b"]
    np.testing.assert_allclose(pred, y, atol=1e-9)


# ---------------------------------------------------------------- noisy recovery


@pytest.mark.parametrize("tau", [2.0, 10.0, 60.0])
def test_noisy_recovery_within_20_percent_median(tau):
    errors = []
    for seed in range(15):
        rng = np.random.default_rng(seed)
        gaps = np.sort(rng.uniform(0.1 * tau, 3.0 * tau, 16))
        y = _curve(gaps, 0.6, tau, 0.3) + rng.normal(0.0, 0.01, gaps.size)
        fit = fit_half_life(gaps, y)
        _assert_clean(fit)
        assert fit.status == "official", fit.reason
        errors.append(abs(fit.details["tau"] / tau - 1.0))
    assert float(np.median(errors)) < 0.20


# ---------------------------------------------------------------- support checks


def _good(n=12):
    gaps = np.linspace(1.0, 30.0, n)
    return gaps, _curve(gaps, 0.6, 10.0, 0.3)


def test_good_data_is_official():
    fit = fit_half_life(*_good())
    assert fit.status == "official"


def test_four_pairs_not_applicable():
    gaps, y = _good(4)
    fit = fit_half_life(gaps, y)
    assert fit.status == "not_applicable"
    assert fit.reason == "min_pairs: 4 pairs, need at least 5"
    _assert_clean(fit)


def test_one_distinct_gap_not_applicable():
    fit = fit_half_life([5.0] * 6, [0.9, 0.8, 0.7, 0.6, 0.5, 0.4])
    assert fit.reason.startswith("distinct_gaps: all 6 pairs share one gap")
    assert fit.details["n_distinct_gaps"] == 1
    _assert_clean(fit)


def test_two_distinct_gaps_not_applicable_tau_undetermined():
    fit = fit_half_life([1.0, 1.0, 1.0, 9.0, 9.0, 9.0], [0.9, 0.91, 0.89, 0.5, 0.52, 0.48])
    assert fit.reason.startswith("distinct_gaps: only 2 distinct gaps")
    _assert_clean(fit)


def test_flat_fidelity_range_not_applicable():
    gaps = np.linspace(1.0, 30.0, 10)
    y = 0.5 + 0.01 * np.exp(-gaps / 10.0) / np.exp(-0.1)  # range just under 0.01
    fit = fit_half_life(gaps, y)
    assert fit.reason.startswith("fidelity_range: fidelity range 0.00")
    assert fit.details["fidelity_range"] < 0.02
    _assert_clean(fit)


def test_nan_observation_not_applicable():
    gaps, y = _good()
    y[3] = np.nan
    fit = fit_half_life(gaps, y)
    assert fit.reason == "finite: 1 of 12 observations are NaN or infinite"
    _assert_clean(fit)


def test_infinite_gap_not_applicable():
    gaps, y = _good()
    gaps[0] = np.inf
    assert fit_half_life(gaps, y).reason.startswith("finite:")


def test_negative_gap_not_applicable():
    gaps, y = _good()
    gaps[0] = -1.0
    assert fit_half_life(gaps, y).reason.startswith("non_negative_gaps:")


def test_pure_noise_fails_r2():
    rng = np.random.default_rng(0)
    gaps = np.linspace(1.0, 30.0, 12)
    fit = fit_half_life(gaps, 0.5 + rng.normal(0.0, 0.1, gaps.size))
    assert fit.status == "not_applicable"
    assert fit.reason.startswith("r2: R^2 = ")
    assert fit.details["r2"] < 0.3
    _assert_clean(fit)


def test_increasing_data_is_no_decay():
    gaps = np.linspace(1.0, 30.0, 12)
    fit = fit_half_life(gaps, _curve(gaps, -0.5, 10.0, 0.9))  # rises towards 0.9
    assert fit.status == "not_applicable"
    assert fit.reason.startswith("decay: no decay, fitted a = ")
    # The fit itself is exact; it is the sign that disqualifies it.
    assert fit.details["a"] == pytest.approx(-0.5, rel=1e-6)
    assert fit.details["tau"] == pytest.approx(10.0, rel=1e-6)
    assert fit.details["r2"] == pytest.approx(1.0)
    _assert_clean(fit)


def test_step_faster_than_gaps_resolve_not_applicable():
    fit = fit_half_life([0.0, 1.0, 2.0, 3.0, 4.0], [1.0, 0.0, 0.0, 0.0, 0.0])
    assert fit.status == "not_applicable"
    assert fit.reason.split(":")[0] == "tau"
    _assert_clean(fit)


@pytest.mark.parametrize(
    "gaps",
    [np.linspace(1.0, 60.0, 24), np.arange(1.0, 25.0), np.linspace(17.0, 60.0, 20)],
)
def test_clean_linear_decline_runs_past_the_identifiable_range(gaps):
    # f = 0.9 - 0.005 dt: an exponential fits it ever better as tau grows, so the
    # least-squares fit chases tau towards infinity and never converges. Benchmark 1.3
    # (was: "converged: no start ... converged") names the true reason: tau is past
    # the identifiable range (1e4 gap spans, vidmem's check).
    fit = fit_half_life(gaps, 0.9 - 0.005 * gaps)
    assert fit.status == "not_applicable"
    assert fit.details["failed_check"] == "tau"
    assert fit.reason.startswith("tau: the fit runs past the identifiable range: ")
    assert "straight line" in fit.reason
    span = float(gaps.max() - gaps.min())
    assert f"{1e4 * span:.3g} s" in fit.reason
    assert fit.details["tau"] is None and fit.value is None
    _assert_clean(fit)


def test_clean_linear_rise_is_named_the_same_way():
    gaps = np.linspace(1.0, 60.0, 24)
    fit = fit_half_life(gaps, 0.5 + 0.004 * gaps)
    assert fit.reason.startswith("tau: the fit runs past the identifiable range: ")


def test_empty_and_mismatched_lengths_not_applicable():
    assert fit_half_life([], []).reason == "min_pairs: 0 pairs, need at least 5"
    fit = fit_half_life([1, 2, 3, 4, 5, 6], [0.9, 0.8, 0.7])
    assert fit.reason.startswith("shape: gap_seconds has 6 values but fidelity has 3")
    _assert_clean(fit)


def test_not_one_dimensional_not_applicable():
    assert fit_half_life(np.ones((5, 2)), np.ones(5)).reason.startswith(
        "shape: gap_seconds must be 1-D"
    )
    assert fit_half_life(3.0, 0.5).reason.startswith("shape:")


def test_custom_thresholds():
    gaps, y = _good(12)
    assert fit_half_life(gaps[:4], y[:4], min_pairs=4).status == "official"
    assert fit_half_life(gaps, y, min_fidelity_range=0.9).reason.startswith("fidelity_range")


@pytest.mark.parametrize("bad", [None, "0.5, 0.6", {"a": 1}, [[1.0], [1.0, 2.0]], [1j, 2j]])
def test_non_numeric_input_raises_user_input_error(bad):
    with pytest.raises(UserInputError, match="fit_half_life: gap_seconds"):
        fit_half_life(bad, [0.5, 0.6])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"t_ref": 0.0}, "t_ref must be a positive finite"),
        ({"t_ref": float("nan")}, "t_ref must be a positive finite"),
        ({"min_pairs": 2}, "min_pairs must be an int >= 3"),
        ({"min_fidelity_range": -0.1}, "min_fidelity_range must be finite"),
        ({"min_r2": 2.0}, "min_r2 must be finite"),
    ],
)
def test_bad_settings_raise(kwargs, match):
    with pytest.raises(UserInputError, match=match):
        fit_half_life(*_good(), **kwargs)


# ---------------------------------------------------------------- never NaN, never raises

_weird = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=0.0, max_value=1.0),
    st.floats(min_value=-1e-300, max_value=1e-300),
    st.sampled_from([0.0, 1.0, 1e308, -1e308, 5e-324, 1e-12, 0.5, 60.0]),
)


@settings(max_examples=150, deadline=None, database=None)
@given(
    gaps=st.lists(_weird, max_size=14),
    fid=st.lists(_weird, max_size=14),
    pad=st.booleans(),
)
def test_no_input_gives_nan_or_raises(gaps, fid, pad):
    if pad:  # equal lengths are the interesting case most of the time
        k = min(len(gaps), len(fid))
        gaps, fid = gaps[:k], fid[:k]
    _assert_clean(fit_half_life(np.array(gaps, dtype=float), np.array(fid, dtype=float)))


@settings(max_examples=60, deadline=None, database=None)
@given(
    gaps=st.lists(st.floats(min_value=0.0, max_value=1e6), min_size=5, max_size=20),
    fid=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=20, max_size=20),
    dup=st.integers(min_value=0, max_value=4),
)
def test_plausible_inputs_with_duplicates_stay_clean(gaps, fid, dup):
    gaps = gaps + gaps[:dup]
    _assert_clean(fit_half_life(gaps, fid[: len(gaps)]))


def test_pure_noise_never_raises_or_leaks_nan():
    # Regression: seeds 4, 15 and 16 give a tiny centred amplitude with a large
    # mean-gap / tau ratio, which once overflowed math.exp while converting the
    # amplitude to dt = 0.
    for seed in (4, 15, 16, *range(10)):
        rng = np.random.default_rng(seed)
        gaps = np.sort(rng.uniform(1.0, 30.0, 16))
        rng.normal(0.0, 0.01, 16)  # keep the stream that found the bug
        _assert_clean(fit_half_life(gaps, 0.5 + rng.normal(0.0, 0.1, 16)))
