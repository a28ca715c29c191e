"""Track-B recall by absence gap for ``summary.json``: the bins with the paired bootstrap.

The pure bin counting is :mod:`vidmem.metrics.track_b.gap_bins` (its rules in
``GAP_BINS_PROTOCOL``); this module joins it with
:func:`~vidmem.stats.paired_bootstrap.paired_story_bootstrap` (``metrics/`` may not
import ``stats/``): per condition the bins' pooled recall with Wilson intervals, and
every condition but ``none`` minus ``none`` per bin, resampling stories with the run's
draws and seed. With no ``none`` condition, or no scored story, there are no
differences. Each arm is its segments or, from ``aggregate_rows``, its tally
(:class:`~vidmem.metrics.track_b.ArmTally`); the numbers are the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vidmem.benchmarks.vmem_track_b.config import BASELINE, ScorerConfig
from vidmem.metrics import track_b as tb
from vidmem.stats.paired_bootstrap import paired_story_bootstrap

__all__ = ["gap_bin_deltas", "gap_bin_summary"]


Arm = tb.ArmTally | Sequence[tb.SegmentVerdict]


def _rates(arm: Arm, confidence: float) -> tb.GapBinRecall:
    if isinstance(arm, tb.ArmTally):
        return arm.gap_bins(confidence)
    return tb.gap_bin_recall(arm, confidence=confidence)


def _story_counts(arm: Arm) -> dict[str, Any]:
    if isinstance(arm, tb.ArmTally):
        return arm.gap_bin_story_counts()
    return tb.gap_bin_story_counts(arm)


def gap_bin_deltas(a: Arm, b: Arm, config: ScorerConfig) -> dict[str, Any] | None:
    """Per bin (and ``just_seen``), recall of ``a`` minus ``b`` with the paired story bootstrap;
    ``None`` when the arms hold no story or not the same stories.

    Args:
        a, b: each arm's segments, or its :class:`~vidmem.metrics.track_b.ArmTally`.
        config: the bootstrap settings.
    """
    ca, cb = _story_counts(a), _story_counts(b)
    if not ca or set(ca) != set(cb):
        return None
    return paired_story_bootstrap(ca, cb, n_resamples=config.n_resamples,
                                  seed=config.bootstrap_seed, confidence=config.confidence,
                                  names=tb.BIN_ROWS).to_dict()


def gap_bin_summary(arms: Mapping[str, Arm], config: ScorerConfig) -> dict[str, Any]:
    """The ``gap_bins`` block of the summary.

    Args:
        arms: condition -> its segments over all scored stories (or their tally).
        config: the run's conditions and bootstrap settings.

    Returns:
        ``{"bins": [...], "just_seen": "just_seen", "rates": {condition: GapBinRecall
        dict}, "deltas": {condition: bootstrap dict over BIN_ROWS}}``.
    """
    conds = [c for c in config.conditions if c in arms]
    rates = {c: _rates(arms[c], config.confidence).to_dict() for c in conds}
    deltas: dict[str, Any] = {}
    if BASELINE in arms:
        for c in conds:
            if c != BASELINE:
                deltas[c] = gap_bin_deltas(arms[c], arms[BASELINE], config)
    return {"bins": list(tb.GAP_BINS), "just_seen": tb.JUST_SEEN, "rates": rates,
            "deltas": deltas}
