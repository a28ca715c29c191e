"""Executors on the sim CMBench set: 1 vs 2 workers, local and Ray, and Ray's overheads.

Builds a sim CMBench of N context videos (2N tasks), lets the sim generator continue
every context with perfect memory (not timed), then scores the same continuations
four times into fresh run directories -- local x1, local x2, ray x1, ray x2 -- with the
offline scorer, and reports

* seconds per executor (median over the repeats, and each repeat) and the 2-worker
  speedup of each (target >= 1.6x on 2 cores);
* that ``scores.jsonl`` and ``summary.json`` are byte-identical across the four;
* Ray's start-up: ``ray.init(num_cpus=2)`` of a local instance, and one actor's start
  (process + imports + the run-directory check);
* the machine's own ceiling, measured beside them: a pure-Python loop run twice in one
  process and once in each of two processes (on a machine shared with other jobs this
  is well below 2, and no executor can beat it);
* the workload's ceiling: the same scoring calls split by hand between two warm plain
  processes vs one (no executor, start-up excluded) -- what the machine gives this very
  work in the same minutes;
* Ray's per-item overhead: the round trip of an empty one-item actor call, and the
  end-to-end difference (ray x1 - local x1) / items, which includes the actor's start
  and backend load.

One worker is one CPU: pool workers and Ray actors cap their native threads at their
share of the CPUs (:mod:`vidmem.runners.worker_threads`), and for the four timed runs
the driver caps its own at 1 too, so local x1 is one core like ray x1. The default --
``--workers 1`` as a user gets it, OpenCV using every core -- is timed once first and
reported as ``local_x1_all_threads``. Every run starts cold (the driver's loaded models
are dropped; pools and actors load their own), and the four are interleaved over the
repeats. The machine's load average is reported: on a shared machine the speedups are
lower bounds. ``--tiny`` (1 context video, no ceilings, 5 empty Ray calls) is a smoke run
whose numbers mean nothing.

Usage: python benchmarks/bench_executor.py [--n-cases 8] [--repeats 1] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from vidmem.benchmarks.cmbench import BENCHMARK as bench
from vidmem.benchmarks.cmbench.data import load_cmbench
from vidmem.benchmarks.cmbench.scorer import ScorerConfig
from vidmem.runners import benchmark_run as runner
from vidmem.runners.execute import ExecutorSpec
from vidmem.runners.sim_build import build
from vidmem.runners.worker_threads import limit_threads

RUNS = (("local", 1), ("local", 2), ("ray", 1), ("ray", 2))


def _burn(n: int) -> int:
    total = 0
    for i in range(n):
        total += i
    return total


def machine_ceiling(n: int = 20_000_000) -> float:
    """Speedup of two processes over one on pure-Python work, right now."""
    import multiprocessing as mp

    t0 = time.perf_counter()
    _burn(n)
    _burn(n)
    one = time.perf_counter() - t0
    with mp.get_context("spawn").Pool(2) as pool:
        pool.map(_burn, [1, 1])  # started before the clock
        t0 = time.perf_counter()
        pool.map(_burn, [n, n], chunksize=1)
        two = time.perf_counter() - t0
    return one / two


def _score_alone(items) -> float:
    """Seconds to score ``items`` one after another in this (warm) process, on one core."""
    from vidmem.runners.benchmark_run import _score_work

    limit_threads(1)
    t0 = time.perf_counter()
    for item in items:
        _score_work(bench, item)
    return time.perf_counter() - t0


def workload_ceiling(items) -> float:
    """Speedup of two warm plain processes over one on these very items, no executor.

    The same scoring calls as the executors make, split by hand between two ``spawn``
    processes that were started and warmed (imports, backends) before the clock: what
    this machine gives this workload right now, with nothing of vidmem's scheduling.
    """
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    with ctx.Pool(1) as pool:
        pool.apply(_score_alone, (items[:1],))
        t0 = time.perf_counter()
        pool.apply(_score_alone, (items,))
        one = time.perf_counter() - t0
    with ctx.Pool(2) as pool:
        pool.map(_score_alone, [items[:1], items[1:2]], chunksize=1)
        t0 = time.perf_counter()
        pool.map(_score_alone, [items[0::2], items[1::2]], chunksize=1)
        two = time.perf_counter() - t0
    return one / two


def _noop(item):
    return {"response": None, "score": None}


def ray_overheads(ray, n_calls: int) -> dict[str, float]:
    """One actor's start, and the round trip of an empty one-item call."""
    from vidmem.runners.execute import WorkItem
    from vidmem.runners.executor_ray import ItemWorker

    actor_class = ray.remote(ItemWorker).options(num_cpus=1)
    t0 = time.perf_counter()
    actor = actor_class.remote(_noop)
    ray.get(actor.check.remote(None, None, ()))
    start = time.perf_counter() - t0
    item = [WorkItem.make("x", "noop", {"i": 0})]
    ray.get(actor.run.remote(item))
    t0 = time.perf_counter()
    for _ in range(n_calls):
        ray.get(actor.run.remote(item))
    call = (time.perf_counter() - t0) / n_calls
    ray.kill(actor)
    return {"actor_start_seconds": round(start, 3), "empty_item_call_ms": round(call * 1e3, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-cases", type=int, default=8, help="context videos (2 tasks each)")
    ap.add_argument("--repeats", type=int, default=1, help="timings per executor (median)")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--tiny", action="store_true",
                    help="1 context video, no ceilings, 5 empty calls (smoke run)")
    args = ap.parse_args()
    if args.tiny:
        args.n_cases, args.repeats = 1, 1
    n_calls = 5 if args.tiny else 200
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-executor-"))
    work.mkdir(parents=True, exist_ok=True)

    build("cmbench", work / "data", seed=0, n_cases=args.n_cases)
    ds = load_cmbench(work / "data")
    cfg = ScorerConfig.from_preset("offline")
    gen_run = runner.open_run(bench, ds, work / "gen", cfg, {}, resume=False, overwrite=True,
                              argv=None)
    videos = runner.generate(bench, ds, gen_run, "sim", {"memory": "perfect"}, quiet=True)["dir"]

    def timed(name: str, kind: str, workers: int, rep: int) -> float:
        out = work / "runs" / f"{name}-{rep}"
        run = runner.open_run(bench, ds, out, cfg, {"videos": str(videos)}, resume=False,
                              overwrite=True, argv=None)
        spec = ExecutorSpec(kind=kind, workers=workers).sharing(work / "data")
        runner._BACKENDS.clear()  # every run starts cold, the driver's models included
        t0 = time.perf_counter()
        runner.score(bench, ds, run, videos, cfg, quiet=True, executor=spec)
        took = time.perf_counter() - t0
        outputs[name] = ((out / "scores.jsonl").read_bytes(), (out / "summary.json").read_bytes())
        return took

    from vidmem.runners.execute import WorkItem

    scan = bench.find_outputs(ds, videos)
    work_items = [WorkItem.make(x.item_id, "score", dict(x.request), unkeyed=x.unkeyed)
                  for x in bench.score_items(ds, scan, cfg, work / "gen")]
    outputs: dict[str, tuple[bytes, bytes]] = {}
    load_before = os.getloadavg()[0]
    all_threads = None if args.tiny else timed("local_x1_all_threads", "local", 1, 0)
    limit_threads(1)

    import ray

    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray_init = time.perf_counter() - t0
    overheads = ray_overheads(ray, n_calls)

    seconds: dict[str, list[float]] = {}
    ceilings, workload = [], []
    for rep in range(args.repeats):
        if not args.tiny:  # spawned pools: the slowest part of a smoke run
            ceilings.append(machine_ceiling())
            workload.append(workload_ceiling(work_items))
        for kind, workers in RUNS:
            name = f"{kind}_x{workers}"
            seconds.setdefault(name, []).append(timed(name, kind, workers, rep))
    med = {k: statistics.median(v) for k, v in seconds.items()}
    n_items = len(ds.tasks)
    result = {
        "tasks": n_items, "repeats": args.repeats,
        "seconds": {k: round(v, 2) for k, v in med.items()},
        "seconds_per_repeat": {k: [round(x, 2) for x in v] for k, v in seconds.items()},
        "local_x1_all_threads_seconds": None if all_threads is None else round(all_threads, 2),
        "speedup_2_vs_1": {"local": round(med["local_x1"] / med["local_x2"], 2),
                           "ray": round(med["ray_x1"] / med["ray_x2"], 2)},
        "machine_ceiling_2_vs_1": [round(c, 2) for c in ceilings],
        "workload_ceiling_2_vs_1": [round(c, 2) for c in workload],
        "byte_identical": len(set(outputs.values())) == 1,
        "ray_init_seconds": round(ray_init, 2),
        **overheads,
        "ray_minus_local_per_item_ms": round((med["ray_x1"] - med["local_x1"]) / n_items * 1e3, 1),
    }
    result["load_average_before_after"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    ray.shutdown()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
