"""VMem-Bench Track-B: pure scoring of stored per-segment judge verdicts.

For every segment of a closed-loop rollout the judge saw one blinded roster -- the
segment's cast, its forbidden entities, absent false-friend targets and a few decoys --
and said of each entity ``present``: ``True``, ``False`` or ``"abstain"``, plus a state,
a count and an instance choice where the roster line asked for them. This module turns
those stored verdicts into numbers; it calls no judge and reads no file.

Input records (built by the benchmark's loader from the gold and the judge answers):

* :class:`EntryVerdict`, one per (story, condition, segment, roster entity): the
  entity's role in the segment and the gold fields of its stress families, next to the
  judge's verdict on it.
* :class:`SegmentVerdict`, one per (story, condition, segment): whether the judge's
  answer parsed, and the segment's entries. An unparsable segment has every entry
  ``"abstain"`` (:meth:`SegmentVerdict.unparsable` builds one), which counts as "not
  present" everywhere: a required entity is missed, a forbidden one is not violated.

What is computed (PROTOCOLS.md section 4, paper section 3.3 and App. D.1), all pooled
as counts over every segment of every story given:

* :func:`pooled_rates`: Recall, Precision, F1, Avoid-OK, decoy false-positive rate,
  abstain rate and the unparsable-segment count, each as numerator / denominator.
* :func:`family_rates`: the nine stress families, each rate with its numerator,
  denominator and a Wilson interval (:func:`wilson_interval`).
* :func:`story_counts`: per story, the (numerator, denominator) of Recall, Precision
  and Avoid-OK -- the input of :func:`vidmem.stats.paired_bootstrap.paired_story_bootstrap`
  (this module may not import ``stats/``; the benchmark joins the two).
* :func:`parsed_in_both`: both arms cut to the (story, segment) pairs whose answer
  parsed in both, for the robustness comparison of the paper's Table 20a;
  :func:`parsed_in_both_block` says which stories that cut dropped.

Every rule adopted from the published code (Suchenl/VMem-Bench) or decided here is in
:data:`PROTOCOL`, with its reason and its source, for the run log.

Modules:

* :mod:`~vidmem.metrics.track_b.vocabulary` -- the closed vocabularies (kinds, roles, ops,
  forbidden reasons, families) and the long-gap threshold.
* :mod:`~vidmem.metrics.track_b.records` -- the input records :class:`EntryVerdict` and
  :class:`SegmentVerdict`, with their checks.
* :mod:`~vidmem.metrics.track_b.results` -- the result records :class:`Proportion`,
  :class:`WilsonRate`, :class:`FamilyRate` and :class:`PooledRates`.
* :mod:`~vidmem.metrics.track_b.pooled` -- :func:`pooled_rates`, :func:`story_counts`
  and :func:`parsed_in_both`.
* :mod:`~vidmem.metrics.track_b.families` -- :func:`family_rates` and
  :func:`wilson_interval`.
* :mod:`~vidmem.metrics.track_b.gap_bins` -- :func:`gap_bin_recall` and
  :func:`gap_bin_story_counts`: recall of required returns by absence gap (1-4, 5-29,
  >= 30 segments; gap 0 apart as ``just_seen``), its rules in :data:`GAP_BINS_PROTOCOL`.
* :mod:`~vidmem.metrics.track_b.tally` -- :class:`Tallier` and :func:`tally_segments`:
  all of the above from one pass over an arm (one count per entry signature, stored
  entries validated once per signature), for aggregating many stored conditions;
  :func:`stored_segment` builds one stored segment with every check.
* :mod:`~vidmem.metrics.track_b.arm_tally` -- :class:`ArmTally`, the tally of one arm
  and its queries (pooled, families, gap bins, per-story counts, parsed in both).
* :mod:`~vidmem.metrics.track_b.protocol` -- :data:`PROTOCOL`.

Every public name is importable from this package.
"""

from vidmem.metrics.track_b.arm_tally import ArmTally
from vidmem.metrics.track_b.families import family_rates, wilson_interval
from vidmem.metrics.track_b.gap_bins import (
    BIN_ROWS,
    GAP_BINS,
    GAP_BINS_PROTOCOL,
    JUST_SEEN,
    GapBinRecall,
    absence_bin,
    gap_bin_recall,
    gap_bin_story_counts,
)
from vidmem.metrics.track_b.pooled import (
    parsed_in_both,
    parsed_in_both_block,
    pooled_rates,
    story_counts,
)
from vidmem.metrics.track_b.protocol import PROTOCOL
from vidmem.metrics.track_b.records import EntryVerdict, SegmentVerdict
from vidmem.metrics.track_b.results import FamilyRate, PooledRates, Proportion, WilsonRate
from vidmem.metrics.track_b.tally import Tallier, stored_segment, tally_segments
from vidmem.metrics.track_b.vocabulary import (
    ABSTAIN,
    BOOTSTRAP_RATES,
    CAST_ROLES,
    FAMILIES,
    FORBIDDEN_REASONS,
    KINDS,
    LONG_GAP,
    OPS,
    RECALL_KINDS,
    ROLES,
)
from vidmem.metrics.track_b.vocabulary import STATE_SHOWN as STATE_SHOWN
from vidmem.metrics.track_b.vocabulary import Present as Present

__all__ = [
    "ABSTAIN",
    "BIN_ROWS",
    "BOOTSTRAP_RATES",
    "CAST_ROLES",
    "FAMILIES",
    "FORBIDDEN_REASONS",
    "GAP_BINS",
    "GAP_BINS_PROTOCOL",
    "JUST_SEEN",
    "KINDS",
    "LONG_GAP",
    "OPS",
    "PROTOCOL",
    "RECALL_KINDS",
    "ROLES",
    "ArmTally",
    "EntryVerdict",
    "FamilyRate",
    "GapBinRecall",
    "PooledRates",
    "Proportion",
    "SegmentVerdict",
    "Tallier",
    "WilsonRate",
    "absence_bin",
    "family_rates",
    "gap_bin_recall",
    "gap_bin_story_counts",
    "parsed_in_both",
    "parsed_in_both_block",
    "pooled_rates",
    "story_counts",
    "stored_segment",
    "tally_segments",
    "wilson_interval",
]
