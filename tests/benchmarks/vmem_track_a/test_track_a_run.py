"""Track-A end to end on the sim film: causal replay, one judgement per distinct
reference, the budget sweep, checked against the sim world's truth; and the answer cache."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from vidmem.benchmarks.vmem_track_a import BENCHMARK
from vidmem.benchmarks.vmem_track_a.config import ScorerConfig
from vidmem.benchmarks.vmem_track_a.sim_build import build_track_a
from vidmem.runners.benchmark_run import open_run, run_benchmark, score
from vidmem.runners.store import RunDir

POLICIES = ("seg_uniform", "seg_dino_key", "recency", "random")


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    base = tmp_path_factory.mktemp("track_a_sim")
    build_track_a(base, seed=0, n=1)
    return base


def _config(sim: Path) -> ScorerConfig:
    base = ScorerConfig.from_preset("offline", lang="en", policies=POLICIES)
    return ScorerConfig.from_dict({**base.to_dict(), "backend_options": {
        "judge/sim-cards": {"weights": str(sim / "_cards")}}})


class Scored:
    """What a scoring call left: the summary and the run directory."""

    def __init__(self, summary: dict, run: RunDir) -> None:
        self.summary, self.run = summary, run
        self.failed = summary["errors"]
        self.n_items = summary["n_films"]


def _score(sim: Path, out: Path, cache: Path | None) -> Scored:
    ds = BENCHMARK.load(sim / "SimFilms")
    config = _config(sim)
    run = open_run(BENCHMARK, ds, out, config, {}, resume=False, overwrite=False, argv=[])
    return Scored(score(BENCHMARK, ds, run, sim / "videos", config, quiet=True,
                        judge_cache=cache), run)


@pytest.fixture(scope="module")
def run(sim, tmp_path_factory):
    out = tmp_path_factory.mktemp("track_a_run") / "run"
    cache = out.parent / "answers.sqlite"
    return _score(sim, out, cache), cache


def _truth(sim: Path) -> dict:
    return json.loads(next((sim / "_truth").glob("*.json")).read_text())


def _visible_at(truth: dict, t: float) -> set[str]:
    rows = truth["samples"]["2"]
    best = min(rows, key=lambda r: abs(r["t"] - t))
    return set(best["visible"])


def test_the_run_finishes_with_every_film_scored(run):
    result, _ = run
    assert not result.failed and result.n_items == 1
    s = result.summary
    assert set(s["overall"]) == set(POLICIES)
    assert s["table"]["SimFilms"]["seg_uniform"]["n_films"] == 1


def test_text_aware_policies_beat_random_in_recall_at_small_budgets(run):
    curves = run[0].summary["f1_vs_budget"]
    for k in ("1", "2", "4"):
        assert curves["seg_uniform"][k]["recall"] > curves["random"][k]["recall"] + 0.1, k
        assert curves["seg_dino_key"][k]["recall"] > curves["random"][k]["recall"] + 0.1, k


def test_the_guard_dropped_nothing_and_references_are_in_the_past(run, sim):
    result, _ = run
    assert all(sum(d.values()) == 0 for d in result.summary["dropped"].values())
    stored = next(s for s in RunDir.open(result.run.path).items().iter_items(kind="score"))
    gold = json.loads(next((sim / "SimFilms").glob("*/gold/chunk_index.json")).read_text())
    starts = {c["chunk_id"]: c["seconds_span"][0] for c in gold["chunks"]}
    for policy, segments in stored.response["details"].items():
        for seg in segments:
            assert all(ref["t"] < starts[seg["chunk_id"]] for ref in seg["refs"]), policy


def test_judged_labels_agree_with_the_sim_truth(run, sim):
    truth = _truth(sim)
    stored = next(s for s in RunDir.open(run[0].run.path).items().iter_items(kind="score"))
    annotations = json.loads(next((sim / "SimFilms").glob("*/gold/chunk_annotations.json")).read_text())
    present = {c["chunk_id"]: set(c["present"]) for c in annotations["chunks"]}
    agree = total = 0
    for segments in stored.response["details"].values():
        for seg in segments:
            for ref in seg["refs"]:
                if ref["shows"] is None:
                    continue
                expected = _visible_at(truth, ref["t"]) & present[seg["chunk_id"]]
                agree += set(ref["shows"]) == expected
                total += 1
    assert total > 500 and agree / total > 0.85


def test_each_distinct_reference_is_judged_once_for_every_policy_and_budget(run):
    q = run[0].summary["judge_questions"]
    assert q["asked"] <= q["references"]
    assert q["naive_reference_judgements"] >= 5 * q["asked"]
    assert q["fewer_than_naive"] == pytest.approx(q["naive_reference_judgements"] / q["asked"], abs=0.01)


def test_the_budget_sweep_is_monotone_in_references_per_segment(run):
    stored = next(s for s in RunDir.open(run[0].run.path).items().iter_items(kind="score"))
    for policy, entry in stored.score["policies"].items():
        refs = [entry["by_budget"][str(k)]["refs_per_segment"] for k in range(1, 17)]
        assert refs == sorted(refs) and refs[0] == 1.0, policy


def test_a_rescore_into_a_new_run_asks_the_judge_nothing(run, sim, tmp_path):
    _, cache = run
    result = _score(sim, tmp_path / "again", cache)
    answers = result.summary["judge_answers"]
    assert answers["asked"] == 0 and answers["from_cache"] == run[0].summary["judge_questions"]["asked"]
    assert result.summary["overall"] == run[0].summary["overall"]


def test_thumbnails_are_stored_for_every_reference(run):
    stored = next(s for s in RunDir.open(run[0].run.path).items().iter_items(kind="score"))
    refs = [r for segs in stored.response["details"].values() for s in segs for r in s["refs"]]
    assert refs and all((run[0].run.path / "thumbnails" / r["thumbnail"]).is_file() for r in refs)


def test_a_missing_film_video_is_refused_naming_the_film(sim, tmp_path):
    from vidmem.errors import UserInputError

    empty = tmp_path / "videos"
    empty.mkdir()
    with pytest.raises(UserInputError, match="sim_film_001_s0"):
        run_benchmark(BENCHMARK, BENCHMARK.load(sim / "SimFilms"), videos=empty, out=tmp_path / "r",
                      gen=None, config=_config(sim), allow_missing=False, workers=1, resume=False,
                      overwrite=False, quiet=True, argv=[])


def test_offline_presets_refuse_the_text_to_frame_policies():
    from vidmem.errors import UserInputError

    with pytest.raises(UserInputError, match="text-image embedder"):
        ScorerConfig.from_preset("offline", policies=("text_frame", "random"))
    assert np.all([p not in ScorerConfig.from_preset("offline").policies for p in ("text_frame", "seg_frame")])
