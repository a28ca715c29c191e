"""Youden calibration finds known optimal cuts: separated uniform ranges (any cut between
them is perfect), equal-variance Gaussians (the optimum is the midpoint of the means),
a hand-computed tie, and a brute-force Youden search over every candidate cut."""

from __future__ import annotations

import json

import numpy as np
import pytest

from vidmem.errors import UserInputError
from vidmem.stats.calibration import PROTOCOL, Calibration, youden_threshold


def _brute_force(pos: np.ndarray, neg: np.ndarray) -> tuple[float, float]:
    """(cut, J) by trying every distinct score, highest first, in exact fractions: the
    highest run of adjacent maximal-J scores, cut halfway below its lowest score."""
    from fractions import Fraction

    cands = sorted(set(pos) | set(neg), reverse=True)
    js = [Fraction(int((pos >= c).sum()), pos.size) - Fraction(int((neg >= c).sum()), neg.size)
          for c in cands]
    i = js.index(max(js))
    while i + 1 < len(cands) and js[i + 1] == js[i]:
        i += 1
    cut = cands[i] if i + 1 == len(cands) else (cands[i] + cands[i + 1]) / 2
    return float(cut), float(js[i])


def test_separated_uniform_ranges_are_split_perfectly():
    rng = np.random.default_rng(1)
    pos, neg = rng.uniform(0.6, 1.0, 500), rng.uniform(0.0, 0.4, 700)
    c = youden_threshold(pos, neg, name="toy")
    assert neg.max() < c.cut < pos.min()
    assert c.cut == (pos.min() + neg.max()) / 2  # the widest margin between the controls
    assert (c.tpr, c.fpr, c.j, c.auc) == (1.0, 0.0, 1.0, 1.0)
    assert (c.n_positive, c.n_negative, c.name) == (500, 700, "toy")
    assert all(c.same(s) for s in pos) and not any(c.same(s) for s in neg)


def test_equal_variance_gaussians_cut_at_the_midpoint():
    rng = np.random.default_rng(20260925)
    pos, neg = rng.normal(2.0, 1.0, 100_000), rng.normal(0.0, 1.0, 100_000)
    c = youden_threshold(pos, neg)
    # J(c) = Phi(c) - Phi(c - 2) peaks at c = 1, where J = 2 Phi(1) - 1 = 0.6827
    assert c.cut == pytest.approx(1.0, abs=0.08)
    assert c.j == pytest.approx(0.6827, abs=0.01)
    # AUC of two unit Gaussians 2 apart: Phi(2 / sqrt 2) = 0.9214
    assert c.auc == pytest.approx(0.9214, abs=0.005)


def test_unequal_means_shift_the_cut():
    rng = np.random.default_rng(3)
    pos, neg = rng.normal(0.8, 0.05, 50_000), rng.normal(0.4, 0.05, 50_000)
    assert youden_threshold(pos, neg).cut == pytest.approx(0.6, abs=0.01)


def test_ties_go_to_the_highest_cut_by_hand():
    # cut 0.8: TPR 2/3, FPR 0; cut 0.7: TPR 1, FPR 1/3 -- both J = 2/3 (in floats the
    # second is larger by one ulp); the rule keeps 0.8's run, cut halfway down to 0.75
    c = youden_threshold([0.9, 0.8, 0.7], [0.2, 0.75, 0.1])
    assert (c.cut, c.fpr) == (0.775, 0.0)
    assert c.tpr == pytest.approx(2 / 3)
    # 8 of 9 positive-negative orderings are right
    assert c.auc == pytest.approx(8 / 9)


@pytest.mark.parametrize("seed", range(5))
def test_agrees_with_a_brute_force_search(seed):
    rng = np.random.default_rng(seed)
    # coarse scores force many ties
    pos = np.round(rng.normal(0.6, 0.2, 60), 1)
    neg = np.round(rng.normal(0.4, 0.2, 45), 1)
    c = youden_threshold(pos, neg)
    cut, j = _brute_force(pos, neg)
    assert c.cut == cut
    assert c.j == pytest.approx(j)


def test_inseparable_controls_still_give_a_cut():
    c = youden_threshold([0.1, 0.2], [0.8, 0.9])
    assert np.isfinite(c.cut) and c.auc == 0.0 and c.j <= 0.0


def test_round_trip_through_json():
    c = youden_threshold([0.9, 0.7, 0.65], [0.2, 0.66, 0.1], name="dinov3/base crop")
    d = json.loads(json.dumps(c.to_dict()))  # plain JSON: no inf
    assert d["curve"]["thresholds"][0] is None and d["rule"] == "same iff score >= cut"
    back = Calibration.from_dict(d)
    assert back == c and back.thresholds[0] == np.inf
    with pytest.raises(AttributeError):
        back.cut = 0.0  # frozen
    with pytest.raises(UserInputError, match="stored Calibration"):
        Calibration.from_dict({"cut": 0.5})


@pytest.mark.parametrize("pos, neg, word", [([], [0.1], "positive"),
                                            ([0.5, float("nan")], [0.1], "positive score 1"),
                                            ([0.5], [[0.1]], "negative"),
                                            ([0.5], ["x"], "negative")])
def test_bad_scores_are_named(pos, neg, word):
    with pytest.raises(UserInputError, match=word):
        youden_threshold(pos, neg)


def test_protocol_rules_have_reason_and_source():
    assert {"cut", "ties", "candidates", "auc", "frozen"} <= set(PROTOCOL)
    assert all(set(r) == {"rule", "reason", "source"} for r in PROTOCOL.values())
