"""The Track-B report and `vidmem compare` on a small sim run (one 14-segment story, none,
last_seen and seg_uniform: a copy of the session's shared run): the report builds and
renders, its gap bins count what the gold says, the drill-down shows the references the
loop handed over (and says when they are unknown), and compare reproduces the summary,
gives 0 on identical arms and refuses other gold."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vidmem.benchmarks.vmem_track_b.loop import read_progress
from vidmem.benchmarks.vmem_track_b.report import build_track_b_report
from vidmem.benchmarks.vmem_track_b.stats import corpus_stats
from vidmem.benchmarks.vmem_track_b.stories import load_stories
from vidmem.cli import main
from vidmem.report import Figure, ImageGrid, KeyValues, render
from vidmem.runners.store import RunDir

pytestmark = pytest.mark.slow  # the shared run: 42 sim clips generated and judged (~40 s, once)


def cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    got = capsys.readouterr()
    code = exc.value.code if isinstance(exc.value.code, int) else (0 if exc.value.code is None else 1)
    return code, got.out, got.err


@pytest.fixture(scope="module")
def sim_run(track_b_world, track_b_none_run, tmp_path_factory):
    """A copy of the session's memory-none run (conftest; none, last_seen and seg_uniform):
    these tests render reports into it and score its clips again."""
    base = track_b_world.workspace(tmp_path_factory.mktemp("track_b_report"),
                                   run=track_b_none_run)
    judge = ["--backend-opt", f"judge/sim-cards:weights={track_b_none_run.deck}",
             "--judge-cache", str(base / "answers.sqlite"), "--bootstrap-resamples", "200",
             "--quiet"]
    return base, track_b_none_run.gold, judge


def _sections(rep):
    return {s.heading: s for s in rep.sections}


def test_report_builds_renders_and_counts_the_gold(sim_run, tmp_path):
    base, gold, _ = sim_run
    run = RunDir.open(base / "run")
    assert (run.report_dir / "report.html").is_file()  # vidmem run rendered it
    rep = build_track_b_report(run, drill_down="all")
    secs = _sections(rep)
    for head in ("Pooled rates", "Differences from no memory (forest plot)",
                 "Stress families (Table-3 layout)", "Recall by absence gap",
                 "Drill-down: none", "Drill-down: last_seen"):
        assert head in secs, list(secs)
    assert any(isinstance(b, Figure) for b in secs["Recall by absence gap"].blocks)
    html = render(rep, tmp_path / "report")["html"].read_text("utf-8")
    assert "dAvoid-OK" in html and "just seen" in html and "privileged" in html

    # the bins' support is the gold's: required character/prop cast entries by gap
    (story,) = load_stories(gold)
    support = {"1-4": 0, "5-29": 0, ">=30": 0, "just_seen": 0}
    for seg in story.segments:
        for c in seg.cast:
            if c.gap is None or story.entities[c.eid].kind == "location":
                continue
            key = ("just_seen" if c.gap == 0 else "1-4" if c.gap <= 4 else "5-29"
                   if c.gap <= 29 else ">=30")
            support[key] += 1
    summary = json.loads((base / "run" / "summary.json").read_text("utf-8"))
    for cond in ("none", "last_seen"):
        r = summary["gap_bins"]["rates"][cond]
        got = {b: r["bins"][b]["denominator"] for b in ("1-4", "5-29", ">=30")}
        assert {**got, "just_seen": r["just_seen"]["denominator"]} == support
    assert support["1-4"] > 0 and support["just_seen"] > 0
    # `vidmem stats` bins the same population under the same labels (issue 24 item 6)
    stats = corpus_stats(gold)["gap_histogram_by_kind"]
    assert {b: stats["character"][b] + stats["prop"][b] for b in support} == support
    # the privileged oracle recalls every gapped return the sim draws from a reference
    assert summary["gap_bins"]["deltas"]["last_seen"]["rates"]["1-4"]["difference"] > 0
    assert "gap_bins" in json.loads((base / "run" / "run.json").read_text("utf-8"))["protocol"]


def test_drill_down_shows_the_references_handed_over(sim_run):
    base, _, _ = sim_run
    run = RunDir.open(base / "run")
    rep = build_track_b_report(run, drill_down="all")
    sec = _sections(rep)["Drill-down: last_seen"]
    facts = [b for b in sec.blocks if isinstance(b, KeyValues)]
    grids = [b for b in sec.blocks if isinstance(b, ImageGrid)]
    assert len(facts) == len(grids) == 14  # "all": every segment
    sid = facts[0].items["story"]
    folder = base / "run" / "rollouts" / sid / "last_seen"
    progress = read_progress(folder)["segments"]
    with_refs = 0
    for kv, grid in zip(facts, grids, strict=True):
        refs = progress[kv.items["segment"]]["references"]
        assert len(grid.images) == len(refs) + 1  # the references, then the middle frame
        assert [c for _, c in grid.images[:-1]] == [
            f"ref {i}: {r['source']} at {r['source_time_seconds']:.2f} s"
            for i, r in enumerate(refs, start=1)]
        assert grid.images[-1][1].startswith(f"clip {kv.items['segment']}: middle frame")
        with_refs += bool(refs)
        assert "brought rollouts" not in kv.items["references"]
    assert with_refs >= 5
    # the default: at most 3 faulty segments per condition; none misses returns, so 3
    rep = build_track_b_report(run, drill_down=3)
    facts = [b for b in _sections(rep)["Drill-down: none"].blocks if isinstance(b, KeyValues)]
    assert len(facts) == 3 and all("missed" in kv.items["picked because"] for kv in facts)
    assert all(kv.items["references"] == "no references handed over" for kv in facts)


def test_brought_rollouts_and_compare(sim_run, capsys, tmp_path):
    base, gold, judge = sim_run
    run = base / "run"
    # the same clips brought without progress files: references unknown, same verdicts
    brought = tmp_path / "brought"
    shutil.copytree(run / "rollouts", brought, ignore=shutil.ignore_patterns("*.json", "*.png"))
    code, _, err = cli(capsys, "score", "vmem_track_b", "--gold", str(gold), "--rollouts",
                       str(brought), "--conditions", "none,last_seen", "--out",
                       str(tmp_path / "mine"), *judge)
    assert code == 0, err
    rep = build_track_b_report(RunDir.open(tmp_path / "mine"), drill_down=1)
    facts = [b for b in _sections(rep)["Drill-down: none"].blocks if isinstance(b, KeyValues)]
    assert facts and facts[0].items["references"] == "brought rollouts: references unknown"

    summary = json.loads((run / "summary.json").read_text("utf-8"))
    code, out, err = cli(capsys, "compare", str(run), str(run), "--condition-a", "last_seen",
                         "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["deltas"] == summary["deltas"]["last_seen"]
    assert res["gap_bin_deltas"] == summary["gap_bins"]["deltas"]["last_seen"]
    code, out, _ = cli(capsys, "compare", str(run), str(run), "--condition-a", "last_seen",
                       "--condition-b", "last_seen", "--json")
    for r in json.loads(out)["deltas"]["rates"].values():
        assert (r["difference"], r["ci_low"], r["ci_high"]) == (0.0, 0.0, 0.0)
    # two runs, same clips and judge: none vs none is 0; the table is printed
    code, out, _ = cli(capsys, "compare", str(run), str(tmp_path / "mine"))
    assert code == 0 and "pooled rates, every segment" in out and "+0.000 [+0.000, +0.000]" in out
    code, _, err = cli(capsys, "compare", str(run), str(run))
    assert code == 2 and "needs --condition-a" in err

    # other gold for the shared story: refused by name
    other = tmp_path / "other"
    shutil.copytree(tmp_path / "mine", other)
    with RunDir.open(other).items() as store:
        item = next(store.iter_items(kind="score", status="done"))
        req = {**item.request, "gold_sha256": {**item.request["gold_sha256"], "gt": "0" * 64}}
        store.put(item.key, item_id=item.item_id, kind=item.kind, request=req,
                  response=item.response, score=item.score)
    code, _, err = cli(capsys, "compare", str(run), str(other))
    assert code == 2 and f"story {item.item_id}: the two runs scored different gold" in err

    # not Track-B: refused
    fake = tmp_path / "fake"
    shutil.copytree(tmp_path / "mine", fake)
    manifest = json.loads((fake / "run.json").read_text("utf-8"))
    (fake / "run.json").write_text(json.dumps({**manifest, "benchmark": "cmbench"}), "utf-8")
    code, _, err = cli(capsys, "compare", str(run), str(fake))
    assert code == 2 and "cmbench run" in err
    code, _, err = cli(capsys, "compare", str(fake), str(fake))
    assert code == 2 and "cmbench runs cannot be compared" in err


def test_an_unreadable_drill_down_limit_is_refused(sim_run, monkeypatch):
    from vidmem.errors import UserInputError

    base, _, _ = sim_run
    monkeypatch.setenv("VIDMEM_DRILL_DOWN", "lots")
    with pytest.raises(UserInputError, match="VIDMEM_DRILL_DOWN='lots'"):
        build_track_b_report(RunDir.open(base / "run"))
    assert Path(base / "run" / "report" / "report.md").is_file()
