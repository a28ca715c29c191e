"""Track-B arm tally: one condition's counts per segment, and every rate read off them.

Part of :mod:`vidmem.metrics.track_b` (the overview is there); built by
:class:`~vidmem.metrics.track_b.Tallier` or :func:`~vidmem.metrics.track_b.tally_segments`
(the rules are in :mod:`~vidmem.metrics.track_b.tally`). Every query sums rows of the
integer count matrix -- the whole arm, per story, or a cut of segments -- and hands the
sums to the same rate builders as the public functions, so its numbers are theirs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import sparse

from vidmem.metrics.track_b.families import FAMILY_HEADLINE_KEYS, _families_from
from vidmem.metrics.track_b.gap_bins import GAP_STORY_COUNT_KEYS, GapBinRecall, _gap_bins_from
from vidmem.metrics.track_b.pooled import STORY_COUNT_KEYS, _pooled_from
from vidmem.metrics.track_b.results import FamilyRate, PooledRates

__all__ = ["ArmTally"]


@dataclass(frozen=True)
class ArmTally:
    """One condition's counts per segment (build with :class:`Tallier` or :func:`tally_segments`).

    Attributes:
        story_ids: the stories, in order of first segment.
        segment_story: ``(n_segments,)`` index into ``story_ids``.
        segment_ids: ``(n_segments,)`` segment numbers.
        parsed: ``(n_segments,)`` whether the judge's answer parsed.
        counts: ``(n_segments, n_counters)`` int64 counts.
        columns: ``"<part>:<counter>"`` -> column of ``counts`` (part: pooled, family, gap).
    """

    story_ids: tuple[str, ...]
    segment_story: np.ndarray
    segment_ids: np.ndarray
    parsed: np.ndarray
    counts: np.ndarray
    columns: Mapping[str, int]

    def __len__(self) -> int:
        return int(self.parsed.size)

    @cached_property
    def _story_sums(self) -> np.ndarray:
        n = len(self)
        onehot = sparse.csr_matrix((np.ones(n, dtype=np.int64), self.segment_story,
                                    np.arange(n + 1)), shape=(n, len(self.story_ids)))
        return np.asarray(onehot.T @ self.counts, dtype=np.int64)

    def _total(self, part: str) -> dict[str, int]:
        sums = self._story_sums.sum(axis=0)
        n = len(part) + 1
        return {name[n:]: int(sums[col]) for name, col in self.columns.items()
                if name.startswith(f"{part}:")}

    def _per_story(self, part: str, keys: Sequence[tuple[str, str]]) -> dict[str, np.ndarray]:
        zero = self.counts.shape[1]  # a counter no entry had: a column of zeros
        padded = np.concatenate([self._story_sums,
                                 np.zeros((len(self.story_ids), 1), dtype=np.int64)], axis=1)
        idx = np.array([[self.columns.get(f"{part}:{k}", zero) for k in pair] for pair in keys],
                       dtype=np.intp)
        return {sid: padded[i][idx] for i, sid in enumerate(self.story_ids)}

    def pooled(self) -> PooledRates:
        """:func:`pooled_rates` of the arm."""
        return _pooled_from(self._total("pooled"))

    def families(self, confidence: float = 0.95) -> dict[str, FamilyRate]:
        """:func:`family_rates` of the arm."""
        return _families_from(self._total("family"), confidence)

    def gap_bins(self, confidence: float = 0.95) -> GapBinRecall:
        """:func:`gap_bin_recall` of the arm."""
        return _gap_bins_from(self._total("gap"), confidence)

    def story_counts(self) -> dict[str, np.ndarray]:
        """:func:`story_counts` of the arm: story -> ``(3, 2)`` int64."""
        return self._per_story("pooled", STORY_COUNT_KEYS)

    def family_story_counts(self) -> dict[str, np.ndarray]:
        """Per story, each family's headline (numerator, denominator): ``(9, 2)`` int64."""
        return self._per_story("family", FAMILY_HEADLINE_KEYS)

    def gap_bin_story_counts(self) -> dict[str, np.ndarray]:
        """:func:`gap_bin_story_counts` of the arm: story -> ``(4, 2)`` int64."""
        return self._per_story("gap", GAP_STORY_COUNT_KEYS)

    def segment_keys(self) -> list[tuple[str, int]]:
        """``(story_id, segment_id)`` per segment, in order."""
        return [(self.story_ids[s], int(g)) for s, g in zip(self.segment_story, self.segment_ids,
                                                             strict=True)]

    def cut(self, keep: np.ndarray) -> ArmTally:
        """The tally of the segments where ``keep`` (a bool mask) holds; order kept, and a
        story with no segment left is dropped."""
        keep = np.asarray(keep, dtype=bool)
        kept_story = self.segment_story[keep]
        stories, first = np.unique(kept_story, return_index=True)
        order = stories[np.argsort(first)]  # stories in order of first kept segment
        new = np.full(len(self.story_ids), -1, dtype=np.intp)
        new[order] = np.arange(order.size)
        return ArmTally(tuple(self.story_ids[i] for i in order), new[kept_story],
                        self.segment_ids[keep], self.parsed[keep], self.counts[keep],
                        self.columns)

    def parsed_in_both(self, other: ArmTally) -> tuple[ArmTally, ArmTally]:
        """:func:`parsed_in_both` of two tallies: both cut to the (story, segment) pairs
        present in both and parsed in both."""
        if max((int(t.segment_ids.max()) for t in (self, other) if len(t)), default=0) >= 2**31:
            keep = ({k for k, p in zip(self.segment_keys(), self.parsed, strict=True) if p}
                    & {k for k, p in zip(other.segment_keys(), other.parsed, strict=True) if p})
            return (self.cut(np.array([k in keep for k in self.segment_keys()], dtype=bool)),
                    other.cut(np.array([k in keep for k in other.segment_keys()], dtype=bool)))
        codes: dict[str, int] = {}  # (story, segment) -> story code << 32 | segment
        ka, kb = (np.array([codes.setdefault(s, len(codes)) for s in t.story_ids],
                           dtype=np.int64)[t.segment_story] << 32 | t.segment_ids
                  for t in (self, other))
        both = np.intersect1d(ka[self.parsed], kb[other.parsed], assume_unique=True)
        return self.cut(np.isin(ka, both)), other.cut(np.isin(kb, both))
