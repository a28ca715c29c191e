"""Track-B recall by absence-gap bin on hand-made verdicts, every number counted by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vidmem.errors import UserInputError
from vidmem.metrics.track_b import (
    BIN_ROWS,
    GAP_BINS,
    GAP_BINS_PROTOCOL,
    EntryVerdict,
    SegmentVerdict,
    absence_bin,
    family_rates,
    gap_bin_recall,
    gap_bin_story_counts,
)


def req(sid, seg, eid, kind, present, gap, op="recall"):
    return EntryVerdict(sid, seg, eid, kind, "required", present, op=op, gap=gap)


def segments() -> list[SegmentVerdict]:
    """Two stories; what each entry counts for is written next to it."""
    return [
        SegmentVerdict("s1", 1, True, [
            req("s1", 1, "A", "character", True, None, op="introduce"),  # no gap: out
            EntryVerdict("s1", 1, "L", "location", "location", True, op="recall", gap=2),  # out
            EntryVerdict("s1", 1, "F", "prop", "forbidden", True, reason="destroyed"),  # out
        ]),
        SegmentVerdict("s1", 2, True, [
            req("s1", 2, "A", "character", True, 0),        # just_seen hit
            req("s1", 2, "B", "character", False, 1),       # 1-4 miss (character)
            req("s1", 2, "C", "prop", True, 4),             # 1-4 hit (prop)
            req("s1", 2, "D", "prop", "abstain", 5),        # 5-29 miss (prop)
        ]),
        SegmentVerdict.unparsable("s2", 1, [
            req("s2", 1, "E", "character", True, 29),       # 5-29 miss: unparsable
            req("s2", 1, "G", "prop", True, 30),            # >=30 miss: unparsable
        ]),
        SegmentVerdict("s2", 2, True, [
            req("s2", 2, "E", "character", True, 40, op="recall_after_gap"),  # >=30 hit
            EntryVerdict("s2", 2, "H", "prop", "decoy", True),               # out
        ]),
    ]


def wilson_by_hand(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def test_bins_are_absence_gaps_and_gap_zero_is_apart():
    assert [absence_bin(g) for g in (0, 1, 4, 5, 29, 30, 31)] == \
        ["just_seen", "1-4", "1-4", "5-29", "5-29", ">=30", ">=30"]
    assert absence_bin(None) is None
    with pytest.raises(UserInputError, match="gap"):
        absence_bin(-1)
    assert GAP_BINS == ("1-4", "5-29", ">=30") and BIN_ROWS[-1] == "just_seen"
    assert "just_seen" in GAP_BINS_PROTOCOL["gap_bins.bins"]["rule"]


def test_pooled_bins_by_hand():
    r = gap_bin_recall(segments())
    got = {b: (r.bins[b].numerator, r.bins[b].denominator) for b in GAP_BINS}
    assert got == {"1-4": (1, 2), "5-29": (0, 2), ">=30": (1, 2)}
    assert (r.just_seen.numerator, r.just_seen.denominator) == (1, 1)
    kinds = {k: {b: (v.numerator, v.denominator) for b, v in by.items()}
             for k, by in r.by_kind.items()}
    assert kinds == {
        "character": {"1-4": (0, 1), "5-29": (0, 1), ">=30": (1, 1), "just_seen": (1, 1)},
        "prop": {"1-4": (1, 1), "5-29": (0, 1), ">=30": (0, 1), "just_seen": (0, 0)},
    }
    # Wilson 1/2 by the closed form: centre 0.5, half-width 0.405468
    lo, hi = wilson_by_hand(1, 2)
    assert (r.bins["1-4"].low, r.bins["1-4"].high) == pytest.approx((lo, hi), abs=1e-9)
    assert (lo, hi) == pytest.approx((0.094532, 0.905468), abs=1e-6)
    assert r.bins["5-29"].low == 0.0 and r.bins["5-29"].high == pytest.approx(
        wilson_by_hand(0, 2)[1])
    assert r.by_kind["prop"]["just_seen"].value is None
    assert r.by_kind["prop"]["just_seen"].low is None
    d = r.to_dict()
    assert set(d) == {"bins", "just_seen", "by_kind"} and d["bins"]["1-4"]["value"] == 0.5


def test_far_bin_is_the_long_gap_family():
    fam = family_rates(segments())["long_gap_return"].headline
    far = gap_bin_recall(segments()).bins[">=30"]
    assert (far.numerator, far.denominator) == (fam.numerator, fam.denominator) == (1, 2)


def test_story_counts_by_hand_and_sum_to_the_pool():
    counts = gap_bin_story_counts(segments())
    assert sorted(counts) == ["s1", "s2"]
    assert counts["s1"].tolist() == [[1, 2], [0, 1], [0, 0], [1, 1]]
    assert counts["s2"].tolist() == [[0, 0], [0, 1], [1, 2], [0, 0]]
    assert counts["s1"].dtype == np.int64
    r = gap_bin_recall(segments())
    total = counts["s1"] + counts["s2"]
    pooled = [r.bins[b] for b in GAP_BINS] + [r.just_seen]
    assert total.tolist() == [[p.numerator, p.denominator] for p in pooled]
    # a story with no return still gets its (zero) rows
    assert gap_bin_story_counts([SegmentVerdict("s3", 1, True, [])])["s3"].sum() == 0


def test_bad_input_is_refused_by_name():
    with pytest.raises(UserInputError, match="gap_bin_recall"):
        gap_bin_recall("not segments")
    seg = segments()[1]
    with pytest.raises(UserInputError, match="once per condition"):
        gap_bin_story_counts([seg, seg])
