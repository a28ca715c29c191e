"""The CMBench part of `vidmem demo`: sim data, two memory settings, offline scoring.

Builds a small CMBench in the official layout from the sim world, lets the sim generator
continue every context once with perfect memory and once with none, scores both runs with
the offline scorer (classic backends, labelled non-official) and compares them task by
task. Every step is the real pipeline a user runs on their own model; only the data and
the generator are simulated.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vidmem.benchmarks.cmbench import BENCHMARK as bench
from vidmem.benchmarks.cmbench.data import load_cmbench
from vidmem.benchmarks.cmbench.scorer import ScorerConfig
from vidmem.runners import benchmark_run as runner

N_CASES = 3  # context videos; two tasks each
SEED = 0
MEMORIES = ("perfect", "none")
#: the demo passes when perfect memory beats no memory by at least this much
MIN_MARGIN = 0.2


def config() -> dict[str, Any]:
    return {"n_cases": N_CASES, "seed": SEED, "memories": list(MEMORIES), "scorer": "offline"}


def run_cmbench_demo(base: Path, *, quiet: bool) -> dict[str, Any]:
    """Build, generate, score; return per-memory summaries and the per-task comparison."""
    from vidmem.runners.reporting import render_run_report
    from vidmem.runners.sim_build import build

    data = base / "data"
    if not (data / "metadata.jsonl").is_file():
        build("cmbench", data, seed=SEED, n_cases=N_CASES)
    ds = load_cmbench(data)
    cfg = ScorerConfig.from_preset("offline")
    results: dict[str, Any] = {}
    for memory in MEMORIES:
        options = {"memory": memory, "seed": SEED}
        run = runner.open_run(bench, ds, base / memory, cfg, {"generator": {"name": "sim", "options": options}},
                              resume=True, overwrite=False, argv=None)
        gen = runner.generate(bench, ds, run, "sim", options, quiet=quiet)
        summary = runner.score(bench, ds, run, gen["dir"], cfg, quiet=quiet)
        runner.record_backends(bench, run, cfg)
        summary["report"] = str(render_run_report(run.path)["html"])
        summary["per_task"] = {r["task_id"]: r["score"] for r in run.scores()}
        results[memory] = summary
    tasks = list(results["perfect"]["per_task"])
    per_task = [{"task_id": t, **{m: results[m]["per_task"].get(t) for m in MEMORIES}} for t in tasks]
    means = {m: results[m]["score"]["mean"] for m in MEMORIES}
    passed = bool(per_task) and all(
        r["perfect"] is not None and r["none"] is not None and r["perfect"] - r["none"] >= MIN_MARGIN
        for r in per_task)
    return {
        "dataset": str(data), "tasks": len(tasks), "means": means,
        "ci": {m: [results[m]["score"]["ci_low"], results[m]["score"]["ci_high"]] for m in MEMORIES},
        "per_task": per_task, "perfect_beats_none_on_every_task": passed,
        "reports": {m: results[m]["report"] for m in MEMORIES}, "official": False,
    }


def report_section(rep: Any, result: dict[str, Any]) -> None:
    """Add the CMBench comparison to the demo report."""
    from vidmem.report import Figure, KeyValues, Table, bar_with_ci

    sec = rep.section(
        "CMBench on the sim world",
        "A small CMBench built from the sim world, continued by the sim generator with perfect "
        "memory and with no memory, scored with the offline scorer (SIFT + GrabCut + colour/texture "
        "embedding: a proxy, not the official OWL-ViT + SAM 2 + DINOv2 path). A memory benchmark "
        "that works must score the perfect-memory run clearly higher.",
    )
    means, ci = result["means"], result["ci"]
    sec.add(KeyValues({
        "tasks": result["tasks"],
        **{f"score, memory={m}": f"{means[m]:.4f} [{_f(ci[m][0])}, {_f(ci[m][1])}]" for m in means},
        "perfect > none on every task": result["perfect_beats_none_on_every_task"],
    }))
    sec.add(Table(["task_id", "perfect", "none"], [[r["task_id"], r["perfect"], r["none"]] for r in result["per_task"]],
                  caption="task scores (max over frames of the crop cosine)"))
    labels = list(means)
    sec.add(Figure(bar_with_ci(labels, [means[m] for m in labels],
                               [ci[m][0] if ci[m][0] is not None else means[m] for m in labels],
                               [ci[m][1] if ci[m][1] is not None else means[m] for m in labels],
                               ylabel="CMBench score (offline)"),
                   caption="mean over tasks with 95% bootstrap CI", name="cmbench-memory"))
    sec.add(KeyValues({f"full report, memory={m}": path for m, path in result["reports"].items()}))


def _f(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"
