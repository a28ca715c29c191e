"""Track-B aggregates and the paired story bootstrap on synthetic verdicts of cohort size.

Builds two arms (a "policy" and "no memory") of 30 stories / 2,824 segments each, every
segment with a roster of cast, forbidden, false-friend and decoy entries and about 3%
unparsable answers, then times the pure scoring: pooled rates, the nine family rates,
per-story counts and the 2,000-draw paired story bootstrap (all segments, and the
parsed-in-both cut). Prints seconds per step.

    python benchmarks/bench_track_b_stats.py [--stories 30] [--segments 2824] [--draws 2000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from vidmem.metrics.track_b import (
    EntryVerdict,
    SegmentVerdict,
    family_rates,
    parsed_in_both,
    pooled_rates,
    story_counts,
)
from vidmem.stats.paired_bootstrap import paired_story_bootstrap


def synth_arm(n_stories: int, n_segments: int, p_hit: float, p_violate: float,
              p_unparsable: float, seed: int) -> list[SegmentVerdict]:
    """One condition's verdicts; the same gold shape for every arm (seeded by story)."""
    rng = np.random.default_rng(seed)
    per_story = np.full(n_stories, n_segments // n_stories)
    per_story[: n_segments % n_stories] += 1
    out: list[SegmentVerdict] = []
    for s, n in enumerate(per_story):
        sid = f"{s + 1:04d}_synthetic"
        gold = np.random.default_rng(1000 + s)  # gold identical across arms
        for seg in range(1, int(n) + 1):
            entries = []
            for j in range(int(gold.integers(2, 6))):
                kind = "character" if j % 2 == 0 else "prop"
                gap = int(gold.integers(0, 60))
                kw: dict[str, object] = {"op": "recall", "gap": gap}
                if gold.random() < 0.05:
                    kw.update(op="transform", expected_state="changed_look")
                elif gold.random() < 0.1:
                    kw.update(op="persist", expected_state="changed_look")
                if kind == "prop" and gold.random() < 0.05:
                    kw["expected_count"] = int(gold.integers(1, 6))
                kw["anchor"] = bool(gold.random() < 0.02)
                hit = bool(rng.random() < p_hit)
                if hit and "expected_state" in kw:
                    kw["judged_state"] = "changed" if rng.random() < 0.6 else "default"
                if hit and "expected_count" in kw:
                    kw["judged_count"] = int(kw["expected_count"]) + int(rng.integers(-1, 2))
                entries.append(EntryVerdict(sid, seg, f"E{j}", kind, "required", hit, **kw))
            entries.append(EntryVerdict(sid, seg, "LOC", "location", "location",
                                        bool(rng.random() < 0.9), op="recall", gap=1))
            if gold.random() < 0.5:
                entries.append(EntryVerdict(
                    sid, seg, "F", "prop", "forbidden", bool(rng.random() < p_violate),
                    reason="destroyed", reference_indirect=bool(gold.random() < 0.1)))
            for d in range(int(gold.integers(3, 6))):
                entries.append(EntryVerdict(sid, seg, f"D{d}", "prop", "decoy",
                                            bool(rng.random() < 0.03)))
            if rng.random() < p_unparsable:
                out.append(SegmentVerdict.unparsable(sid, seg, entries))
            else:
                out.append(SegmentVerdict(sid, seg, True, entries))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stories", type=int, default=30)
    ap.add_argument("--segments", type=int, default=2824)
    ap.add_argument("--draws", type=int, default=2000)
    args = ap.parse_args()

    t0 = time.perf_counter()
    policy = synth_arm(args.stories, args.segments, 0.66, 0.13, 0.04, seed=1)
    control = synth_arm(args.stories, args.segments, 0.56, 0.03, 0.02, seed=2)
    t_build = time.perf_counter() - t0
    n_entries = sum(len(s.entries) for s in policy)

    t0 = time.perf_counter()
    pooled = [pooled_rates(arm) for arm in (policy, control)]
    t_pooled = time.perf_counter() - t0
    t0 = time.perf_counter()
    families = [family_rates(arm) for arm in (policy, control)]
    t_family = time.perf_counter() - t0
    t0 = time.perf_counter()
    counts = [story_counts(arm) for arm in (policy, control)]
    t_counts = time.perf_counter() - t0
    t0 = time.perf_counter()
    boot = paired_story_bootstrap(counts[0], counts[1], n_resamples=args.draws)
    t_boot = time.perf_counter() - t0
    t0 = time.perf_counter()
    fa, fb = parsed_in_both(policy, control)
    boot_parsed = paired_story_bootstrap(story_counts(fa), story_counts(fb),
                                         n_resamples=args.draws)
    t_parsed = time.perf_counter() - t0

    print(f"arms: 2 x {len(policy)} segments, {args.stories} stories, "
          f"{n_entries} roster entries per arm (build {t_build:.2f} s, not timed below)")
    print(f"pooled_rates (2 arms)        {t_pooled:.3f} s")
    print(f"family_rates (2 arms)        {t_family:.3f} s")
    print(f"story_counts (2 arms)        {t_counts:.3f} s")
    print(f"paired_story_bootstrap       {t_boot:.3f} s  ({args.draws} draws)")
    print(f"parsed_in_both + bootstrap   {t_parsed:.3f} s  ({len(fa)} segments kept)")
    total = t_pooled + t_family + t_counts + t_boot + t_parsed
    print(f"total                        {total:.3f} s")
    print(f"policy recall {pooled[0].recall.value:.3f} precision {pooled[0].precision.value:.3f}"
          f" avoid-ok {pooled[0].avoid_ok.value:.3f} unparsable {pooled[0].unparsable.numerator}")
    print(f"control recall {pooled[1].recall.value:.3f} precision "
          f"{pooled[1].precision.value:.3f} avoid-ok {pooled[1].avoid_ok.value:.3f} "
          f"unparsable {pooled[1].unparsable.numerator}")
    print(f"deprecation avoid-ok policy {families[0]['deprecation'].headline.value:.3f} "
          f"control {families[1]['deprecation'].headline.value:.3f}")
    for name, res in (("all segments", boot), ("parsed in both", boot_parsed)):
        cells = ", ".join(f"d{n} {d:+.3f} [{lo:+.3f}, {hi:+.3f}]" for n, d, lo, hi in
                          zip(res.names, res.difference, res.low, res.high, strict=True))
        print(f"{name}: {cells}; undefined draws {res.n_undefined}")


if __name__ == "__main__":
    main()
