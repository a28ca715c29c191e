"""Track-B recall by absence gap: required returns binned by how long the entity was away.

Part of :mod:`vidmem.metrics.track_b` (the overview is there). Pure: verdicts in,
counts and Wilson intervals out; the paired story bootstrap of the bins (``stats/``) is
joined by the benchmark (``benchmarks/vmem_track_b/gap_summary.py``).

Rules (each in :data:`PROTOCOL` with its reason and source):

* **entries**: required character and prop cast entries with a gold ``gap`` -- the
  returns; first appearances (no gap), locations, forbidden entries and decoys are out.
* **bins**: the gold ``gap`` counts the segments between two appearances, so ``0`` is
  "on screen in the previous segment". The absence bins are ``1-4``, ``5-29`` and
  ``>=30`` segments away (:data:`GAP_BINS`); gap 0 is not an absence and is reported
  apart as ``just_seen`` (:data:`JUST_SEEN`), never inside ``1-4`` -- the official
  scorer's ``_gap_bucket`` (``"0"``, ``"1-4"``, ``"5-29"``, ``">=30"``). :func:`absence_bin`
  is the one binning function: ``vidmem stats`` counts its gap histogram with it too.
  (Only the release's gold ``summary.gap_histogram``, written by its compiler, counts
  gap 0 under ``1-4``; ``vidmem stats`` checks that block with gap 0 folded in.)
* **hit**: judged ``present = true``; ``false``, ``"abstain"`` and an unparsable
  segment are misses, as for pooled Recall. The ``>=30`` bin is therefore the
  ``long_gap_return`` family's recall.
* **pooling**: counts summed over every segment of every story given, then divided,
  each rate with a Wilson interval (:func:`~vidmem.metrics.track_b.wilson_interval`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from vidmem.metrics.track_b.families import wilson_interval
from vidmem.metrics.track_b.records import EntryVerdict, SegmentVerdict, _fail, _is_int, _segments
from vidmem.metrics.track_b.results import WilsonRate
from vidmem.metrics.track_b.vocabulary import LONG_GAP, RECALL_KINDS

__all__ = ["BIN_ROWS", "GAP_BINS", "GAP_BINS_PROTOCOL", "JUST_SEEN", "GapBinRecall",
           "absence_bin", "gap_bin_recall", "gap_bin_story_counts"]

#: the absence-gap bins (segments away), in report order
GAP_BINS = ("1-4", "5-29", ">=30")
#: gap 0: on screen in the previous segment, not an absence (reported apart)
JUST_SEEN = "just_seen"
#: the rows of :func:`gap_bin_story_counts`: the three bins, then ``just_seen``
BIN_ROWS = (*GAP_BINS, JUST_SEEN)
#: the first gap of the ``5-29`` bin
_MID = 5

_PAPER = "paper App. F.2 (Fig. 15a: support N = 701/293/210 near/mid/far; Table 17: just seen apart)"

#: every rule of this module: what it is, why, and where it comes from
GAP_BINS_PROTOCOL: dict[str, dict[str, str]] = {
    "gap_bins.entries": {
        "rule": "required character and prop cast entries whose gold gap is set (returns); "
                "first appearances, locations, forbidden entries and decoys are not binned",
        "reason": "recall by gap is about entities coming back; the headline recall pools "
                  "characters and props",
        "source": f"{_PAPER}; PROTOCOLS.md section 4 (Recall)",
    },
    "gap_bins.bins": {
        "rule": f"absence bins 1-4, 5-29 and >= {LONG_GAP} segments of gold gap (segments "
                "in between); gap 0 (on screen in the previous segment) is 'just_seen', "
                "reported apart and never in 1-4",
        "reason": "gap 0 is no absence, and it would swamp the near bin (161 of 210 gapped "
                  "cast entries of sample story 0001); the paper's near-bin support (701 "
                  "over 30 stories) only fits gaps 1-4",
        "source": "Suchenl/VMem-Bench src/vmem_bench/scoring/end2end_coverage.py "
                  "_gap_bucket (gap <= 0 -> '0', 1-4, 5-29, >= 30; vidmem names '0' "
                  f"just_seen); {_PAPER}. One function (absence_bin) for summary.json and "
                  "vidmem stats; only the release's gold summary.gap_histogram (its "
                  "compiler, complete_gt.py) counts gap 0 under 1-4, and vidmem stats "
                  "checks that block with gap 0 folded in",
    },
    "gap_bins.hit": {
        "rule": "hit = judged present = true; false, 'abstain' and unparsable segments are "
                "misses; the >= 30 bin equals the long_gap_return family recall",
        "reason": "the same reading as pooled Recall, so the bins add up to it",
        "source": "PROTOCOLS.md section 4; vidmem.metrics.track_b PROTOCOL (present)",
    },
    "gap_bins.interval": {
        "rule": "each bin's recall is pooled over all segments and stories, with a Wilson "
                "score interval at the run's confidence; the difference from none uses the "
                "paired story bootstrap on per-story (hits, returns) counts",
        "reason": "the same statistics as the stress families",
        "source": "PROTOCOLS.md section 4 (Statistics); brief of issue 14",
    },
    "gap_bins.by_kind": {
        "rule": "the same bins per kind (character, prop)",
        "reason": "the bins mix kinds (near: mostly characters named by name; far: mostly "
                  "props and changed characters), which pooled bins hide",
        "source": "paper App. F.2 Table 17",
    },
}


def absence_bin(gap: int | None) -> str | None:
    """The bin of a gold gap: ``None`` (no gap), ``just_seen`` (0), or a :data:`GAP_BINS` name.

    Example:
        >>> [absence_bin(g) for g in (None, 0, 1, 4, 5, 29, 30, 64)]
        [None, 'just_seen', '1-4', '1-4', '5-29', '5-29', '>=30', '>=30']
    """
    if gap is None:
        return None
    if not _is_int(gap) or gap < 0:
        raise _fail("absence_bin(gap)", "an int >= 0 or None", gap, "use the gold gap")
    if gap == 0:
        return JUST_SEEN
    return GAP_BINS[0] if gap < _MID else GAP_BINS[1] if gap < LONG_GAP else GAP_BINS[2]


def _binned(e: EntryVerdict) -> str | None:
    if e.role != "required" or e.kind not in RECALL_KINDS:
        return None
    return absence_bin(e.gap)


def _gap_entry(e: EntryVerdict, c: Counter[str]) -> None:
    """Add one entry's bin counts (its bin, and its kind's bin) to ``c``."""
    b = _binned(e)
    if b is None:
        return
    for key in (b, f"{e.kind}.{b}"):
        c[f"{key}.tot"] += 1
        c[f"{key}.hit"] += e.is_present


#: the rows of :func:`gap_bin_story_counts` as (numerator, denominator) counter names
GAP_STORY_COUNT_KEYS = tuple((f"{b}.hit", f"{b}.tot") for b in BIN_ROWS)


@dataclass(frozen=True)
class GapBinRecall:
    """Recall per absence-gap bin of one condition (see :func:`gap_bin_recall`).

    Attributes:
        bins: :data:`GAP_BINS` name -> recall with its Wilson interval.
        just_seen: recall of gap-0 returns (not an absence).
        by_kind: kind (character, prop) -> :data:`BIN_ROWS` name -> recall.
    """

    bins: dict[str, WilsonRate]
    just_seen: WilsonRate
    by_kind: dict[str, dict[str, WilsonRate]]

    def to_dict(self) -> dict[str, object]:
        return {"bins": {k: v.to_dict() for k, v in self.bins.items()},
                JUST_SEEN: self.just_seen.to_dict(),
                "by_kind": {k: {b: r.to_dict() for b, r in v.items()}
                            for k, v in self.by_kind.items()}}


def _rate(c: Mapping[str, int], key: str, confidence: float) -> WilsonRate:
    k, n = int(c.get(f"{key}.hit", 0)), int(c.get(f"{key}.tot", 0))
    ci = wilson_interval(k, n, confidence)
    return WilsonRate(k, n, None if ci is None else ci[0], None if ci is None else ci[1],
                      confidence)


def gap_bin_recall(segments: Iterable[SegmentVerdict], *,
                   confidence: float = 0.95) -> GapBinRecall:
    """Pooled recall of required returns per absence-gap bin, with Wilson intervals.

    Args:
        segments: one condition's segments, all stories together (each (story, segment)
            once).
        confidence: level of the Wilson intervals.

    Returns:
        :class:`GapBinRecall`.

    Raises:
        UserInputError: not SegmentVerdicts, a (story, segment) twice, or a bad level.

    Example:
        >>> from vidmem.metrics.track_b import EntryVerdict, SegmentVerdict
        >>> def e(eid, present, gap, kind="character"):
        ...     return EntryVerdict("s", 9, eid, kind, "required", present, op="recall", gap=gap)
        >>> seg = SegmentVerdict("s", 9, True, [e("A", True, 2), e("B", False, 3),
        ...                                     e("C", "abstain", 31, "prop"), e("D", True, 0)])
        >>> r = gap_bin_recall([seg])
        >>> r.bins["1-4"].value, r.bins["5-29"].value, r.bins[">=30"].value, r.just_seen.value
        (0.5, None, 0.0, 1.0)
        >>> r.by_kind["prop"][">=30"].denominator
        1
    """
    c: Counter[str] = Counter()
    for seg in _segments(segments, "gap_bin_recall(segments)"):
        for e in seg.entries:
            _gap_entry(e, c)
    return _gap_bins_from(c, confidence)


def _gap_bins_from(c: Mapping[str, int], confidence: float) -> GapBinRecall:
    """:class:`GapBinRecall` from the counts of :func:`_gap_entry`."""
    return GapBinRecall(
        bins={b: _rate(c, b, confidence) for b in GAP_BINS},
        just_seen=_rate(c, JUST_SEEN, confidence),
        by_kind={k: {b: _rate(c, f"{k}.{b}", confidence) for b in BIN_ROWS}
                 for k in RECALL_KINDS})


def gap_bin_story_counts(segments: Iterable[SegmentVerdict]) -> dict[str, np.ndarray]:
    """Per story, the (hits, returns) of each :data:`BIN_ROWS` row, for the story bootstrap.

    Every story of ``segments`` is a key, with zero rows where it has no return in a bin
    (the bootstrap needs the same stories in both arms).

    Returns:
        story_id -> int64 array of shape ``(4, 2)``: rows ``1-4``, ``5-29``, ``>=30``,
        ``just_seen``; columns (numerator, denominator).

    Example:
        >>> from vidmem.metrics.track_b import EntryVerdict, SegmentVerdict
        >>> e = EntryVerdict("s", 2, "A", "prop", "required", True, op="recall", gap=7)
        >>> gap_bin_story_counts([SegmentVerdict("s", 2, True, [e]),
        ...                       SegmentVerdict("t", 1, True, [])])["s"].tolist()
        [[0, 0], [1, 1], [0, 0], [0, 0]]
    """
    row = {b: i for i, b in enumerate(BIN_ROWS)}
    out: dict[str, np.ndarray] = {}
    for seg in _segments(segments, "gap_bin_story_counts(segments)"):
        counts = out.setdefault(seg.story_id, np.zeros((len(BIN_ROWS), 2), dtype=np.int64))
        for e in seg.entries:
            b = _binned(e)
            if b is not None:
                counts[row[b], 1] += 1
                counts[row[b], 0] += e.is_present
    return out
