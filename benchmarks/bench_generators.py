"""Time the diffusers generators: model-load seconds, seconds per clip, peak memory.

For each generator (``wan2.2-ti2v-5b`` text-to-video and image-to-video,
``wan2.2-t2v-a14b``, ``wan2.2-i2v-a14b``, ``flux2-wan``) this builds its tiny random
pipeline(s) offline (:mod:`vidmem.generators.diffusers.tiny`; ``--weights-dir`` points
at real or full-size folders instead), then in one process, as one worker would:

1. constructs the generator (weights found, every rule checked; nothing loaded);
2. generates ``--items`` clips with distinct ids (the cache off, so each is generated),
   timing each: the first pays the pipeline load, the rest reuse it;
3. reports load seconds (from the generator's own counter), seconds per clip after
   the first, the pipeline loads counted in the process (1 per pipeline class: loading
   is paid once per worker, not per item) and peak memory (CUDA max allocated on a GPU,
   else the process's peak resident set, which includes torch itself).

Usage: python benchmarks/bench_generators.py [--items 4] [--size 32] [--frames 9]
       [--steps 2] [--device cpu] [--threads 1] [--weights-dir DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from PIL import Image

from vidmem.generators.diffusers import runtime
from vidmem.generators.diffusers.tiny import build_tiny
from vidmem.generators.loading import load_generator
from vidmem.generators.requests import GenerationRequest, ReferenceImage

#: generator -> (tiny kinds it needs, request shape)
CASES = {
    "wan2.2-ti2v-5b (text)": ("wan2.2-ti2v-5b", {"weights": "wan-ti2v-5b"}, "text"),
    "wan2.2-ti2v-5b (image)": ("wan2.2-ti2v-5b", {"weights": "wan-ti2v-5b"}, "image"),
    "wan2.2-t2v-a14b": ("wan2.2-t2v-a14b", {"weights": "wan-t2v-a14b"}, "text"),
    "wan2.2-i2v-a14b": ("wan2.2-i2v-a14b", {"weights": "wan-i2v-a14b"}, "image"),
    "flux2-wan (3 refs)": ("flux2-wan", {"weights": "wan-ti2v-5b",
                                         "keyframe_weights": "flux2-klein"}, "refs"),
}


def _peak(device: str) -> dict[str, Any]:
    gpu = runtime.peak_memory_bytes(device)
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"peak_gpu_mb": None if gpu is None else round(gpu / 2**20, 1),
            "peak_rss_mb": round(rss_kb / 1024, 1)}


def bench(name: str, work: Path, weights: dict[str, str], args: argparse.Namespace) -> dict[str, Any]:
    gen_name, need, shape = CASES[name]
    runtime.clear_pipelines()
    opts = {k: weights[v] for k, v in need.items()}
    opts.update(height=str(args.size), width=str(args.size), num_frames=str(args.frames),
                steps=str(args.steps), device=args.device, cache="off",
                max_sequence_length="16", dtype=args.dtype)
    if gen_name == "flux2-wan":
        opts["keyframe_steps"] = str(args.steps)
    t0 = time.perf_counter()
    gen = load_generator(gen_name, opts)
    construct = time.perf_counter() - t0
    start = work / "start.png"
    refs = []
    for k in range(3):
        refs.append(work / f"ref{k}.png")
        Image.new("RGB", (64 + 16 * k, 64), (60 * k, 120, 200 - 50 * k)).save(refs[-1])
    Image.new("RGB", (args.size, args.size), (200, 80, 20)).save(start)
    seconds, loads = [], []
    for i in range(args.items):
        kw: dict[str, Any] = {}
        if shape == "image":
            kw["start_image"] = str(start)
        elif shape == "refs":
            kw["references"] = tuple(ReferenceImage(str(p)) for p in refs)
        req = GenerationRequest(f"item_{i}", "bench", "a red cube on a table turns slowly",
                                str(work / name.split()[0] / f"item_{i}.mp4"), **kw)
        res = gen.generate(req)
        if res.status != "ok":
            raise SystemExit(f"{name}: {res.error}")
        seconds.append(res.seconds)
        loads.append(res.extras["load_seconds"])
    stats = runtime.load_stats()
    rest = seconds[1:] or seconds
    return {"generator": name, "construct_seconds": round(construct, 3),
            "first_item_seconds": round(seconds[0], 3),
            "model_load_seconds": round(sum(loads), 3),
            "load_seconds_per_item": [round(x, 3) for x in loads],
            "seconds_per_clip": round(sum(rest) / len(rest), 3),
            "pipeline_loads": stats["loads"], "items": args.items, **_peak(args.device)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--items", type=int, default=4)
    p.add_argument("--size", type=int, default=32)
    p.add_argument("--frames", type=int, default=9)
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    p.add_argument("--weights-dir", default=None,
                   help="folder with wan-ti2v-5b/, wan-t2v-a14b/, wan-i2v-a14b/, flux2-klein/ "
                   "(default: build tiny random ones)")
    p.add_argument("--only", default=None, help="comma-separated case names (prefix match)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        kinds = ("wan-ti2v-5b", "wan-t2v-a14b", "wan-i2v-a14b", "flux2-klein")
        t0 = time.perf_counter()
        weights = ({k: str(Path(args.weights_dir) / k) for k in kinds} if args.weights_dir else
                   {k: str(build_tiny(k, work / "weights" / k)) for k in kinds})
        build = time.perf_counter() - t0
        names = [n for n in CASES if not args.only
                 or any(n.startswith(o) for o in args.only.split(","))]
        rows = [bench(n, work, weights, args) for n in names]
    out = {"device": args.device, "cuda_available": torch.cuda.is_available(),
           "torch": torch.__version__, "threads": args.threads, "size": args.size,
           "frames": args.frames, "steps": args.steps, "build_seconds": round(build, 2),
           "rows": rows}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print(f"device {args.device} (CUDA available: {out['cuda_available']}), torch "
              f"{out['torch']}, {args.size}x{args.size}, {args.frames} frames, {args.steps} "
              f"steps; tiny pipelines built in {out['build_seconds']} s")
        head = ("generator", "load s", "1st item s", "s/clip", "loads", "peak")
        print("{:<24} {:>8} {:>10} {:>8} {:>6} {:>12}".format(*head))
        for r in rows:
            peak = (f"{r['peak_gpu_mb']} MB gpu" if r["peak_gpu_mb"] is not None
                    else f"{r['peak_rss_mb']} MB rss")
            print(f"{r['generator']:<24} {r['model_load_seconds']:>8} "
                  f"{r['first_item_seconds']:>10} {r['seconds_per_clip']:>8} "
                  f"{r['pipeline_loads']:>6} {peak:>12}")
            print(f"{'':<24} load s per item: {r['load_seconds_per_item']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
