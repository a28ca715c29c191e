"""MIST gate scoring through the scorer: hand-labelled scripted answers in, factors and
classes out (checked by hand), one judge call per case, strict reading, hard cuts, the
layout errors of brought clips, and a rescore from stored readings without the judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mist_fakes import ScriptedJudge, write_clip

from vidmem.benchmarks.mist import BENCHMARK
from vidmem.benchmarks.mist.aggregate import aggregate_rows
from vidmem.benchmarks.mist.config import MistConfig
from vidmem.benchmarks.mist.scorer import MistScorer
from vidmem.benchmarks.mist.sim_build import plan_card
from vidmem.errors import UserInputError

POS = ("0.9", "0.93", "0.95", "0.97", "0.99", "0.995")

#: hand labels per clip: six reveal and six inside answers (y / n / u = unsure / x = bad)
LABELS = {
    "baseline/try_0": ("nnnyyy", "nnnnnn"),          # reveal 0.5 -> opened; inside 0 -> wrong
    "open_and_hold/try_0": ("nnnnnn", "nnnnnn"),     # never open
    "open_and_hold/try_1": ("yyyyyu", "nnyyyu"),     # reveal 1.0 (5 read), inside 0.6, last 1
}
WORD = {"y": "yes", "n": "no", "u": "unsure", "x": None}


def _script(case_id: str, labels: dict[str, tuple[str, str]]):
    def answer(item_id: str, payload: dict) -> str | None:
        assert payload["task"] == "mist_gate"
        if item_id == f"{case_id}/locked/setup":
            return "yes"
        if item_id == f"{case_id}/locked/leak":
            assert payload["target"]["text"]  # the leak question names s*
            return "no"
        clip, _, gate_pos = item_id.removeprefix(f"{case_id}/").rpartition("/")
        gate, _, pos = gate_pos.partition("@")
        assert ("target" in payload) == (gate == "inside")
        rev, ins = labels[clip]
        return WORD[(rev if gate == "reveal" else ins)[POS.index(pos)]]
    return answer


@pytest.fixture
def cards(tmp_path):
    root = tmp_path / "cards"
    root.mkdir()
    rows = [plan_card(0, i) for i in range(2)]
    (root / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return root, rows


def _layout(rollouts: Path, case_id: str, *, cut_in: str | None = None) -> None:
    for shot, colour in (("setup", (60, 60, 60)), ("gap", (70, 70, 70))):
        write_clip(rollouts / case_id / "locked" / f"{shot}.mp4", colour)
    for k, clip in enumerate(LABELS):
        write_clip(rollouts / case_id / f"{clip}.mp4", (80 + 10 * k, 70, 70),
                   cut=clip == cut_in)


def test_gates_and_classes_from_hand_labels(cards, tmp_path):
    root, rows = cards
    case = rows[0]["case_id"]
    rollouts = tmp_path / "rollouts"
    _layout(rollouts, case, cut_in="open_and_hold/try_1")
    config = MistConfig(arms=("baseline", "open_and_hold"), k=2)
    ds = BENCHMARK.load(root)
    scan = BENCHMARK.find_outputs(ds, rollouts)
    assert list(scan.found) == [case] and scan.missing == [rows[1]["case_id"]]
    (item,) = BENCHMARK.score_items(ds, scan, config, tmp_path)
    judge = ScriptedJudge(_script(case, LABELS))
    out = MistScorer(config, judge=judge).score_case(item.request)
    assert judge.calls == 1 and len(judge.asked) == 2 + 3 * 12
    score = out["score"]
    assert score["setup"] == 1.0 and score["leak"] == 0.0
    base = score["arms"]["baseline"][0]["gates"]
    assert (base["reveal"], base["opened"], base["inside"], base["label"]) == (
        0.5, True, 0.0, "open_but_wrong")
    t0, t1 = (c["gates"] for c in score["arms"]["open_and_hold"])
    assert (t0["reveal"], t0["opened"], t0["label"]) == (0.0, False, "never_open")
    assert t1["reveal"] == 1.0 and t1["n_readable"] == 5
    assert t1["inside"] == pytest.approx(0.6) and t1["inside_last"] == 1.0
    assert t1["label"] == "correct"
    # the stored readings are the answers: yes 1, no 0, unsure None
    assert score["arms"]["open_and_hold"][1]["reveal_readings"] == [1.0] * 5 + [None]
    assert score["judge"]["unreadable"] == 2 and score["judge"]["questions"] == 38
    # hard cuts: only the clip written with a cut has one, at its first bright frame
    cuts = {(a, c["try"]): c["hard_cuts"] for a, cs in score["arms"].items() for c in cs}
    assert cuts == {("baseline", 0): [], ("open_and_hold", 0): [], ("open_and_hold", 1): [10]}
    assert score["locked"]["setup"]["hard_cuts"] == [] and score["locked"]["gap"]["n_frames"] == 20
    seam = score["arms"]["baseline"][0]
    assert seam["seam_mad"] == pytest.approx(0.299 * 10, abs=0.6)  # grey of (80,70,70) - 70
    assert seam["seam_cut"] is False
    # the aggregate from the stored row alone (no judge)
    row = {"case_id": case, "family": rows[0]["family"], "status": "scored", **score}
    s = aggregate_rows([row], config)
    oh = s["arm"]["open_and_hold"]
    assert oh["first"]["labels"] == {"never_open": 1, "open_but_wrong": 0, "correct": 0}
    assert oh["best"]["labels"] == {"never_open": 0, "open_but_wrong": 0, "correct": 1}
    assert oh["running_best"]["reveal"] == [0.5, 1.0]  # k=1: the original beats try 0
    assert oh["running_best"]["inside_of_chosen"] == [0.0, pytest.approx(0.6)]
    assert oh["kept"] == {"try": 1}
    assert s["deltas"]["open_and_hold"]["best"]["reveal"]["bootstrap"]["mean_diff"] == 0.5
    assert s["deltas"]["open_and_hold"]["first"]["reveal"]["bootstrap"]["mean_diff"] == -0.5
    assert s["transitions"]["open_and_hold"]["best"] == {"open_but_wrong->correct": 1}
    assert oh["hard_cuts"] == {"clips": 2, "clips_with_cut": 1, "cuts": 1, "seam_cuts": 0}


def test_unparsable_answers_are_unreadable_not_no(cards, tmp_path):
    root, rows = cards
    case = rows[0]["case_id"]
    rollouts = tmp_path / "rollouts"
    _layout(rollouts, case)
    config = MistConfig(arms=("baseline",), k=1)
    ds = BENCHMARK.load(root)
    (item,) = BENCHMARK.score_items(ds, BENCHMARK.find_outputs(ds, rollouts), config, tmp_path)
    labels = {"baseline/try_0": ("xxxxxx", "xxxxxx")}
    out = MistScorer(config, judge=ScriptedJudge(_script(case, labels))).score_case(item.request)
    g = out["score"]["arms"]["baseline"][0]["gates"]
    assert g["label"] == "unscored" and g["reveal"] is None and g["opened"] is None
    assert out["score"]["judge"]["status_unparsable"] == 12


def test_brought_clips_layout_errors_name_the_clip(cards, tmp_path):
    root, rows = cards
    case = rows[0]["case_id"]
    rollouts = tmp_path / "rollouts"
    _layout(rollouts, case)
    ds = BENCHMARK.load(root)
    scan = BENCHMARK.find_outputs(ds, rollouts)
    config = MistConfig(arms=("baseline", "open_and_hold"), k=3)
    with pytest.raises(UserInputError, match=r"open_and_hold: try_2\.mp4 missing"):
        BENCHMARK.score_items(ds, scan, config, tmp_path)
    (rollouts / case / "locked" / "gap.mp4").unlink()
    with pytest.raises(UserInputError, match="locked gap shot"):
        BENCHMARK.score_items(ds, scan, MistConfig(arms=("baseline",)), tmp_path)
    write_clip(rollouts / case / "locked" / "gap.mp4", (1, 2, 3))
    write_clip(rollouts / case / "baseline" / "try_1.mp4", (1, 2, 3))
    with pytest.raises(UserInputError, match=r"try 1, outside 0\.\.0"):
        BENCHMARK.score_items(ds, scan, MistConfig(arms=("baseline",)), tmp_path)


def test_m3_arm_try_zero_is_asked_once(cards, tmp_path):
    """An M3 arm's try 0 is the baseline's clip: its twelve questions are not asked twice."""
    root, rows = cards
    case = rows[0]["case_id"]
    rollouts = tmp_path / "rollouts"
    _layout(rollouts, case)
    m3 = rollouts / case / "diagnosis_rewrite"
    m3.mkdir()
    (m3 / "try_0.mp4").write_bytes((rollouts / case / "baseline" / "try_0.mp4").read_bytes())
    write_clip(m3 / "try_1.mp4", (200, 10, 10))
    labels = {**LABELS, "diagnosis_rewrite/try_1": ("yyyyyy", "yyyyyy")}
    config = MistConfig(arms=("baseline", "diagnosis_rewrite"), k=5)
    ds = BENCHMARK.load(root)
    (item,) = BENCHMARK.score_items(ds, BENCHMARK.find_outputs(ds, rollouts), config, tmp_path)
    judge = ScriptedJudge(_script(case, labels))
    score = MistScorer(config, judge=judge).score_case(item.request)["score"]
    assert len(judge.asked) == 2 + 2 * 12
    m = score["arms"]["diagnosis_rewrite"]
    assert m[0]["reveal_readings"] == score["arms"]["baseline"][0]["reveal_readings"]
    row = {"case_id": case, "family": rows[0]["family"], "status": "scored", **score}
    s = aggregate_rows([row], config)["arm"]["diagnosis_rewrite"]
    # first = the first rewrite (try 1); running best over its candidates, original first
    assert s["first"]["labels"]["correct"] == 1
    assert s["running_best"]["reveal"][:2] == [0.5, 1.0] and len(s["running_best"]["reveal"]) == 5


def test_vidmem_score_names_a_missing_clip(cards, tmp_path, capsys):
    from vidmem.cli import main

    root, rows = cards
    case = rows[0]["case_id"]
    rollouts = tmp_path / "rollouts"
    _layout(rollouts, case)
    (rollouts / case / "open_and_hold" / "try_1.mp4").unlink()
    with pytest.raises(SystemExit) as exc:
        main(["score", "mist", "--root", str(root), "--rollouts", str(rollouts), "--out",
              str(tmp_path / "run"), "--arms", "baseline,open_and_hold", "--k", "2",
              "--allow-missing", "--judge-cache", "off"])
    assert exc.value.code != 0
    err = capsys.readouterr().err
    assert f"case {case}, arm open_and_hold: try_1.mp4 missing" in err
