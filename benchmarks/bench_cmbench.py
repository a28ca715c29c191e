"""CMBench scoring throughput on the official path with tiny random models.

Builds an official-layout dataset of N tasks (default 116) whose continuations have 64
frames each, scores it with OWL-ViT + SAM 2 + DINOv2 (tiny random weights, detection
threshold 0 so every frame goes through all three models: the worst case), and reports

* frames/second end to end;
* the plumbing ratio: end-to-end seconds / (decode seconds + model seconds), where the
  two parts are measured alone on the same frames (target <= 1.3);
* re-scoring the unchanged run (served from the run store; target >= 20x faster).

Only the runner's public API is used: the models are loaded outside every timing by
scoring a one-task warm-up run first (the runner keeps its loaded backends per process),
and the model-alone timing loads its own copy with ``load_backends``.

Usage: python benchmarks/bench_cmbench.py [--tasks 116] [--frames 64] [--workdir DIR]
       python benchmarks/bench_cmbench.py --tiny   (1 task of 4 frames: a smoke run)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from vidmem.benchmarks.cmbench import BENCHMARK as bench
from vidmem.benchmarks.cmbench.data import load_cmbench, resolve_references
from vidmem.benchmarks.cmbench.scorer import ScorerConfig, masked_crop
from vidmem.io.video import iter_frames, write_video
from vidmem.models.tiny import tiny_official_cmbench
from vidmem.runners import benchmark_run as runner

W, H, FPS = 320, 180, 8


def _clip(rng: np.random.Generator, n: int, with_patch: bool) -> np.ndarray:
    base = rng.integers(0, 255, size=(H // 4, W // 4, 3), dtype=np.uint8).repeat(4, 0).repeat(4, 1)
    frames = np.repeat(base[None], n, axis=0)
    if with_patch:
        for i in range(n):
            x = 40 + (i * 3) % 150
            frames[i, 50:110, x:x + 80] = (200, 60 + i % 100, 40)
    return frames


def build(root: Path, n_tasks: int, n_frames: int) -> Path:
    rng = np.random.default_rng(0)
    ds = root / "ds"
    (ds / "videos" / "synthetic").mkdir(parents=True)
    n_videos = max(1, n_tasks // 2)
    rows = []
    for v in range(n_videos):
        vid = f"syn_{v + 1:03d}"
        write_video(ds / "videos/synthetic" / f"{vid}.mp4", _clip(rng, 48, True), FPS)
        for k, tt in enumerate(("reappear", "revisit")):
            if len(rows) == n_tasks:
                break
            rows.append({
                "type": "synthetic", "task_id": f"{vid}_{tt}_01", "scene": "bench", "video": f"videos/synthetic/{vid}.mp4",
                "context_clip_prompts": [{"clip_id": f"{i:02d}", "clip_prompt": "x"} for i in range(1, 7)],
                "continue_prompt": "bring it back", "task_type": tt, "target_label": "red block",
                "target_aliases": ["block"],
                "references": [{"timestamp_seconds": (10 + k) / FPS, "frame_index": 10 + k,
                                "bbox_xyxy_normalized": [0.1, 50 / H, 0.6, 110 / H]}],
            })
    (ds / "metadata.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    videos = root / "continuations"
    videos.mkdir()
    one = videos / "_one.mp4"
    write_video(one, _clip(rng, n_frames, True), FPS)
    for r in rows:
        shutil.copy(one, videos / f"{r['task_id']}.mp4")
    one.unlink()
    return videos


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=116)
    ap.add_argument("--frames", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--tiny", action="store_true", help="1 task x 4 frames, batch 4 (smoke run)")
    args = ap.parse_args()
    if args.tiny:
        args.tasks, args.frames, args.batch_size = 1, 4, 4
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-cmbench-"))
    work.mkdir(parents=True, exist_ok=True)
    videos = build(work, args.tasks, args.frames)
    weights = tiny_official_cmbench(work / "weights")
    cfg = ScorerConfig.from_preset("official", detector_threshold=0.0, batch_size=args.batch_size)
    cfg = ScorerConfig(**{**cfg.__dict__, "backend_options": {n: {"weights": p} for n, p in weights.items()}})
    ds = load_cmbench(work / "ds")

    # Load the models once outside every timing: all three measurements use loaded models.
    # Scoring a one-task run loads them into the runner's per-process backends, which the
    # timed runs reuse; the model-alone timing uses its own loaded copy.
    warm = dataclasses.replace(ds, tasks=ds.tasks[:1])
    runner.score(bench, warm, runner.open_run(bench, warm, work / "warmup", cfg, {"videos": str(videos)},
                                              resume=False, overwrite=True, argv=None),
                 videos, cfg, quiet=True)
    scorer = bench.load_backends(cfg)

    t0 = time.perf_counter()
    run = runner.open_run(bench, ds, work / "run", cfg, {"videos": str(videos)}, resume=False, overwrite=True, argv=None)
    runner.score(bench, ds, run, videos, cfg, quiet=True)
    e2e = time.perf_counter() - t0

    paths = sorted(videos.glob("*.mp4"))
    t0 = time.perf_counter()
    batches = [b for p in paths for _, b in iter_frames(p, batch_size=args.batch_size)]
    decode = time.perf_counter() - t0
    n_frames = sum(len(b) for b in batches)

    task = ds.tasks[0]
    refs = scorer.reference_crops(task, str(ds.video_path(task)), resolve_references(ds, task))
    t0 = time.perf_counter()
    for _ in ds.tasks:  # every task embeds its reference once
        scorer.reference_crops(task, str(ds.video_path(task)), resolve_references(ds, task))
    for batch in batches:
        dets = scorer.detector.detect(list(batch), text_queries=[task.target_label, *task.target_aliases])
        boxes = [tuple(int(round(v)) for v in d[0].box) for d in dets if d]
        frames = [f for f, d in zip(batch, dets, strict=True) if d]
        boxes = [(x0, y0, max(x1, x0 + 1), max(y1, y0 + 1)) for x0, y0, x1, y1 in boxes]
        masks = scorer.segmenter.segment(frames, boxes)
        crops = [masked_crop(f, b, m) for f, b, m in zip(frames, boxes, masks, strict=True)]
        emb = scorer.embedder.embed_images(crops)
        _ = emb @ refs[0].embedding
    model = time.perf_counter() - t0

    t0 = time.perf_counter()
    run2 = runner.open_run(bench, ds, work / "run", cfg, {"videos": str(videos)}, resume=False, overwrite=False, argv=None)
    again = runner.score(bench, ds, run2, videos, cfg, quiet=True)
    rescore = time.perf_counter() - t0

    result = {
        "tasks": len(ds.tasks), "frames_scored": n_frames, "batch_size": args.batch_size,
        "end_to_end_seconds": round(e2e, 2), "frames_per_second": round(n_frames / e2e, 1),
        "decode_alone_seconds": round(decode, 2), "models_alone_seconds": round(model, 2),
        "plumbing_ratio": round(e2e / (decode + model), 3),
        "rescore_seconds": round(rescore, 3), "rescore_speedup": round(e2e / rescore, 1),
        "rescore_cached_items": again["execution"]["cached"],
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
