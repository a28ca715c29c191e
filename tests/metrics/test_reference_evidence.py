"""Track-A reference-evidence metrics against hand-computed segments and films."""

from __future__ import annotations

import numpy as np
import pytest

from vidmem.errors import UserInputError
from vidmem.metrics.reference_evidence import (
    BUDGETS,
    PROTOCOL,
    SegmentEvidence,
    budget_sweep,
    f1,
    film_means,
    mean_over_films,
    precision,
    r_s,
    r_v,
    recall,
    score_segment,
    sel_eff,
    track_means,
)


def _seg(present, candidates, shows, views=None, embeddings=None) -> SegmentEvidence:
    return SegmentEvidence(frozenset(present), frozenset(candidates), tuple(shows), views,
                           None if embeddings is None else np.asarray(embeddings, dtype=float))


# P = {a, b, c, loc}; c appears for the first time, so C = {a, b, loc}.
# Six references, rank order:
#   r0 {a}        view a:1        emb [1, 0, 0]
#   r1 {a}        view a:1 again  emb [2, 0, 0]  (same direction, not unit length)
#   r2 {c}        first appearance, still a correct entity
#   r3 {}         shows nothing
#   r4 {a, loc}   a:2 (new view), loc:1 (new)    emb [0, 1, 0]
#   r5 None       unparsable answer
HAND = _seg(
    present={"a", "b", "c", "loc"},
    candidates={"a", "b", "loc"},
    shows=[{"a"}, {"a"}, {"c"}, set(), {"a", "loc"}, None],
    views=[{"a": 1}, {"a": 1}, {"c": 1}, None, {"a": 2, "loc": 1}, None],
    embeddings=[[1, 0, 0], [2, 0, 0], [0, 0, 1], [1, 1, 1], [0, 1, 0], [0, 0, 0]],
)


def test_hand_computed_segment():
    s = score_segment(HAND)
    assert (s.k, s.n_candidates, s.n_unparsable) == (6, 3, 1)
    # correct references (show an entity of P): r0, r1, r2, r4 -> 4 of k = 6
    assert s.n_correct == 4
    assert s.precision == 0.6667  # 4 / 6 = 0.66667
    # candidates covered: a (r0, r1, r4), loc (r4); b never -> 2 / 3
    assert s.n_covered == 2
    assert s.recall == 0.6667
    # F1 from the rounded values: 2 * 0.6667 * 0.6667 / 1.3334 = 0.6667
    assert s.f1 == 0.6667
    # repeating: r1 (a:1 already shown by r0); r2 new (c:1); r4 new (a:2, loc:1) -> 1 / 4
    assert s.n_repeating == 1
    assert s.r_v == 0.25
    # SelEff = (4 correct - 1 repeating) / 6 = 0.5 = (4/6) * (1 - 1/4)
    assert s.sel_eff == 0.5
    # groups: a = {r0, r1, r4}, c = {r2}, loc = {r4}; only a has pairs:
    # cos(r0, r1) = 1, cos(r0, r4) = 0, cos(r1, r4) = 0 -> 1 / 3
    assert s.r_s == 0.3333


def test_exact_values_without_rounding():
    s = score_segment(HAND, ndigits=None)
    assert s.precision == pytest.approx(4 / 6)
    assert s.recall == pytest.approx(2 / 3)
    assert s.f1 == pytest.approx(2 / 3)
    assert s.r_s == pytest.approx(1 / 3)
    assert s.sel_eff == pytest.approx(s.precision * (1 - s.r_v))


def test_correct_means_present_in_segment_not_only_candidates():
    # r0 shows only c, a first appearance: correct (precision) but covers no candidate
    s = score_segment(_seg({"a", "c"}, {"a"}, [{"c"}]))
    assert (s.precision, s.recall, s.f1) == (1.0, 0.0, 0.0)


def test_ids_outside_present_are_ignored():
    # "x" is not on screen: r0 counts as showing nothing, r1 covers a only
    s = score_segment(_seg({"a", "b"}, {"a", "b"}, [{"x"}, {"a", "x"}]))
    assert s.n_correct == 1
    assert (s.precision, s.recall) == (0.5, 0.5)


def test_empty_selection_is_recall_0_f1_0_precision_undefined():
    s = score_segment(_seg({"a", "b"}, {"a"}, [], views=[], embeddings=np.zeros((0, 4))))
    assert s.k == 0
    assert s.precision is None
    assert (s.recall, s.f1) == (0.0, 0.0)
    assert (s.r_v, s.r_s, s.sel_eff) == (None, None, None)
    # and it stays in the film's F1 mean: (1.0 + 0.0) / 2
    full = score_segment(_seg({"a"}, {"a"}, [{"a"}]))
    m = film_means([full, s])
    assert (m.precision, m.recall, m.f1) == (1.0, 0.5, 0.5)
    assert m.n_precision_undefined == 1


def test_no_candidates_segment_enters_no_recall_or_f1_mean():
    # every entity is a first appearance: C empty
    s = score_segment(_seg({"a"}, set(), [{"a"}, set()], views=[{"a": 0}, None]))
    assert (s.recall, s.f1) == (None, None)
    assert (s.precision, s.r_v, s.sel_eff) == (0.5, 0.0, 0.5)
    # C empty and nothing returned: everything undefined
    e = score_segment(_seg({"a"}, set(), []))
    assert (e.precision, e.recall, e.f1) == (None, None, None)
    other = score_segment(_seg({"a", "b"}, {"b"}, [{"a"}]))  # p 1.0, r 0.0, f1 0.0
    m = film_means([s, e, other])
    # precision over k > 0: (0.5 + 1.0) / 2; recall and F1 over the one segment with C
    assert (m.precision, m.recall, m.f1) == (0.75, 0.0, 0.0)
    assert (m.n_segments, m.n_no_candidates, m.n_precision_undefined) == (3, 2, 1)


def test_unparsable_references_count_as_showing_nothing():
    s = score_segment(_seg({"a"}, {"a"}, [None, None, {"a"}], views=[None, None, {"a": 0}],
                           embeddings=np.eye(3)))
    # 1 correct of k = 3; a covered by the parsable one
    assert (s.precision, s.recall, s.n_unparsable) == (0.3333, 1.0, 2)
    assert s.f1 == 0.5  # 2 * 0.3333 * 1 / 1.3333 = 0.49999 -> 0.5
    only_bad = score_segment(_seg({"a"}, {"a"}, [None, None], views=[None, None]))
    assert (only_bad.precision, only_bad.recall, only_bad.f1) == (0.0, 0.0, 0.0)
    # no correct reference: R_V undefined, SelEff = precision x ... = 0
    assert (only_bad.r_v, only_bad.sel_eff) == (None, 0.0)
    assert film_means([s, only_bad]).n_unparsable == 4


def test_duplicate_references_all_count():
    # the same frame returned twice: both in k; the second repeats its view
    emb = [[0.6, 0.8], [0.6, 0.8]]
    s = score_segment(_seg({"a"}, {"a"}, [{"a"}, {"a"}], views=[{"a": "f1"}, {"a": "f1"}],
                           embeddings=emb))
    assert (s.k, s.precision, s.recall) == (2, 1.0, 1.0)
    assert (s.r_v, s.sel_eff, s.r_s) == (0.5, 0.5, 1.0)
    # an id repeated within one answer is one id
    assert recall([["a", "a"]], {"a", "b"}) == 0.5
    assert precision([["a", "a"]], {"a"}) == 1.0


def test_r_v_multimembership_by_hand():
    present = {"a", "b"}
    shows = [{"a", "b"}, {"a"}, {"b"}, {"a", "b"}, {"a", "b"}]
    views = [{"a": 0, "b": 0},   # r0: both new
             {"a": 0},           # r1: a:0 seen -> repeats
             {"b": 1},           # r2: b:1 new
             {"a": 0, "b": 1},   # r3: a:0 and b:1 both seen -> repeats
             {"a": 0, "b": 2}]   # r4: b:2 new -> adds a view
    # 2 repeating of 5 correct
    assert r_v(shows, present, views) == 0.4
    # SelEff = (5 - 2) / 5 = 0.6 = 1.0 * (1 - 0.4)
    assert sel_eff(shows, present, views) == 0.6
    # order matters: "already covered" means by a higher-ranked reference
    # [a:0], then [a:0, b:0]: the second adds b:0 -> 0 repeating
    assert r_v([{"a"}, {"a", "b"}], present, [{"a": 0}, {"a": 0, "b": 0}]) == 0.0
    # [a:0, b:0], then [a:0]: the second adds nothing -> 1 of 2
    assert r_v([{"a", "b"}, {"a"}], present, [{"a": 0, "b": 0}, {"a": 0}]) == 0.5


def test_r_v_needs_a_key_for_each_shown_entity():
    with pytest.raises(UserInputError, match="view key"):
        r_v([{"a", "b"}], {"a", "b"}, [{"a": 0}])
    with pytest.raises(UserInputError, match="one entry per reference"):
        r_v([{"a"}, {"a"}], {"a"}, [{"a": 0}])


def test_r_s_pair_weighted_by_hand():
    # groups: a = {r0, r1, r2} (3 pairs), b = {r2, r3} (1 pair)
    e = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 1.0]])
    shows = [{"a"}, {"a"}, {"a", "b"}, {"b"}]
    # a: cos(r0,r1) = 0, cos(r0,r2) = cos(r1,r2) = 1/sqrt2 = 0.70711 -> sum 1.41421
    # b: cos(r2,r3) = 1
    # pair-weighted: (1.41421 + 1) / 4 = 0.60355 (a mean of group means would be 0.7357)
    assert r_s(shows, {"a", "b"}, e) == 0.6036
    assert r_s(shows, {"a", "b"}, e, ndigits=None) == pytest.approx((np.sqrt(2) + 1) / 4)


def test_r_s_entities_with_one_reference_give_no_pair():
    # a, b, c each shown once; the unparsable r3 is in no group
    shows = [{"a"}, {"b"}, {"c"}, None]
    assert r_s(shows, {"a", "b", "c"}, np.eye(4)) is None
    s = score_segment(_seg({"a", "b", "c"}, {"a"}, shows, embeddings=np.eye(4)))
    assert s.r_s is None
    # a film whose segments have no pair has no R_S
    assert film_means([s]).r_s is None


def test_r_s_rejects_bad_embeddings():
    with pytest.raises(UserInputError, match="one row per reference"):
        r_s([{"a"}, {"a"}], {"a"}, np.ones((3, 2)))
    with pytest.raises(UserInputError, match="non-zero"):
        r_s([{"a"}, {"a"}], {"a"}, np.array([[1.0, 0.0], [0.0, 0.0]]))
    with pytest.raises(UserInputError, match="finite"):
        r_s([{"a"}], {"a"}, np.array([[np.nan, 0.0]]))


def test_f1_edges():
    assert f1(None, 0.0) == 0.0      # empty selection
    assert f1(0.0, 0.0) == 0.0       # both zero
    assert f1(0.8, None) is None     # no candidates
    assert f1(0.6667, 0.5) == 0.5714  # 2 * 0.6667 * 0.5 / 1.1667 = 0.57144


def test_candidates_must_be_present():
    with pytest.raises(UserInputError, match="subset of present"):
        _seg({"a"}, {"a", "b"}, [])
    with pytest.raises(UserInputError, match="set of entity ids"):
        precision(["a"], {"a"})


def test_two_level_average_by_hand():
    # film X (dataset D1), three segments:
    x1 = _seg({"a", "b"}, {"a", "b"}, [{"a"}, {"a"}], views=[{"a": 0}, {"a": 0}])
    #   p 1.0, r 0.5, f1 0.6667, r_v 0.5, sel_eff 0.5
    x2 = _seg({"a"}, {"a"}, [])
    #   p None, r 0.0, f1 0.0
    x3 = _seg({"a", "c"}, {"a"}, [{"c"}, set(), set(), set()],
              views=[{"c": 0}, None, None, None])
    #   p 0.25, r 0.0, f1 0.0, r_v 0.0, sel_eff 0.25
    # film X: p (1.0 + 0.25) / 2 = 0.625; r (0.5 + 0 + 0) / 3 = 0.1667;
    #   f1 (0.6667 + 0 + 0) / 3 = 0.2222; r_v (0.5 + 0) / 2 = 0.25;
    #   sel_eff (0.5 + 0.25) / 2 = 0.375; refs (2 + 4) / 2 = 3.0
    fx = film_means([score_segment(s) for s in (x1, x2, x3)])
    assert (fx.precision, fx.recall, fx.f1) == (0.625, 0.1667, 0.2222)
    assert (fx.r_v, fx.sel_eff, fx.refs_per_segment) == (0.25, 0.375, 3.0)
    assert (fx.n_segments, fx.n_precision_undefined, fx.n_no_candidates) == (3, 1, 0)

    # film Y (dataset D1), two segments:
    y1 = _seg({"a"}, {"a"}, [{"a"}], views=[{"a": 0}])    # p 1, r 1, f1 1, r_v 0, sel 1
    y2 = _seg({"a"}, set(), [{"a"}], views=[{"a": 0}])    # C empty: p 1, r/f1 None
    fy = film_means([score_segment(s) for s in (y1, y2)])
    assert (fy.precision, fy.recall, fy.f1, fy.r_v, fy.sel_eff) == (1.0, 1.0, 1.0, 0.0, 1.0)
    assert fy.n_no_candidates == 1

    # film Z (dataset D2), one segment: p 0.5, r 0.5, f1 0.5, r_v 0, sel_eff 0.5
    z1 = _seg({"a", "b"}, {"a", "b"}, [{"b"}, set()], views=[{"b": 0}, None])
    fz = film_means([score_segment(z1)])
    assert (fz.precision, fz.recall, fz.f1) == (0.5, 0.5, 0.5)

    per, overall = track_means({"D1": {"X": fx, "Y": fy}, "D2": {"Z": fz}})
    # D1: p (0.625 + 1) / 2 = 0.8125; r (0.1667 + 1) / 2 = 0.58335; f1 (0.2222 + 1) / 2 = 0.6111
    assert (per["D1"].precision, per["D1"].recall, per["D1"].f1) == (0.8125, 0.58335, 0.6111)
    assert (per["D1"].n_films, per["D1"].n_segments, per["D1"].n_precision_undefined) == (2, 5, 1)
    assert per["D2"].f1 == 0.5
    # overall = mean over the three films, not over the two datasets:
    #   f1 (0.2222 + 1 + 0.5) / 3 = 0.574067 (mean of datasets would be 0.55555)
    assert overall.f1 == 0.574067
    assert overall.precision == pytest.approx((0.625 + 1 + 0.5) / 3, abs=1e-6)
    assert (overall.n_films, overall.n_segments) == (3, 6)


def test_mean_over_films_skips_undefined_values():
    # a film whose only segment is an empty selection has no precision
    empty = film_means([score_segment(_seg({"a"}, {"a"}, []))])
    full = film_means([score_segment(_seg({"a"}, {"a"}, [{"a"}]))])
    m = mean_over_films([empty, full])
    assert empty.precision is None
    assert (m.precision, m.f1, m.n_precision_undefined) == (1.0, 0.5, 1)
    none = mean_over_films([])
    assert none.precision is None and none.n_films == 0


def test_budget_sweep_equals_each_budget_scored_alone():
    rng = np.random.default_rng(0)
    segments = []
    for k in (0, 3, 7, 20):
        shows = [None if rng.random() < 0.1 else
                 {e for e in "abcd" if rng.random() < 0.4} for _ in range(k)]
        views = [None if s is None else {e: int(rng.integers(3)) for e in s} for s in shows]
        segments.append(_seg({"a", "b", "c"}, {"a", "b"}, shows, views,
                             rng.normal(size=(k, 5))))
    sweep = budget_sweep(segments)
    assert sorted(sweep) == list(BUDGETS) == list(range(1, 17))
    for k in BUDGETS:
        alone = [score_segment(_seg(s.present, s.candidates, s.shows[:k],
                                    s.views[:k], s.embeddings[:k])) for s in segments]
        assert sweep[k] == alone
    # a ranking shorter than K keeps all its references
    assert sweep[16][1] == score_segment(segments[1])
    with pytest.raises(UserInputError, match="integers >= 1"):
        budget_sweep(segments, [0])


def test_protocol_rules_have_reason_and_source():
    for name, entry in PROTOCOL.items():
        assert set(entry) == {"rule", "reason", "source"}, name
        assert all(v.strip() for v in entry.values()), name
    assert "empty_selection" in PROTOCOL and "overall_mean" in PROTOCOL
