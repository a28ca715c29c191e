"""Track-A on the sim film with all six policies: judge questions versus the naive count,
and where the time goes.

The two text-to-frame policies need a text-image embedder; with no weights here, the
script builds a tiny random SigLIP 2 (vidmem.models.tiny) so that every policy runs --
its rankings are meaningless, the counts are not. The naive count judges every
returned reference anew for every policy and every K = 1..budget; vidmem asks each
distinct (segment, frame) once.

It also counts the work of the first scoring: frames and packets the decoder handled
(the process-wide ``decode_stats``) against the frames the film's 1 fps + 2 fps grids
hold, and the images each encoder embedded, against the distinct frames.

    python benchmarks/bench_track_a.py [--budget 16] [--policies a,b] [--out /tmp/bench_track_a]
    python benchmarks/bench_track_a.py --tiny   (budget 2, seg_dino_key + recency: a smoke run)
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any

from vidmem.benchmarks.vmem_track_a import BENCHMARK
from vidmem.benchmarks.vmem_track_a import scorer as track_a_scorer
from vidmem.benchmarks.vmem_track_a.config import CROSS_MODAL, DEFAULT_POLICIES, ScorerConfig
from vidmem.benchmarks.vmem_track_a.sim_build import build_track_a
from vidmem.io.video_decoder import decode_stats
from vidmem.memory.frames import FilmFrames
from vidmem.models.tiny import build_tiny
from vidmem.runners.benchmark_run import open_run, score

#: images embedded, by backend name (counted by wrapping each loaded encoder)
EMBEDDED: Counter[str] = Counter()
#: the film frame sources made, for their grids' size
SOURCES: list[FilmFrames] = []


def _counting(backend: Any) -> None:
    if backend is None or getattr(backend, "_bench_counted", False):
        return
    embed = backend.embed_images

    def counted(images: Any, *a: Any, **k: Any) -> Any:
        EMBEDDED[backend.info().name] += len(images)
        return embed(images, *a, **k)

    backend.embed_images, backend._bench_counted = counted, True


def count_work() -> None:
    """Wrap the scorer's encoders and film sources (this process) to count their work."""
    init, make = track_a_scorer.TrackAScorer.__init__, track_a_scorer.FilmFrames

    def scorer_init(self: Any, config: Any) -> None:
        init(self, config)
        for backend in (self.frame, self.keyframe, self.similarity):
            _counting(backend)

    def film_frames(*a: Any, **k: Any) -> FilmFrames:
        SOURCES.append(make(*a, **k))
        return SOURCES[-1]

    track_a_scorer.TrackAScorer.__init__ = scorer_init  # type: ignore[method-assign]
    track_a_scorer.FilmFrames = film_frames  # type: ignore[misc,assignment]


def grid_frames(ds: Any) -> int:
    """Distinct frames on the 1 fps + 2 fps grids over every film's segments."""
    from vidmem.benchmarks.vmem_track_a.gold import load_film
    from vidmem.memory.frames import Segment, frame_keys

    total = 0
    for film_dir in ds.films:
        film = load_film(film_dir.path, "en")
        total += len({k for s in film.segments
                      for k, _ in frame_keys(Segment(s.index, s.start_seconds, s.end_seconds))})
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=16)
    ap.add_argument("--policies", default=",".join(DEFAULT_POLICIES))
    ap.add_argument("--out", type=Path, default=Path("/tmp/bench_track_a"))
    ap.add_argument("--dino", action="store_true",
                    help="keyframe and similarity encoder: a tiny random DINOv3 (the official "
                    "preset's), not the classic one")
    ap.add_argument("--tiny", action="store_true",
                    help="budget 2, policies seg_dino_key,recency (smoke run)")
    args = ap.parse_args()
    if args.tiny:
        args.budget, args.policies = 2, "seg_dino_key,recency"
    policies = tuple(args.policies.split(","))
    shutil.rmtree(args.out, ignore_errors=True)
    t0 = time.perf_counter()
    build_track_a(args.out / "sim", seed=0, n=1)
    t1 = time.perf_counter()
    options: dict[str, Any] = {"judge/sim-cards": {"weights": str(args.out / "sim" / "_cards")}}
    frame_embedder = None
    if set(policies) & CROSS_MODAL:
        frame_embedder = "siglip2/base-patch16-224"
        options[frame_embedder] = {"weights": str(build_tiny(frame_embedder,
                                                              args.out / "tiny-siglip2"))}
    dino = {}
    if args.dino:
        name = "dinov3/vitb16"
        dino = {"keyframe_embedder": name, "similarity_embedder": name}
        options[name] = {"weights": str(build_tiny(name, args.out / "tiny-dinov3"))}
    base = ScorerConfig.from_preset("offline", lang="en", policies=policies,
                                    frame_embedder=frame_embedder, budget=args.budget, **dino)
    config = ScorerConfig.from_dict({**base.to_dict(), "backend_options": options})
    ds = BENCHMARK.load(args.out / "sim" / "SimFilms")
    run = open_run(BENCHMARK, ds, args.out / "run", config, {}, resume=False, overwrite=False,
                   argv=[])
    count_work()
    before = dict(decode_stats.__dict__)
    summary = score(BENCHMARK, ds, run, args.out / "sim" / "videos", config, quiet=True,
                    judge_cache=args.out / "answers.sqlite")
    decoded = {k: v - before[k] for k, v in decode_stats.__dict__.items()}
    embedded = dict(EMBEDDED)
    t2 = time.perf_counter()
    again = score(BENCHMARK, ds, open_run(BENCHMARK, ds, args.out / "again", config, {},
                                          resume=False, overwrite=False, argv=[]),
                  args.out / "sim" / "videos", config, quiet=True,
                  judge_cache=args.out / "answers.sqlite")
    t3 = time.perf_counter()
    q = summary["judge_questions"]
    print(json.dumps({
        "policies": list(config.policies), "budget": args.budget,
        "reference_questions": q["asked"], "naive_reference_judgements": q["naive_reference_judgements"],
        "fewer_than_naive": q["fewer_than_naive"], "sim_build_s": round(t1 - t0, 1),
        "score_s": round(t2 - t1, 1), "rescore_from_cache_s": round(t3 - t2, 1),
        "rescore_judge_answers": again["judge_answers"],
        "first_scoring_work": {
            "grid_frames": grid_frames(ds),
            "replay_segment_decodes": SOURCES[0].segment_decodes if SOURCES else None,
            "replay_frames_decoded": SOURCES[0].decoded_frames if SOURCES else None,
            "decoder": decoded, "images_embedded": embedded},
    }, indent=2))


if __name__ == "__main__":
    main()
