"""Track-B's closed loop on a 14-segment sim story: the generator never sees gold,
``none`` and ``last_seen`` pass the right references, a killed rollout resumes at its
first unfinished segment, and ``vidmem run`` generates and scores (retrieval beats none)."""

from __future__ import annotations

import json
import time
from dataclasses import fields
from pathlib import Path

import pytest

from vidmem.benchmarks.vmem_track_b import BENCHMARK
from vidmem.benchmarks.vmem_track_b.config import ScorerConfig
from vidmem.benchmarks.vmem_track_b.loop import PROGRESS, last_seen_sources, run_rollout
from vidmem.benchmarks.vmem_track_b.sim_build import build_track_b
from vidmem.cli import main
from vidmem.generators.requests import GenerationRequest
from vidmem.generators.sim import SimGenerator
from vidmem.io.hashing import file_sha256
from vidmem.io.video import probe
from vidmem.sim.cards import write_card_deck

FORMAT_FIELDS = {"duration_seconds", "fps", "width", "height", "seed"}


class Recording:
    """A generator that records every request and may fail at one segment."""

    name = "recording"

    def __init__(self, inner: SimGenerator, fail_at: int | None = None) -> None:
        self.inner, self.fail_at, self.requests = inner, fail_at, []

    def info(self):
        return self.inner.info()

    def generate(self, request: GenerationRequest):
        if self.fail_at is not None and request.request_id.endswith(f"seg_{self.fail_at:03d}"):
            raise RuntimeError("killed")
        self.requests.append(request)
        return self.inner.generate(request)


@pytest.fixture(scope="module")
def gold(tmp_path_factory):
    root = tmp_path_factory.mktemp("track_b_loop") / "gold"
    root.mkdir()
    build_track_b(root, seed=0, n_cases=1, n_segments=14, gap_long_threshold=8)
    return root


def _rollouts(gold: Path, out: Path, conditions: tuple[str, ...]):
    ds = BENCHMARK.load(gold)
    config = ScorerConfig.from_preset("offline", conditions=conditions)
    return ds, {r.request.extras["condition"]: r for r in BENCHMARK.rollouts(ds, out, config=config)}


def _sim(memory: str = "none") -> SimGenerator:
    return SimGenerator(memory=memory, seed=0, fps=4.0)


@pytest.mark.slow  # 3 rollouts of 14 clips (~15 s)
def test_requests_hold_no_gold_and_only_own_earlier_clips(gold, tmp_path):
    ds, rollouts = _rollouts(gold, tmp_path / "rollouts", ("none", "seg_uniform", "last_seen"))
    story = ds.stories[0]
    prompts = {s.segment_id: s.prompt for s in story.segments}
    for cond, rollout in rollouts.items():
        gen = Recording(_sim())
        summary = run_rollout(rollout, gen, {"generator_key": "sim"})
        assert summary["generated"] == 14 and summary["resumed_from"] == 1
        folder = tmp_path / "rollouts" / story.story_id / cond
        assert len(gen.requests) == 14
        for n, req in enumerate(gen.requests, start=1):
            assert req.request_id == f"{story.story_id}/seg_{n:03d}"
            assert req.prompt == prompts[n]
            assert req.out_path == str(folder / f"seg_{n:03d}.mp4")
            assert req.context_video is None and req.start_image is None and not req.extras
            set_fields = {f.name for f in fields(req)
                          if getattr(req, f.name) != f.default and f.name not in
                          ("request_id", "benchmark", "prompt", "out_path", "references",
                                             "extras")}
            assert set_fields <= FORMAT_FIELDS
            assert len(req.references) <= 3
            for ref in req.references:
                m = int(ref.source.removeprefix("seg_"))
                assert m < n  # an earlier clip, which ended before this segment started
                assert Path(ref.path).parent == folder and Path(ref.path).suffix == ".png"
                clip = folder / f"{ref.source}.mp4"
                assert 0 <= ref.source_time_seconds < probe(clip).duration_seconds
        if cond == "none":
            assert all(not r.references for r in gen.requests)
        if cond == "seg_uniform":
            assert sum(bool(r.references) for r in gen.requests) == 13  # all but the first
        progress = json.loads((folder / PROGRESS).read_text("utf-8"))
        for n in range(1, 15):
            entry = progress["segments"][f"seg_{n:03d}"]
            assert entry["sha256"] == file_sha256(folder / f"seg_{n:03d}.mp4")


def test_last_seen_by_hand(gold, tmp_path):
    ds, rollouts = _rollouts(gold, tmp_path / "rollouts", ("last_seen",))
    story = ds.stories[0]
    segs = story.segments
    gen = Recording(_sim())
    run_rollout(rollouts["last_seen"], gen, {"generator_key": "sim"})
    folder = tmp_path / "rollouts" / story.story_id / "last_seen"
    n_with = 0
    for n, req in enumerate(gen.requests, start=1):
        # by hand: required characters/props of n seen before, longest gap first, <= 3
        seen = []
        for pos, c in enumerate(segs[n - 1].cast):
            if story.entities[c.eid].kind not in ("character", "prop") or c.op == "introduce":
                continue
            last = max((m for m in range(1, n) if any(x.eid == c.eid for x in segs[m - 1].cast)),
                       default=None)
            if last is not None:
                seen.append((c.gap if c.gap is not None else n - last - 1, pos, last))
        seen.sort(key=lambda x: (-x[0], x[1]))
        expected = list(dict.fromkeys(last for _, _, last in seen[:3]))
        assert [m for m, _ in last_seen_sources(story, n)] == expected
        assert [r.source for r in req.references] == [f"seg_{m:03d}" for m in expected]
        for r in req.references:
            info = probe(folder / f"{r.source}.mp4")
            assert r.source_time_seconds == pytest.approx((info.n_frames // 2) / info.fps)
        n_with += bool(expected)
    assert n_with >= 5  # the story has returns


@pytest.mark.slow  # 2 rollouts of 14 clips and retrieval (~14 s)
def test_killed_rollout_resumes_at_first_unfinished_segment(gold, tmp_path):
    _, rollouts = _rollouts(gold, tmp_path / "rollouts", ("seg_uniform",))
    rollout = rollouts["seg_uniform"]
    killed = Recording(_sim(), fail_at=6)
    with pytest.raises(RuntimeError, match="killed"):
        run_rollout(rollout, killed, {"generator_key": "sim"})
    folder = Path(rollout.request.out_path).parent
    assert len(killed.requests) == 5
    before = {p.name: p.stat().st_mtime_ns for p in folder.glob("seg_00[1-5].mp4")}
    assert len(before) == 5
    resumed = Recording(_sim())
    summary = run_rollout(rollout, resumed, {"generator_key": "sim"})
    assert summary["resumed_from"] == 6 and summary["generated"] == 9
    assert [r.request_id[-7:] for r in resumed.requests] == [f"seg_{n:03d}" for n in range(6, 15)]
    assert {p.name: p.stat().st_mtime_ns for p in folder.glob("seg_00[1-5].mp4")} == before

    # the same references as an uninterrupted rollout
    _, fresh = _rollouts(gold, tmp_path / "fresh", ("seg_uniform",))
    whole = Recording(_sim())
    run_rollout(fresh["seg_uniform"], whole, {"generator_key": "sim"})
    assert [[(r.source, r.source_time_seconds) for r in q.references] for q in whole.requests[5:]] \
        == [[(r.source, r.source_time_seconds) for r in q.references] for q in resumed.requests]

    # a progress entry lost (the last segment): only that segment is generated again
    progress = json.loads((folder / PROGRESS).read_text("utf-8"))
    del progress["segments"]["seg_014"]
    (folder / PROGRESS).write_text(json.dumps(progress), encoding="utf-8")
    again = Recording(_sim())
    summary = run_rollout(rollout, again, {"generator_key": "sim"})
    assert [r.request_id[-7:] for r in again.requests] == ["seg_014"]
    assert summary["resumed_from"] == 14
    # finished: nothing is generated
    idle = Recording(_sim())
    assert run_rollout(rollout, idle, {"generator_key": "sim"})["generated"] == 0
    assert idle.requests == []


def _run_cli(capsys, *args: str) -> int:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    capsys.readouterr()
    return exc.value.code if isinstance(exc.value.code, int) else (0 if exc.value.code is None else 1)


@pytest.mark.slow
def test_vidmem_run_generates_and_scores(gold, tmp_path, capsys):
    deck = write_card_deck(tmp_path / "deck")
    out = tmp_path / "run"
    args = ["run", "vmem_track_b", "--gold", str(gold), "--generator", "sim",
            "--generator-opt", "memory=none", "--generator-opt", "fps=4",
            "--conditions", "none,seg_uniform,last_seen",
            "--backend-opt", f"judge/sim-cards:weights={deck}", "--judge-cache", "off",
            "--bootstrap-resamples", "200", "--out", str(out), "--quiet"]
    t0 = time.perf_counter()
    assert _run_cli(capsys, *args) == 0
    elapsed = time.perf_counter() - t0
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    sid = BENCHMARK.load(gold).stories[0].story_id
    for cond in ("none", "seg_uniform", "last_seen"):
        assert len(list((out / "rollouts" / sid / cond).glob("seg_*.mp4"))) == 14
    recall = {c: summary["pooled"][c]["recall"]["value"] for c in summary["conditions"]}
    assert recall["seg_uniform"] > recall["none"], recall
    assert recall["last_seen"] > recall["none"], recall
    run_json = json.loads((out / "run.json").read_text("utf-8"))
    assert run_json["protocol"]["closed_loop"]["privileged"] == ["last_seen"]
    # resumed: nothing is generated again
    mtimes = {p: p.stat().st_mtime_ns for p in (out / "rollouts").rglob("seg_*.mp4")}
    assert _run_cli(capsys, *args, "--resume") == 0
    assert {p: p.stat().st_mtime_ns for p in (out / "rollouts").rglob("seg_*.mp4")} == mtimes
    print(f"end to end: {elapsed:.1f} s")
