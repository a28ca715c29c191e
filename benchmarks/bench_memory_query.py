"""Memory-store query cost: one compose of each policy over a two-hour film.

A synthetic film of 2 h cut into 120 one-minute segments holds 7,200 frames on the
1 fps grid and 14,400 on the 2 fps grid; every frame and text gets a random 768-d
unit embedding (the embedders are table look-ups, so only the store and the policies
are measured). All six policies observe the whole film through one store, then each
composes for a segment starting at the end of the film (everything is past) with
budget 16. Reported:

* ms per query: median over ``--repeats`` composes, each with a new instruction text
  (so the query embedding is a cache miss, as in a real replay), and the slowest;
* MB per 1,000 stored frames: the embedding matrices (per backend, capacity included)
  and everything the store and cache hold (tracemalloc), over all stored frames.

Target: < 50 ms per query on a 2-core machine.

Usage: python benchmarks/bench_memory_query.py [--hours 2] [--segments 120] [--dim 768]
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc
from collections.abc import Sequence

import numpy as np

from vidmem.memory.embeddings import EmbeddingCache
from vidmem.memory.frames import Frame, Segment, frame_keys
from vidmem.memory.policy import FilmContext, load_policy
from vidmem.memory.store import MemoryStore
from vidmem.models.protocols import BackendInfo


def _unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    m = rng.standard_normal((n, dim), dtype=np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


class TableImages:
    """An image embedder that looks a frame's row up by the key carried in its pixels."""

    def __init__(self, name: str, rows: np.ndarray, row_of: dict[int, int]) -> None:
        self.name, self.rows, self.row_of = name, rows, row_of

    def info(self) -> BackendInfo:
        return BackendInfo(name=f"bench/{self.name}")

    def embed_images(self, images: Sequence[np.ndarray]) -> np.ndarray:
        return self.rows[[self.row_of[int(im[0, 0, 0])] for im in images]]


class HashTexts:
    """A text embedder: a random unit vector seeded by the text."""

    def __init__(self, name: str, dim: int) -> None:
        self.name, self.dim = name, dim

    def info(self) -> BackendInfo:
        return BackendInfo(name=f"bench/{self.name}")

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([_unit_rows(np.random.default_rng(abs(hash(t)) % 2**32), 1, self.dim)[0]
                         for t in texts])


class BenchFilm:
    """Frames whose pixels are one int64 key (the embedder reads it back)."""

    def __init__(self) -> None:
        self.film_id = "bench"
        self.embeddings = EmbeddingCache(batch_size=256)

    def frames_of(self, segment: Segment) -> list[Frame]:
        return [Frame(k, segment.index, r, np.full((1, 1, 1), k, np.int64))
                for k, r in frame_keys(segment)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=2.0)
    ap.add_argument("--segments", type=int, default=120)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--tiny", action="store_true", help="3 min film, 3 segments, 32-d (smoke run)")
    args = ap.parse_args()
    if args.tiny:
        args.hours, args.segments, args.dim, args.repeats = 0.05, 3, 32, 2

    length = args.hours * 3600.0
    step = length / args.segments
    segments = [Segment(i, i * step, (i + 1) * step, f"segment {i} instruction")
                for i in range(args.segments)]
    keys = [k for s in segments for k, _ in frame_keys(s)]
    rng = np.random.default_rng(0)
    row_of = {k: i for i, k in enumerate(keys)}
    frame_rows, key_rows = _unit_rows(rng, len(keys), args.dim), _unit_rows(rng, len(keys), args.dim)
    image, keyframe = TableImages("image", frame_rows, row_of), TableImages("keys", key_rows, row_of)
    seg_text, frame_text = HashTexts("seg-text", args.dim), HashTexts("frame-text", args.dim)
    options = {
        "text_frame": {"frame_text_embedder": frame_text, "frame_image_embedder": image},
        "seg_uniform": {"segment_text_embedder": seg_text},
        "seg_dino_key": {"segment_text_embedder": seg_text, "keyframe_embedder": keyframe},
        "seg_frame": {"segment_text_embedder": seg_text, "frame_text_embedder": frame_text,
                      "frame_image_embedder": image},
        "recency": {}, "random": {"seed": 0},
    }
    policies = {name: load_policy(name, opts) for name, opts in options.items()}
    policies["text_frame@2fps"] = load_policy("text_frame", {**options["text_frame"], "fps": 2})

    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    film = BenchFilm()
    store = MemoryStore(film)
    t0 = time.perf_counter()
    for p in policies.values():
        p.reset(FilmContext(film.film_id))
    for seg in segments:
        store.observe(seg)
        for p in policies.values():
            p.observe(seg, store)
    build_s = time.perf_counter() - t0
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    traced = sum(s.size_diff for s in after.compare_to(before, "filename"))
    n_frames = len(store.frames)
    n1, n2 = len(store.pool(1.0)), len(store.pool(2.0))
    print(f"film: {args.hours:g} h, {args.segments} segments, {n1:,} frames at 1 fps + {n2:,} "
          f"at 2 fps = {n_frames:,} stored frames, {args.dim}-d; observe all: {build_s:.1f} s")

    start = length  # a segment right after the film: every stored frame is past
    print(f"\n{'policy':<16}{'pool':>8}{'median ms':>11}{'max ms':>9}{'refs':>6}")
    for name, p in policies.items():
        times = []
        for r in range(args.repeats):
            t = time.perf_counter()
            refs = p.compose(f"new instruction {r} for {name}", start, 16, store)
            times.append((time.perf_counter() - t) * 1000)
        pool = n2 if name.endswith("2fps") else (n1 if name in ("text_frame", "recency", "random")
                                                 else "top 5")
        print(f"{name:<16}{pool!s:>8}{statistics.median(times):>11.2f}{max(times):>9.2f}"
              f"{len(refs):>6}")

    per_k = 1000.0 / n_frames
    emb = film.embeddings
    print("\nmemory per 1,000 stored frames:")
    for backend in (image, keyframe):
        m = emb.image_matrix(backend)
        print(f"  {backend.info().name}: {m.shape[0]:,} rows x {m.shape[1]} float32 = "
              f"{m.nbytes / 2**20:.1f} MB used ({m.nbytes / m.shape[0] * 1000 / 2**20:.2f} MB "
              f"per 1,000 embedded frames)")
    print(f"  embedding matrices, capacity included: {emb.nbytes * per_k / 2**20:.2f} MB")
    print(f"  store arrays (ids, times, rows): {store.nbytes * per_k / 2**20:.3f} MB")
    print(f"  everything allocated while observing (tracemalloc): {traced * per_k / 2**20:.2f} MB")


if __name__ == "__main__":
    main()
