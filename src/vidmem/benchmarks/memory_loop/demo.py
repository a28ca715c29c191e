"""The memory-loop part of `vidmem demo`: sim loops, two memory settings, offline scoring.

One sim start image, the six camera loops, rolled out for the protocol's 60 s by the
sim generator with perfect memory and with a memory that fades (``decay:15``, a true
half-life of 15 ln 2 = 10.4 s), scored with the offline embedder. The demo shows mean
revisit fidelity (which must be higher with perfect memory) and the half-life fit's
outcome per case, official or not_applicable with its reason.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from vidmem.benchmarks.memory_loop import BENCHMARK as bench
from vidmem.benchmarks.memory_loop.data import load_memory_loop
from vidmem.benchmarks.memory_loop.scorer import ScorerConfig
from vidmem.runners import benchmark_run as runner

N_IMAGES = 1
SEED = 0
DURATION_SECONDS = 60.0
FPS = 4.0  # half the cases' 8 fps, so the demo stays quick
MEMORIES = ("perfect", "decay:15")


def config() -> dict[str, Any]:
    return {"n_images": N_IMAGES, "seed": SEED, "duration_seconds": DURATION_SECONDS,
            "fps": FPS, "memories": list(MEMORIES), "scorer": "offline"}


def _true_t_half(memory: str) -> float | None:
    """The sim's own half-life of a memory setting (``None``: it never fades)."""
    from vidmem.sim.memory import parse_memory

    tau = parse_memory(memory).tau_seconds
    return None if tau is None else tau * math.log(2.0)


def run_memory_loop_demo(base: Path, *, quiet: bool) -> dict[str, Any]:
    from vidmem.runners.reporting import render_run_report
    from vidmem.runners.sim_build import build

    data = base / "data"
    if not (data / "cases.jsonl").is_file():
        build("memory_loop", data, seed=SEED, n_cases=N_IMAGES)
    ds = load_memory_loop(data)
    cfg = ScorerConfig.from_preset("offline")
    out: dict[str, Any] = {}
    for memory in MEMORIES:
        options = {"memory": memory, "seed": SEED, "duration_seconds": DURATION_SECONDS,
                   "fps": FPS}
        run = runner.open_run(bench, ds, base / memory.replace(":", "-"), cfg,
                              {"generator": {"name": "sim", "options": options}},
                              resume=True, overwrite=False, argv=None)
        gen = runner.generate(bench, ds, run, "sim", options, quiet=quiet)
        summary = runner.score(bench, ds, run, gen["dir"], cfg, quiet=quiet)
        runner.record_backends(bench, run, cfg)
        overall = summary["overall"]
        out[memory] = {
            "fidelity": overall["sample_fidelity"],
            "half_life_official": overall["half_life"]["n_official"],
            "median_t_half_seconds": overall["half_life"]["median_t_half_seconds"],
            "true_t_half_seconds": _true_t_half(memory),
            "not_applicable": overall["half_life"]["not_applicable"],
            "report": str(render_run_report(run.path)["html"]),
        }
    perfect, short = (out[m]["fidelity"]["mean"] for m in MEMORIES)
    higher = perfect is not None and short is not None and perfect > short
    return {"dataset": str(data), "cases": len(ds.cases), "by_memory": out,
            "perfect_fidelity_higher": higher, "official": False}


def report_section(rep: Any, result: dict[str, Any]) -> None:
    from vidmem.report import KeyValues, Table

    sec = rep.section(
        "Memory loop on the sim world",
        "Six camera loops from one sim start image, rolled out with perfect memory and with a "
        f"fading memory ({MEMORIES[1]}: true half-life {_true_t_half(MEMORIES[1]):.1f} s), "
        f"{DURATION_SECONDS:g} s at {FPS:g} fps "
        "each, scored with the offline embedder "
        "(a proxy, not DINOv2). Revisit fidelity = 0.7 x rescaled embedding cosine + 0.3 x SSIM "
        "per revisit pair; the half-life fit is exploratory and is reported as not_applicable "
        "whenever a support check fails. A larger half-life is not a longer causal memory.",
    )
    rows = []
    for memory, r in result["by_memory"].items():
        f = r["fidelity"]
        rows.append([memory, f["mean"], f["ci_low"], f["ci_high"], r["half_life_official"],
                     r["median_t_half_seconds"], r["true_t_half_seconds"],
                     ", ".join(f"{k}: {v}" for k, v in r["not_applicable"].items()) or "-"])
    sec.add(Table(["memory", "mean fidelity", "ci_low", "ci_high", "official fits", "median t_half (s)",
                   "sim's true t_half (s)", "not_applicable"], rows, caption=f"{result['cases']} cases per memory setting"))
    sec.add(KeyValues({"perfect memory has higher fidelity": result["perfect_fidelity_higher"],
                       **{f"full report, memory={m}": r["report"] for m, r in result["by_memory"].items()}}))
