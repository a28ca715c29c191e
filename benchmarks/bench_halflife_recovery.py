"""Which run-level half-life recovers the sim's true decay: per-case median or model-level?

For each build seed, builds a sim memory-loop dataset (N start images x the six loops),
rolls every loop out with the sim generator for each ``decay:TAU`` setting, scores the
run on the offline path with the protocol's pairing and reads from ``summary.json``:

* the official run number: the median ``t_half`` of the per-case official fits;
* vidmem's diagnostic median over the official fits within their gaps (neither
  ``t_half_below_gaps`` nor ``t_half_beyond_gaps``);
* vidmem's model-level half-life (one decay time shared by all camera-evaluable cases,
  case-clustered bootstrap interval, :mod:`vidmem.stats.halflife_model`).

Each is compared with the sim's truth ``TAU ln 2``: the ratio estimate / truth, the
largest ``|log ratio|`` over the settings, and whether it ranks the settings in order.
The camera-compliance coverage of each run is printed too (every sim rollout should be
evaluable).

Usage: python benchmarks/bench_halflife_recovery.py [--images 2] [--seeds 0]
       [--taus 6,15,40] [--fps 4] [--size 160x90] [--workdir DIR]

Defaults are small (2 images = 12 cases per setting, one seed: about 3 minutes on two
busy cores); use ``--seeds 0,1,2,3`` for the table in the README.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import tempfile
from pathlib import Path
from typing import Any

from vidmem.benchmarks.memory_loop import BENCHMARK as bench
from vidmem.benchmarks.memory_loop.data import generation_requests, load_memory_loop
from vidmem.benchmarks.memory_loop.scorer import ScorerConfig
from vidmem.generators.sim import SimGenerator
from vidmem.runners import benchmark_run as runner
from vidmem.runners.sim_build import build

ESTIMATORS = ("per-case median (official)", "within-gaps median (vidmem)",
              "model-level (vidmem)")


def run_setting(work: Path, seed: int, images: int, tau: float, fps: float,
                size: tuple[int, int]) -> dict[str, Any]:
    """Build (once), render and score one decay setting; return the run's summary."""
    root = work / f"ds_s{seed}"
    if not (root / "cases.jsonl").is_file():
        build("memory_loop", root, seed=seed, n_cases=images)
    ds = load_memory_loop(root)
    tag = f"s{seed}_decay_{tau:g}"
    videos = work / f"videos_{tag}"
    gen = SimGenerator(memory=f"decay:{tau:g}", duration_seconds=60.0, fps=fps)
    for req in generation_requests(ds, videos):
        if not Path(req.out_path).is_file():
            res = gen.generate(dataclasses.replace(req, width=size[0], height=size[1]))
            if res.status != "ok":
                raise SystemExit(res.error)
    cfg = ScorerConfig.from_preset("offline")
    run = runner.open_run(bench, ds, work / f"run_{tag}", cfg, {"videos": str(videos)},
                          resume=True, overwrite=False, argv=None)
    return runner.score(bench, ds, run, videos, cfg, quiet=True)


def estimates(summary: dict[str, Any]) -> dict[str, Any]:
    """The three run-level t_half estimates of a summary (seconds or None)."""
    o = summary["overall"]
    hl, m = o["half_life"], o["model_half_life"]
    return {
        ESTIMATORS[0]: hl["median_t_half_seconds"],
        ESTIMATORS[1]: hl["median_t_half_within_gaps_seconds"],
        ESTIMATORS[2]: m["t_half_seconds"] if m["status"] == "estimate" else None,
        "ci": (m["ci_low_seconds"], m["ci_high_seconds"]),
        "n_official": hl["n_official"], "n_below": hl["n_below_gaps"],
        "n_beyond": hl["n_beyond_gaps"], "n_cases": o["n_scored"],
        "coverage": o["camera_gate"]["coverage"],
    }


def _fmt(v: float | None, spec: str = ".1f") -> str:
    return "n/a" if v is None else format(v, spec)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=2)
    ap.add_argument("--seeds", default="0", help="build seeds, comma separated")
    ap.add_argument("--taus", default="6,15,40")
    ap.add_argument("--fps", type=float, default=4.0)
    ap.add_argument("--size", default="160x90")
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()
    size = tuple(int(v) for v in args.size.lower().split("x"))
    taus = [float(t) for t in args.taus.split(",")]
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench_hl_"))
    print("seed  tau  truth | " + " | ".join(ESTIMATORS) + " [95% CI] | official fits "
          "(below/beyond gaps) | camera coverage")
    worst = {e: [] for e in ESTIMATORS}
    ranked = {e: 0 for e in ESTIMATORS}
    seeds = [int(s) for s in args.seeds.split(",")]
    for seed in seeds:
        by_tau = {}
        for tau in taus:
            est = estimates(run_setting(work, seed, args.images, tau, args.fps, size))
            by_tau[tau] = est
            truth = tau * math.log(2.0)
            cells = [f"{_fmt(est[e])} ({_fmt(est[e] and est[e] / truth, '.2f')}x)" for e in ESTIMATORS]
            print(f"{seed:4d} {tau:4g} {truth:6.1f} | " + " | ".join(cells)
                  + f" [{_fmt(est['ci'][0])}, {_fmt(est['ci'][1])}] | {est['n_official']}/"
                  f"{est['n_cases']} ({est['n_below']}/{est['n_beyond']}) | {est['coverage']}",
                  flush=True)
        for e in ESTIMATORS:
            vals = [by_tau[t][e] for t in taus]
            ok = all(v is not None for v in vals)
            ranked[e] += ok and all(a < b for a, b in zip(vals, vals[1:], strict=False))
            worst[e].append(max(abs(math.log(v / (t * math.log(2.0)))) for v, t in zip(vals, taus, strict=True))
                            if ok else math.inf)
    print(f"\nover {len(seeds)} seed(s): settings ranked in order / largest factor off the truth")
    for e in ESTIMATORS:
        factors = ", ".join(_fmt(math.exp(w), ".2f") if math.isfinite(w) else "n/a"
                            for w in worst[e])
        print(f"  {e:30s} ranked {ranked[e]}/{len(seeds)}; worst factor per seed: {factors}")
    print(f"workdir: {work}")


if __name__ == "__main__":
    main()
