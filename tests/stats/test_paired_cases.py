"""Paired case statistics: bootstrap vs a slow loop, Wilcoxon vs scipy, running best."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from vidmem.stats.paired_cases import (
    paired_arms,
    paired_case_bootstrap,
    paired_wilcoxon,
    running_best_of_k,
)


def _slow_bootstrap(d, n_resamples, seed, confidence):
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(d), size=(n_resamples, len(d)))
    draws = []
    for row in idx:
        total = 0.0
        for i in row:
            total += d[i]
        draws.append(total / len(d))
    draws.sort()

    def q(p):  # linear interpolation between order statistics
        pos = p * (len(draws) - 1)
        lo = math.floor(pos)
        hi = min(lo + 1, len(draws) - 1)
        return draws[lo] + (draws[hi] - draws[lo]) * (pos - lo)

    return q((1 - confidence) / 2), q((1 + confidence) / 2)


def test_bootstrap_matches_slow_loop():
    rng = np.random.default_rng(7)
    base = rng.random(43)
    arm = np.clip(base + rng.normal(0.3, 0.2, 43), 0, 1)
    r = paired_case_bootstrap(arm, base)
    lo, hi = _slow_bootstrap(list(arm - base), 4000, 0, 0.95)
    assert r.n_resamples == 4000 and r.seed == 0 and r.n == 43
    assert r.mean_diff == pytest.approx(float(np.mean(arm - base)))
    assert r.low == pytest.approx(lo, abs=1e-12) and r.high == pytest.approx(hi, abs=1e-12)


def test_bootstrap_pairs_by_case_id_in_sorted_order():
    arm = {"c": 1.0, "a": 0.2, "b": 0.7}
    base = {"b": 0.1, "c": 0.0, "a": 0.2}
    r = paired_case_bootstrap(arm, base, n_resamples=500, seed=3)
    ref = paired_case_bootstrap([0.2, 0.7, 1.0], [0.2, 0.1, 0.0], n_resamples=500, seed=3)
    assert r == ref
    with pytest.raises(ValueError, match="same cases"):
        paired_case_bootstrap({"a": 1.0}, {"b": 1.0})
    with pytest.raises(ValueError):
        paired_case_bootstrap([1.0, 2.0], [1.0])
    assert paired_case_bootstrap([1.0], [0.0]).low is None


def test_wilcoxon_matches_scipy():
    rng = np.random.default_rng(1)
    base = rng.random(30)
    arm = base + rng.normal(0.1, 0.3, 30)
    arm[:4] = base[:4]                                  # some zero differences
    r = paired_wilcoxon(arm, base)
    ref = stats.wilcoxon(arm - base, zero_method="wilcox", alternative="two-sided")
    assert r.statistic == pytest.approx(ref.statistic) and r.p_value == pytest.approx(ref.pvalue)
    assert r.n == 30 and r.n_nonzero == 26 and r.zero_method == "wilcox"
    pr = paired_wilcoxon(arm, base, zero_method="pratt")
    ref = stats.wilcoxon(arm - base, zero_method="pratt")
    assert pr.p_value == pytest.approx(ref.pvalue)


def test_wilcoxon_all_zero_differences():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = paired_wilcoxon([0.3, 0.5, 1.0], [0.3, 0.5, 1.0])
    assert (r.statistic, r.p_value, r.n, r.n_nonzero) == (0.0, 1.0, 3, 0)


def test_running_best_of_k():
    original = [0.5, 0.0, 1.0]
    tries = [[0.2, 0.9, np.nan, 0.1],
             [0.0, 0.0, 1.0, 0.4],
             [0.0, 0.0, 0.0, 0.0]]                     # a rewrite that breaks a correct case
    r = running_best_of_k(original, tries)
    slow = []
    for k in range(1, 5):
        best = [max([o] + [t for t in row[:k] if not math.isnan(t)])
                for o, row in zip(original, tries, strict=True)]
        slow.append(sum(best) / 3)
    assert r.means == pytest.approx(slow) and r.oracle_estimate and "oracle" in r.note
    assert list(r.means) == sorted(r.means)            # running best never falls
    assert r.per_case[2].tolist() == [1.0] * 4          # the original stays eligible
    with pytest.raises(ValueError):
        running_best_of_k([0.1], [[0.1], [0.2]])


def test_paired_arms():
    scores = {"baseline": {"a": 0.0, "b": 0.1, "c": 0.0},
              "answer_only": {"a": 1.0, "b": 0.1, "c": 0.5},
              "open_and_hold": {"a": 0.0, "b": 0.1, "c": 0.0}}
    out = paired_arms(scores, n_resamples=200)
    assert set(out) == {"answer_only", "open_and_hold"}
    assert out["open_and_hold"]["wilcoxon"]["p_value"] == 1.0
    assert out["answer_only"]["bootstrap"]["mean_diff"] == pytest.approx(0.5)
    with pytest.raises(ValueError):
        paired_arms({"x": {}})
