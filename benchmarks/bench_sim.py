"""Time the sim world: dataset builds and sim-generator runs, end to end on the CPU.

Steps (each timed with ``time.perf_counter``, files written to a temp folder or
``--workdir``):

1. ``build("cmbench", n_cases=N)``: N one-minute context videos (480 frames each,
   rendered, encoded, tagged) plus their truth, and ``metadata.jsonl`` (2N tasks);
2. the ``sim`` generator (``--memory``, default ``perfect``) continues all 2N tasks
   (8 s = 64 frames each), reading each context as a model would;
3. ``build("memory_loop", n_cases=M)``: M start images x 6 loops;
4. the ``sim`` generator (``--loop-memory``, default ``perfect``) renders all 6M
   60-second rollouts (480 frames each) with their pose sidecars.

Target: steps 1 + 2 with N = 12 in under a minute on a 2-core machine.

Usage: python benchmarks/bench_sim.py [--n-cases 12] [--loop-images 2] [--seed 0]
       [--memory perfect] [--loop-memory perfect] [--loop-cases N] [--workdir DIR] [--json]
       python benchmarks/bench_sim.py --tiny   (1 context video, 1 of the 6 loops: a smoke run)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from vidmem.generators.protocol import GenerationRequest
from vidmem.generators.sim import SimGenerator
from vidmem.runners.sim_build import build


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def run(work: Path, *, n_cases: int, loop_images: int, seed: int, memory: str,
        loop_memory: str, loop_cases: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"n_cases": n_cases, "loop_images": loop_images, "seed": seed,
                           "memory": memory, "loop_memory": loop_memory,
                           "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                           else os.cpu_count()}
    t = time.perf_counter()
    cm = build("cmbench", work / "cmbench", seed=seed, n_cases=n_cases)
    out["cmbench_build_s"] = time.perf_counter() - t
    gen = SimGenerator(memory=memory, seed=seed)
    t = time.perf_counter()
    failures = 0
    frames = 0
    for row in _rows(work / "cmbench" / "metadata.jsonl"):
        res = gen.generate(GenerationRequest(
            row["task_id"], "cmbench", row["continue_prompt"],
            str(work / "cmbench_out" / f"{row['task_id']}.mp4"),
            context_video=str(work / "cmbench" / row["video"])))
        failures += res.status != "ok"
        frames += int(res.extras.get("n_frames", 0))
    out["cmbench_generate_s"] = time.perf_counter() - t
    out["cmbench_tasks"] = cm.n_items
    out["cmbench_total_s"] = out["cmbench_build_s"] + out["cmbench_generate_s"]
    out["cmbench_generated_frames"] = frames

    t = time.perf_counter()
    ml = build("memory_loop", work / "memory_loop", seed=seed, n_cases=loop_images)
    out["loop_build_s"] = time.perf_counter() - t
    gen = SimGenerator(memory=loop_memory, seed=seed)
    t = time.perf_counter()
    frames = 0
    for row in _rows(work / "memory_loop" / "cases.jsonl")[:loop_cases]:
        res = gen.generate(GenerationRequest(
            row["case_id"], "memory_loop", row["prompt"],
            str(work / "loop_out" / f"{row['case_id']}.mp4"),
            start_image=str(work / "memory_loop" / row["start_image"]),
            duration_seconds=row["duration_seconds"], fps=row["fps"]))
        failures += res.status != "ok"
        frames += int(res.extras.get("n_frames", 0))
    out["loop_generate_s"] = time.perf_counter() - t
    out["loop_cases"] = ml.n_items if loop_cases is None else min(loop_cases, ml.n_items)
    out["loop_generated_frames"] = frames
    out["failures"] = failures
    size = sum(p.stat().st_size for p in work.rglob("*.mp4"))
    out["mp4_megabytes"] = size / 1e6
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-cases", type=int, default=12)
    ap.add_argument("--loop-images", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--memory", default="perfect")
    ap.add_argument("--loop-memory", default="perfect")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--loop-cases", type=int, default=None,
                    help="generate only the first N loop cases (default: all)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--tiny", action="store_true",
                    help="1 context video, 1 start image, 1 loop generated (smoke run)")
    args = ap.parse_args()
    if args.tiny:
        args.n_cases, args.loop_images, args.loop_cases = 1, 1, 1
    work = args.workdir or Path(tempfile.mkdtemp(prefix="vidmem-bench-sim-"))
    try:
        res = run(work, n_cases=args.n_cases, loop_images=args.loop_images, seed=args.seed,
                  memory=args.memory, loop_memory=args.loop_memory, loop_cases=args.loop_cases)
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(res, indent=2))
        return
    print(f"cpus: {res['cpus']}")
    print(f"cmbench build, {args.n_cases} videos:          {res['cmbench_build_s']:7.2f} s")
    print(f"cmbench generate, {res['cmbench_tasks']} tasks ({args.memory}): "
          f"{res['cmbench_generate_s']:7.2f} s")
    print(f"cmbench total (target < 60 s):         {res['cmbench_total_s']:7.2f} s")
    print(f"memory_loop build, {args.loop_images} start images:  {res['loop_build_s']:7.2f} s")
    print(f"memory_loop generate, {res['loop_cases']} x 60 s ({args.loop_memory}): "
          f"{res['loop_generate_s']:7.2f} s")
    print(f"failures: {res['failures']}, MP4 data: {res['mp4_megabytes']:.1f} MB")


if __name__ == "__main__":
    main()
