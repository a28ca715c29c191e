"""vidmem's model-level half-life: one decay time over many cases, clustered bootstrap."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from vidmem.stats.halflife import fit_half_life
from vidmem.stats.halflife_model import LABEL, fit_model_half_life


def _curve(g, a, tau, b):
    return a * np.exp(-np.asarray(g, float) / tau) + b


def test_shared_tau_is_recovered_exactly_with_own_amplitude_and_floor():
    # Hand-made: three cases share tau = 20 s but start and end at different
    # fidelities, and see different gap ranges (as different loops do).
    cases = {
        "short": (np.array([1.0, 3.0, 6.0, 10.0, 15.0]), None),
        "mid": (np.array([17.0, 25.0, 35.0, 45.0, 60.0]), None),
        "long": (np.array([30.0, 40.0, 50.0, 59.0]), None),
    }
    params = {"short": (0.5, 0.4), "mid": (0.3, 0.6), "long": (0.8, 0.1)}
    cases = {k: (g, _curve(g, params[k][0], 20.0, params[k][1])) for k, (g, _) in cases.items()}
    m = fit_model_half_life(cases, n_resamples=200)
    assert m["status"] == "estimate" and m["label"] == LABEL
    assert m["tau_seconds"] == pytest.approx(20.0, rel=1e-5)
    assert m["t_half_seconds"] == pytest.approx(20.0 * math.log(2), rel=1e-5)
    assert m["value"] == pytest.approx(20.0 * math.log(2) / 60.0, rel=1e-5)
    assert m["r2"] == pytest.approx(1.0, abs=1e-9)
    assert (m["n_cases"], m["n_informative_cases"], m["n_pairs"]) == (3, 3, 14)
    assert (m["gap_min"], m["gap_max"]) == (1.0, 60.0)
    assert m["t_half_below_gaps"] is False and m["t_half_beyond_gaps"] is False
    # Noise-free data: every draw finds the same tau, so the interval collapses on it.
    assert m["ci_low_seconds"] == pytest.approx(m["t_half_seconds"], rel=1e-3)
    assert m["ci_high_seconds"] == pytest.approx(m["t_half_seconds"], rel=1e-3)
    # One fit with a single amplitude and floor over the same pairs is not tau 20 s.
    pooled = fit_half_life(np.concatenate([g for g, _ in cases.values()]),
                           np.concatenate([f for _, f in cases.values()]))
    assert abs(pooled.details["tau"] - 20.0) > 1.0
    json.dumps(m, allow_nan=False)


def test_the_bootstrap_resamples_cases_not_pairs():
    rng = np.random.default_rng(1)
    g = np.array([2.0, 5.0, 9.0, 14.0, 20.0, 28.0, 40.0, 55.0])
    cases = {f"c{k}": (g, _curve(g, rng.uniform(0.3, 0.6), 12.0, rng.uniform(0.2, 0.4))
                       + rng.normal(0, 0.02, g.size)) for k in range(10)}
    once = fit_model_half_life(cases, n_resamples=500, seed=3)
    # Every pair repeated three times within its case: a pair-level bootstrap would
    # narrow the interval, a case-clustered one is unchanged.
    thrice = {k: (np.repeat(g, 3), np.repeat(f, 3)) for k, (g, f) in cases.items()}
    again = fit_model_half_life(thrice, n_resamples=500, seed=3)
    assert again["t_half_seconds"] == pytest.approx(once["t_half_seconds"], rel=1e-6)
    assert again["ci_low_seconds"] == pytest.approx(once["ci_low_seconds"], rel=1e-9)
    assert again["ci_high_seconds"] == pytest.approx(once["ci_high_seconds"], rel=1e-9)
    assert once["ci_low_seconds"] < 12.0 * math.log(2) < once["ci_high_seconds"]


def test_not_applicable_reasons():
    g = np.array([2.0, 5.0, 10.0, 20.0, 40.0])
    one = fit_model_half_life({"a": (g, _curve(g, 0.5, 10.0, 0.3))}, n_resamples=0)
    assert one["status"] == "not_applicable" and one["reason"].startswith("informative_cases")
    # Two gaps per case do not count as informative.
    two = {k: ([5.0, 5.0, 30.0], [0.9, 0.9, 0.5]) for k in "abc"}
    assert fit_model_half_life(two)["reason"].startswith("informative_cases")
    rising = {k: (g, 1.0 - _curve(g, 0.5, 10.0, 0.3)) for k in "ab"}
    out = fit_model_half_life(rising, n_resamples=0)
    assert out["status"] == "not_applicable" and out["value"] is None
    assert out["reason"].split(":")[0] in ("decay", "tau")
    assert fit_model_half_life({})["reason"].startswith("informative_cases")
    with pytest.raises(ValueError, match="case a"):
        fit_model_half_life({"a": ([1.0, float("nan")], [0.5, 0.4])})
