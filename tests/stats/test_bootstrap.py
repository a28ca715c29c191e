"""Percentile bootstrap of a mean, checked against a direct resampling loop."""

from __future__ import annotations

import numpy as np
import pytest

from vidmem.stats.bootstrap import bootstrap_mean_ci


def test_matches_a_direct_percentile_bootstrap():
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 1, size=40)
    ci = bootstrap_mean_ci(x, n_resamples=4000, seed=5)
    draws = np.random.default_rng(11).choice(x, size=(20000, x.size), replace=True).mean(axis=1)
    lo, hi = np.percentile(draws, [2.5, 97.5])
    assert ci.mean == pytest.approx(x.mean())
    assert ci.low == pytest.approx(lo, abs=0.01)
    assert ci.high == pytest.approx(hi, abs=0.01)


def test_same_seed_same_interval_and_constant_values():
    x = [0.1, 0.5, 0.9, 0.3]
    assert bootstrap_mean_ci(x, seed=2) == bootstrap_mean_ci(x, seed=2)
    c = bootstrap_mean_ci([0.4, 0.4, 0.4])
    assert (c.low, c.mean, c.high) == (0.4, pytest.approx(0.4), 0.4)


def test_empty_and_single_and_nonfinite():
    assert bootstrap_mean_ci([]).mean is None
    one = bootstrap_mean_ci([0.7])
    assert one.mean == 0.7 and one.low is None and one.high is None
    with pytest.raises(ValueError, match="finite"):
        bootstrap_mean_ci([0.1, float("nan")])
