"""Memory-loop scoring on sim rollouts: throughput, decoding saved, and what the fit recovers.

Builds a sim memory-loop dataset (N start images x the six loops), renders every loop
with the sim generator for each memory setting, scores each run on the offline path
with the protocol's pairing, and reports

* seconds per case for scoring, and frames decoded / frames in the videos (only the
  paired frames are decoded);
* re-scoring the unchanged run (served from the run store);
* per memory setting: mean sample fidelity, official half-life fits, the median
  official ``t_half`` against the truth ``TAU ln 2``, and the not-applicable reasons
  per loop -- the numbers behind the notes in ``tests/sim/test_memory_loop_vs_truth.py``.

Usage: python benchmarks/bench_memory_loop.py [--images 2] [--seconds 60] [--fps 4]
       [--size 160x90] [--memories perfect,none,decay:5,decay:15,decay:45] [--seed 0]
       [--gen-seed 0] [--workdir DIR]

``--seed`` is the dataset build seed (other start images), ``--gen-seed`` the sim
generator's seed (other forgetting draws); single-case half-lives vary a lot across
both, so measure several seeds before trusting a median.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import shutil
import tempfile
import time
from pathlib import Path

from vidmem.benchmarks.memory_loop import BENCHMARK as bench
from vidmem.benchmarks.memory_loop.data import generation_requests, load_memory_loop
from vidmem.benchmarks.memory_loop.scorer import ScorerConfig
from vidmem.generators.sim import SimGenerator
from vidmem.io.video import probe
from vidmem.runners import benchmark_run as runner
from vidmem.runners.sim_build import build


def _render(ds, videos: Path, memory: str, seconds: float, fps: float, size: tuple[int, int],
            seed: int = 0) -> float:
    start = time.perf_counter()
    gen = SimGenerator(memory=memory, duration_seconds=seconds, fps=fps, seed=seed)
    for req in generation_requests(ds, videos):
        if not Path(req.out_path).is_file():
            res = gen.generate(dataclasses.replace(req, width=size[0], height=size[1]))
            if res.status != "ok":
                raise SystemExit(res.error)
    return time.perf_counter() - start


def _row(memory: str, result: dict, rows: list[dict]) -> str:
    o = result["overall"]
    hl = o["half_life"]
    tau = float(memory.split(":")[1]) if memory.startswith("decay:") else math.nan
    med = hl["median_t_half_seconds"]
    per_loop = " ".join(
        f"{r['loop_id'][:10]}={r['t_half_seconds']:.3g}" if r.get("half_life_status") == "official"
        else f"{r['loop_id'][:10]}:{r.get('half_life_check')}" for r in rows)
    return (f"{memory:9s} fidelity {o['sample_fidelity']['mean']:.4f}  official {hl['n_official']:2d}/"
            f"{o['n_scored']}  median t_half {'n/a' if med is None else f'{med:.4g}':>8s} s  "
            f"truth {tau * math.log(2):6.2f} s | {per_loop}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--fps", type=float, default=4.0)
    ap.add_argument("--size", default="160x90")
    ap.add_argument("--memories", default="perfect,none,decay:5,decay:15,decay:45")
    ap.add_argument("--seed", type=int, default=0, help="dataset build seed")
    ap.add_argument("--gen-seed", type=int, default=0, help="sim generator seed")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--tiny", action="store_true",
                    help="1 image, 8 s at 2 fps, 64x36, perfect and none (smoke run)")
    args = ap.parse_args()
    if args.tiny:
        args.images, args.seconds, args.fps, args.size = 1, 8.0, 2.0, "64x36"
        args.memories = "perfect,none"
    size = tuple(int(v) for v in args.size.lower().split("x"))
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench_ml_"))
    root = work / "ds"
    if not (root / "cases.jsonl").is_file():
        build("memory_loop", root, seed=args.seed, n_cases=args.images)
    ds = load_memory_loop(root)
    cfg = ScorerConfig.from_preset("offline")
    lines = []
    for memory in args.memories.split(","):
        tag = memory.replace(":", "_")
        videos = work / f"videos_{tag}"
        gen_s = _render(ds, videos, memory, args.seconds, args.fps, size, args.gen_seed)
        out = work / f"run_{tag}"
        shutil.rmtree(out, ignore_errors=True)
        run = runner.open_run(bench, ds, out, cfg, {"videos": str(videos)}, resume=False, overwrite=False, argv=None)
        t0 = time.perf_counter()
        result = runner.score(bench, ds, run, videos, cfg, quiet=True)
        score_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        runner.score(bench, ds, run, videos, cfg, quiet=True)
        cached_s = time.perf_counter() - t0
        rows = run.scores()
        decoded = sum(r.get("frames_decoded", 0) for r in rows)
        total = sum(probe(videos / f"{c}.mp4").n_frames for c in ds.case_ids)
        print(f"{memory}: render {gen_s:.1f} s, score {score_s / len(rows):.3f} s/case, "
              f"decoded {decoded}/{total} frames ({decoded / total:.0%}), rescoring "
              f"{score_s / max(cached_s, 1e-9):.0f}x faster from the store")
        lines.append(_row(memory, result, rows))
    print("\n".join(lines))
    print(f"workdir: {work}")


if __name__ == "__main__":
    main()
