"""A killed MIST rollout's temp files (a half-encoded clip, a half-written PNG or copy,
a progress.json temp) are removed when the case is resumed; files that are not vidmem's
temp names stay (issue 23 item 9)."""

from __future__ import annotations

import json

from mist_fakes import FakeGenerator

from vidmem.benchmarks.mist import BENCHMARK
from vidmem.benchmarks.mist.config import MistConfig
from vidmem.benchmarks.mist.generation import run_rollout
from vidmem.benchmarks.mist.sim_build import plan_card


def test_a_resumed_case_removes_what_a_killed_writer_left(tmp_path):
    root = tmp_path / "cards"
    root.mkdir()
    (root / "cases.jsonl").write_text(json.dumps(plan_card(0, 0)) + "\n", "utf-8")
    ds = BENCHMARK.load(root)
    config = MistConfig(arms=("baseline",), k=1)
    out = tmp_path / "rollouts"
    (rollout,) = BENCHMARK.rollouts(ds, out, config=config)
    run_rollout(rollout, FakeGenerator(), {"generator_key": "fake"})
    case = out / ds.cards[0].case_id
    left = [case / "baseline" / ".try_0.partial-4242-139.mp4",      # write_video's temp
            case / "locked" / ".gap.last.png.partial.png",           # write_last_frame's
            case / "locked" / ".setup.mp4.partial",                  # copy_clip's
            case / ".progress.json.k3j_x9.tmp"]                      # write_json's
    for path in left:
        path.write_bytes(b"half")
    mine = [case / "baseline" / "notes.txt", case / "locked" / "keep.partial"]
    for path in mine:
        path.write_text("the user's")
    gen = FakeGenerator()
    summary = run_rollout(rollout, gen, {"generator_key": "fake"})
    assert summary["generated"] == 0 and not gen.requests  # the finished clips are kept
    assert [p for p in left if p.exists()] == []
    assert all(p.read_text() == "the user's" for p in mine)
