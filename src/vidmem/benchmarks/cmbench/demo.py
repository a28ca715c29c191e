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

import numpy as np

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


#: the line printed before this part runs
ANNOUNCE = "CMBench on the sim world: building, generating with perfect and no memory, scoring ..."


def run(bench: Any, base: Path, *, quiet: bool) -> dict[str, Any]:
    """Build, generate, score; return per-memory summaries and the per-task comparison."""
    data = base / "data"
    if not (data / "metadata.jsonl").is_file():
        bench.sim_build(data, seed=SEED, n_cases=N_CASES)
    ds = load_cmbench(data)
    cfg = ScorerConfig.from_preset("offline")
    results: dict[str, Any] = {}
    for memory in MEMORIES:
        options = {"memory": memory, "seed": SEED}
        outcome = runner.run_benchmark(
            bench, ds, videos=None, out=base / memory, gen=("sim", options), config=cfg,
            allow_missing=False, workers=1, resume=True, overwrite=False, quiet=quiet, argv=[])
        summary, run_dir = outcome.summary, outcome.run
        summary["report"] = summary["report"]["html"]
        summary["per_task"] = {r["task_id"]: r["score"] for r in run_dir.scores()}
        results[memory] = summary
    tasks = list(results["perfect"]["per_task"])
    per_task = [{"task_id": t, **{m: results[m]["per_task"].get(t) for m in MEMORIES}} for t in tasks]
    means = {m: results[m]["score"]["mean"] for m in MEMORIES}
    beats = bool(per_task) and all(
        r["perfect"] is not None and r["none"] is not None and r["perfect"] - r["none"] >= MIN_MARGIN
        for r in per_task)
    return {
        "dataset": str(data), "tasks": len(tasks), "means": means,
        "ci": {m: [results[m]["score"]["ci_low"], results[m]["score"]["ci_high"]] for m in MEMORIES},
        "per_task": per_task, "perfect_beats_none_on_every_task": beats,
        "reports": {m: results[m]["report"] for m in MEMORIES}, "official": False,
    }


def passed(result: dict[str, Any]) -> bool:
    """The demo's check: perfect memory beats no memory on every task."""
    return bool(result["perfect_beats_none_on_every_task"])


def print_result(console: Any, result: dict[str, Any]) -> None:
    """The per-task table and the verdict."""
    from rich.table import Table as RichTable

    table = RichTable(title="CMBench on the sim world (offline scorer, non-official)", title_justify="left")
    for col in ("task", "memory=perfect", "memory=none"):
        table.add_column(col)
    for r in result["per_task"]:
        table.add_row(r["task_id"], _f(r["perfect"]), _f(r["none"]))
    table.add_row("[bold]mean[/bold]", f"[bold]{_f(result['means']['perfect'])}[/bold]",
                  f"[bold]{_f(result['means']['none'])}[/bold]")
    console.print(table)
    console.print("perfect memory beats no memory on every task: "
                  + ("[green]yes[/green]" if passed(result) else "[red]NO[/red]"))


def _crop_panels(base: Path, result: dict[str, Any]) -> list[tuple[Any, str]]:
    """Per task: the reference crop beside the best continuation crop of each memory."""
    from PIL import Image

    from vidmem.report.images import side_by_side

    def load(path: Path) -> Any:
        return np.asarray(Image.open(path).convert("RGB")) if path.is_file() else None

    panels = []
    for r in result["per_task"]:
        task = r["task_id"]
        ref = load(base / MEMORIES[0] / "crops" / f"{task}_ref.png")
        if ref is None:
            continue
        images, captions = [ref], ["reference"]
        for m in MEMORIES:
            best = load(base / m / "crops" / f"{task}_best.png")
            images.append(best if best is not None else np.full((8, 8, 3), 255, np.uint8))
            captions.append(f"{m}: {_f(r[m])}" if best is not None else f"{m}: not found")
        panels.append((side_by_side(images, captions, height=120), task))
    return panels


def report_section(rep: Any, result: dict[str, Any], base: Path, report_dir: Path) -> None:
    """Add the CMBench comparison to the demo report: crops first, then the numbers."""
    import os

    from vidmem.report import Figure, ImageGrid, KeyValues, Markdown, Table, bar_with_ci

    sec = rep.section(
        "CMBench on the sim world",
        "A small CMBench built from the sim world, continued by the sim generator with perfect "
        "memory and with no memory, scored with the offline scorer (SIFT + GrabCut + colour/texture "
        "embedding: a proxy, not the official OWL-ViT + SAM 2 + DINOv2 path). A memory benchmark "
        "that works must score the perfect-memory run clearly higher.",
    )
    panels = _crop_panels(base, result)
    if panels:
        sec.add(ImageGrid(panels, columns=2, thumb_size=480))
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
    links = [f"[full report, memory={m}]({os.path.relpath(base / m / 'report' / 'report.html', report_dir)})"
             for m in result["reports"]]
    sec.add(Markdown(" · ".join(links)))


def _f(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"
