"""Track-B pooled rates: Recall, Precision, F1, Avoid-OK and noise, per condition and per story.

Part of :mod:`vidmem.metrics.track_b` (the overview is there).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

import numpy as np

from vidmem.metrics.track_b.records import EntryVerdict, SegmentVerdict, _segments
from vidmem.metrics.track_b.results import PooledRates, Proportion
from vidmem.metrics.track_b.vocabulary import KINDS

#: the rows of :func:`story_counts`: (numerator, denominator) counter names per rate
STORY_COUNT_KEYS = (("recall.hit", "recall.tot"), ("prec.hit", "prec.tot"),
                    ("avoid.ok", "avoid.tot"))


def _headline_entry(e: EntryVerdict, c: Counter[str]) -> None:
    """Add one entry's Recall / Precision / Avoid-OK / noise counts to ``c``.

    Per entry, with no look at the rest of its segment, so a tally can count an entry
    signature once (:mod:`~vidmem.metrics.track_b.tally`).
    """
    hit = e.is_present
    c["roster"] += 1
    c["abstain"] += e.is_abstain
    if e.role == "required":
        c["recall.tot"] += 1
        c["recall.hit"] += hit
        c[f"recall.{e.kind}.tot"] += 1
        c[f"recall.{e.kind}.hit"] += hit
    elif e.role == "location":
        c["recall.location.tot"] += 1
        c["recall.location.hit"] += hit
    elif e.role == "forbidden":
        c["avoid.tot"] += 1
        c["avoid.ok"] += not hit
    elif e.role == "decoy":
        c["decoy.tot"] += 1
        c["decoy.fp"] += hit
    if hit and e.kind != "location" and e.role in ("required", "forbidden",
                                                     "false_friend_target"):
        c["prec.tot"] += 1
        c["prec.hit"] += e.role == "required"


def _headline_segment(parsed: bool, c: Counter[str]) -> None:
    """Add one segment's own counts (segments, unparsable) to ``c``; not its entries'."""
    c["segments"] += 1
    c["unparsable"] += not parsed


def _headline_counts(seg: SegmentVerdict, c: Counter[str]) -> None:
    """Add one segment's Recall / Precision / Avoid-OK / noise counts to ``c``."""
    _headline_segment(seg.parsed, c)
    for e in seg.entries:
        _headline_entry(e, c)


def _p(c: Mapping[str, int], num: str, den: str) -> Proportion:
    return Proportion(int(c.get(num, 0)), int(c.get(den, 0)))


def _f1(p: float | None, r: float | None) -> float | None:
    if p is None or r is None:
        return None
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def pooled_rates(segments: Iterable[SegmentVerdict]) -> PooledRates:
    """Pooled Recall, Precision, F1, Avoid-OK and the judge's noise counts of one condition.

    Counts are summed over every entry of every segment given, then divided (rules in
    :data:`PROTOCOL`).

    Args:
        segments: one condition's :class:`SegmentVerdict` s, all stories together; each
            (story, segment) at most once.

    Returns:
        :class:`PooledRates`, every rate as numerator / denominator.

    Raises:
        UserInputError: not SegmentVerdicts, or a (story, segment) given twice.

    Example:
        >>> from vidmem.metrics.track_b import EntryVerdict, SegmentVerdict
        >>> def e(eid, kind, role, present, **kw):
        ...     return EntryVerdict("s", 1, eid, kind, role, present, **kw)
        >>> seg = SegmentVerdict("s", 1, True, [
        ...     e("A", "character", "required", True, op="recall", gap=2),
        ...     e("B", "prop", "required", "abstain", op="introduce"),
        ...     e("L", "location", "location", True, op="recall", gap=1),
        ...     e("F", "prop", "forbidden", True, reason="destroyed"),
        ...     e("D", "prop", "decoy", False)])
        >>> r = pooled_rates([seg])
        >>> r.recall.value, r.precision.value, r.avoid_ok.value, r.abstain.numerator
        (0.5, 0.5, 0.0, 1)
    """
    c: Counter[str] = Counter()
    for seg in _segments(segments, "pooled_rates(segments)"):
        _headline_counts(seg, c)
    return _pooled_from(c)


def _pooled_from(c: Mapping[str, int]) -> PooledRates:
    """:class:`PooledRates` from the counts of :func:`_headline_counts`."""
    recall = _p(c, "recall.hit", "recall.tot")
    precision = _p(c, "prec.hit", "prec.tot")
    return PooledRates(
        recall=recall,
        precision=precision,
        f1=_f1(precision.value, recall.value),
        avoid_ok=_p(c, "avoid.ok", "avoid.tot"),
        decoy_fpr=_p(c, "decoy.fp", "decoy.tot"),
        abstain=_p(c, "abstain", "roster"),
        unparsable=_p(c, "unparsable", "segments"),
        recall_by_kind={k: _p(c, f"recall.{k}.hit", f"recall.{k}.tot") for k in KINDS},
    )


def story_counts(segments: Iterable[SegmentVerdict]) -> dict[str, np.ndarray]:
    """Per story, the counts of Recall, Precision and Avoid-OK, for the story bootstrap.

    Args:
        segments: one condition's segments.

    Returns:
        story_id -> int64 array of shape ``(3, 2)``: rows :data:`BOOTSTRAP_RATES`
        (recall, precision, avoid_ok), columns (numerator, denominator). Summed over
        stories they give :func:`pooled_rates`.

    Example:
        >>> from vidmem.metrics.track_b import EntryVerdict, SegmentVerdict
        >>> e = EntryVerdict("s", 1, "A", "prop", "required", True, op="introduce")
        >>> story_counts([SegmentVerdict("s", 1, True, [e])])["s"].tolist()
        [[1, 1], [1, 1], [0, 0]]
    """
    per: dict[str, Counter[str]] = {}
    for seg in _segments(segments, "story_counts(segments)"):
        _headline_counts(seg, per.setdefault(seg.story_id, Counter()))
    return {sid: np.array([[c.get(n, 0), c.get(d, 0)] for n, d in STORY_COUNT_KEYS],
                          dtype=np.int64)
            for sid, c in per.items()}


def parsed_in_both(arm_a: Iterable[SegmentVerdict], arm_b: Iterable[SegmentVerdict]
                   ) -> tuple[list[SegmentVerdict], list[SegmentVerdict]]:
    """Both arms cut to the (story, segment) pairs present in both and parsed in both.

    Order within each arm is kept. Feed the result to :func:`story_counts` and the paired
    bootstrap for the parsed-in-both comparison.

    Example:
        >>> ok = SegmentVerdict("s", 1, True, [])
        >>> bad = SegmentVerdict("s", 2, False, [])
        >>> a, b = parsed_in_both([ok, bad], [SegmentVerdict("s", 1, True, []),
        ...                                   SegmentVerdict("s", 2, True, [])])
        >>> [s.segment_id for s in a], [s.segment_id for s in b]
        ([1], [1])
    """
    a = _segments(arm_a, "parsed_in_both(arm_a)")
    b = _segments(arm_b, "parsed_in_both(arm_b)")
    keep = {s.key for s in a if s.parsed} & {s.key for s in b if s.parsed}
    return [s for s in a if s.key in keep], [s for s in b if s.key in keep]



def parsed_in_both_block(bootstrap: Mapping[str, object] | None, *, stories: Iterable[str],
                         kept: Iterable[str], n_segments: int) -> dict[str, object]:
    """The ``deltas_parsed_in_both`` entry: the bootstrap on the cut arms, and who dropped.

    A story none of whose segments parsed in both arms has nothing left to compare and
    drops out of the parsed-in-both bootstrap; the block says how many and which, so the
    drop is never silent (:data:`PROTOCOL` ``parsed_in_both``).

    Args:
        bootstrap: ``paired_story_bootstrap(...).to_dict()`` of the cut arms, or ``None``
            when no story is left (``rates`` is then empty).
        stories: the stories of the uncut comparison.
        kept: the stories left after the cut.
        n_segments: segments left per arm.

    Example:
        >>> b = parsed_in_both_block(None, stories=["s", "t"], kept=[], n_segments=0)
        >>> b["rates"], b["n_stories"], b["n_stories_dropped"], b["stories_dropped"]
        ({}, 0, 2, ['s', 't'])
    """
    every, left = sorted(set(stories)), set(kept)
    dropped = [s for s in every if s not in left]
    block: dict[str, object] = dict(bootstrap) if bootstrap is not None else {"rates": {}}
    block.update(n_segments=int(n_segments), n_stories=len(every) - len(dropped),
                 n_stories_dropped=len(dropped), stories_dropped=dropped)
    return block
