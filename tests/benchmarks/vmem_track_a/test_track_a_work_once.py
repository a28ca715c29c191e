"""Track-A decodes and embeds each frame once: the judge stage takes the reference
frames' images and similarity embeddings from what the replay decoded, and reads the
video only for frames no replay decoded -- with the same scores either way."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from vidmem.benchmarks.vmem_track_a import BENCHMARK
from vidmem.benchmarks.vmem_track_a import scorer as track_a_scorer
from vidmem.benchmarks.vmem_track_a.config import ScorerConfig
from vidmem.benchmarks.vmem_track_a.sim_build import build_track_a
from vidmem.models.backends.classic_embed import HsvLbpEmbedder
from vidmem.runners.benchmark_run import open_run, score

BUDGET = 4


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    base = tmp_path_factory.mktemp("track_a_once")
    build_track_a(base, seed=0, n=1)
    return base


class Work:
    """What one scoring did: frames read by the judge stage, images embedded by the
    classic encoder (keyframes and similarity), and the film's frame sources."""

    def __init__(self) -> None:
        self.judge_reads: list[int] = []
        self.embedded: Counter[str] = Counter()
        self.sources: list[track_a_scorer.FilmFrames] = []


@pytest.fixture()
def work(monkeypatch) -> Work:
    seen = Work()
    read, embed = track_a_scorer.read_frames_at, HsvLbpEmbedder.embed_images
    make = track_a_scorer.FilmFrames

    def counted_read(path, times, **kw):
        seen.judge_reads.append(len(times))
        return read(path, times, **kw)

    def counted_embed(self, images, *a, **kw):
        seen.embedded[self.name] += len(images)
        return embed(self, images, *a, **kw)

    def recorded_source(*a, **kw):
        seen.sources.append(make(*a, **kw))
        return seen.sources[-1]

    monkeypatch.setattr(track_a_scorer, "read_frames_at", counted_read)
    monkeypatch.setattr(HsvLbpEmbedder, "embed_images", counted_embed)
    monkeypatch.setattr(track_a_scorer, "FilmFrames", recorded_source)
    return seen


def _run(sim: Path, out: Path, policies: tuple[str, ...]) -> list[dict]:
    base = ScorerConfig.from_preset("offline", lang="en", policies=policies, budget=BUDGET)
    config = ScorerConfig.from_dict({**base.to_dict(), "backend_options": {
        "judge/sim-cards": {"weights": str(sim / "_cards")}}})
    ds = BENCHMARK.load(sim / "SimFilms")
    run = open_run(BENCHMARK, ds, out, config, {}, resume=False, overwrite=False, argv=[])
    # one answer cache for the module: the runs ask the same questions
    score(BENCHMARK, ds, run, sim / "videos", config, quiet=True,
          judge_cache=sim / "answers.sqlite")
    rows = [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]
    assert rows and all(r["status"] == "scored" for r in rows)
    return rows


def test_the_judge_stage_reads_and_embeds_nothing_the_replay_did(sim, tmp_path, work):
    _run(sim, tmp_path / "run", ("seg_uniform", "seg_dino_key", "recency", "random"))
    (source,) = work.sources
    assert source.segment_decodes > 0
    # every reference was decoded by the replay (seg_dino_key looks at every segment)
    # and kept: the old judge stage read them all again
    assert work.judge_reads == []
    # each decoded frame embedded once (keyframes at 2 fps and the similarity encoder
    # at both rates share one encoder and one cache); the old judge stage embedded the
    # references a second time outside the cache
    assert work.embedded["classic/hsv-lbp"] == source.decoded_frames


def test_frames_read_by_the_judge_stage_score_as_the_kept_ones(sim, tmp_path, monkeypatch, work):
    kept = _run(sim, tmp_path / "kept", ("seg_dino_key", "recency", "random"))
    # recency and random never ask for pixels: the replay decodes nothing, and the
    # judge stage reads and embeds their references itself
    read = _run(sim, tmp_path / "read", ("recency", "random"))
    assert work.sources[1].segment_decodes == 0 and sum(work.judge_reads) > 0
    for policy in ("recency", "random"):
        assert read[0]["policies"][policy] == kept[0]["policies"][policy]
    # nothing kept at all (a film past KEEP_BYTES): the same rows, byte for byte
    monkeypatch.setattr(track_a_scorer, "KEEP_BYTES", 0)
    unkept = _run(sim, tmp_path / "unkept", ("seg_dino_key", "recency", "random"))
    assert work.sources[2].kept_bytes == 0
    assert (tmp_path / "unkept" / "scores.jsonl").read_bytes() == \
        (tmp_path / "kept" / "scores.jsonl").read_bytes()
    assert unkept == kept
