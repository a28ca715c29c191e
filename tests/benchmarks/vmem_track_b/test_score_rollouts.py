"""Track-B scoring of brought rollouts, end to end on sim stories: perfect memory beats no
memory, the bootstrap vector, stored verdicts recompute the summary, the layout rules, and
the card judge's verdicts against the sim truth."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vidmem.benchmarks.vmem_track_b import BENCHMARK
from vidmem.benchmarks.vmem_track_b.config import ScorerConfig
from vidmem.benchmarks.vmem_track_b.scorer import aggregate_rows, verdicts_from_json
from vidmem.cli import main
from vidmem.errors import UserInputError
from vidmem.runners.benchmark_run import open_run, score

pytestmark = pytest.mark.slow  # 56 sim clips rendered and judged once per session (~45 s)

CONDITIONS = {"none": "none", "seg_uniform": "perfect"}  # the perfect one plays the policy


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    captured = capsys.readouterr()
    code = exc.value.code if isinstance(exc.value.code, int) else (0 if exc.value.code is None else 1)
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def sim(track_b_world, tmp_path_factory):
    """Two sim stories brought with no and perfect memory (conftest), copied here with a
    snapshot of the session's judge answers taken after the session scored them (so a
    rescore here asks nothing new)."""
    track_b_world.scored(CONDITIONS, n_stories=2)
    base = tmp_path_factory.mktemp("track_b_sim")
    track_b_world.copy(track_b_world.brought(CONDITIONS, n_stories=2), base / "rollouts")
    track_b_world.cache_copy(base / "answers.sqlite")
    gold = track_b_world.gold(2)
    ids = sorted(p.stem for p in (gold / "gt").glob("*.json"))
    assert ids == ["0001_sim_s0", "0002_sim_s0"]
    return base, gold, track_b_world.deck, ids


def _config(deck: Path, **kw) -> ScorerConfig:
    base = ScorerConfig.from_preset("offline", conditions=tuple(CONDITIONS), **kw)
    return ScorerConfig.from_dict({**base.to_dict(), "backend_options": {
        "judge/sim-cards": {"weights": str(deck)}}})


def _score(gold: Path, rollouts: Path, out: Path, config: ScorerConfig, cache: Path,
           allow_missing: bool = False) -> dict:
    ds = BENCHMARK.load(gold)
    run = open_run(BENCHMARK, ds, out, config, {}, resume=False, overwrite=False, argv=[])
    return score(BENCHMARK, ds, run, rollouts, config, quiet=True, judge_cache=cache,
                 allow_missing=allow_missing)


@pytest.fixture(scope="module")
def scored(sim, track_b_world):
    """`vidmem score` of the two stories with the card judge (the session's run, copied)."""
    base = sim[0]
    out = track_b_world.copy(track_b_world.scored(CONDITIONS, n_stories=2).run, base / "run")
    return json.loads((out / "summary.json").read_text("utf-8")), out


def test_perfect_memory_beats_no_memory_with_the_bootstrap_vector(scored):
    summary, out = scored
    assert summary["n_stories_scored"] == 2 and summary["n_segments"] == 28
    pooled = summary["pooled"]
    assert pooled["seg_uniform"]["recall"]["value"] > pooled["none"]["recall"]["value"]
    d = summary["deltas"]["seg_uniform"]
    assert set(d["rates"]) == {"recall", "precision", "avoid_ok"}
    rec = d["rates"]["recall"]
    assert rec["difference"] > 0 and rec["ci_low"] <= rec["difference"] <= rec["ci_high"]
    assert d["n_resamples"] == 2000 and d["seed"] == 20260925 and d["n_stories"] == 2
    assert summary["deltas_parsed_in_both"]["seg_uniform"]["rates"]["recall"]["difference"] > 0
    assert set(summary["family_deltas"]["seg_uniform"]["rates"]) >= {"long_gap_return", "count"}
    assert "none" not in summary["deltas"]
    assert summary["judge"]["none"]["segments"] == 28
    assert (out / "report" / "report.html").is_file()
    assert "Table-3" in (out / "report" / "report.md").read_text("utf-8")
    proto = json.loads((out / "run.json").read_text("utf-8"))["protocol"]
    assert {"rules", "judge_question", "metrics", "bootstrap"} <= set(proto)


def test_stored_verdicts_recompute_the_summary(scored, sim):
    summary, out = scored
    rows = [json.loads(line) for line in (out / "scores.jsonl").read_text("utf-8").splitlines()]
    again = aggregate_rows(rows, ScorerConfig.from_dict(summary["scorer"]))
    for key, value in again.items():
        assert summary[key] == value, key
    # a story's stored counts are its verdicts' counts
    segs = verdicts_from_json(rows[0]["story_id"], rows[0]["conditions"]["none"]["verdicts"])
    assert len(segs) == 14 and all(s.parsed for s in segs)


def test_a_missing_clip_is_an_error_by_name(sim, tmp_path):
    base, gold, deck, ids = sim
    rollouts = tmp_path / "rollouts"
    shutil.copytree(base / "rollouts", rollouts)
    (rollouts / ids[1] / "seg_uniform" / "seg_005.mp4").unlink()
    with pytest.raises(UserInputError, match=rf"{ids[1]}, condition seg_uniform: clip of "
                       r"segment seg_005 missing"):
        _score(gold, rollouts, tmp_path / "run", _config(deck), base / "answers.sqlite")
    shutil.rmtree(rollouts / ids[1] / "none")
    with pytest.raises(UserInputError, match=rf"{ids[1]}, condition none: folder"):
        _score(gold, rollouts, tmp_path / "run2", _config(deck), base / "answers.sqlite")


def test_a_zero_indexed_folder_needs_index_base_0_and_scores_the_same(scored, sim, tmp_path):
    summary, _ = scored
    base, gold, deck, ids = sim
    rollouts = tmp_path / "rollouts"
    for sid in ids:
        for cond in CONDITIONS:
            src, dst = base / "rollouts" / sid / cond, rollouts / sid / cond
            dst.mkdir(parents=True)
            for k in range(1, 15):
                shutil.copy(src / f"seg_{k:03d}.mp4", dst / f"{k - 1}.mp4")
    with pytest.raises(UserInputError, match=r"(?s)clip 0\.mp4 is number 0.*--index-base 0"):
        _score(gold, rollouts, tmp_path / "run1", _config(deck), base / "answers.sqlite")
    again = _score(gold, rollouts, tmp_path / "run0", _config(deck, index_base=0),
                   base / "answers.sqlite")
    assert again["pooled"] == summary["pooled"] and again["deltas"] == summary["deltas"]
    assert again["judge_answers"]["asked"] == 0  # every question came from the cache


def test_card_verdicts_agree_with_the_sim_truth(scored, sim):
    _, out = scored
    _, gold, _, _ = sim
    rows = [json.loads(line) for line in (out / "scores.jsonl").read_text("utf-8").splitlines()]
    agree = total = 0
    for r in rows:
        truth = json.loads((gold / "_truth" / f"{r['story_id']}.json").read_text("utf-8"))
        shown = {t["segment_id"]: {p["eid"] for p in t["present"]} for t in truth["segments"]}
        for seg in verdicts_from_json(r["story_id"], r["conditions"]["seg_uniform"]["verdicts"]):
            on_screen = shown[f"seg_{seg.segment_id:03d}"]
            for e in seg.entries:
                total += 1
                agree += e.is_present == (e.eid in on_screen)
    rate = agree / total
    print(f"sim-cards vs truth, perfect rollout: {agree}/{total} = {rate:.3f}")
    assert total > 100 and rate >= 0.9


def test_validate_stats_and_refused_requests(sim, capsys, tmp_path):
    _, gold, _, _ = sim
    code, out, _ = run_cli(capsys, "validate", "vmem_track_b", "--gold", str(gold))
    assert code == 0 and "2 stories" in out
    code, out, _ = run_cli(capsys, "stats", "vmem_track_b", "--gold", str(gold), "--stories",
                           "0001", "--json")
    assert code == 0 and json.loads(out)
    code, _, err = run_cli(capsys, "requests", "vmem_track_b", "--gold", str(gold), "--out",
                           str(tmp_path / "m.jsonl"))
    assert code != 0 and "generates nothing" in err


def test_stories_selects_the_cohort_and_needs_no_other_folder(sim, tmp_path):
    base, gold, deck, ids = sim
    rollouts = tmp_path / "rollouts"
    shutil.copytree(base / "rollouts" / ids[0], rollouts / ids[0])  # no folder for ids[1]
    summary = _score(gold, rollouts, tmp_path / "run", _config(deck, stories="0001"),
                     base / "answers.sqlite")
    assert summary["stories"] == [ids[0]] and summary["n_segments"] == 14
    assert not summary["missing"]
    rows = (tmp_path / "run" / "scores.jsonl").read_text("utf-8").splitlines()
    assert [json.loads(r)["story_id"] for r in rows] == [ids[0]]
    with pytest.raises(UserInputError, match="no such story"):
        _score(gold, rollouts, tmp_path / "run2", _config(deck, stories="0042"),
               base / "answers.sqlite")


def test_allow_missing_scores_a_missing_clip_as_all_absent(scored, sim, tmp_path):
    full, out = scored
    base, gold, deck, ids = sim
    rollouts = tmp_path / "rollouts"
    shutil.copytree(base / "rollouts", rollouts)
    (rollouts / ids[1] / "seg_uniform" / "seg_005.mp4").unlink()
    summary = _score(gold, rollouts, tmp_path / "run", _config(deck), base / "answers.sqlite",
                     allow_missing=True)
    assert summary["judge"]["seg_uniform"]["missing_clips"] == 1
    assert "missing_clips" not in summary["judge"]["none"]
    assert summary["judge_answers"]["asked"] == 0  # nothing new was asked
    rows = {json.loads(line)["story_id"]: json.loads(line)
            for line in (out / "scores.jsonl").read_text("utf-8").splitlines()}
    (seg5,) = [s for s in verdicts_from_json(ids[1], rows[ids[1]]["conditions"]["seg_uniform"]
                                             ["verdicts"]) if s.segment_id == 5]
    hits = sum(e.role == "required" and e.kind in ("character", "prop") and e.is_present
               for e in seg5.entries)
    assert hits > 0  # the full run saw something there, so the drop is visible
    r_full, r_miss = full["pooled"]["seg_uniform"]["recall"], summary["pooled"]["seg_uniform"]["recall"]
    assert r_miss["denominator"] == r_full["denominator"]
    assert r_miss["numerator"] == r_full["numerator"] - hits
    assert summary["pooled"]["none"] == full["pooled"]["none"]
    # a whole condition folder missing: every clip all-absent
    shutil.rmtree(rollouts / ids[1] / "none")
    summary = _score(gold, rollouts, tmp_path / "run2", _config(deck), base / "answers.sqlite",
                     allow_missing=True)
    assert summary["judge"]["none"]["missing_clips"] == 14
