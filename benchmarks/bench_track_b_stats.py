"""Track-B aggregates and the paired story bootstrap on synthetic verdicts of cohort size.

Two timings (issue 14: "aggregates and the 2,000-draw bootstrap over 30 stories / 2,824
segments of stored verdicts under 2 s"):

* **in memory**: two arms (a "policy" and "no memory") of 30 stories / 2,824 segments
  each as :class:`SegmentVerdict` lists, every segment with a roster of cast, forbidden,
  false-friend and decoy entries and a few % unparsable answers, scored with the public
  functions: pooled rates, the nine family rates, per-story counts and the 2,000-draw
  paired story bootstrap (all segments, and the parsed-in-both cut).
* **stored**: the real path of ``summary.json``: the same verdicts written as
  ``scores.jsonl`` rows (``verdicts_to_json``, round-tripped through ``json``) for 2
  conditions (the issue's case) and for the card's six, then
  :func:`~vidmem.benchmarks.vmem_track_b.scorer.aggregate_rows` end to end, with its own
  per-step seconds (parse, pooled, families, story counts, gap bins, bootstrap, family
  bootstrap). Building the rows is not timed.

Prints seconds per step; ``--profile`` adds a cProfile of one ``aggregate_rows`` call
(six conditions) sorted by own time.

    python benchmarks/bench_track_b_stats.py [--stories 30] [--segments 2824] [--draws 2000]
        [--repeat 3] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import time
from collections import defaultdict
from typing import Any

import numpy as np

from vidmem.benchmarks.vmem_track_b.config import DEFAULT_CONDITIONS, ScorerConfig
from vidmem.benchmarks.vmem_track_b.scorer import aggregate_rows, verdicts_to_json
from vidmem.metrics.track_b import (
    EntryVerdict,
    SegmentVerdict,
    family_rates,
    parsed_in_both,
    pooled_rates,
    story_counts,
)
from vidmem.stats.paired_bootstrap import paired_story_bootstrap

#: per condition (p_hit, p_violate, p_unparsable, seed): none first, then the policies
ARMS = {"none": (0.56, 0.03, 0.02, 2), "text_frame": (0.62, 0.06, 0.03, 3),
        "seg_uniform": (0.64, 0.08, 0.04, 4), "seg_dino_key": (0.66, 0.13, 0.04, 1),
        "seg_frame": (0.65, 0.10, 0.05, 5), "last_seen": (0.75, 0.05, 0.03, 6)}


def synth_arm(n_stories: int, n_segments: int, p_hit: float, p_violate: float,
              p_unparsable: float, seed: int) -> list[SegmentVerdict]:
    """One condition's verdicts; the same gold shape for every arm (seeded by story).

    Every family occurs: long gaps, temporal anchors, states, counts, active look-alikes
    (with an instance choice), false-friend introductions with their absent target on
    the roster, destroyed and look-alike-absent forbidden entries.
    """
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
                kw["lookalike"] = bool(gold.random() < 0.03)
                if j == 0 and gold.random() < 0.04:
                    kw.update(op="introduce", gap=None, confusable_with="FF")
                hit = bool(rng.random() < p_hit)
                if hit and "expected_state" in kw:
                    kw["judged_state"] = "changed" if rng.random() < 0.6 else "default"
                if hit and "expected_count" in kw:
                    kw["judged_count"] = max(0, int(kw["expected_count"]) + int(rng.integers(-1, 2)))
                if hit and kw["lookalike"]:
                    kw["instance_match"] = bool(rng.random() < 0.7)
                entries.append(EntryVerdict(sid, seg, f"E{j}", kind, "required", hit, **kw))
            entries.append(EntryVerdict(sid, seg, "LOC", "location", "location",
                                        bool(rng.random() < 0.9), op="recall", gap=1))
            if any(e.confusable_with for e in entries):
                entries.append(EntryVerdict(sid, seg, "FF", "character", "false_friend_target",
                                            bool(rng.random() < 0.2)))
            if gold.random() < 0.5:
                reason = "lookalike_absent" if gold.random() < 0.2 else "destroyed"
                entries.append(EntryVerdict(
                    sid, seg, "F", "prop", "forbidden", bool(rng.random() < p_violate),
                    reason=reason,
                    reference_indirect=reason == "destroyed" and bool(gold.random() < 0.1)))
            for d in range(int(gold.integers(3, 6))):
                entries.append(EntryVerdict(sid, seg, f"D{d}", "prop", "decoy",
                                            bool(rng.random() < 0.03)))
            if rng.random() < p_unparsable:
                out.append(SegmentVerdict.unparsable(sid, seg, entries))
            else:
                out.append(SegmentVerdict(sid, seg, True, entries))
    return out


def stored_rows(arms: dict[str, list[SegmentVerdict]]) -> list[dict[str, Any]]:
    """``scores.jsonl`` rows of the arms, as the scorer writes them (through ``json``)."""
    by_story: dict[str, dict[str, list[SegmentVerdict]]] = defaultdict(dict)
    for cond, segs in arms.items():
        for s in segs:
            by_story[s.story_id].setdefault(cond, []).append(s)
    rows = []
    for k, (sid, conds) in enumerate(sorted(by_story.items()), start=1):
        n = len(next(iter(conds.values())))
        row = {"story_id": sid, "number": k, "status": "scored", "n_segments": n,
               "conditions": {c: {"verdicts": verdicts_to_json(segs),
                                  "judge": {"segments": n,
                                            "unparsable": sum(not s.parsed for s in segs)}}
                              for c, segs in conds.items()}}
        rows.append(json.loads(json.dumps(row)))
    return rows


def in_memory(args: argparse.Namespace, policy: list[SegmentVerdict],
              control: list[SegmentVerdict]) -> None:
    """The public functions on two in-memory arms."""
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

    print(f"== in memory: 2 x {len(policy)} segments, {args.stories} stories, "
          f"{n_entries} roster entries per arm")
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


def stored(args: argparse.Namespace, rows: list[dict[str, Any]], conds: tuple[str, ...]) -> float:
    """``aggregate_rows`` on stored rows: best of ``--repeat`` runs, with its step times."""
    config = ScorerConfig(conditions=conds, n_resamples=args.draws)
    best: dict[str, float] | None = None
    walls = []
    for _ in range(args.repeat):
        steps: dict[str, float] = {}
        t0 = time.perf_counter()
        summary = aggregate_rows(rows, config, timings=steps)
        walls.append(time.perf_counter() - t0)
        if best is None or walls[-1] == min(walls):
            best = steps
    assert best is not None
    n_seg = summary["pooled"][conds[0]]["n_segments"]
    print(f"== stored rows: {len(conds)} conditions x {n_seg} segments, "
          f"{summary['n_stories_scored']} stories; aggregate_rows, best of {args.repeat} "
          f"(all: {', '.join(f'{w:.3f}' for w in walls)} s)")
    for step, sec in best.items():
        print(f"  {step:<28} {sec:.3f} s")
    print(f"  {'total (wall)':<28} {min(walls):.3f} s")
    d = summary["deltas"][conds[1]]["rates"]
    print("  " + ", ".join(f"d{n} {v['difference']:+.3f} [{v['ci_low']:+.3f}, "
                           f"{v['ci_high']:+.3f}]" for n, v in d.items())
          + f"  ({conds[1]} - none)")
    return min(walls)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stories", type=int, default=30)
    ap.add_argument("--segments", type=int, default=2824)
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="cProfile one 6-condition call")
    ap.add_argument("--tiny", action="store_true", help="3 stories, 30 segments, 20 draws (smoke run)")
    args = ap.parse_args()
    if args.tiny:
        args.stories, args.segments, args.draws, args.repeat = 3, 30, 20, 1

    t0 = time.perf_counter()
    arms = {c: synth_arm(args.stories, args.segments, *ARMS[c][:3], seed=ARMS[c][3])
            for c in DEFAULT_CONDITIONS}
    rows = stored_rows(arms)
    print(f"(building {len(arms)} arms and their rows: {time.perf_counter() - t0:.2f} s, "
          "not timed below)")
    in_memory(args, arms["seg_dino_key"], arms["none"])
    stored(args, rows, ("none", "seg_dino_key"))
    stored(args, rows, DEFAULT_CONDITIONS)
    if args.profile:
        config = ScorerConfig(conditions=DEFAULT_CONDITIONS, n_resamples=args.draws)
        prof = cProfile.Profile()
        prof.runcall(aggregate_rows, rows, config)
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
