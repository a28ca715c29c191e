"""Track-B pooled and family rates against hand-counted stories."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from vidmem.errors import UserInputError
from vidmem.metrics.track_b import (
    ABSTAIN,
    BOOTSTRAP_RATES,
    FAMILIES,
    PROTOCOL,
    EntryVerdict,
    SegmentVerdict,
    family_rates,
    parsed_in_both,
    pooled_rates,
    story_counts,
    wilson_interval,
)


def E(story, seg, eid, kind, role, present, **kw) -> EntryVerdict:
    return EntryVerdict(story, seg, eid, kind, role, present, **kw)


def hand_segments() -> list[SegmentVerdict]:
    """Two stories, five segments; every count below is written out in the tests."""
    s1 = [
        # s1 seg 1: introductions; one decoy false positive
        SegmentVerdict("s1", 1, True, [
            E("s1", 1, "A", "character", "required", True, op="introduce"),
            E("s1", 1, "B", "prop", "required", False, op="introduce"),
            E("s1", 1, "L", "location", "location", True, op="introduce"),
            E("s1", 1, "D1", "prop", "decoy", False),
            E("s1", 1, "D2", "character", "decoy", True),
        ]),
        # s1 seg 2: a persisted state shown, a transform not shown, a destroyed prop drawn
        SegmentVerdict("s1", 2, True, [
            E("s1", 2, "A", "character", "required", True, op="persist", gap=0,
              expected_state="wet", judged_state="changed"),
            E("s1", 2, "B", "prop", "required", ABSTAIN, op="recall", gap=0),
            E("s1", 2, "C", "prop", "required", True, op="transform", gap=0,
              expected_state="broken", judged_state="default"),
            E("s1", 2, "F", "prop", "forbidden", True, reason="destroyed"),
            E("s1", 2, "G", "character", "forbidden", False, reason="deceased",
              reference_indirect=True),
            E("s1", 2, "D1", "prop", "decoy", False),
        ]),
        # s1 seg 3: the judge's answer did not parse
        SegmentVerdict.unparsable("s1", 3, [
            E("s1", 3, "A", "character", "required", True, op="recall", gap=0),
            E("s1", 3, "F", "prop", "forbidden", True, reason="destroyed"),
            E("s1", 3, "D1", "prop", "decoy", True),
        ]),
    ]
    s2 = [
        # s2 seg 1: false friend confused, long gaps, look-alike, counts, anchors, flashback
        SegmentVerdict("s2", 1, True, [
            E("s2", 1, "N", "prop", "required", True, op="introduce", confusable_with="O"),
            E("s2", 1, "O", "prop", "false_friend_target", True),
            E("s2", 1, "M", "character", "required", True, op="recall_after_gap", gap=31,
              lookalike=True, instance_match=True),
            E("s2", 1, "T", "character", "required", False, op="recall_after_gap", gap=40,
              anchor=True, lookalike=True),
            E("s2", 1, "K", "prop", "required", True, op="recall", gap=2, expected_count=5,
              judged_count=4),
            E("s2", 1, "K2", "prop", "required", True, op="recall", gap=3, expected_count=3,
              judged_count=3),
            E("s2", 1, "K3", "prop", "required", False, op="recall", gap=1, expected_count=2),
            E("s2", 1, "LA", "character", "forbidden", False, reason="lookalike_absent"),
            E("s2", 1, "LOC", "location", "location", True, op="recall", gap=5, anchor=True),
            E("s2", 1, "FL", "character", "required", True, op="recall", gap=2,
              flashback=True, expected_state="youth"),
            E("s2", 1, "X", "prop", "forbidden", ABSTAIN, reason="destroyed"),
        ]),
        # s2 seg 2: a false friend whose target is in the cast (not testable), a wrong
        # instance, and a false friend whose target is forbidden and drawn
        SegmentVerdict("s2", 2, True, [
            E("s2", 2, "N2", "prop", "required", True, op="introduce", confusable_with="M"),
            E("s2", 2, "M", "character", "required", True, op="recall", gap=0,
              lookalike=True, instance_match=False),
            E("s2", 2, "P", "character", "required", False, op="introduce",
              confusable_with="Q"),
            E("s2", 2, "Q", "character", "forbidden", True, reason="destroyed"),
        ]),
    ]
    return s1 + s2


def test_pooled_rates_by_hand():
    r = pooled_rates(hand_segments())
    # required entries (role required) judged present / all of them:
    #   s1/1 A+ B-         2 tot 1 hit
    #   s1/2 A+ B? C+      3 tot 2 hit
    #   s1/3 A? (unparsed) 1 tot 0 hit
    #   s2/1 N+ M+ T- K+ K2+ K3- FL+   7 tot 5 hit
    #   s2/2 N2+ M+ P-     3 tot 2 hit          -> 10 / 16
    assert (r.recall.numerator, r.recall.denominator) == (10, 16)
    # judged present, not a location, role required/forbidden/false-friend target:
    #   s1/1 A (D2 is a decoy, L a location)   1, of which required 1
    #   s1/2 A C F                             3, required 2
    #   s2/1 N O M K K2 FL (LOC a location)    6, required 5
    #   s2/2 N2 M Q                            3, required 2   -> 10 / 13
    assert (r.precision.numerator, r.precision.denominator) == (10, 13)
    # F1 = 2 (10/13)(10/16) / (10/13 + 10/16) = 200/290
    assert r.f1 == pytest.approx(20 / 29, abs=1e-15)
    # forbidden: s1/2 F+ G-, s1/3 F?, s2/1 LA- X?, s2/2 Q+  -> 4 stay absent of 6
    assert (r.avoid_ok.numerator, r.avoid_ok.denominator) == (4, 6)
    # decoys: s1/1 D1- D2+, s1/2 D1-, s1/3 D1? -> 1 of 4
    assert (r.decoy_fpr.numerator, r.decoy_fpr.denominator) == (1, 4)
    # abstain: s1/2 B, s1/3 A F D1, s2/1 X = 5 of 5+6+3+11+4 = 29 roster entries
    assert (r.abstain.numerator, r.abstain.denominator) == (5, 29)
    assert (r.unparsable.numerator, r.unparsable.denominator, r.n_segments) == (1, 5, 5)
    # characters: A+ A+ A? M+ T- FL+ M+ P- = 5/8; props: B- B? C+ N+ K+ K2+ K3- N2+ = 5/8
    by_kind = {k: (v.numerator, v.denominator) for k, v in r.recall_by_kind.items()}
    assert by_kind == {"character": (5, 8), "prop": (5, 8), "location": (2, 2)}
    d = r.to_dict()
    assert d["recall"]["value"] == 0.625 and d["n_segments"] == 5


def test_family_rates_by_hand():
    fam = family_rates(hand_segments())
    assert tuple(fam) == FAMILIES

    def nd(family, rate=None):
        w = fam[family].headline if rate is None else fam[family].rates[rate]
        return w.numerator, w.denominator

    # long gap: required with gap >= 30: M (31, +), T (40, -)
    assert nd("long_gap_return") == (1, 2)
    # temporal anchors: T (-), LOC (+, a location counts)
    assert nd("temporal_reference") == (1, 2)
    # transform: C judged present, state 'default' -> 0 / 1; judged present 1 / 1
    assert nd("state_change") == (0, 1)
    assert nd("state_change", "judged_present") == (1, 1)
    # persist: A in s1/2 shown 'changed' -> 1 / 1; FL is a flashback (presence only)
    assert nd("persistent_state") == (1, 1)
    # counts: K (4 for 5: off by one), K2 (3 for 3: exact), K3 not judged present
    assert nd("count", "exact_rate") == (1, 2)
    assert nd("count", "off_by_one_rate") == (1, 2)
    assert nd("count", "judged_present") == (2, 3)
    # look-alike members: M s2/1 (+, right instance), T (-), M s2/2 (+, wrong instance)
    assert nd("lookalike", "correct_instance_rate") == (1, 2)
    assert nd("lookalike", "wrong_instance_rate") == (1, 2)
    assert nd("lookalike", "judged_present") == (2, 3)
    assert nd("lookalike", "absent_avoid_ok") == (1, 1)  # LA kept out
    # false friends: N (+; target O absent from cast, judged present: confused),
    # N2 (+; target M in the cast: not testable), P (-; target Q forbidden, drawn: confused)
    assert nd("false_friend", "correct_id_rate") == (2, 3)
    assert nd("false_friend", "confusion_rate") == (2, 2)
    # deprecation: F+ (s1/2), G-, F? (s1/3), X?, Q+  -> 3 of 5 stay absent
    assert nd("deprecation") == (3, 5)
    # reference-indirect: G only -> 1 / 1
    assert nd("reference_indirect") == (1, 1)
    # every rate carries its Wilson interval
    for f in fam.values():
        for w in f.rates.values():
            assert (w.low is None) == (w.denominator == 0)
            if w.denominator:
                assert (w.low, w.high) == wilson_interval(w.numerator, w.denominator)
                assert w.low <= w.value <= w.high
    assert fam["deprecation"].to_dict()["headline"] == "avoid_ok"


def test_story_counts_sum_to_pooled():
    segs = hand_segments()
    sc = story_counts(segs)
    # s1: recall 1+2+0 / 2+3+1, precision 3 / 4, avoid G and F(s1/3) / F F G
    assert sc["s1"].tolist() == [[3, 6], [3, 4], [2, 3]]
    # s2: recall 5+2 / 7+3, precision 7 / 9, avoid LA X / LA X Q
    assert sc["s2"].tolist() == [[7, 10], [7, 9], [2, 3]]
    total = sc["s1"] + sc["s2"]
    r = pooled_rates(segs)
    assert BOOTSTRAP_RATES == ("recall", "precision", "avoid_ok")
    assert total.tolist() == [[r.recall.numerator, r.recall.denominator],
                              [r.precision.numerator, r.precision.denominator],
                              [r.avoid_ok.numerator, r.avoid_ok.denominator]]
    assert sc["s1"].dtype == np.int64


def test_wilson_against_hand_formula():
    z = NormalDist().inv_cdf(0.975)
    for k, n in [(0, 1), (0, 7), (3, 10), (7, 7), (1, 2), (45, 60), (199, 200)]:
        p = k / n
        center = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        lo, hi = wilson_interval(k, n)
        assert lo == pytest.approx(max(0.0, center - half), abs=1e-12)
        assert hi == pytest.approx(min(1.0, center + half), abs=1e-12)
    z90 = NormalDist().inv_cdf(0.95)
    p = 0.3
    half = z90 * math.sqrt(p * (1 - p) / 10 + z90 * z90 / 400) / (1 + z90 * z90 / 10)
    lo, _ = wilson_interval(3, 10, confidence=0.90)
    assert lo == pytest.approx((p + z90 * z90 / 20) / (1 + z90 * z90 / 10) - half, abs=1e-12)
    assert wilson_interval(0, 0) is None
    with pytest.raises(UserInputError):
        wilson_interval(3, 2)
    with pytest.raises(UserInputError):
        wilson_interval(1, 2, confidence=1.0)


def test_unparsable_segment_counts_misses_and_no_violations():
    entries = [E("s", 4, "A", "character", "required", True, op="recall", gap=0),
               E("s", 4, "F", "prop", "forbidden", True, reason="deceased"),
               E("s", 4, "K", "prop", "required", True, op="recall", gap=1,
                 expected_count=2, judged_count=2)]
    seg = SegmentVerdict.unparsable("s", 4, entries)
    assert not seg.parsed
    assert all(e.present == ABSTAIN and e.judged_count is None for e in seg.entries)
    assert seg.entries[2].expected_count == 2  # gold kept
    r = pooled_rates([seg])
    assert (r.recall.numerator, r.recall.denominator) == (0, 2)       # required -> miss
    assert (r.avoid_ok.numerator, r.avoid_ok.denominator) == (1, 1)   # forbidden -> ok
    assert r.precision.denominator == 0 and r.precision.value is None and r.f1 is None
    assert (r.abstain.numerator, r.abstain.denominator) == (3, 3)
    assert (r.unparsable.numerator, r.unparsable.denominator) == (1, 1)
    fam = family_rates([seg])
    assert fam["count"].rates["judged_present"].denominator == 1
    assert fam["count"].headline.denominator == 0 and fam["count"].headline.low is None
    with pytest.raises(UserInputError, match="abstain"):
        SegmentVerdict("s", 4, False, entries)


def test_abstain_is_not_present_in_every_rate():
    seg = SegmentVerdict("s", 1, True, [
        E("s", 1, "A", "prop", "required", ABSTAIN, op="recall", gap=30),
        E("s", 1, "F", "prop", "forbidden", ABSTAIN, reason="destroyed"),
        E("s", 1, "D", "prop", "decoy", ABSTAIN)])
    r = pooled_rates([seg])
    fam = family_rates([seg])
    assert r.recall.value == 0.0 and r.avoid_ok.value == 1.0 and r.decoy_fpr.value == 0.0
    assert r.abstain.value == 1.0 and r.unparsable.value == 0.0
    assert fam["long_gap_return"].headline.value == 0.0


def test_f1_zero_when_both_rates_zero():
    seg = SegmentVerdict("s", 1, True, [
        E("s", 1, "A", "prop", "required", False, op="introduce"),
        E("s", 1, "F", "prop", "forbidden", True, reason="destroyed")])
    r = pooled_rates([seg])
    assert (r.recall.value, r.precision.value, r.f1) == (0.0, 0.0, 0.0)


def test_parsed_in_both():
    a = [SegmentVerdict("s", i, i != 2, []) for i in (1, 2, 3, 4)]
    b = [SegmentVerdict("s", i, i != 3, []) for i in (1, 2, 3)]
    fa, fb = parsed_in_both(a, b)
    assert [s.segment_id for s in fa] == [1]  # 2 unparsed in a, 3 in b, 4 only in a
    assert [s.segment_id for s in fb] == [1]


@pytest.mark.parametrize("kw, match", [
    ({"segment_id": 0}, "segment_id"),
    ({"kind": "object"}, "kind"),
    ({"role": "present"}, "role"),
    ({"present": "yes"}, "present"),
    ({"present": 1}, "present"),
    ({"role": "required", "kind": "location", "op": "recall"}, "kind"),
    ({"role": "location", "kind": "prop", "op": "recall"}, "kind"),
    ({"role": "required", "op": None}, "op"),
    ({"role": "forbidden", "reason": None}, "reason"),
    ({"role": "forbidden", "reason": "destroyed", "gap": 3}, "cast-only"),
    ({"role": "decoy", "lookalike": True}, "cast-only"),
    ({"role": "required", "op": "recall", "reason": "destroyed"}, "reason"),
    ({"role": "forbidden", "reason": "lookalike_absent", "reference_indirect": True},
     "reference_indirect"),
    ({"role": "required", "op": "recall", "expected_count": -1}, "expected_count"),
    ({"role": "required", "op": "recall", "gap": True}, "gap"),
    ({"role": "required", "op": "recall", "confusable_with": "E1"}, "another entity"),
    ({"role": "required", "op": "recall", "instance_match": "E1"}, "instance_match"),
])
def test_entry_validation(kw, match):
    base = {"story_id": "s", "segment_id": 1, "eid": "E1", "kind": "prop", "role": "decoy",
            "present": True}
    with pytest.raises(UserInputError, match=match):
        EntryVerdict(**{**base, **kw})


def test_segment_validation():
    e1 = E("s", 1, "A", "prop", "decoy", False)
    with pytest.raises(UserInputError, match="unique"):
        SegmentVerdict("s", 1, True, [e1, e1])
    with pytest.raises(UserInputError, match="story_id and segment_id"):
        SegmentVerdict("s", 2, True, [e1])
    with pytest.raises(UserInputError, match="once per condition"):
        pooled_rates([SegmentVerdict("s", 1, True, [e1]), SegmentVerdict("s", 1, True, [])])
    with pytest.raises(UserInputError, match="SegmentVerdict"):
        pooled_rates([e1])
    orphan = SegmentVerdict("s", 1, True, [
        E("s", 1, "N", "prop", "required", True, op="introduce", confusable_with="O")])
    with pytest.raises(UserInputError, match="on the roster"):
        family_rates([orphan])
    with pytest.raises(UserInputError, match="on the roster"):
        orphan.false_friend_confused(orphan.entries[0])


def test_false_friend_confusion_rule():
    def seg(target_role, target_present, new_present):
        extra = {"op": "recall", "gap": 4} if target_role == "required" else (
            {"reason": "destroyed"} if target_role == "forbidden" else {})
        return SegmentVerdict("s", 1, True, [
            E("s", 1, "N", "prop", "required", new_present, op="introduce",
              confusable_with="O"),
            E("s", 1, "O", "prop", target_role, target_present, **extra)])

    s = seg("false_friend_target", True, True)
    assert s.false_friend_confused(s.entries[0]) is True      # target seen, whatever N
    s = seg("false_friend_target", False, False)
    assert s.false_friend_confused(s.entries[0]) is False
    s = seg("required", True, True)
    assert s.false_friend_confused(s.entries[0]) is None      # co-present target
    s = seg("forbidden", ABSTAIN, True)
    assert s.false_friend_confused(s.entries[0]) is False
    # a recall of a false friend is not a false-friend opportunity
    r = SegmentVerdict("s", 2, True, [
        E("s", 2, "N", "prop", "required", True, op="recall", gap=0, confusable_with="O"),
        E("s", 2, "O", "prop", "false_friend_target", True)])
    assert family_rates([r])["false_friend"].headline.denominator == 0


def test_protocol_entries_have_reason_and_source():
    for name, entry in PROTOCOL.items():
        assert set(entry) == {"rule", "reason", "source"}, name
        assert all(isinstance(v, str) and v for v in entry.values()), name
