"""The CMBench offline scorer checked against the sim world's truth, which it never reads.

Closed loop: build a sim CMBench, let the sim generator continue every context with
perfect and with no memory, score both with the offline path, then compare what the
scorer found with the truth sidecars the builder and the generator wrote.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vidmem.benchmarks.cmbench import BENCHMARK as bench
from vidmem.benchmarks.cmbench.data import load_cmbench
from vidmem.benchmarks.cmbench.scorer import ScorerConfig
from vidmem.io.boxes import box_iou
from vidmem.runners import benchmark_run as runner
from vidmem.runners.sim_build import build


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("simcmb")
    build("cmbench", root / "data", seed=1, n_cases=2)
    ds = load_cmbench(root / "data")
    cfg = ScorerConfig.from_preset("offline")
    out = {}
    for memory in ("perfect", "none"):
        run = runner.open_run(bench, ds, root / memory, cfg, {"generator": memory}, resume=False, overwrite=False, argv=None)
        gen = runner.generate(bench, ds, run, "sim", {"memory": memory}, quiet=True)
        assert gen["summary"]["errors"] == 0
        runner.score(bench, ds, run, gen["dir"], cfg, quiet=True)
        out[memory] = run
    return root, ds, out


def _truth_boxes(video_truth: dict, target_id: str) -> dict[int, list[int]]:
    return {f["frame"]: e["box_xyxy"] for f in video_truth["frames"] for e in f["entities"]
            if e["id"] == target_id and e["visible_fraction"] >= 0.99}


def test_offline_detections_land_on_the_truth_box(runs):
    root, ds, out = runs
    run = out["perfect"]
    task_truth = {t["task_id"]: t for v in ds.videos
                  for t in json.loads((root / "data" / "_truth" / f"{Path(v).stem}.json").read_text())["tasks"]}
    with run.items() as store:
        items = {s.item_id: s for s in store.iter_items(kind="score")}
    checked = hits = 0
    for task in ds.tasks:
        cont = run.path / "continuations" / f"{task.task_id}.mp4.truth.json"
        truth = _truth_boxes(json.loads(cont.read_text()), task_truth[task.task_id]["target_id"])
        for f in items[task.task_id].response["frames"]:
            if f["frame"] in truth:
                checked += 1
                hits += f["box"] is not None and box_iou(f["box"], truth[f["frame"]]) > 0.5
    assert checked > 50
    print(f"{hits}/{checked} visible-target frames found at the truth box")
    assert hits / checked >= 0.8, f"{hits}/{checked} visible-target frames found at the truth box"


def test_perfect_memory_beats_no_memory_on_every_task(runs):
    _, ds, out = runs
    perfect = {r["task_id"]: r["score"] for r in out["perfect"].scores()}
    none = {r["task_id"]: r["score"] for r in out["none"].scores()}
    for task in ds.tasks:
        assert perfect[task.task_id] > none[task.task_id] + 0.3, task.task_id
    assert min(perfect.values()) > 0.8
