"""MIST aggregation on hand-built rows: factors apart, classes per family, keep-best and
running best-of-K by hand and against stats.running_best_of_k, paired differences by hand
and against scipy's Wilcoxon and a slow reference bootstrap."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from vidmem.benchmarks.mist.aggregate import aggregate_rows
from vidmem.benchmarks.mist.config import MistConfig
from vidmem.stats.paired_cases import running_best_of_k

FAMILIES = ["R0", "R1", "R2", "R0", "R1", "R2", "R0", "R1"]
#: per case: reveal level of baseline try 0, answer_only tries 0..2, M3 candidates 1..2
BASE = [0.0, 0.0, 0.5, 0.0, 1.0, 0.0, 0.0, 0.5]
ANSWER = [[0.0, 0.5, 0.0], [0.0, 0.0, 0.0], [0.0, 1.0, 0.5], [1.0, 0.0, 0.0],
          [0.5, 0.5, 0.5], [0.0, 0.0, 1.0], [0.5, 0.0, 0.0], [0.0, 0.0, 0.0]]
M3 = [[1.0, 0.5], [0.5], [1.0, 1.0], [1.0, 0.0], [0.0, 0.5], [0.0, 1.0], [1.0], [0.5, 1.0]]


def _six(level: float) -> list[float]:
    """Six yes/no readings whose mean is ``level`` (0, 0.5 or 1)."""
    n = round(6 * level)
    return [0.0] * (6 - n) + [1.0] * n


def _clip(level: float, inside: float | None = None) -> dict:
    ins = _six(level if inside is None else inside)
    return {"reveal_readings": _six(level), "inside_readings": ins, "hard_cuts": [],
            "seam_cut": False}


def _rows() -> list[dict]:
    rows = []
    for i, fam in enumerate(FAMILIES):
        arms = {"baseline": [_clip(BASE[i], 0.0)],
                "answer_only": [_clip(x) for x in ANSWER[i]],
                "diagnosis_rewrite": [_clip(BASE[i], 0.0)] + [_clip(x) for x in M3[i]]}
        rows.append({"case_id": f"c{i}", "family": fam, "status": "scored", "setup": 1.0,
                     "leak": 0.0, "arms": arms, "judge": {"questions": 1},
                     "locked": {"setup": {"hard_cuts": []}, "gap": {"hard_cuts": [3]}}})
    rows.append({"case_id": "missing", "family": "R0", "status": "missing"})
    return rows


@pytest.fixture(scope="module")
def summary():
    config = MistConfig(arms=("baseline", "answer_only", "diagnosis_rewrite"), k=3)
    return aggregate_rows(_rows(), config), config


def test_factors_apart_and_classes(summary):
    s, _ = summary
    assert s["n_cases_scored"] == 8 and s["families"] == {"R0": 3, "R1": 3, "R2": 2}
    b = s["arm"]["baseline"]["first"]
    assert b["setup"] == 1.0 and b["leak"] == 0.0
    assert b["reveal"] == pytest.approx(sum(BASE) / 8)
    # baseline inside is 0 everywhere: opened clips are open_but_wrong, the rest never open
    assert b["labels"] == {"never_open": 5, "open_but_wrong": 3, "correct": 0}
    assert b["by_family"]["R1"]["labels"] == {"never_open": 1, "open_but_wrong": 2, "correct": 0}
    assert "product" not in b
    assert s["locked_hard_cuts"] == {"setup": 0, "gap": 8}


def test_keep_best_and_running_best_by_hand(summary):
    s, _ = summary
    a = s["arm"]["answer_only"]
    best = [max([BASE[i], *ANSWER[i]]) for i in range(8)]
    assert a["best"]["reveal"] == pytest.approx(np.mean(best))
    assert a["best"]["oracle_estimate"] is True
    assert a["first"]["reveal"] == pytest.approx(np.mean([t[0] for t in ANSWER]))
    ref = running_best_of_k(BASE, ANSWER)
    assert a["running_best"]["reveal"] == pytest.approx(list(ref.means))
    assert a["running_best"]["oracle_estimate"] is True
    assert [t["reveal"] for t in a["per_try"]] == pytest.approx(np.mean(ANSWER, axis=0).tolist())
    # M3: candidates = the original, then its rewrites (fewer when the loop stopped)
    m = s["arm"]["diagnosis_rewrite"]
    by_k = [np.mean([max([BASE[i], *M3[i][:j]]) for i in range(8)]) for j in range(3)]
    assert m["running_best"]["reveal"] == pytest.approx(by_k)
    assert m["first"]["reveal"] == pytest.approx(np.mean([x[0] for x in M3]))
    # ties keep the earlier candidate: case 4 keeps the original (1.0) over nothing better
    assert m["kept"]["original"] == sum(max(M3[i]) <= BASE[i] for i in range(8))


def test_paired_differences_against_scipy_and_a_slow_reference(summary):
    s, config = summary
    d = s["deltas"]["diagnosis_rewrite"]["best"]["reveal"]
    arm = np.array([max([BASE[i], *M3[i]]) for i in range(8)])
    diff = arm - np.array(BASE)
    assert d["n"] == 8 and d["n_dropped"] == 0 and d["oracle_estimate"] is True
    assert d["bootstrap"]["mean_diff"] == pytest.approx(diff.mean())
    nz = diff[diff != 0]
    ref = stats.wilcoxon(nz, zero_method="wilcox", alternative="two-sided", method="auto")
    assert d["wilcoxon"]["p_value"] == pytest.approx(ref.pvalue)
    assert d["wilcoxon"]["statistic"] == pytest.approx(ref.statistic)
    # slow reference: the same draws, one resample at a time
    rng = np.random.default_rng(config.bootstrap_seed)
    idx = rng.integers(0, 8, size=(config.n_resamples, 8))
    draws = [float(np.mean([diff[j] for j in row])) for row in idx]
    lo, hi = np.quantile(draws, [0.025, 0.975])
    assert (d["bootstrap"]["ci_low"], d["bootstrap"]["ci_high"]) == pytest.approx((lo, hi))
    first = s["deltas"]["diagnosis_rewrite"]["first"]["inside"]
    assert first["oracle_estimate"] is False
    assert first["bootstrap"]["mean_diff"] == pytest.approx(np.mean([x[0] for x in M3]))


def test_unreadable_cases_are_dropped_and_counted():
    rows = _rows()[:3]
    rows[1]["arms"]["answer_only"] = [{"reveal_readings": [None] * 6,
                                       "inside_readings": [None] * 6, "hard_cuts": [],
                                       "seam_cut": None}] * 3
    config = MistConfig(arms=("baseline", "answer_only"), k=3)
    s = aggregate_rows(rows, config)
    d = s["deltas"]["answer_only"]["first"]["reveal"]
    assert (d["n"], d["n_dropped"]) == (2, 1)
    assert s["arm"]["answer_only"]["first"]["n_unscored"] == 1
    # best: the original is still eligible, so no case is unscored there
    assert s["arm"]["answer_only"]["best"]["n_unscored"] == 0
