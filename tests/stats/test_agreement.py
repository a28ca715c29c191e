"""Judge agreement per answer field, checked against hand-computed tables and loops."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from vidmem.stats.agreement import (
    FieldAgreement,
    confusion_table,
    field_agreement,
    flatten_answer,
)


def _answers(pairs: list[tuple[object, object]], field: str = "x") -> tuple[list, list]:
    return [{field: a} for a, _ in pairs], [{field: b} for _, b in pairs]


def _one(first, second, clusters=None, **kw) -> FieldAgreement:
    (res,) = field_agreement(first, second, clusters, **kw)
    return res


# --- flatten_answer -------------------------------------------------------------------


def test_flatten_paths_and_empty_containers():
    ans = {"a": {"b": True}, "c": [1, {"d": "x"}], "e": [], "f": {}, "g": None,
           "h": [[2.5]]}
    assert flatten_answer(ans) == {"a.b": True, "c[0]": 1, "c[1].d": "x", "e": [], "f": {},
                                   "g": None, "h[0][0]": 2.5}


def test_flatten_rejects_non_json_leaves_and_non_mappings():
    with pytest.raises(TypeError, match="leaf 'a.b'"):
        flatten_answer({"a": {"b": object()}})
    with pytest.raises(TypeError, match="mapping"):
        flatten_answer([1, 2])  # type: ignore[arg-type]


# --- confusion_table ------------------------------------------------------------------


def test_confusion_table_counts_rows_first_judge():
    labels, m = confusion_table(["yes", "yes", "no", "no", "no"],
                                ["yes", "no", "yes", "no", "no"])
    assert labels == ["no", "yes"]
    assert m.tolist() == [[2, 1], [1, 1]]


def test_confusion_table_keeps_true_and_one_apart_but_one_and_one_point_zero_together():
    labels, m = confusion_table([True, 1, None], [1, 1.0, "None"])
    assert labels == [None, True, 1, "None"]
    assert m.tolist() == [[0, 0, 0, 1], [0, 0, 1, 0], [0, 0, 1, 0], [0, 0, 0, 0]]
    with pytest.raises(ValueError, match="lengths differ"):
        confusion_table([1], [])


# --- categorical point estimates ------------------------------------------------------


def test_two_by_two_hand_computed():
    # 50 questions: yes/yes 20, yes/no 5, no/yes 10, no/no 15.
    # p_o = (20 + 15) / 50 = 0.7.
    # Judge A says yes 25/50 = 0.5, judge B says yes 30/50 = 0.6.
    # p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5, kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
    pairs = ([("yes", "yes")] * 20 + [("yes", "no")] * 5 + [("no", "yes")] * 10
             + [("no", "no")] * 15)
    r = _one(*_answers(pairs), n_resamples=500)
    assert (r.field, r.kind, r.n, r.n_clusters) == ("x", "categorical", 50, 50)
    assert r.agreement == pytest.approx(0.7)
    assert r.kappa == pytest.approx(0.4)
    assert r.mean_abs_diff is None and r.pearson_r is None and r.note is None


def test_three_categories_hand_computed():
    # Rows judge A, columns judge B, categories a, b, c; n = 40.
    #        a   b   c  | row
    #   a   10   2   3  | 15
    #   b    1   8   1  | 10
    #   c    2   2  11  | 15
    #  col  13  12  15
    # p_o = (10 + 8 + 11) / 40 = 29/40 = 0.725.
    # p_e = (15*13 + 10*12 + 15*15) / 40**2 = 540/1600 = 0.3375.
    # kappa = (0.725 - 0.3375) / (1 - 0.3375) = 0.3875 / 0.6625 = 31/53.
    table = {("a", "a"): 10, ("a", "b"): 2, ("a", "c"): 3, ("b", "a"): 1, ("b", "b"): 8,
             ("b", "c"): 1, ("c", "a"): 2, ("c", "b"): 2, ("c", "c"): 11}
    pairs = [p for p, count in table.items() for _ in range(count)]
    r = _one(*_answers(pairs), n_resamples=500)
    assert r.n == 40
    assert r.agreement == pytest.approx(0.725)
    assert r.kappa == pytest.approx(31 / 53)
    labels, m = confusion_table([a for a, _ in pairs], [b for _, b in pairs])
    assert labels == ["a", "b", "c"]
    assert m.tolist() == [[10, 2, 3], [1, 8, 1], [2, 2, 11]]


def test_perfect_agreement_is_kappa_one():
    pairs = [(v, v) for v in ["red", "green", "blue"] * 10]
    r = _one(*_answers(pairs), n_resamples=300)
    assert r.agreement == 1.0 and r.kappa == pytest.approx(1.0)
    assert r.agreement_ci == (1.0, 1.0) and r.kappa_ci == pytest.approx((1.0, 1.0))


def test_single_shared_category_has_no_kappa_and_says_why():
    r = _one(*_answers([(True, True)] * 12), n_resamples=100)
    assert r.agreement == 1.0
    assert r.kappa is None and r.kappa_ci is None
    assert "kappa undefined" in r.note and "True" in r.note
    assert r.agreement_ci == (1.0, 1.0)


def test_true_is_not_one_and_none_is_its_own_category():
    r = _one(*_answers([(True, 1), (False, 0), (None, "null"), (1, 1.0)]), n_resamples=50)
    assert r.kind == "categorical"  # 1.0 is an integral float
    assert r.agreement == pytest.approx(0.25)  # only 1 == 1.0 matches


# --- continuous fields ----------------------------------------------------------------


def test_continuous_mean_abs_diff_and_pearson_against_numpy():
    rng = np.random.default_rng(7)
    x = rng.uniform(0, 1, 30)
    y = np.clip(x + rng.normal(0, 0.1, 30), 0, 1)
    first = [{"score": float(v)} for v in x]
    second = [{"score": float(v)} for v in y]
    first[0]["score"] = 1  # an int among floats is still numeric
    x[0] = 1.0
    r = _one(first, second)
    assert (r.kind, r.n) == ("continuous", 30)
    assert r.mean_abs_diff == pytest.approx(float(np.mean(np.abs(x - y))))
    assert r.pearson_r == pytest.approx(float(np.corrcoef(x, y)[0, 1]))
    assert r.agreement is None and r.kappa is None and r.kappa_ci is None


def test_continuous_constant_side_and_non_numeric_values():
    first = [{"s": 0.5}, {"s": 0.5}, {"s": 0.5}, {"s": None}]
    second = [{"s": 0.1}, {"s": 0.2}, {"s": 0.9}, {"s": 0.3}]
    r = _one(first, second)
    assert r.n == 4
    assert r.mean_abs_diff == pytest.approx((0.4 + 0.3 + 0.4) / 3)
    assert r.pearson_r is None
    assert "constant" in r.note and "1 pairs with a non-numeric value" in r.note


# --- fields and missing values --------------------------------------------------------


def test_missing_fields_counted_per_field():
    first = [{"a": 1, "o": [{"p": True}]}, {"a": 2}, {"b": "x"}, {"a": 1, "b": "y"}]
    second = [{"a": 1, "o": [{"p": False}]}, {"b": "x"}, {"b": "x"}, {"a": 2}]
    res = {r.field: r for r in field_agreement(first, second, n_resamples=50)}
    assert list(res) == ["a", "b", "o[0].p"]
    assert (res["a"].n, res["a"].agreement) == (2, 0.5)  # questions 0 and 3
    assert (res["b"].n, res["b"].agreement) == (1, 1.0)  # only question 2
    assert res["o[0].p"].n == 1 and res["o[0].p"].agreement == 0.0
    assert res["b"].agreement_ci is None and "fewer than 2 clusters" in res["b"].note


def test_field_given_by_one_judge_only():
    (r,) = field_agreement([{"a": 1}, {"a": 2}], [{}, {}])
    assert r.n == 0 and r.n_clusters == 0 and r.agreement is None and r.kappa is None
    assert "no question" in r.note


# --- cluster bootstrap ----------------------------------------------------------------


def _reference_cluster_bootstrap(a, b, clusters, n_resamples, seed, confidence=0.95):
    """Direct loop: draw cluster ids like the module does, sklearn kappa per draw."""
    ids = list(dict.fromkeys(clusters))
    members = {c: [k for k, ck in enumerate(clusters) if ck == c] for c in ids}
    drawn = np.random.default_rng(seed).integers(0, len(ids), size=(n_resamples, len(ids)))
    agreements, kappas, skipped = [], [], 0
    for row in drawn:
        ks = [k for g in row for k in members[ids[g]]]
        xa, xb = [a[k] for k in ks], [b[k] for k in ks]
        agreements.append(np.mean([u == v for u, v in zip(xa, xb, strict=True)]))
        if len(set(xa) | set(xb)) == 1:
            skipped += 1
        else:
            kappas.append(cohen_kappa_score(xa, xb))
    q = [50 * (1 - confidence), 50 * (1 + confidence)]
    return tuple(np.percentile(agreements, q)), tuple(np.percentile(kappas, q)), skipped


def test_cluster_bootstrap_matches_a_direct_loop_and_counts_skipped_draws():
    # Cluster "c" is the only one with a "no": draws without it have undefined kappa.
    a = ["yes", "yes", "no", "yes", "no", "yes", "yes", "no"]
    b = ["yes", "no", "no", "yes", "yes", "yes", "no", "no"]
    clusters = ["a", "a", "b", "c", "c", "d", "d", "b"]
    first, second = [{"q": v} for v in a], [{"q": v} for v in b]
    r = _one(first, second, clusters, n_resamples=400, seed=3)
    agree_ci, kappa_ci, skipped = _reference_cluster_bootstrap(a, b, clusters, 400, 3)
    assert r.n_clusters == 4
    assert r.agreement_ci == pytest.approx(agree_ci)
    assert r.kappa_ci == pytest.approx(kappa_ci)
    assert r.kappa == pytest.approx(cohen_kappa_score(a, b))
    if skipped:
        assert f"{skipped} of 400 bootstrap draws" in r.note
    else:
        assert r.note is None

    # All clusters but one hold a single category on both sides: many skipped draws.
    a2, b2 = ["yes"] * 6 + ["no"] * 2, ["yes"] * 6 + ["no"] * 2
    cl2 = ["a", "a", "b", "b", "c", "c", "d", "d"]
    r2 = _one([{"q": v} for v in a2], [{"q": v} for v in b2], cl2, n_resamples=300, seed=1)
    *_, skipped2 = _reference_cluster_bootstrap(a2, b2, cl2, 300, 1)
    assert skipped2 > 0  # (3/4)**4 of draws miss cluster "d"
    assert f"{skipped2} of 300 bootstrap draws had undefined kappa" in r2.note


def _width(ci: tuple[float, float]) -> float:
    return ci[1] - ci[0]


def test_cluster_bootstrap_reproducible_and_wider_than_per_question():
    # 10 items of 10 questions each; inside an item every question has the same pair, so
    # the item, not the question, is the unit of evidence.
    rng = np.random.default_rng(0)
    item_pairs = [(str(rng.integers(2)), str(rng.integers(2))) for _ in range(10)]
    pairs = [p for p in item_pairs for _ in range(10)]
    clusters = [f"item{i}" for i in range(10) for _ in range(10)]
    first, second = _answers(pairs)
    by_item = _one(first, second, clusters, seed=5)
    assert by_item == _one(first, second, clusters, seed=5)
    assert by_item.kappa_ci != _one(first, second, clusters, seed=6).kappa_ci
    by_question = _one(first, second, seed=5)
    assert (by_item.n_clusters, by_question.n_clusters) == (10, 100)
    assert by_item.agreement == by_question.agreement
    assert _width(by_item.agreement_ci) > 2 * _width(by_question.agreement_ci)
    assert _width(by_item.kappa_ci) > 1.5 * _width(by_question.kappa_ci)


def test_bootstrap_interval_contains_point_estimate_on_a_sizable_example():
    rng = np.random.default_rng(11)
    truth = rng.integers(0, 3, 300)
    noisy = np.where(rng.uniform(size=300) < 0.7, truth, rng.integers(0, 3, 300))
    first = [{"label": int(v), "flag": bool(v == 0)} for v in truth]
    second = [{"label": int(v), "flag": bool(v == 0)} for v in noisy]
    clusters = [f"item{k // 3}" for k in range(300)]
    for r in field_agreement(first, second, clusters, n_resamples=1000, seed=2):
        assert r.n == 300 and r.n_clusters == 100
        assert r.agreement_ci[0] <= r.agreement <= r.agreement_ci[1]
        assert r.kappa_ci[0] <= r.kappa <= r.kappa_ci[1]
        assert 0.0 < r.kappa < 1.0
        assert r.agreement_ci[1] - r.agreement_ci[0] < 0.25


# --- output and validation ------------------------------------------------------------


def test_to_dict_is_json_ready():
    pairs = [("a", "a"), ("a", "b"), ("b", "b"), ("b", "b")]
    d = _one(*_answers(pairs), n_resamples=100, seed=4).to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["field"] == "x" and d["n"] == 4 and d["seed"] == 4 and d["n_resamples"] == 100
    assert isinstance(d["agreement_ci"], list) and len(d["agreement_ci"]) == 2


def test_validation():
    with pytest.raises(ValueError, match="first answers"):
        field_agreement([{}], [])
    with pytest.raises(ValueError, match="clusters"):
        field_agreement([{}], [{}], ["a", "b"])
    with pytest.raises(ValueError, match="confidence"):
        field_agreement([{}], [{}], confidence=1.0)
    with pytest.raises(ValueError, match="n_resamples"):
        field_agreement([{}], [{}], n_resamples=0)
