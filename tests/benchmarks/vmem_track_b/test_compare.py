"""`vidmem compare` arithmetic on hand-made Track-B verdict rows, every number counted by hand.

Two stories, three conditions. Per segment the roster is A (required character, gap 2:
bin 1-4), B (required prop, gap 35: bin >= 30, the long-gap family), F (forbidden,
destroyed) and D (a decoy). T / F / u below: judged present, absent, unparsable segment.

    story s1   seg 1            seg 2
    none       A T  B F  F F    A F  B F  F T
    x          A T  B T  F F    A T  B F  F T
    story s2   seg 1            seg 2
    none       A T  B T  F F    A T  B T  F F
    x          A T  B F  F T    u
"""

from __future__ import annotations

import pytest

from vidmem.benchmarks.vmem_track_b.compare import RunSide, compare_sides, print_comparison
from vidmem.benchmarks.vmem_track_b.config import ScorerConfig
from vidmem.benchmarks.vmem_track_b.scorer import aggregate_rows, verdicts_to_json
from vidmem.errors import UserInputError
from vidmem.metrics.track_b import BIN_ROWS, FAMILIES, EntryVerdict, SegmentVerdict

CONDS = ("none", "x", "last_seen")
PLAN = {  # condition -> story -> per segment (A, B, F) or None (unparsable)
    "none": {"s1": [(True, False, False), (False, False, True)],
             "s2": [(True, True, False), (True, True, False)]},
    "x": {"s1": [(True, True, False), (True, False, True)],
          "s2": [(True, False, True), None]},
}
PLAN["last_seen"] = PLAN["none"]
HASH = {"gt": "g1", "gt_source": "s1", "sut_prompts": "p1"}


def segment(sid: str, n: int, verdict: tuple[bool, bool, bool] | None) -> SegmentVerdict:
    a, b, f = verdict or (True, True, True)
    entries = [EntryVerdict(sid, n, "A", "character", "required", a, op="recall", gap=2),
               EntryVerdict(sid, n, "B", "prop", "required", b, op="recall_after_gap", gap=35),
               EntryVerdict(sid, n, "F", "prop", "forbidden", f, reason="destroyed"),
               EntryVerdict(sid, n, "D", "prop", "decoy", False)]
    if verdict is None:
        return SegmentVerdict.unparsable(sid, n, entries)
    return SegmentVerdict(sid, n, True, entries)


def rows(stories=("s1", "s2")) -> dict[str, dict]:
    out = {}
    for k, sid in enumerate(stories, start=1):
        out[sid] = {"story_id": sid, "number": k, "status": "scored", "n_segments": 2,
                    "conditions": {c: {"verdicts": verdicts_to_json(
                        [segment(sid, n, v) for n, v in enumerate(PLAN[c][sid], start=1)]),
                        "judge": {"segments": 2}} for c in CONDS}}
    return out


def config(**kw) -> ScorerConfig:
    return ScorerConfig(conditions=CONDS, **kw)


def side(path="runA", stories=("s1", "s2"), hashes=None, **kw) -> RunSide:
    r = rows(stories)
    return RunSide(path, config(**kw), r, hashes or {sid: dict(HASH) for sid in r})


def rates(block) -> dict[str, tuple]:
    return {k: (v["difference"], v["ci_low"], v["ci_high"]) for k, v in block["rates"].items()}


def test_x_minus_none_by_hand():
    s = side()
    res = compare_sides(s, s, "x", None, same_run=True)
    assert (res["condition_a"], res["condition_b"]) == ("x", "none")
    assert res["stories"] == ["s1", "s2"] and res["n_segments"] == 4
    d = res["deltas"]["rates"]
    # pooled: x recall 4/8, precision 4/6, avoid 2/4; none 5/8, 5/6, 3/4
    assert d["recall"]["rate_a"] == 0.5 and d["recall"]["rate_b"] == 5 / 8
    assert d["recall"]["difference"] == pytest.approx(-1 / 8)
    assert d["precision"]["difference"] == pytest.approx(2 / 3 - 5 / 6)
    assert d["avoid_ok"]["difference"] == pytest.approx(-1 / 4)
    # two stories: a draw is s1 twice (recall 3/4 - 1/4 = +1/2), s2 twice (1/4 - 4/4 =
    # -3/4) or one each (-1/8); each extreme holds ~1/4 of the draws, so the 2.5-97.5
    # percentiles are the extremes themselves
    assert (d["recall"]["ci_low"], d["recall"]["ci_high"]) == pytest.approx((-0.75, 0.5))
    # parsed in both drops s2 seg 2: x 4/6, 4/6, 1/3; none 3/6, 3/4, 2/3
    p = res["deltas_parsed_in_both"]
    assert p["n_segments"] == 3
    assert p["rates"]["recall"]["difference"] == pytest.approx(1 / 6)
    assert p["rates"]["precision"]["difference"] == pytest.approx(4 / 6 - 3 / 4)
    assert p["rates"]["avoid_ok"]["difference"] == pytest.approx(-1 / 3)
    # gap bins: A (1-4) x 3/4 vs none 3/4; B (>= 30) x 1/4 vs none 2/4
    g = res["gap_bin_deltas"]["rates"]
    assert g["1-4"]["difference"] == 0.0 and g[">=30"]["difference"] == pytest.approx(-0.25)
    assert g["5-29"]["difference"] is None and g["5-29"]["n_undefined"] == 2000
    # the long-gap family is bin >= 30; deprecation is Avoid-OK over F
    f = res["family_deltas"]["rates"]
    assert f["long_gap_return"]["difference"] == pytest.approx(-0.25)
    assert f["deprecation"]["difference"] == pytest.approx(-0.25)
    assert res["bootstrap"] == {"n_resamples": 2000, "seed": 20260925, "confidence": 0.95,
                                "from": "run A"}


def test_the_same_numbers_as_the_summary():
    s = side()
    summary = aggregate_rows(list(s.rows.values()), config())
    res = compare_sides(s, s, "x", "none", same_run=True)
    assert res["deltas"] == summary["deltas"]["x"]
    assert res["deltas_parsed_in_both"] == summary["deltas_parsed_in_both"]["x"]
    assert res["family_deltas"] == summary["family_deltas"]["x"]
    assert res["gap_bin_deltas"] == summary["gap_bins"]["deltas"]["x"]
    assert res["pooled_a"] == summary["pooled"]["x"]
    # the summary's gap bins by hand: none 1-4 = A 3/4, >= 30 = B 2/4
    none = summary["gap_bins"]["rates"]["none"]["bins"]
    assert (none["1-4"]["numerator"], none["1-4"]["denominator"]) == (3, 4)
    assert (none[">=30"]["numerator"], none[">=30"]["denominator"]) == (2, 4)


def test_a_condition_with_itself_is_exactly_zero():
    s = side()
    res = compare_sides(s, s, "x", "x", same_run=True)
    for block in (res["deltas"], res["deltas_parsed_in_both"], res["family_deltas"],
                  res["gap_bin_deltas"]):
        for name, (diff, lo, hi) in rates(block).items():
            if diff is not None:
                assert (diff, lo, hi) == (0.0, 0.0, 0.0), name
    assert set(rates(res["family_deltas"])) == set(FAMILIES)
    assert set(rates(res["gap_bin_deltas"])) == set(BIN_ROWS)
    assert any("itself" in n for n in res["notes"])
    # two conditions with the same verdicts (last_seen plays none) are zero too, and noted
    res = compare_sides(s, s, "last_seen", "none", same_run=True)
    assert all(d in (0.0, None) for d, _, _ in rates(res["deltas"]).values())
    assert res["privileged"] == ["last_seen"] and any("privileged" in n for n in res["notes"])


def test_two_runs_over_the_stories_both_scored():
    a, b = side("runA"), side("runB", stories=("s2",), n_resamples=500)
    res = compare_sides(a, b)  # no condition given: none vs none
    assert (res["condition_a"], res["condition_b"]) == ("none", "none")
    assert res["stories"] == ["s2"] and res["only_in_a"] == ["s1"] and res["only_in_b"] == []
    assert all(d == 0.0 for d, _, _ in rates(res["deltas"]).values())
    notes = " ".join(res["notes"])
    assert "only in run A" in notes and "bootstrap settings differ" in notes
    res = compare_sides(a, b, condition_a="x")  # condition B follows A
    assert res["condition_b"] == "x"


def test_differing_gold_is_refused_by_story():
    a = side("runA")
    b = side("runB", hashes={"s1": dict(HASH), "s2": {**HASH, "gt": "changed"}})
    with pytest.raises(UserInputError, match=r"story s2: the two runs scored different gold "
                       r"\(files differing: gt\)"):
        compare_sides(a, b, "x", "x")
    b = side("runB", hashes={"s1": dict(HASH), "s2": None})
    with pytest.raises(UserInputError, match="runB: story s2 has no stored gold hashes"):
        compare_sides(a, b)


def test_bad_requests_are_refused_clearly():
    s = side()
    with pytest.raises(UserInputError, match="needs --condition-a"):
        compare_sides(s, s, same_run=True)
    with pytest.raises(UserInputError, match=r"condition 'seg_frame' was not scored.*none, x"):
        compare_sides(s, s, "seg_frame", same_run=True)
    with pytest.raises(UserInputError, match="no scored story in common"):
        compare_sides(side(stories=("s1",)), side("runB", stories=("s2",)))


def test_print_comparison_names_every_block():
    from rich.console import Console

    s = side()
    console = Console(record=True, width=140)
    print_comparison(console, compare_sides(s, s, "x", same_run=True))
    text = console.export_text()
    for want in ("pooled rates, every segment", "parsed in both arms (3 segments)",
                 "parsed in both arms: 3 segments of 2 stories\n",
                 "long_gap_return", ">=30", "-0.125 [-0.750, +0.500]"):
        assert want in text, want


def test_a_story_with_no_segment_parsed_in_both_arms_is_counted_as_dropped(capsys):
    """Issue 24 item 5: x's s2 entirely unparsable -> s2 leaves the parsed-in-both
    bootstrap, and every output says so."""
    from rich.console import Console

    from vidmem.benchmarks.vmem_track_b.report import parsed_in_both_note

    s = side()
    s.rows["s2"]["conditions"]["x"]["verdicts"] = verdicts_to_json(
        [segment("s2", n, None) for n in (1, 2)])
    res = compare_sides(s, s, "x", "none", same_run=True)
    parsed = res["deltas_parsed_in_both"]
    assert (parsed["n_segments"], parsed["n_stories"], parsed["n_stories_dropped"],
            parsed["stories_dropped"]) == (2, 1, 1, ["s2"])
    # on s1 alone: x recall (A T, B T, A T, B F) 3/4, none (A T, B F, A F, B F) 1/4
    assert parsed["rates"]["recall"]["difference"] == pytest.approx(0.5)
    summary = aggregate_rows(list(s.rows.values()), config())
    assert summary["deltas_parsed_in_both"]["x"] == parsed
    assert summary["deltas_parsed_in_both"]["last_seen"]["n_stories_dropped"] == 0
    assert "1 story dropped (no segment parsed in both arms: s2)" in parsed_in_both_note(summary)
    print_comparison(Console(width=100), res)
    assert "1 story dropped (no segment parsed in both arms: s2)" in capsys.readouterr().out
    # every story dropped: no bootstrap, still counted
    for sid in ("s1", "s2"):
        s.rows[sid]["conditions"]["x"]["verdicts"] = verdicts_to_json(
            [segment(sid, n, None) for n in (1, 2)])
    parsed = compare_sides(s, s, "x", "none", same_run=True)["deltas_parsed_in_both"]
    assert (parsed["rates"], parsed["n_stories"], parsed["stories_dropped"]) == \
        ({}, 0, ["s1", "s2"])
