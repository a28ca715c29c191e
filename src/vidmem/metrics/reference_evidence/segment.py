"""Track-A segment records: the judged evidence of one segment and all its numbers.

Part of :mod:`vidmem.metrics.reference_evidence` (the overview and the rules are there).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass

import numpy as np

from vidmem.metrics.reference_evidence.segment_metrics import (
    SEGMENT_DIGITS,
    _correct,
    _fail,
    _ids,
    _labels,
    _repeating,
    _unit_rows,
    f1,
    precision,
    r_s,
    r_v,
    recall,
    sel_eff,
)


@dataclass(frozen=True)
class SegmentEvidence:
    """One segment: its gold sets and the references a policy returned, as judged.

    Attributes:
        present: ``P``, entity ids on screen in the segment.
        candidates: ``C``, the entities of ``P`` that appeared before the segment.
        shows: per reference in rank order, the roster ids the judge says it shows, or
            ``None`` when its answer was unparsable.
        views: per reference, ``{entity: view key}`` for the present entities it shows
            (see :mod:`vidmem.metrics.reference_evidence`); ``None``: R_V and SelEff are
            not computed.
        embeddings: ``(k, d)`` image embeddings of the references; ``None``: no R_S.
    """

    present: frozenset[str]
    candidates: frozenset[str]
    shows: tuple[frozenset[str] | None, ...]
    views: tuple[Mapping[str, Hashable] | None, ...] | None = None
    embeddings: np.ndarray | None = None

    def __post_init__(self) -> None:
        p, c = _ids(self.present, "present"), _ids(self.candidates, "candidates")
        if not c <= p:
            raise _fail("candidates", "a subset of present (C = present - first appearances)",
                        sorted(c - p), "compute C from the segment's present set")
        object.__setattr__(self, "present", p)
        object.__setattr__(self, "candidates", c)
        object.__setattr__(self, "shows", tuple(_labels(self.shows)))
        k = len(self.shows)
        if self.views is not None:
            if len(self.views) != k:
                raise _fail("views", f"one entry per reference ({k})", len(self.views),
                            "pass a view-key mapping (or None) for every reference")
            object.__setattr__(self, "views", tuple(self.views))
        if self.embeddings is not None:
            object.__setattr__(self, "embeddings", _unit_rows(self.embeddings, k))

    def truncated(self, budget: int) -> SegmentEvidence:
        """The same segment with only the first ``budget`` references of its ranking."""
        if budget < 0:
            raise _fail("budget", "an integer >= 0", budget, "use K = 1..16")
        return SegmentEvidence(
            self.present, self.candidates, self.shows[:budget],
            None if self.views is None else self.views[:budget],
            None if self.embeddings is None else self.embeddings[:budget])


@dataclass(frozen=True)
class SegmentScore:
    """Track-A numbers of one segment (rules: :mod:`vidmem.metrics.reference_evidence`).

    Attributes:
        k: references returned. n_candidates: ``|C|``. n_correct: references showing
        an entity of ``P``. n_covered: candidates shown. n_unparsable: references with an
        unparsable answer. n_repeating: correct references adding no new view (``None``
        without view keys). precision, recall, f1, r_v, r_s, sel_eff: ``None`` where
        undefined or not computed.
    """

    k: int
    n_candidates: int
    n_correct: int
    n_covered: int
    n_unparsable: int
    n_repeating: int | None
    precision: float | None
    recall: float | None
    f1: float | None
    r_v: float | None
    r_s: float | None
    sel_eff: float | None


def score_segment(seg: SegmentEvidence, *, ndigits: int | None = SEGMENT_DIGITS) -> SegmentScore:
    """Every per-segment number for one segment.

    Example:
        >>> s = score_segment(SegmentEvidence(
        ...     present={"a", "b", "c"}, candidates={"a", "b"},
        ...     shows=[{"a"}, {"a"}, {"c"}, None],
        ...     views=[{"a": 0}, {"a": 0}, {"c": 0}, None]))
        >>> s.precision, s.recall, s.f1, s.r_v, s.sel_eff, s.n_unparsable
        (0.75, 0.5, 0.6, 0.3333, 0.5, 1)
        >>> e = score_segment(SegmentEvidence({"a"}, {"a"}, []))
        >>> e.precision, e.recall, e.f1
        (None, 0.0, 0.0)
    """
    correct = _correct(seg.shows, seg.present)
    covered = frozenset().union(*correct) & seg.candidates
    p = precision(seg.shows, seg.present, ndigits=ndigits)
    r = recall(seg.shows, seg.candidates, ndigits=ndigits)
    with_views = seg.views is not None
    return SegmentScore(
        k=len(seg.shows),
        n_candidates=len(seg.candidates),
        n_correct=sum(1 for s in correct if s),
        n_covered=len(covered),
        n_unparsable=sum(1 for s in seg.shows if s is None),
        n_repeating=_repeating(correct, seg.views) if with_views else None,
        precision=p,
        recall=r,
        f1=f1(p, r, ndigits=ndigits),
        r_v=r_v(seg.shows, seg.present, seg.views, ndigits=ndigits) if with_views else None,
        r_s=(None if seg.embeddings is None
             else r_s(seg.shows, seg.present, seg.embeddings, ndigits=ndigits)),
        sel_eff=sel_eff(seg.shows, seg.present, seg.views, ndigits=ndigits) if with_views else None,
    )
