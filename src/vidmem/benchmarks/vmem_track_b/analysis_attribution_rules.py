"""Where a Track-B failure arises: the pure classifier of the ``attribution`` analysis.

A *unit* is one judged failure of one (story, condition, segment, entity):

* a **miss**: a required character or prop (``role == "required"``, kind in
  ``RECALL_KINDS``) not judged present (``abstain`` counts as a miss, as in Recall);
* a **render**: a forbidden entity judged present.

A miss gets the first cause that applies, in this order:

1. ``judge_disagreement`` -- a second judge was asked and sees the entity in the clip
   (the miss may be the first judge's, not the generator's);
2. ``introduction`` -- no earlier segment's cast lists the entity: there was nothing to
   remember (the prompt alone had to draw it);
3. ``writing`` -- at its *previous appearance* (the latest earlier segment whose cast
   lists it, same rollout) it was already judged absent or wrong (:func:`entry_right`):
   the memory could only hold a bad picture of it;
4. ``not_writing`` -- references unknown (brought rollouts without ``progress.json``):
   only writing vs the rest can be told;
5. ``no_memory`` -- the no-memory condition (``none``) hands over no references, so a
   miss after a right previous appearance is neither selection nor synthesis;
6. ``synthesis`` -- some reference handed over for this segment shows the entity, yet
   the clip does not;
7. ``selection`` -- no reference handed over shows it (none handed over included).

A render is ``carried`` (a reference handed over shows the entity), ``not_carried``
(references known, none shows it; the no-memory condition's renders are all here) or
``references_unknown``.

Shares of each cause per condition are pooled over stories (causes / units) with a
story-clustered percentile bootstrap (:func:`share_intervals`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from vidmem.metrics import track_b as tb
from vidmem.metrics.track_b.vocabulary import STATE_SHOWN
from vidmem.stats.paired_bootstrap import multiplicities

__all__ = ["MISS_CAUSES", "PROTOCOL", "RENDER_CAUSES", "Unit", "attribute_condition",
           "entry_right", "previous_appearances", "share_intervals", "tally"]

MISS_CAUSES = ("judge_disagreement", "introduction", "writing", "not_writing", "no_memory",
               "synthesis", "selection")
RENDER_CAUSES = ("carried", "not_carried", "references_unknown")
#: the condition that hands over no references (the card's no-memory baseline)
NO_MEMORY = "none"
_SRC = "issue 15 (attribution analysis); PROTOCOLS.md sec. 4"

PROTOCOL: dict[str, dict[str, Any]] = {
    "attribution_units": {
        "rule": "a miss = required character/prop not judged present (abstain included); a "
                "render = forbidden entity judged present; one unit per (story, condition, "
                "segment, entity)",
        "reason": "the same misses and renders Recall and Avoid-OK count",
        "source": _SRC},
    "attribution_previous_appearance": {
        "rule": "the latest earlier segment whose cast lists the entity (its verdict entry "
                "has role required), same rollout; right = judged present, and shown in the "
                "expected state (non-flashback state cue), with the exact count (count cue) "
                "and not the other look-alike; abstain or an unparsable segment = not right",
        "reason": "the identity scorer's previous appearance; a wrong look there is what the "
                  "memory stored",
        "source": "PROTOCOLS.md sec. 4 (Identity); vmem_track_b/identity_units.py"},
    "attribution_order": {
        "rule": "first that applies: judge_disagreement, introduction, writing, not_writing "
                "(references unknown), no_memory (condition none), synthesis (a reference "
                "shows it), selection",
        "reason": "a cause downstream is only meaningful when the upstream step was right",
        "source": _SRC},
    "attribution_no_memory": {
        "rule": "condition 'none' has no references: its misses after a right previous "
                "appearance are 'no_memory' (neither selection nor synthesis), its renders "
                "'not_carried'",
        "reason": "with nothing handed over there is no selection to blame and no reference "
                  "to synthesise from",
        "source": _SRC},
    "attribution_unreadable_reference": {
        "rule": "a reference whose judge answer is not usable counts as not showing the "
                "entity (counted as unjudged_references)",
        "reason": "no guess in either direction; the count says how often it happened",
        "source": "vidmem (decided here)"},
    "attribution_intervals": {
        "rule": "share = units of a cause / units, pooled over stories; percentile interval of "
                "a story-clustered bootstrap (resample stories with replacement, pool counts "
                "in the draw); the run's bootstrap seed and draws; no interval with one story",
        "reason": "stories are the independent units (the card's clustered bootstrap); "
                  "stats.bootstrap resamples a mean of items, not a pooled ratio",
        "source": "PROTOCOLS.md sec. 4 (Statistics)"},
}


@dataclass(frozen=True)
class Unit:
    """One attributed failure.

    Attributes:
        story_id, condition, segment_id, eid, kind: where and who.
        failure: ``"miss"`` or ``"render"``.
        cause: one of :data:`MISS_CAUSES` / :data:`RENDER_CAUSES`.
        previous: segment id of the previous appearance (misses), else ``None``.
        shown_by: sources (``seg_MMM``) of the references that show the entity.
        shown_refs: their 1-based positions among the segment's references.
    """

    story_id: str
    condition: str
    segment_id: int
    eid: str
    kind: str
    failure: str
    cause: str
    previous: int | None = None
    shown_by: tuple[str, ...] = ()
    shown_refs: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "shown_by": list(self.shown_by),
                "shown_refs": list(self.shown_refs)}


def entry_right(e: tb.EntryVerdict) -> bool:
    """Whether an appearance was judged present and right (rule in :data:`PROTOCOL`).

    Example:
        >>> ok = tb.EntryVerdict("s", 1, "A", "prop", "required", True, op="introduce")
        >>> bad = tb.EntryVerdict("s", 1, "A", "prop", "required", True, op="introduce",
        ...                       expected_count=3, judged_count=1)
        >>> entry_right(ok), entry_right(bad)
        (True, False)
    """
    if not e.is_present:
        return False
    if e.expected_state is not None and not e.flashback and e.judged_state != STATE_SHOWN:
        return False
    if e.expected_count is not None and e.judged_count != e.expected_count:
        return False
    return e.instance_match is not False


def previous_appearances(segments: Sequence[tb.SegmentVerdict]
                         ) -> dict[tuple[int, str], tb.EntryVerdict]:
    """``(segment_id, eid) -> entry at the previous appearance`` for every required entry
    that has one (cast lists it earlier; segments in any order).

    Example:
        >>> def seg(n, present):
        ...     e = tb.EntryVerdict("s", n, "A", "prop", "required", present, op="recall")
        ...     return tb.SegmentVerdict("s", n, True, [e])
        >>> prev = previous_appearances([seg(3, True), seg(1, False), seg(2, True)])
        >>> sorted((k, v.segment_id) for k, v in prev.items())
        [((2, 'A'), 1), ((3, 'A'), 2)]
    """
    last: dict[str, tb.EntryVerdict] = {}
    out: dict[tuple[int, str], tb.EntryVerdict] = {}
    for seg in sorted(segments, key=lambda s: s.segment_id):
        for e in seg.entries:
            if e.role != "required":
                continue
            if e.eid in last:
                out[(seg.segment_id, e.eid)] = last[e.eid]
            last[e.eid] = e
    return out


def attribute_condition(story_id: str, condition: str, segments: Sequence[tb.SegmentVerdict],
                        references: Mapping[int, Sequence[Mapping[str, Any]]] | None,
                        second_sees: Mapping[tuple[int, str], bool] | None = None) -> list[Unit]:
    """Every failure of one rollout with its cause (rules in the module doc).

    Args:
        story_id, condition: the rollout.
        segments: its verdicts.
        references: per segment id the references handed over, each ``{"source":
            "seg_MMM", "shows": [eid, ...] | None}`` (``None``: unjudged); ``None`` for
            the whole rollout: references unknown.
        second_sees: ``(segment_id, eid) -> True`` where a second judge sees the entity
            in the clip (``None``: no second judge).

    Example:
        >>> E = tb.EntryVerdict
        >>> segs = [tb.SegmentVerdict("s", 1, True, [E("s", 1, "A", "prop", "required", True,
        ...                                            op="introduce")]),
        ...         tb.SegmentVerdict("s", 2, True, [E("s", 2, "A", "prop", "required", False,
        ...                                            op="recall", gap=0)])]
        >>> [u.cause for u in attribute_condition("s", "c", segs, {2: []})]
        ['selection']
        >>> [u.cause for u in attribute_condition("s", "c", segs, {2: [{"source": "seg_001",
        ...                                                          "shows": ["A"]}]})]
        ['synthesis']
        >>> [u.cause for u in attribute_condition("s", "none", segs, {2: []})]
        ['no_memory']
    """
    prev = previous_appearances(segments)
    out: list[Unit] = []
    for seg in sorted(segments, key=lambda s: s.segment_id):
        n = seg.segment_id
        refs = None if references is None else list(references.get(n, ()))
        for e in seg.entries:
            miss = e.role == "required" and e.kind in tb.RECALL_KINDS and not e.is_present
            render = e.role == "forbidden" and e.is_present
            if not (miss or render):
                continue
            showing = [(k, str(r.get("source"))) for k, r in enumerate(refs or (), start=1)
                       if e.eid in (r.get("shows") or ())]
            shown = {"shown_by": tuple(src for _, src in showing),
                     "shown_refs": tuple(k for k, _ in showing)}
            if render:
                cause = ("references_unknown" if refs is None else
                         "carried" if showing else "not_carried")
                out.append(Unit(story_id, condition, n, e.eid, e.kind, "render", cause, **shown))
                continue
            p = prev.get((n, e.eid))
            if second_sees is not None and second_sees.get((n, e.eid)) is True:
                cause = "judge_disagreement"
            elif p is None:
                cause = "introduction"
            elif not entry_right(p):
                cause = "writing"
            elif refs is None:
                cause = "not_writing"
            elif condition == NO_MEMORY:
                cause = "no_memory"
            else:
                cause = "synthesis" if showing else "selection"
            out.append(Unit(story_id, condition, n, e.eid, e.kind, "miss", cause,
                            previous=None if p is None else p.segment_id, **shown))
    return out


def share_intervals(counts: Mapping[str, Mapping[str, int]], causes: Sequence[str], *,
                    n_resamples: int, seed: int, confidence: float = 0.95
                    ) -> dict[str, dict[str, Any]]:
    """Pooled share of each cause with a story-clustered percentile bootstrap interval.

    Args:
        counts: per story, units per cause.
        causes: the causes to report (a unit of another cause still counts in the total).

    Example:
        >>> c = {"s1": {"a": 2, "b": 2}, "s2": {"a": 1, "b": 3}}
        >>> r = share_intervals(c, ["a", "b"], n_resamples=200, seed=0)
        >>> r["a"]["share"], r["a"]["n"], r["a"]["units"]
        (0.375, 3, 8)
        >>> 0.25 <= r["a"]["ci_low"] <= r["a"]["ci_high"] <= 0.5
        True
    """
    stories = sorted(counts)
    mat = np.array([[counts[s].get(c, 0) for c in causes] for s in stories], dtype=float)
    tot = np.array([sum(counts[s].values()) for s in stories], dtype=float)
    out: dict[str, dict[str, Any]] = {}
    lows = highs = None
    if len(stories) >= 2 and tot.sum() > 0:
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, len(stories), size=(n_resamples, len(stories)))
        w = multiplicities(idx, len(stories))
        num, den = w @ mat, w @ tot
        ok = den > 0
        shares = num[ok] / den[ok][:, None]
        a = (1.0 - confidence) / 2.0
        lows, highs = np.quantile(shares, a, axis=0), np.quantile(shares, 1.0 - a, axis=0)
    total = int(tot.sum())
    for j, c in enumerate(causes):
        k = int(mat[:, j].sum()) if len(stories) else 0
        out[c] = {"n": k, "units": total, "share": (k / total) if total else None,
                  "ci_low": None if lows is None else float(lows[j]),
                  "ci_high": None if highs is None else float(highs[j])}
    return out


def tally(units: Sequence[Unit], failure: str, conditions: Sequence[str] = (),
          stories: Sequence[str] = ()) -> dict[str, dict[str, dict[str, int]]]:
    """Per condition, per story, units of each cause of one failure kind (every given
    condition and story listed, with no units too: a story without failures still counts
    in the bootstrap).

    Example:
        >>> u = Unit("s", "c", 2, "A", "prop", "miss", "selection")
        >>> tally([u, u], "miss")
        {'c': {'s': {'selection': 2}}}
    """
    out: dict[str, dict[str, Counter[str]]] = {c: {s: Counter() for s in stories}
                                               for c in conditions}
    for u in units:
        if u.failure == failure:
            out.setdefault(u.condition, {}).setdefault(u.story_id, Counter())[u.cause] += 1
    return {c: {s: dict(v) for s, v in per.items()} for c, per in out.items()}
