"""Track-A on the sim film with all six policies: judge questions versus the naive count,
and where the time goes.

The two text-to-frame policies need a text-image embedder; with no weights here, the
script builds a tiny random SigLIP 2 (vidmem.models.tiny) so that every policy runs --
its rankings are meaningless, the counts are not. The naive count judges every
returned reference anew for every policy and every K = 1..budget; vidmem asks each
distinct (segment, frame) once.

    python benchmarks/bench_track_a.py [--budget 16] [--out /tmp/bench_track_a]
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

from vidmem.benchmarks.vmem_track_a import BENCHMARK
from vidmem.benchmarks.vmem_track_a.config import DEFAULT_POLICIES, ScorerConfig
from vidmem.benchmarks.vmem_track_a.sim_build import build_track_a
from vidmem.models.tiny import build_tiny
from vidmem.runners.benchmark_run import open_run, score


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=16)
    ap.add_argument("--out", type=Path, default=Path("/tmp/bench_track_a"))
    args = ap.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    t0 = time.perf_counter()
    build_track_a(args.out / "sim", seed=0, n=1)
    t1 = time.perf_counter()
    siglip = build_tiny("siglip2/base-patch16-224", args.out / "tiny-siglip2")
    base = ScorerConfig.from_preset("offline", lang="en", policies=DEFAULT_POLICIES,
                                    frame_embedder="siglip2/base-patch16-224", budget=args.budget)
    config = ScorerConfig.from_dict({**base.to_dict(), "backend_options": {
        "judge/sim-cards": {"weights": str(args.out / "sim" / "_cards")},
        "siglip2/base-patch16-224": {"weights": str(siglip)}}})
    ds = BENCHMARK.load(args.out / "sim" / "SimFilms")
    run = open_run(BENCHMARK, ds, args.out / "run", config, {}, resume=False, overwrite=False,
                   argv=[])
    summary = score(BENCHMARK, ds, run, args.out / "sim" / "videos", config, quiet=True,
                    judge_cache=args.out / "answers.sqlite")
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
    }, indent=2))


if __name__ == "__main__":
    main()
