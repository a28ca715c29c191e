"""Benchmark exact frame access and streaming memory of vidmem.io.video.

What it measures:

1. **Sparse reads vs one GOP.** A 60 s 854x480 30 fps H.264 clip (keyframe every
   ``--gop`` frames, default 60) is made with :func:`vidmem.io.framecode.iter_indexed_frames`.
   Reading 8 frames spread over the clip with ``read_frames`` is timed against decoding
   one full GOP (keyframe to the next keyframe) in the middle of the clip with plain
   PyAV (seek + decode, no RGB conversion). Exact reading should cost a few GOPs at
   most (target ratio <= 3), never the whole file. Every frame read is checked against
   the index written in its pixels.
2. **Streaming memory.** Each clip (10 s and 60 s) is streamed through ``iter_frames``
   in a fresh subprocess, which reports its peak resident memory (``VmHWM`` from
   ``/proc/self/status``); the peak should not grow with the clip length.

Usage::

    python benchmarks/bench_video.py --workdir /tmp/vidmem-bench --json results.json
    python benchmarks/bench_video.py --tiny --workdir DIR   (4 s and 2 s clips, 320x180: a smoke run)

The table goes to stdout; ``--json -`` prints the JSON to stdout instead of a file.
Clips are kept in ``--workdir`` and reused when present (``--remake`` rebuilds them).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import av
import numpy as np

from vidmem.io import video as V
from vidmem.io.framecode import decode_index, iter_indexed_frames

WIDTH, HEIGHT = 854, 480
FPS = 30
CRF = 23


def vm_hwm_kib() -> int:
    """Peak resident set size of this process in KiB (Linux ``VmHWM``)."""
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("VmHWM not found in /proc/self/status (Linux only)")


def make_clip(path: Path, seconds: int, gop: int, remake: bool,
              size: tuple[int, int] = (WIDTH, HEIGHT)) -> dict[str, Any]:
    """Encode (or reuse) a ``seconds``-long indexed clip; return how it was made."""
    n = seconds * FPS
    made = False
    t0 = time.perf_counter()
    if remake or not path.exists():
        V.write_video(path, iter_indexed_frames(n, size, seed=7), FPS, crf=CRF, gop=gop)
        made = True
    encode_s = time.perf_counter() - t0
    V.clear_probe_cache()
    t0 = time.perf_counter()
    info = V.probe(path)
    probe_s = time.perf_counter() - t0
    if info.n_frames != n:
        raise RuntimeError(f"{path}: expected {n} frames, probe found {info.n_frames}")
    keys = info.keyframe_indices
    return {
        "path": str(path),
        "seconds": seconds,
        "n_frames": n,
        "width": size[0],
        "height": size[1],
        "fps": FPS,
        "crf": CRF,
        "gop_requested": gop,
        "keyframes": len(keys),
        "gop_measured": (keys[1] - keys[0]) if len(keys) > 1 else n,
        "file_mib": round(path.stat().st_size / 2**20, 2),
        "encode_seconds": round(encode_s, 2) if made else None,
        "probe_cold_seconds": round(probe_s, 4),
    }


def decode_gop_pyav(path: Path, key_pts: int, n_frames: int) -> int:
    """Seek to a keyframe and decode ``n_frames`` frames with plain PyAV."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        container.seek(key_pts, stream=stream, backward=True)
        done = 0
        for frame in container.decode(stream):
            del frame
            done += 1
            if done == n_frames:
                break
    return done


def bench_sparse(path: Path, repeats: int) -> dict[str, Any]:
    info = V.probe(path)
    wanted = np.linspace(0, info.n_frames - 1, 8).round().astype(int).tolist()
    keys = info.keyframe_indices
    mid = len(keys) // 2
    k0, k1 = keys[mid], keys[mid + 1] if mid + 1 < len(keys) else info.n_frames

    sparse_times, gop_times, gop_rgb_times = [], [], []
    stats = V.DecodeStats()
    for r in range(repeats):
        stats.reset()
        t0 = time.perf_counter()
        frames = V.read_frames(path, wanted, stats=stats)
        sparse_times.append(time.perf_counter() - t0)
        got = [decode_index(f) for f in frames]
        if got != wanted:
            raise RuntimeError(f"inexact read: wanted {wanted}, frame codes say {got}")
        sparse_stats = {**stats.__dict__}

        t0 = time.perf_counter()
        decode_gop_pyav(path, info.frame_pts[k0], k1 - k0)
        gop_times.append(time.perf_counter() - t0)

        t0 = time.perf_counter()
        V.read_frames(path, range(k0, k1))
        gop_rgb_times.append(time.perf_counter() - t0)
        del r

    sparse = statistics.median(sparse_times)
    gop = statistics.median(gop_times)
    gop_rgb = statistics.median(gop_rgb_times)
    return {
        "indices": wanted,
        "gop_frames": [k0, k1],
        "repeats": repeats,
        "read_frames_8_seconds": round(sparse, 4),
        "decode_one_gop_pyav_seconds": round(gop, 4),
        "read_frames_one_gop_rgb_seconds": round(gop_rgb, 4),
        "ratio_vs_pyav_gop": round(sparse / gop, 2),
        "ratio_vs_read_frames_gop": round(sparse / gop_rgb, 2),
        "sparse_decode_stats": sparse_stats,
        "target_ratio": 3.0,
    }


def child_stream(path: str, batch_size: int | None) -> None:
    """Subprocess body: stream the clip and print peak memory as JSON."""
    info = V.probe(path)
    base = vm_hwm_kib()
    t0 = time.perf_counter()
    n = 0
    checksum = 0
    if batch_size:
        for idx, batch in V.iter_frames(path, batch_size=batch_size):
            n += len(idx)
            checksum += int(batch[:, 0, 0, 0].sum())
    else:
        for _i, frame in V.iter_frames(path):
            n += 1
            checksum += int(frame[0, 0, 0])
    elapsed = time.perf_counter() - t0
    if n != info.n_frames:
        raise RuntimeError(f"streamed {n} frames, expected {info.n_frames}")
    peak = vm_hwm_kib()
    print(
        json.dumps(
            {
                "frames": n,
                "seconds": round(elapsed, 3),
                "fps": round(n / elapsed, 1),
                "baseline_hwm_mib": round(base / 1024, 1),
                "peak_hwm_mib": round(peak / 1024, 1),
                "stream_delta_mib": round((peak - base) / 1024, 1),
            }
        )
    )


def bench_memory(path: Path, batch_size: int | None) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child-stream", str(path)]
    if batch_size:
        cmd += ["--child-batch", str(batch_size)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/vidmem-bench-video"))
    parser.add_argument("--json", default=None, help="write results here ('-' = stdout)")
    parser.add_argument("--gop", type=int, default=60, help="keyframe interval (frames)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=16, help="batch size for memory run")
    parser.add_argument("--remake", action="store_true", help="re-encode the clips")
    parser.add_argument("--long-seconds", type=int, default=60, help="the long clip's length")
    parser.add_argument("--short-seconds", type=int, default=10, help="the short clip's length")
    parser.add_argument("--size", default=f"{WIDTH}x{HEIGHT}", help="frame size WxH")
    parser.add_argument("--tiny", action="store_true",
                        help="4 s and 2 s clips of 320x180, gop 15, 1 repeat (smoke run)")
    parser.add_argument("--child-stream", help=argparse.SUPPRESS)
    parser.add_argument("--child-batch", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child_stream:
        child_stream(args.child_stream, args.child_batch)
        return 0

    if args.tiny:
        args.long_seconds, args.short_seconds, args.size, args.gop, args.repeats = 4, 2, "320x180", 15, 1
    width, height = (int(v) for v in args.size.split("x"))
    args.workdir.mkdir(parents=True, exist_ok=True)
    long_s, short_s = f"{args.long_seconds}s", f"{args.short_seconds}s"
    long_clip = args.workdir / f"indexed_{long_s}_{args.size}_gop{args.gop}.mp4"
    short_clip = args.workdir / f"indexed_{short_s}_{args.size}_gop{args.gop}.mp4"
    clips = {
        long_s: make_clip(long_clip, args.long_seconds, args.gop, args.remake, (width, height)),
        short_s: make_clip(short_clip, args.short_seconds, args.gop, args.remake, (width, height)),
    }
    sparse = bench_sparse(long_clip, args.repeats)
    memory = {
        f"{name}_{mode}": bench_memory(path, bs)
        for name, path in ((short_s, short_clip), (long_s, long_clip))
        for mode, bs in (("frames", None), (f"batch{args.batch_size}", args.batch_size))
    }
    result = {
        "machine": {
            "python": platform.python_version(),
            "pyav": av.__version__,
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
        "clips": clips,
        "sparse_read": sparse,
        "stream_memory": memory,
    }

    c = clips[long_s]
    print(
        f"clip: {c['n_frames']} frames {width}x{height} @ {FPS} fps, crf {CRF}, "
        f"gop {c['gop_measured']} ({c['keyframes']} keyframes), {c['file_mib']} MiB, "
        f"cold probe {c['probe_cold_seconds'] * 1000:.1f} ms"
    )
    print()
    print(f"{'sparse read (median of ' + str(args.repeats) + ')':<44}{'seconds':>10}")
    print(f"{'read_frames, 8 frames spread over ' + long_s:<44}{sparse['read_frames_8_seconds']:>10.4f}")
    print(f"{'PyAV decode of one GOP (no RGB)':<44}{sparse['decode_one_gop_pyav_seconds']:>10.4f}")
    print(f"{'read_frames of one GOP (RGB)':<44}{sparse['read_frames_one_gop_rgb_seconds']:>10.4f}")
    print(
        f"ratio 8 frames / one GOP: {sparse['ratio_vs_pyav_gop']:.2f}x vs PyAV GOP, "
        f"{sparse['ratio_vs_read_frames_gop']:.2f}x vs read_frames GOP (target <= 3x); "
        f"decode stats {sparse['sparse_decode_stats']}"
    )
    print()
    print(
        f"{'iter_frames run':<22}{'frames':>8}{'fps':>9}{'base MiB':>10}{'peak MiB':>10}{'delta':>8}"
    )
    for name, m in memory.items():
        print(
            f"{name:<22}{m['frames']:>8}{m['fps']:>9.1f}{m['baseline_hwm_mib']:>10.1f}"
            f"{m['peak_hwm_mib']:>10.1f}{m['stream_delta_mib']:>8.1f}"
        )

    text = json.dumps(result, indent=2)
    if args.json == "-":
        print(text)
    elif args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
        print(f"\nJSON written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
