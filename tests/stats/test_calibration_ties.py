"""The tie rule of the Youden cut: of the runs of adjacent candidate cuts with the maximal J
the highest wins, and the cut lies halfway between that run's lowest candidate and the
next lower control score. Hand-computed cases, the known optimum of two unit Gaussians,
and the rates at the cut recomputed from the scores."""

from __future__ import annotations

import numpy as np
import pytest

from vidmem.benchmarks.vmem_track_b.analysis_identity_stats import calibrate
from vidmem.stats.calibration import PROTOCOL, youden_threshold


def test_separable_controls_cut_halfway_between_them():
    # offline the positives sit near 0.999; a perfect-memory return at 0.96 must pass
    pos, neg = [0.999, 0.998, 0.95], [0.62, 0.3, 0.5]
    c = youden_threshold(pos, neg)
    assert c.cut == (0.95 + 0.62) / 2 == pytest.approx(0.785)
    assert (c.tpr, c.fpr, c.j) == (1.0, 0.0, 1.0)
    assert c.same(0.96) and not c.same(0.78)


def test_equal_variance_gaussians_cut_near_the_known_optimum():
    # J(c) = Phi(c) - Phi(c - 2) peaks at c = 1 (J = 0.6827); over 40 seeds at this size
    # the empirical cut has a spread of about 0.04, this seed lands 0.028 below 1
    rng = np.random.default_rng(20260925)
    neg, pos = rng.normal(0.0, 1.0, 20_000), rng.normal(2.0, 1.0, 20_000)
    c = youden_threshold(pos, neg)
    assert c.cut == pytest.approx(1.0, abs=0.05)
    assert c.j == pytest.approx(0.6827, abs=0.01)


def test_a_plateau_inside_overlapping_scores_cuts_below_its_lowest_score():
    # descending: 0.95 P (J 1/4), 0.85 N (0), 0.80 P (1/4), 0.70 P (2/4), 0.60 P+N (2/4),
    # 0.50 N (1/4), 0.20 N (0): the maximal run is {0.70, 0.60}; next lower score 0.50
    pos, neg = [0.95, 0.80, 0.70, 0.60], [0.85, 0.60, 0.50, 0.20]
    c = youden_threshold(pos, neg)
    assert c.cut == 0.55
    assert (c.tpr, c.fpr, c.j) == (1.0, 0.5, 0.5)  # those of score >= 0.55, i.e. of 0.60
    assert calibrate({"positive": [{"kind": "prop", "score": s} for s in pos],
                      "negative": [{"kind": "prop", "score": s} for s in neg]}
                     )["prop"]["cuts_with_max_j"] == {"lowest": 0.6, "highest": 0.7}


def test_of_two_separate_runs_the_higher_wins():
    # J = 1/3 at 0.9, 0.7 and 0.4, each followed by a lower J: the run {0.9} wins
    c = youden_threshold([0.9, 0.7, 0.4], [0.8, 0.5, 0.2])
    assert c.cut == pytest.approx(0.85)
    assert (c.tpr, c.fpr) == (pytest.approx(1 / 3), 0.0)


def test_a_run_reaching_the_lowest_score_keeps_that_score():
    # reversed controls: J = -1 at 0.9, J = 0 at 0.1, and nothing lies below 0.1
    c = youden_threshold([0.1], [0.9])
    assert (c.cut, c.tpr, c.fpr) == (0.1, 1.0, 1.0)


def test_adjacent_floats_keep_the_candidate():
    below = float(np.nextafter(1.0, 0.0))  # no float lies between the two
    c = youden_threshold([1.0], [below])
    assert c.cut == 1.0 and c.same(1.0) and not c.same(below)


@pytest.mark.parametrize("seed", range(8))
def test_the_cut_is_off_every_control_and_its_rates_are_recomputable(seed):
    rng = np.random.default_rng(seed)
    pos = np.round(rng.normal(0.6, 0.2, 40), 1)  # coarse: ties and long plateaus
    neg = np.round(rng.normal(0.4, 0.2, 30), 1)
    c = youden_threshold(pos, neg)
    scores = np.concatenate([pos, neg])
    assert c.cut not in set(scores) or c.cut == scores.min()
    assert c.tpr == np.mean(pos >= c.cut) and c.fpr == np.mean(neg >= c.cut)
    best = max(np.mean(pos >= t) - np.mean(neg >= t) for t in set(scores))
    assert c.j == pytest.approx(best)


def test_protocol_names_the_midpoint():
    assert "midpoint" in PROTOCOL["ties"]["rule"]
    assert "overfits" in PROTOCOL["ties"]["reason"]
