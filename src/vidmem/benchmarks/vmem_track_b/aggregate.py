"""Track-B aggregation: every number of ``summary.json`` from stored ``scores.jsonl`` rows.

Rules:

* **read once**: each condition's stored verdicts (``verdicts_to_json``) are read once
  into a :class:`~vidmem.metrics.track_b.ArmTally` (one :class:`~vidmem.metrics.track_b.Tallier`
  shared by the conditions, so an entry signature is validated and counted once per
  aggregation); pooled rates, families, per-story counts, the parsed-in-both cut and the
  gap bins are all sums of its rows, and the no-memory arm's per-story counts are taken
  once for every comparison.
* **the same numbers**: every number equals the public functions' on
  :func:`~vidmem.benchmarks.vmem_track_b.scorer.verdicts_from_json` segments (pooled
  rates, family rates, story counts, parsed in both, gap bins, the paired bootstrap with
  the run's draws and seed); ``tests/benchmarks/vmem_track_b/test_aggregate_equivalence.py``
  holds the pre-tally code as its reference.
* **bad rows**: a scored row without the condition, a stored segment without its
  fields, or a malformed entry is an error naming story, condition and segment.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from vidmem.benchmarks.vmem_track_b.config import BASELINE, PRIVILEGED, ScorerConfig
from vidmem.errors import UserInputError
from vidmem.metrics import track_b as tb
from vidmem.stats.paired_bootstrap import paired_story_bootstrap

__all__ = ["aggregate_rows", "segment_fields"]


def segment_fields(story_id: str, s: Any, where: str) -> tuple[int, bool, Any]:
    """``(segment_id, parsed, entries)`` of one stored segment, as ``verdicts_from_json``
    reads them (``int`` and ``bool`` of the stored values).

    Example:
        >>> segment_fields("s", {"segment_id": 3, "parsed": True, "entries": []}, "here")
        (3, True, [])
    """
    try:
        return int(s["segment_id"]), bool(s["parsed"]), s["entries"]
    except (KeyError, TypeError, ValueError) as exc:
        seg = s.get("segment_id") if isinstance(s, Mapping) else None
        raise UserInputError(
            f"{where}, story {story_id!r}, segment {seg!r}: stored verdict without a whole "
            f"segment_id, parsed and entries ({type(exc).__name__}: {exc})",
            hint="a stored segment is {segment_id, parsed, entries}; rescore the story to "
            "rewrite it") from None


def _stored(rows: Sequence[Mapping[str, Any]], cond: str) -> Iterator[tuple[str, int, bool, Any]]:
    where = f"stored Track-B verdicts of condition {cond}"
    for r in rows:
        sid = r["story_id"]
        try:
            verdicts = r["conditions"][cond]["verdicts"]
        except (KeyError, TypeError):
            raise UserInputError(f"{where}: story {sid!r} has no verdicts of condition {cond}",
                                 hint="rescore the story with this condition, or leave the "
                                 "condition out of --conditions") from None
        for s in verdicts:
            yield (sid, *segment_fields(sid, s, where))


def _arm(rows: Sequence[Mapping[str, Any]], cond: str, tallier: tb.Tallier) -> tb.ArmTally:
    return tallier.tally(_stored(rows, cond), where=f"stored Track-B verdicts of condition {cond}")


def _bootstrap(ca: Mapping[str, Any], cb: Mapping[str, Any], config: ScorerConfig,
               names: Sequence[str] = tb.BOOTSTRAP_RATES) -> dict[str, Any] | None:
    if not ca or set(ca) != set(cb):
        return None
    return paired_story_bootstrap(ca, cb, n_resamples=config.n_resamples,
                                  seed=config.bootstrap_seed, confidence=config.confidence,
                                  names=names).to_dict()


def _family_counts(segs: Sequence[tb.SegmentVerdict], confidence: float) -> dict[str, Any]:
    """Per story, the (numerator, denominator) of each family's headline rate, ``(9, 2)``.

    ``confidence`` is unused (a count has no interval); kept for the callers.
    """
    return {sid: c.tolist() for sid, c in tb.tally_segments(segs).family_story_counts().items()}


class _Clock:
    """Seconds per step into ``out`` (when given): each call closes the step since the last."""

    def __init__(self, out: dict[str, float] | None) -> None:
        self.out = out
        self.t = time.perf_counter()

    def __call__(self, step: str) -> None:
        if self.out is not None:
            now = time.perf_counter()
            self.out[step] = self.out.get(step, 0.0) + now - self.t
            self.t = now


def aggregate_rows(rows: Sequence[Mapping[str, Any]], config: ScorerConfig, *,
                   timings: dict[str, float] | None = None) -> dict[str, Any]:
    """Every Track-B number from stored rows alone (pure; no judge, no files).

    Per condition: pooled rates, the nine families with Wilson intervals, judge counts;
    every condition but ``none`` minus ``none`` with the paired story bootstrap
    (``deltas``) and the same on segments parsed in both arms
    (``deltas_parsed_in_both``), each the vector (recall, precision, avoid_ok); and each
    family's headline rate minus ``none`` with the same bootstrap (``family_deltas``).

    Args:
        rows: ``scores.jsonl`` rows (only ``status == "scored"`` ones of the selected
            stories count).
        config: the run's conditions, selection and bootstrap settings.
        timings: if given, seconds per step are added to it (parse, pooled, families,
            judge counts, story counts, bootstrap, family bootstrap, gap bins).

    Raises:
        UserInputError: a scored row without a condition's verdicts, or a malformed stored
            verdict (named by story, condition and segment).
    """
    from vidmem.benchmarks.vmem_track_b.gap_summary import gap_bin_summary

    lap = _Clock(timings)
    chosen = config.selected()
    scored = [r for r in rows if r.get("status") == "scored"
              and (chosen is None or int(r["number"]) in chosen)]
    conds = list(config.conditions)
    tallier = tb.Tallier()
    arms = {c: _arm(scored, c, tallier) for c in conds}
    lap("parse")
    pooled = {c: arms[c].pooled().to_dict() for c in conds}
    lap("pooled")
    families = {c: {k: v.to_dict() for k, v in arms[c].families(config.confidence).items()}
                for c in conds}
    lap("families")
    judge: dict[str, dict[str, int]] = {}
    for c in conds:
        total: Counter[str] = Counter()
        for r in scored:
            total.update(r["conditions"][c]["judge"])
        judge[c] = dict(total)
    lap("judge counts")
    deltas: dict[str, Any] = {}
    parsed: dict[str, Any] = {}
    family_deltas: dict[str, Any] = {}
    if BASELINE in conds and scored:
        base = arms[BASELINE]
        base_counts, base_fam = base.story_counts(), base.family_story_counts()
        lap("story counts")
        for c in conds:
            if c == BASELINE:
                continue
            counts, fam = arms[c].story_counts(), arms[c].family_story_counts()
            a, b = arms[c].parsed_in_both(base)
            cut_a, cut_b = a.story_counts(), b.story_counts()
            lap("story counts")
            deltas[c] = _bootstrap(counts, base_counts, config)
            parsed[c] = tb.parsed_in_both_block(_bootstrap(cut_a, cut_b, config),
                                                stories=counts, kept=cut_a, n_segments=len(a))
            lap("bootstrap")
            family_deltas[c] = paired_story_bootstrap(
                fam, base_fam, n_resamples=config.n_resamples, seed=config.bootstrap_seed,
                confidence=config.confidence, names=tb.FAMILIES).to_dict()
            lap("family bootstrap")
    gap_bins = gap_bin_summary(arms, config)
    lap("gap bins")
    return {
        "conditions": conds, "baseline": BASELINE if BASELINE in conds else None,
        "privileged": sorted(PRIVILEGED & set(conds)),
        "n_stories_scored": len(scored), "stories": [r["story_id"] for r in scored],
        "n_segments": sum(int(r["n_segments"]) for r in scored),
        "pooled": pooled, "families": families, "judge": judge,
        "deltas": deltas, "deltas_parsed_in_both": parsed, "family_deltas": family_deltas,
        "gap_bins": gap_bins,
        "not_selected": [r["story_id"] for r in rows
                         if chosen is not None and int(r.get("number", -1)) not in chosen],
    }
