"""The Track-A report, built from a finished sim run: its numbers are summary.json's, and
the chosen segments show exactly the references the store holds, in rank order."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from PIL import Image

from vidmem.benchmarks.vmem_track_a import BENCHMARK
from vidmem.benchmarks.vmem_track_a.config import ScorerConfig
from vidmem.benchmarks.vmem_track_a.gold import load_gold
from vidmem.benchmarks.vmem_track_a.report import (
    RETURN_TAGS,
    TABLE_COLUMNS,
    build_track_a_report,
    film_responses,
    reference_caption,
)
from vidmem.benchmarks.vmem_track_a.sim_build import build_track_a
from vidmem.report import ImageGrid, KeyValues, Table, render
from vidmem.runners.benchmark_run import run_benchmark
from vidmem.runners.store import RunDir

#: a smaller sweep than the protocol's, so the module's one run stays quick
POLICIES = ("seg_uniform", "recency", "random")
BUDGET = 6


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """One scored sim run: ``(run, summary, sim folder)``."""
    base = tmp_path_factory.mktemp("track_a_report")
    sim = base / "sim"
    build_track_a(sim, seed=0, n=1)
    cfg = ScorerConfig.from_preset("offline", lang="en", policies=POLICIES, budget=BUDGET)
    cfg = ScorerConfig.from_dict({**cfg.to_dict(), "backend_options": {
        "judge/sim-cards": {"weights": str(sim / "_cards")}}})
    outcome = run_benchmark(BENCHMARK, BENCHMARK.load(sim / "SimFilms"), videos=sim / "videos",
                            out=base / "run", gen=None, config=cfg, allow_missing=False,
                            workers=1, resume=False, overwrite=False, quiet=True,
                            judge_cache=base / "answers.sqlite", argv=[])
    return outcome.run, outcome.summary, sim


@pytest.fixture(scope="module")
def report(finished):
    return build_track_a_report(RunDir.open(finished[0].path))


def _section(rep, heading_start):
    return next(s for s in rep.sections if s.heading.startswith(heading_start))


def _blocks(section, kind):
    return [b for b in section.blocks if isinstance(b, kind)]


def test_the_report_renders_from_the_run_directory(finished, report, tmp_path):
    run, _, _ = finished
    headings = [s.heading for s in report.sections]
    assert headings[:4] == [f"Track-A table (K = {BUDGET})", "Budget sweep",
                            "Judge questions and the causal guard", "Chosen segments"]
    paths = render(report, tmp_path)
    html = paths["html"].read_text(encoding="utf-8")
    assert "Precision note" in html and "Segment " in html
    assert (run.report_dir / "report.html").is_file()  # the run wrote its own at the end


def test_the_track_a_table_is_summary_json(finished, report):
    _, summary, _ = finished
    table = _blocks(_section(report, "Track-A table"), Table)[0]
    values = table.values()
    expected = [(d, p, m) for d, by in summary["table"].items() for p, m in by.items()]
    expected += [("overall", p, m) for p, m in summary["overall"].items()]
    assert len(values) == len(expected) == 2 * len(POLICIES)
    for row, (dataset, policy, means) in zip(values, expected, strict=True):
        assert row[:2] == [dataset, policy]
        assert row[2:] == [means[key] for key in TABLE_COLUMNS.values()]
    assert [r[1] for r in values[:len(POLICIES)]] == list(POLICIES)


def test_the_precision_note_is_shown(finished, report):
    _, summary, _ = finished
    text = " ".join(b.text for b in _section(report, "Track-A table").blocks
                    if hasattr(b, "text") and isinstance(b.text, str))
    assert summary["precision_note"] in text


def test_the_budget_curves_are_summary_json(finished, report):
    _, summary, _ = finished
    sec = _section(report, "Budget sweep")
    assert len([b for b in sec.blocks if type(b).__name__ == "Figure"]) == 2
    f1_table, recall_table = _blocks(sec, Table)
    for table, metric in ((f1_table, "f1"), (recall_table, "recall")):
        assert table.columns == ["K", *POLICIES]
        for row in table.values():
            k = row[0]
            assert row[1:] == [summary["f1_vs_budget"][p][str(k)][metric] for p in POLICIES]
        assert [r[0] for r in table.values()] == list(range(1, BUDGET + 1))


def test_judge_questions_and_dropped_counts_are_summary_json(finished, report):
    _, summary, _ = finished
    sec = _section(report, "Judge questions")
    kv = _blocks(sec, KeyValues)[0].items
    q = summary["judge_questions"]
    assert kv["reference questions asked"] == q["asked"]
    assert kv["naive judgements (per policy, per K)"] == q["naive_reference_judgements"]
    assert q["naive_reference_judgements"] > q["asked"] > 0
    dropped = _blocks(sec, Table)[0]
    for row in dropped.values():
        assert row[-2] == sum(summary["dropped"][row[0]].values()) == 0
        assert row[-1] == summary["unparsable"][row[0]]


def _chosen(report):
    return [s for s in report.sections if s.heading.startswith("Segment ")]


def _stored_details(run):
    rows = run.scores()
    (item,) = film_responses(run, rows).values()
    return item["response"]["details"]


def test_chosen_segments_show_the_stored_references_in_rank_order(finished, report):
    run, _, _ = finished
    details = _stored_details(run)
    chosen = _chosen(report)
    assert len(chosen) == 2
    for sec in chosen:
        segment = int(sec.heading.split()[1])
        grids = _blocks(sec, ImageGrid)
        assert [g.caption.split(":")[0] for g in grids] == list(POLICIES)
        for policy, grid in zip(POLICIES, grids, strict=True):
            row = next(r for r in details[policy] if r["segment"] == segment)
            refs = row["refs"][:BUDGET]
            assert [c for _, c in grid.images] == [reference_caption(i, r)
                                                   for i, r in enumerate(refs, start=1)]
            for (image, _), ref in zip(grid.images, refs, strict=True):
                with Image.open(run.path / "thumbnails" / ref["thumbnail"]) as im:
                    assert np.array_equal(image, np.asarray(im.convert("RGB")))


def _recall(refs, candidates):
    covered = set().union(*(set(r["shows"] or ()) for r in refs))
    return len(covered & candidates) / len(candidates)


def test_the_chosen_segments_follow_the_documented_rule(finished, report):
    run, _, sim = finished
    (film,) = load_gold(sim / "SimFilms", "en")
    details = _stored_details(run)
    cands = {s.index: set(s.present) - set(s.first_appearances) for s in film.segments}
    memory = next(s.index for s in film.segments
                  if cands[s.index] and set(s.scenario_tags) & set(RETURN_TAGS))
    spreads = {}
    for s in film.segments:
        if not cands[s.index] or s.index == memory:
            continue
        values = [_recall(next(r for r in details[p] if r["segment"] == s.index)["refs"][:BUDGET],
                          cands[s.index]) for p in POLICIES]
        spreads[s.index] = max(values) - min(values)
    widest = max(spreads, key=spreads.get)  # max keeps the earliest of equal spreads
    assert [int(s.heading.split()[1]) for s in _chosen(report)] == [memory, widest]
    facts = _blocks(_chosen(report)[0], KeyValues)[0].items
    assert "re-appearance" in facts["scenario tags"] or "scene-return" in facts["scenario tags"]
    for e in cands[memory]:
        assert e in facts["candidates C (P minus first appearances)"]


def test_a_copied_run_without_its_gold_still_reports_its_references(finished, tmp_path):
    run, summary, sim = finished
    copy = tmp_path / "copied-run"
    shutil.copytree(run.path, copy)
    hidden = sim.parent / "gold-away"
    (sim / "SimFilms").rename(hidden)
    try:
        rep = build_track_a_report(RunDir.open(copy))
    finally:
        hidden.rename(sim / "SimFilms")
    assert any("cannot be read now" in n.text for n in rep.notices)
    table = _blocks(_section(rep, "Track-A table"), Table)[0]
    assert table.values()[-1][2:] == [summary["overall"][POLICIES[-1]][k]
                                      for k in TABLE_COLUMNS.values()]
    chosen = _chosen(rep)
    assert chosen, "the disagreement pick needs no gold"
    segment = int(chosen[0].heading.split()[1])
    row = next(r for r in _stored_details(run)[POLICIES[0]] if r["segment"] == segment)
    image, caption = _blocks(chosen[0], ImageGrid)[0].images[0]
    assert caption == reference_caption(1, row["refs"][0])
    with Image.open(copy / "thumbnails" / row["refs"][0]["thumbnail"]) as im:
        assert np.array_equal(image, np.asarray(im.convert("RGB")))  # not the placeholder
    render(rep, tmp_path / "report")


def test_a_run_without_a_summary_says_so(finished, tmp_path):
    run, _, _ = finished
    copy = tmp_path / "unfinished"
    shutil.copytree(run.path, copy)
    (copy / "summary.json").unlink()
    rep = build_track_a_report(RunDir.open(copy))
    assert [n.level for n in rep.notices] == ["error"] and not rep.sections


def test_reference_captions_name_unparsable_answers():
    assert reference_caption(3, {"t": 12.25, "shows": None}) == "#3, 12.25 s: unparsable"
    assert reference_caption(1, {"t": 4.0, "shows": []}) == "#1, 4 s: nothing"
