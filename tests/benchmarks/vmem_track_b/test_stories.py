"""Track-B story files loaded, validated and counted: the official sample story agrees with
its own summary block and with counts made by hand; a copy broken in one place gives the
problem it should, by file and field; several breaks are reported at once; the cohort
selector; the sim builder's stories pass."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vidmem.benchmarks.vmem_track_b.schema import STRESS_FAMILIES
from vidmem.benchmarks.vmem_track_b.sim_build import build_track_b
from vidmem.benchmarks.vmem_track_b.stats import (
    corpus_stats,
    release_gap_histogram,
    story_disagreements,
)
from vidmem.benchmarks.vmem_track_b.stories import format_cohort, load_stories, parse_cohort
from vidmem.benchmarks.vmem_track_b.validate import validate_stories
from vidmem.errors import UserInputError

#: unchanged copies of the official Track-B sample files (ATTRIBUTION.md next to them)
SAMPLE = Path(__file__).parent / "data" / "vmem_track_b_sample"
SID = "0001_lighthouse_keeper"
GT, SRC, SUT = f"gt/{SID}.json", f"gt_source/{SID}.json", f"sut_prompts/{SID}_name_anchored.json"


def _read(root: Path, rel: str) -> dict:
    return json.loads((root / rel).read_text(encoding="utf-8"))


def _write(root: Path, rel: str, doc: dict) -> None:
    (root / rel).write_text(json.dumps(doc, ensure_ascii=False, indent=1), encoding="utf-8")


def _errors(report) -> list[tuple[str, str]]:
    return [(p.where, p.field) for p in report.errors]


@pytest.fixture()
def copy(tmp_path: Path) -> Path:
    """A writable copy of the sample, its attribution included."""
    root = tmp_path / "trackB_en"
    shutil.copytree(SAMPLE, root)
    assert (root / "ATTRIBUTION.md").is_file()
    return root


# --------------------------------------------------------------------------- the sample


def test_the_sample_counts_equal_its_own_summary_block():
    stats = corpus_stats(SAMPLE)
    summary = _read(SAMPLE, GT)["summary"]
    assert stats["disagreements"] == []
    assert stats["stories"] == 1
    assert stats["segments"] == summary["n_segments"] == 87
    assert {k: stats["entities"][k] for k in summary["kind_counts"]} == summary["kind_counts"]
    assert stats["entities"]["total"] == summary["n_entities"] == 19
    assert stats["state_threads"] == summary["n_state_threads"] == 6
    assert stats["tags"] == {p: summary["probe_counts"][p] for p in stats["tags"]}
    assert set(stats["tags"]) == set(summary["probe_counts"])  # 9 families + 2 controls
    assert release_gap_histogram(stats["gap_histogram"]) == summary["gap_histogram"]
    lg = summary["longest_gap"]
    assert stats["longest_gap"] == {"story_id": SID, "eid": lg["eid"], "gap": lg["gap"],
                                    "segment_id": int(lg["at"].removeprefix("seg_"))}


def test_the_sample_counts_by_hand():
    """Literals counted with jq in the sample's trackB/en/ folder (G=gt/0001_lighthouse_keeper.json)."""
    stats = corpus_stats(SAMPLE, stories="0001")
    # jq '.segments|length' $G  -> 87;  jq '[.segments[].duration_sec]|add' $G  -> 435
    assert stats["segments"] == 87
    assert stats["hours"] == pytest.approx(435 / 3600)
    # jq -c '[.entities[]|.kind]|group_by(.)|map({(.[0]): length})|add' $G
    assert stats["entities"] == {"character": 5, "prop": 10, "location": 4, "total": 19}
    # jq -c '[.segments[].cast[]|select(.op=="transform")|.eid]|unique' $G -> E1..E6
    assert stats["state_threads"] == 6
    # jq '[.segments[]|select(any(.cast[]; (.gap // -1) >= 30))]|length' $G
    assert stats["tags"]["long_gap_reappearance"] == 6
    # jq '[.segments[]|select(any(.forbidden[]; .reference_indirect == true))]|length' $G
    assert stats["tags"]["reference_indirect"] == 5
    # jq '[.segments[]|select(.lookalike_active != null)]|length' $G
    assert stats["tags"]["lookalike_disambiguation"] == 11
    # jq '[.segments[]|select(any(.cast[]; .count != null and
    #      (.op|IN("recall","recall_after_gap","persist"))))]|length' $G
    assert stats["tags"]["count_memory"] == 5
    # jq '[.segments[]|select(any(.cast[]; .anchor.type == "temporal"))]|length' $G
    assert stats["tags"]["temporal_reference"] == 5
    # jq '[.segments[]|select(any(.cast[]; .confusable_with != null and .op == "introduce"))]
    #      |length' $G  (7 segments carry confusable_with; 5 of them introduce the entity)
    assert stats["tags"]["false_friend"] == 5
    # segments 48-52, 60, 74-77: a removal at most 4 segments ago, or reference-indirect
    assert stats["tags"]["deprecation_avoidance"] == 10
    # jq -c '[.segments[].cast[]|.gap|select(. != null)] as $g | [($g|map(select(. <= 4))
    #      |length), ($g|map(select(. >= 5 and . < 30))|length), ($g|map(select(. >= 30))|length)]'
    #  -> [186, 18, 6]; jq '[.segments[].cast[]|select(.gap == 0)]|length' $G -> 161
    #  (the release's "1-4" bin holds gaps 0-4; vidmem keeps gap 0 apart, as the scorer does)
    assert stats["gap_histogram"] == {"just_seen": 161, "1-4": 25, "5-29": 18, ">=30": 6}
    # the per-kind histograms add up to the whole
    by_kind = stats["gap_histogram_by_kind"]
    assert {b: sum(h[b] for h in by_kind.values()) for b in by_kind["prop"]} == \
        stats["gap_histogram"]
    assert stats["longest_gap"] == {"story_id": SID, "eid": "E16", "gap": 64, "segment_id": 68}
    assert set(STRESS_FAMILIES.values()) < set(stats["tags"])


def test_the_sample_validates_with_only_the_release_s_own_warning():
    report = validate_stories(SAMPLE)
    assert report.errors == ()
    assert (report.n_stories, report.n_rows) == (1, 87)
    assert [(p.where, p.field) for p in report.warnings] == [(GT, "warnings")]
    assert "seg_084: temporal-anchored E9" in report.warnings[0].message
    assert "1 story(ies), 87 segment(s), 0 error(s), 1 warning(s)" in report.format()


def test_the_loaded_story_has_int_segment_ids_and_the_system_prompt_next_to_the_gold():
    (story,) = load_stories(SAMPLE)
    assert (story.story_id, story.number, story.segment_seconds) == (SID, 1, 5.0)
    assert [s.segment_id for s in story.segments] == list(range(1, 88))
    prompts = _read(SAMPLE, SUT)["segments"]
    assert [s.prompt for s in story.segments] == [p["prompt"] for p in prompts]
    first = story.segments[0]
    assert "Elias（A lighthouse keeper in his fifties" in first.prompt
    assert first.action.startswith("At dusk, lighthouse keeper Elias climbs")
    bells = story.segments[67].cast[2]  # seg_068
    assert (bells.eid, bells.op, bells.gap, bells.last_seen, bells.count) == (
        "E16", "recall_after_gap", 64, 3, 2)
    sunk = story.segments[60].forbidden[0]  # seg_061
    assert (sunk.eid, sunk.reason, sunk.grounded_by, sunk.lookalike_pair) == (
        "E5", "destroyed", 47, None)
    twin = story.segments[17].forbidden[0]  # seg_018
    assert (twin.reason, twin.grounded_by, twin.lookalike_pair) == (
        "lookalike_absent", None, ("E2", "E6"))
    assert story.segments[17].lookalike_active[0].present_members == ("E6",)
    elias = story.entities["E1"]
    assert elias.initial_state == "middle_aged_sturdy"
    assert elias.appearance == elias.states["middle_aged_sturdy"]
    assert story.entities["E7"].appearance.startswith("A white granite lighthouse")
    assert story.summary["n_segments"] == 87 and len(story.sha256) == 3


def test_a_summary_that_contradicts_its_segments_is_listed(copy):
    doc = _read(copy, GT)
    doc["summary"]["probe_counts"]["continuity"] = 80
    doc["summary"]["gap_histogram"]["1-4"] = 25
    doc["segments"][1]["memory_probes"] = ["continuity"]
    _write(copy, GT, doc)
    (story,) = load_stories(copy)
    assert story_disagreements(story) == [
        {"file": GT, "key": "summary.probe_counts.continuity", "summary": 80, "recomputed": 81},
        {"file": GT, "key": "summary.gap_histogram.1-4", "summary": 25, "recomputed": 186},
        {"file": GT, "key": "segments[1].memory_probes", "summary": ["continuity"],
         "recomputed": ["continuity", "first_appearance"]},
    ]


# --------------------------------------------------------------------------- broken copies


def test_bad_json(copy):
    text = (copy / GT).read_text(encoding="utf-8")
    (copy / GT).write_text(text.replace('"segment_id": "seg_002"', '"segment_id": seg_002', 1),
                           encoding="utf-8")
    report = validate_stories(copy)
    assert _errors(report) == [(GT, "")]
    assert "not valid JSON" in report.errors[0].message and report.errors[0].line is not None


def test_missing_sut_prompts_file(copy):
    (copy / SUT).unlink()
    report = validate_stories(copy)
    assert _errors(report) == [(SUT, "")]
    assert "missing file" in report.errors[0].message


def test_zero_indexed_segment_ids(copy):
    for rel in (GT, SUT):
        doc = _read(copy, rel)
        for i, seg in enumerate(doc["segments"]):
            seg["segment_id"] = f"seg_{i:03d}"
        _write(copy, rel, doc)
    report = validate_stories(copy)
    assert _errors(report) == [(GT, "segments"), (SUT, "segments")]
    assert all("0-indexed" in p.message and "seg_001 .. seg_087" in p.message
               for p in report.errors)


def test_a_gap_in_the_segment_ids(copy):
    doc = _read(copy, GT)
    doc["segments"][4]["segment_id"] = "seg_099"
    _write(copy, GT, doc)
    report = validate_stories(copy)
    assert (GT, "segments") in _errors(report)
    assert "missing seg_005; unexpected seg_099" in report.errors[0].message
    # and the prompt of position 5 no longer matches the gold's id there
    assert (SUT, "segments[4].segment_id") in _errors(report)


def test_an_undefined_eid(copy):
    doc = _read(copy, GT)
    doc["segments"][0]["cast"][0]["eid"] = "E99"
    _write(copy, GT, doc)
    report = validate_stories(copy)
    assert _errors(report) == [(GT, "segments[0].cast[0].eid")]
    assert "'E99' is not defined in 'entities'" in report.errors[0].message


def test_an_unknown_forbidden_reason(copy):
    doc = _read(copy, GT)
    doc["segments"][47]["forbidden"][0]["reason"] = "destoryed"
    _write(copy, GT, doc)
    report = validate_stories(copy)
    assert _errors(report) == [(GT, "segments[47].forbidden[0].reason")]
    assert "did you mean 'destroyed'?" in report.errors[0].message


def test_references_pointing_nowhere(copy):
    doc = _read(copy, GT)
    doc["segments"][39]["cast"][-1]["confusable_with"] = "E55"  # seg_040, E19
    doc["segments"][79]["cast"][0]["anchor"]["resolves_to"] = "E77"  # seg_080
    doc["segments"][17]["lookalike_active"][0]["pair"] = ["E2", "E3"]
    _write(copy, GT, doc)
    assert _errors(validate_stories(copy)) == [
        (GT, "segments[17].lookalike_active[0].pair"),
        (GT, "segments[17].lookalike_active[0].present_members[0]"),
        (GT, "segments[39].cast[1].confusable_with"),
        (GT, "segments[79].cast[0].anchor.resolves_to")]


def test_labels_the_segment_order_contradicts_are_warnings(copy):
    doc = _read(copy, GT)
    doc["segments"][3]["cast"][2]["gap"] = 5  # seg_004: E4 last seen in seg_001, so gap 2
    doc["segments"][5]["duration_sec"] = 4.0
    _write(copy, GT, doc)
    report = validate_stories(copy)
    assert report.errors == ()
    found = {(p.where, p.field): p.message for p in report.warnings}
    assert "expected gap 2 and last_seen 'seg_001', found gap 5" in found[
        (GT, "segments[3].cast[2].gap")]
    assert (GT, "segments[5].duration_sec") in found
    assert (SUT, "segments[5].duration_sec") in found  # 5.0 in the prompts, 4.0 in the gold


def test_a_prompt_count_that_disagrees_with_the_gold(copy):
    doc = _read(copy, SUT)
    doc["segments"].pop()
    doc["n_segments"] = 86
    _write(copy, SUT, doc)
    report = validate_stories(copy)
    assert _errors(report) == [(SUT, "segments")]
    assert "86 prompts but gt/0001_lighthouse_keeper.json has 87 segments" in report.errors[0].message


def test_a_source_with_another_number_of_segments(copy):
    doc = _read(copy, SRC)
    doc["scenes"][0]["actions"].pop()
    _write(copy, SRC, doc)
    assert _errors(validate_stories(copy)) == [(SRC, "scenes")]


def test_every_problem_at_once_and_loading_refuses_them(copy):
    gt = _read(copy, GT)
    gt["segments"][0]["cast"][0]["eid"] = "E99"
    gt["segments"][47]["forbidden"][0]["reason"] = "gone"
    gt["segments"][2]["memory_probes"].append("continuty")
    _write(copy, GT, gt)
    sut = _read(copy, SUT)
    sut["segments"][5]["segment_id"] = "seg_106"
    sut["segments"][6]["prompt"] = " "
    _write(copy, SUT, sut)
    (copy / SRC).write_text("{", encoding="utf-8")
    report = validate_stories(copy)
    assert _errors(report) == [  # by file; within a file, item checks then cross-item rules
        (GT, "segments[47].forbidden[0].reason"),
        (GT, "segments[0].cast[0].eid"),
        (GT, "segments[2].memory_probes[2]"),
        (SRC, ""),
        (SUT, "segments"),
        (SUT, "segments[5].segment_id"),
        (SUT, "segments[6].prompt"),
    ]
    with pytest.raises(UserInputError) as exc:
        load_stories(copy)
    assert "7 error(s) in the Track-B dataset" in str(exc.value)
    assert "validate_stories(" in str(exc.value)


def test_file_names_and_registers(copy):
    (copy / "sut_prompts" / f"{SID}_plain.json").write_text("{}", encoding="utf-8")
    shutil.copy(copy / GT, copy / "gt" / "lighthouse.json")
    report = validate_stories(copy)
    assert _errors(report) == [("gt/lighthouse.json", "")]
    assert "does not start with a story id" in report.errors[0].message
    assert ("sut_prompts/0001_lighthouse_keeper_plain.json", "") in [
        (p.where, p.field) for p in report.warnings]


def test_a_root_holding_en_is_read_as_en(tmp_path):
    shutil.copytree(SAMPLE, tmp_path / "trackB" / "en")
    report = validate_stories(tmp_path / "trackB")
    assert report.ok and report.root == tmp_path / "trackB" / "en"
    assert _errors(validate_stories(tmp_path / "nowhere")) == [(str(tmp_path / "nowhere"), "")]


# --------------------------------------------------------------------------- cohorts


def test_the_cohort_selector():
    assert parse_cohort("0001-0030") == frozenset(range(1, 31))
    assert parse_cohort("0001,0003") == {1, 3}
    assert parse_cohort(" 1-3 , 0007") == {1, 2, 3, 7}
    assert parse_cohort(["0001", 4]) == {1, 4} and parse_cohort(2) == {2}
    assert parse_cohort(None) is None
    assert format_cohort(parse_cohort("0001-0003,0007,0010-0011")) == "0001-0003,0007,0010-0011"
    for bad, what in (("0003-0001", "runs backwards"), ("0001,abc", "'abc' is not a story id"),
                      (",", "is not a story id")):
        with pytest.raises(UserInputError, match=what):
            parse_cohort(bad)


def test_selecting_stories(tmp_path):
    build_track_b(tmp_path, seed=0, n_cases=3)
    assert [s.number for s in load_stories(tmp_path, "0002,0003")] == [2, 3]
    assert [s.story_id for s in load_stories(tmp_path, "1-2")] == ["0001_sim_s0", "0002_sim_s0"]
    report = validate_stories(tmp_path, "0001-0030")
    assert _errors(report) == [(str(tmp_path), "")]
    assert "0004-0030 not found; the root holds 0001-0003" in report.errors[0].message
    with pytest.raises(UserInputError, match="0031 not found"):
        load_stories(tmp_path, "0031")
    shutil.copy(tmp_path / "gt" / "0002_sim_s0.json", tmp_path / "gt" / "0002_other.json")
    assert "story id 0002 names 2 stories" in validate_stories(tmp_path, "2").errors[0].message
    assert validate_stories(tmp_path, "1").ok  # the duplicate is outside the selection


# --------------------------------------------------------------------------- sim stories


def test_the_sim_builder_s_stories_load_validate_and_agree_with_their_summaries(tmp_path):
    build_track_b(tmp_path, seed=3, n_cases=2, n_segments=40)
    assert validate_stories(tmp_path).errors == ()
    stories = load_stories(tmp_path)
    assert [len(s.segments) for s in stories] == [40, 40]
    assert all(s.segments[-1].prompt for s in stories)
    stats = corpus_stats(tmp_path)
    assert stats["segments"] == 80 and stats["disagreements"] == []
    assert stats["hours"] == pytest.approx(80 * 5 / 3600)


def test_stats_and_summary_bin_gaps_with_one_rule():
    """``vidmem stats`` and summary.json's gap bins: the same gap, the same bin (issue 24
    item 6). The official scorer's _gap_bucket: gap <= 0 -> '0' (vidmem: just_seen),
    1-4, 5-29, >= 30; before, ``vidmem stats`` put gap 0 in '1-4'."""
    from vidmem.benchmarks.vmem_track_b.stats import gap_histogram
    from vidmem.metrics.track_b import EntryVerdict, SegmentVerdict, gap_bin_recall

    gaps = [0, 0, 0, 1, 4, 5, 12, 29, 30, 31, 64]
    by_hand = {"just_seen": 3, "1-4": 2, "5-29": 3, ">=30": 3}
    assert gap_histogram(gaps) == by_hand
    seg = SegmentVerdict("s", 2, True, [
        EntryVerdict("s", 2, f"E{i}", "prop", "required", True, op="recall", gap=g)
        for i, g in enumerate(gaps)])
    r = gap_bin_recall([seg])
    summary_bins = {"just_seen": r.just_seen.denominator,
                    **{b: w.denominator for b, w in r.bins.items()}}
    assert summary_bins == by_hand
