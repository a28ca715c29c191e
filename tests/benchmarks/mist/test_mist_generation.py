"""MIST generation with a recording fake generator: setup and gap are generated once per
case and shared by every arm, the reveal tries start from the gap's last frame with the
arm's prompt and fresh seeds, a rerun regenerates nothing, a deleted or edited clip
exactly itself, and the M3-Agent arms keep the original as candidate 0 and spend K - 1
generator calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mist_fakes import FakeGenerator, ScriptedJudge, ScriptedRewriter

from vidmem.benchmarks.mist import BENCHMARK
from vidmem.benchmarks.mist.config import MistConfig
from vidmem.benchmarks.mist.generation import PROGRESS, run_rollout
from vidmem.benchmarks.mist.sim_build import plan_card
from vidmem.io.hashing import file_sha256

FIXED = ("baseline", "answer_only", "open_and_hold", "same_sentence_resample")


@pytest.fixture
def ds(tmp_path):
    root = tmp_path / "cards"
    root.mkdir()
    rows = [plan_card(0, i) for i in range(2)]
    (root / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return BENCHMARK.load(root)


def _run(ds, out: Path, config: MistConfig, gen, backends=None) -> list[dict]:
    return [run_rollout(r, gen, {"generator_key": "fake"}, backends=backends)
            for r in BENCHMARK.rollouts(ds, out, config=config)]


def _hashes(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): file_sha256(p) for p in sorted(folder.rglob("*.mp4"))}


def test_locked_shots_once_and_reveal_requests(ds, tmp_path):
    out = tmp_path / "rollouts"
    gen = FakeGenerator()
    config = MistConfig(arms=FIXED, k=2)
    summaries = _run(ds, out, config, gen)
    assert [s["generated"] for s in summaries] == [2 + 1 + 3 * 2] * 2
    for card in ds.cards:
        folder = out / card.case_id
        mine = [r for r in gen.requests if r.extras["case_id"] == card.case_id]
        shots = [r.extras["shot"] for r in mine]
        assert shots.count("setup") == 1 and shots.count("gap") == 1
        setup, gap = mine[0], mine[1]
        assert setup.start_image is None and setup.prompt == card.shot_prompt("setup")
        assert gap.start_image == str(folder / "locked" / "setup.last.png")
        reveals = [r for r in mine if r.extras["shot"] == "reveal"]
        assert len(reveals) == 7
        prompts = card.arm_prompts()
        for r in reveals:
            assert set(r.extras) == {"shot", "case_id", "arm", "try"}
            assert r.start_image == str(folder / "locked" / "gap.last.png")
            assert r.duration_seconds == 5.0
            want = prompts["baseline"] if r.extras["arm"] == "same_sentence_resample" else \
                prompts[r.extras["arm"]]
            assert r.prompt == want
            assert r.out_path == str(folder / r.extras["arm"] / f"try_{r.extras['try']}.mp4")
        seeds = [r.seed for r in reveals]
        assert len(set(seeds)) == len(seeds)  # the same sentence, new seeds
        # the generator never sees the card's truth
        text = json.dumps([r.to_dict() for r in mine])
        assert "operations" not in text and "target" not in text
    # the brought-clips scorer reads exactly this layout
    scan = BENCHMARK.find_outputs(ds, out)
    items = BENCHMARK.score_items(ds, scan, config, tmp_path)
    assert [len(i.request["arms"][a]) for a in FIXED for i in items[:1]] == [1, 2, 2, 2]


def test_rerun_resumes_per_clip_and_new_arms_reuse_the_locked_shots(ds, tmp_path):
    out = tmp_path / "rollouts"
    config = MistConfig(arms=("baseline", "open_and_hold"), k=2)
    _run(ds, out, config, FakeGenerator())
    case = ds.cards[0].case_id
    before = _hashes(out / case)
    gen = FakeGenerator()
    assert [s["generated"] for s in _run(ds, out, config, gen)] == [0, 0] and not gen.requests
    # another arm selection and a larger K: the locked shots and earlier tries are kept
    gen = FakeGenerator()
    _run(ds, out, MistConfig(arms=("baseline", "open_and_hold", "answer_only"), k=3), gen)
    made = {(r.extras["arm"], r.extras["try"]) for r in gen.requests
            if r.extras["case_id"] == case}
    assert made == {("open_and_hold", 2), ("answer_only", 0), ("answer_only", 1),
                    ("answer_only", 2)}
    after = _hashes(out / case)
    assert {k: after[k] for k in before} == before  # locked bytes identical across arms
    # a deleted clip and an edited clip are generated again, nothing else
    (out / case / "baseline" / "try_0.mp4").unlink()
    edited = out / case / "open_and_hold" / "try_1.mp4"
    edited.write_bytes(edited.read_bytes() + b"\0")
    gen = FakeGenerator()
    _run(ds, out, config, gen)
    assert sorted((r.extras["arm"], r.extras["try"]) for r in gen.requests) == [
        ("baseline", 0), ("open_and_hold", 1)]
    assert _hashes(out / case)["baseline/try_0.mp4"] == before["baseline/try_0.mp4"]
    progress = json.loads((out / case / PROGRESS).read_text("utf-8"))
    assert progress["clips"]["locked/setup.mp4"]["sha256"] == before["locked/setup.mp4"]


def test_a_failed_try_keeps_the_finished_clips(ds, tmp_path):
    out = tmp_path / "rollouts"
    config = MistConfig(arms=("baseline", "open_and_hold"), k=2)
    rollout = BENCHMARK.rollouts(ds, out, config=config)[0]
    with pytest.raises(RuntimeError, match="open_and_hold/try_1: killed"):
        run_rollout(rollout, FakeGenerator(fail_on="open_and_hold/try_1"), {"generator_key": "f"})
    gen = FakeGenerator()
    summary = run_rollout(rollout, gen, {"generator_key": "f"})
    assert summary["generated"] == 1 and gen.requests[0].request_id.endswith("open_and_hold/try_1")


def test_m3_arms_keep_the_original_and_spend_k_minus_one_calls(ds, tmp_path):
    out = tmp_path / "rollouts"
    case = ds.cards[0].case_id

    def gates(item_id: str, payload: dict) -> str:
        # the keep score: try 2 of each M3 arm opens, everything else stays closed
        return "yes" if "/keep/try_2/" in item_id else "no"

    judge, rewriter = ScriptedJudge(gates), ScriptedRewriter()
    config = MistConfig(arms=("baseline", "diagnosis_rewrite", "target_withheld_rewrite"), k=3)
    gen = FakeGenerator()
    summaries = _run(ds, out, config, gen, backends=lambda cfg: (judge, rewriter))
    first = summaries[0]
    assert first["agent"]["diagnosis_rewrite"] == {"candidates": 3, "best": 2}
    m3 = [r for r in gen.requests if r.extras["case_id"] == case and r.extras["arm"] ==
          "diagnosis_rewrite"]
    assert [r.extras["try"] for r in m3] == [1, 2]  # K - 1 calls: the original is try 0
    assert all(r.prompt.endswith(ScriptedRewriter.CLAUSE.strip()) for r in m3)
    folder = out / case / "diagnosis_rewrite"
    assert file_sha256(folder / "try_0.mp4") == file_sha256(out / case / "baseline" / "try_0.mp4")
    run = json.loads((folder / "agent_run.json").read_text("utf-8"))
    assert [s["try_index"] for s in run["steps"]] == [0, 1, 2] and run["best"] == 2
    assert any(r.withhold_target for r in rewriter.requests)
    # resumed as a whole: nothing is generated or asked again
    gen2, n_asked = FakeGenerator(), len(judge.asked)
    _run(ds, out, config, gen2, backends=lambda cfg: (judge, rewriter))
    assert not gen2.requests and len(judge.asked) == n_asked
    # the scorer finds the M3 tries and the agent log
    items = BENCHMARK.score_items(ds, BENCHMARK.find_outputs(ds, out), config, tmp_path)
    assert len(items[0].request["arms"]["diagnosis_rewrite"]) == 3
    assert set(items[0].request["agent_runs"]) == {"diagnosis_rewrite", "target_withheld_rewrite"}
