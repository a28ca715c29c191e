"""Track-B's closed loop on one long sim story: retrieval time per segment as the rollout grows.

Builds one sim story of ``--segments`` segments (default 80), then runs the closed loop
(:func:`vidmem.benchmarks.vmem_track_b.loop.run_rollout`, sim generator with no memory of
its own) under each offline retrieval condition (``seg_uniform``, ``seg_dino_key``; the
offline preset has no text-image embedder for ``text_frame`` / ``seg_frame``), with the
loop's per-segment trace. Per condition it prints, for the first, middle and last ten
segments that have a past, the median time of

* retrieval: the condition's references (compose, the eligibility rule, decoding the
  picked frames and writing them as PNGs), and of it the choosing alone;
* observe: the store takes the new clip (for ``seg_dino_key`` its one decode and the
  keyframe embedding of its 2 fps frames);
* the sim generator's segment (not the loop; for scale);

with the least-squares slope over all segments, and how often clips were decoded and
frames embedded, which must equal the number of clips and of their frames (the store
never re-decodes or re-embeds an old clip). Times are process CPU time by default (the
machine may be shared), ``--clock wall`` for wall time. Retrieval is "flat" when its
end-window median exceeds the start-window median by at most ``--max-growth`` (50 %);
the script exits 1 otherwise.

    python benchmarks/bench_track_b_loop.py [--segments 80] [--out /tmp/bench_track_b_loop]
    python benchmarks/bench_track_b_loop.py --tiny   (14 segments, seg_dino_key: a smoke run)
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from vidmem.benchmarks.vmem_track_b import BENCHMARK
from vidmem.benchmarks.vmem_track_b.config import ScorerConfig
from vidmem.benchmarks.vmem_track_b.loop import run_rollout
from vidmem.benchmarks.vmem_track_b.sim_build import build_track_b
from vidmem.generators.sim import SimGenerator
from vidmem.memory.frames import Segment, frame_keys

CONDITIONS = ("seg_uniform", "seg_dino_key")
WINDOW = 10


def _windows(values: np.ndarray) -> dict[str, float]:
    """Median (ms) of the first, middle and last ``WINDOW`` values."""
    mid = len(values) // 2
    return {"start": float(np.median(values[:WINDOW])) * 1e3,
            "middle": float(np.median(values[mid - WINDOW // 2: mid + WINDOW // 2])) * 1e3,
            "end": float(np.median(values[-WINDOW:])) * 1e3}


def _slope_ms(segments: np.ndarray, seconds: np.ndarray) -> float:
    """Least-squares slope of time against segment number, ms per segment."""
    return float(np.polyfit(segments.astype(np.float64), seconds * 1e3, 1)[0])


def _frames_on_grid(story: Any, fps: float) -> int:
    start, n = 0.0, 0
    for seg in story.segments:
        end = start + float(seg.duration_seconds)
        n += sum(fps in rates for _, rates in frame_keys(Segment(0, start, end), (1.0, 2.0)))
        start = end
    return n


def _phase(trace: list[dict[str, Any]], phase: str, clock: str) -> dict[str, Any]:
    """Windows and slope of one phase's time over the segments that have a past."""
    rows = [t for t in trace if t["segment"] > 1]
    key = f"{phase}_cpu_seconds" if clock == "cpu" else f"{phase}_seconds"
    segs = np.array([t["segment"] for t in rows])
    seconds = np.array([t[key] for t in rows])
    w = _windows(seconds)
    return {**w, "slope_ms_per_segment": _slope_ms(segs, seconds),
            "growth": (w["end"] - w["start"]) / w["start"] if w["start"] > 0 else 0.0}


def run_condition(rollout: Any, story: Any, sim: SimGenerator, clock: str) -> dict[str, Any]:
    trace: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    run_rollout(rollout, sim, {"generator_key": "sim"}, story=story, trace=trace)
    return {"segments": len(trace), "wall_seconds": time.perf_counter() - t0, "clock": clock,
            **{phase: _phase(trace, phase, clock)
               for phase in ("retrieve", "pick", "observe", "generate")},
            "decodes": trace[-1]["decodes"], "embedded": trace[-1]["embedded"]}


def _line(label: str, r: dict[str, Any], digits: int = 2) -> str:
    return (f"  {label:<34} start {r['start']:.{digits}f}  middle {r['middle']:.{digits}f}  end "
            f"{r['end']:.{digits}f}  slope {r['slope_ms_per_segment'] * 1e3:+.1f} us/segment  "
            f"growth {r['growth']:+.0%}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--segments", type=int, default=80)
    ap.add_argument("--out", type=Path, default=Path("/tmp/bench_track_b_loop"))
    ap.add_argument("--conditions", default=",".join(CONDITIONS))
    ap.add_argument("--max-growth", type=float, default=0.5,
                    help="largest allowed (end - start) / start of the median retrieval time")
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                    help="time measured: process CPU time (default; robust on a shared machine) "
                    "or wall time")
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON too")
    ap.add_argument("--tiny", action="store_true",
                    help="the shortest sim story (14 segments), seg_dino_key only (smoke run)")
    args = ap.parse_args()
    if args.tiny:
        args.segments, args.conditions = 14, "seg_dino_key"
    conditions = tuple(c for c in args.conditions.split(",") if c)
    shutil.rmtree(args.out, ignore_errors=True)
    gold = args.out / "gold"
    gold.mkdir(parents=True)
    t0 = time.perf_counter()
    build_track_b(gold, seed=0, n_cases=1, n_segments=args.segments, gap_long_threshold=30)
    print(f"sim story of {args.segments} segments built in {time.perf_counter() - t0:.1f} s")
    ds = BENCHMARK.load(gold)
    story = ds.stories[0]
    config = ScorerConfig.from_preset("offline", conditions=conditions)
    rollouts = {r.request.extras["condition"]: r
                for r in BENCHMARK.rollouts(ds, args.out / "rollouts", config=config)}
    sim = SimGenerator(memory="none", seed=0, fps=4.0)
    grid2 = _frames_on_grid(story, 2.0)
    results, flat = {}, True
    for cond in conditions:
        r = results[cond] = run_condition(rollouts[cond], story, sim, args.clock)
        ok = r["retrieve"]["growth"] <= args.max_growth
        flat &= ok
        print(f"\n{cond}: {r['segments']} segments in {r['wall_seconds']:.1f} s "
              f"(median {args.clock} ms per segment over segments 2-11, the middle ten, the last ten)")
        print(_line("retrieval", r["retrieve"]) + ("  flat" if ok else "  NOT FLAT"))
        print(_line("  of which choosing", r["pick"]) + "  (compose + eligibility; the rest "
              "decodes and writes the PNGs)")
        print(_line("observe (decode + embed new clip)", r["observe"]))
        print(_line("sim generation (not the loop)", r["generate"], 1))
        print(f"  clips decoded {r['decodes']} (of {r['segments']} clips); frames embedded "
              f"{r['embedded'] or 'none'} ({grid2} frames on the 2 fps grid)")
    if args.json:
        print(json.dumps(results, indent=1))
    if args.tiny:  # 14 segments: the windows overlap and timings are noise
        print("\nsmoke run: flatness not judged")
        return 0
    print("\nretrieval stays flat" if flat else "\nretrieval does NOT stay flat")
    return 0 if flat else 1


if __name__ == "__main__":
    sys.exit(main())
