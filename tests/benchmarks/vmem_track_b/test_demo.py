"""The Track-B part of `vidmem demo`: registered, its checks read the truth, and on the sim
story retrieval raises Recall and a leaky generator lowers Avoid-OK -- by the truth
sidecars (recomputed here with other rules than the part's) and by the judge."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from vidmem.benchmarks.vmem_track_b import BENCHMARK
from vidmem.benchmarks.vmem_track_b import demo as part
from vidmem.report import Report, render
from vidmem.runners.demo import demo_parts
from vidmem.runners.store import RunDir


def test_registered_as_a_demo_part():
    assert BENCHMARK.demo() is part
    assert "vmem_track_b" in [bench.name for bench, _ in demo_parts()]
    json.dumps(part.config())  # goes into the demo's run.json


def _cell(label: str, **rates: float | None) -> dict:
    truth = {k.removeprefix("t_"): v for k, v in rates.items() if k.startswith("t_")}
    judge = {k.removeprefix("j_"): v for k, v in rates.items() if k.startswith("j_")}
    return {"label": label, "truth": truth, "judge": judge}


@pytest.mark.parametrize(("t", "j", "ok"), [
    ((0.2, 0.9), (0.3, 0.8), True),     # both up
    ((0.2, 0.9), (0.3, 0.3), False),    # the judge sees no difference
    ((0.2, 0.9), (0.8, 0.3), False),    # the judge sees the opposite
    ((0.9, 0.2), (0.8, 0.3), False),    # the truth does not move the expected way
    ((0.5, 0.5), (0.5, 0.5), False),    # nothing moves: no evidence either way
    ((None, 0.5), (0.1, 0.5), False),   # an empty denominator
])
def test_order_check_needs_the_truth_and_the_judge(t, j, ok):
    a = _cell("a", t_recall=t[0], j_recall=j[0])
    b = _cell("b", t_recall=t[1], j_recall=j[1])
    assert part._order(a, b, "recall", +1)["passed"] is ok
    # the same numbers read as a drop
    down = part._order(b, a, "recall", -1)
    assert down["passed"] is ok


def _independent_truth(base: Path, data: Path, arm: str, cond: str) -> dict[str, list[int]]:
    """Recall and Avoid-OK counts from the gold (not the part's _truth file) and the
    sidecars' own bookkeeping: ``intended`` / ``source`` fields and the ``leaked`` list."""
    counts = {"recall": [0, 0], "avoid_ok": [0, 0]}
    for gt_path in sorted((data / "gt").glob("*.json")):
        gt = json.loads(gt_path.read_text("utf-8"))
        names = {eid: e["name"] for eid, e in gt["entities"].items()}
        kinds = {eid: e["kind"] for eid, e in gt["entities"].items()}
        for seg in gt["segments"]:
            side = json.loads((base / f"run-{arm}" / "rollouts" / gt["story_id"] / cond /
                               f"{seg['segment_id']}.mp4.truth.json").read_text("utf-8"))
            drawn = {e["name"]: e for e in side["entities"]}
            for c in seg["cast"]:
                if kinds[c["eid"]] not in ("character", "prop"):
                    continue
                d = drawn.get(names[c["eid"]])
                # drawn as the rollout's prompts established it (or as the prompt says)
                right = d is not None and (d["source"] == "prompt" or (
                    d["intended"] is not None and d["asset"] == d["intended"]["asset"]))
                counts["recall"][0] += right
                counts["recall"][1] += 1
            for f in seg["forbidden"]:
                counts["avoid_ok"][0] += names[f["eid"]] not in side["leaked"] and \
                    names[f["eid"]] not in drawn
                counts["avoid_ok"][1] += 1
    return counts


@pytest.mark.slow  # three 14-segment rollouts, 42 judged clips (~40 s of CPU)
def test_demo_part_on_the_sim_story(tmp_path):
    base = tmp_path / "vmem_track_b"
    result = part.run(BENCHMARK, base, quiet=True)
    json.dumps(result)  # stored in the demo's summary.json
    assert result["errors"] == []
    assert result["segments"] == part.N_SEGMENTS * part.N_STORIES
    cells = result["cells"]
    assert set(cells) == {"clean/none", f"clean/{part.RETRIEVAL}", f"leaky/{part.RETRIEVAL}"}

    # the part's truth equals a truth recomputed from the gold and the sidecars' bookkeeping
    data = Path(result["dataset"])
    for label, cell in cells.items():
        arm, cond = label.split("/")
        mine = _independent_truth(base, data, arm, cond)
        for rate in ("recall", "avoid_ok"):
            c = cell["truth_counts"][rate]
            assert [c["numerator"], c["denominator"]] == mine[rate], (label, rate)
    # the judge's numbers are the runs' own pooled rates
    for label, cell in cells.items():
        arm, cond = label.split("/")
        summary = json.loads((base / f"run-{arm}" / "summary.json").read_text("utf-8"))
        for rate in part.RATES:
            assert cell["judge"][rate] == summary["pooled"][cond][rate]["value"]

    # what the sim truth says: no memory + no references forgets returns; references
    # bring them back; a leaky generator draws forbidden entities, a clean one never
    clean_none, clean_ret = cells["clean/none"], cells[f"clean/{part.RETRIEVAL}"]
    leaky = cells[f"leaky/{part.RETRIEVAL}"]
    assert clean_none["truth"]["recall"] < clean_ret["truth"]["recall"]
    assert clean_ret["leaks"] == [] and clean_none["leaks"] == []
    assert leaky["leaks"] and leaky["truth"]["avoid_ok"] < 1.0
    assert part.passed(result), result["checks"]
    for check in result["checks"].values():
        assert check["truth_moves_as_expected"] and check["judge_agrees"]
    # the judge agrees with the truth on most required / forbidden entries
    for cell in cells.values():
        a = cell["agreement"]
        assert a["required_total"] > 0 and a["forbidden_total"] > 0
        assert a["required"] + a["forbidden"] >= 0.9 * (a["required_total"] + a["forbidden_total"])

    # printed: the table and both checks
    out = io.StringIO()
    part.print_result(Console(file=out, width=200), result)
    text = out.getvalue()
    assert "Recall truth" in text and "Avoid-OK judge" in text and text.count("agrees") == 2

    # the report section renders, with the leak panel
    rep = Report("demo")
    part.report_section(rep, result, base, tmp_path / "report")
    html = render(rep, tmp_path / "report")["html"].read_text("utf-8")
    assert "VMem-Bench Track-B on a sim story" in html and "data:image/png;base64," in html

    # a second demo finds everything done: nothing generated or judged again
    mtimes = {p: p.stat().st_mtime_ns for p in base.rglob("seg_*.mp4")}
    again = part.run(BENCHMARK, base, quiet=True)
    assert {p: p.stat().st_mtime_ns for p in base.rglob("seg_*.mp4")} == mtimes
    assert again["checks"] == result["checks"]
    for arm, _, _ in part.ARMS:
        counts = RunDir.open(base / f"run-{arm}").manifest.counts
        assert counts.get("computed", 0) == 0, counts
