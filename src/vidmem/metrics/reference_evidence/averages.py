"""Track-A averages: unweighted means per film, over films, per dataset and overall.

Part of :mod:`vidmem.metrics.reference_evidence` (the overview and the rules are there).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import mean

from vidmem.metrics.reference_evidence.segment import SegmentScore
from vidmem.metrics.reference_evidence.segment_metrics import SEGMENT_DIGITS, _round

#: means over films (per dataset, overall) are rounded to this many decimals
FILM_MEAN_DIGITS = 6


@dataclass(frozen=True)
class Averages:
    """Means of a film (over its segments) or of a set of films (over film means).

    Attributes:
        precision, recall, f1, r_v, r_s, sel_eff: unweighted means over the segments
            (or films) where the value is defined; ``None`` where none is.
        refs_per_segment: mean ``k`` over segments with references (descriptive).
        n_films: films averaged (1 for a film).
        n_segments: segments, all of them.
        n_with_refs: segments with ``k > 0``.
        n_precision_undefined: segments with ``k = 0``, left out of the precision mean.
        n_no_candidates: segments with ``C`` empty, left out of the recall and F1 means.
        n_unparsable: references whose judge answer was unparsable (counted as wrong).
    """

    precision: float | None
    recall: float | None
    f1: float | None
    r_v: float | None
    r_s: float | None
    sel_eff: float | None
    refs_per_segment: float | None
    n_films: int
    n_segments: int
    n_with_refs: int
    n_precision_undefined: int
    n_no_candidates: int
    n_unparsable: int


_METRICS = ("precision", "recall", "f1", "r_v", "r_s", "sel_eff", "refs_per_segment")
_COUNTS = ("n_segments", "n_with_refs", "n_precision_undefined", "n_no_candidates",
           "n_unparsable")


def _mean(values: Iterable[float | None], ndigits: int | None) -> float | None:
    """``round(statistics.mean(defined values), ndigits)``, the reference's rule.

    ``statistics.mean`` sums exactly and rounds once; ``fmean`` divides a rounded sum,
    which moves a value lying on a rounding tie to the other side now and then (F1s
    0.6667, 1, 1, 0.5455, 0.6667, 1: 0.8132 here and in the reference, 0.8131 by
    ``fmean``).
    """
    kept = [v for v in values if v is not None]
    return _round(mean(kept), ndigits) if kept else None


def film_means(scores: Sequence[SegmentScore], *, ndigits: int | None = SEGMENT_DIGITS) -> Averages:
    """Unweighted means of one film over its segments (pass every gold segment).

    Precision over segments with ``k > 0`` (the others counted in
    ``n_precision_undefined``); recall and F1 over segments with candidates, empty
    selections included as 0; R_V, R_S and SelEff over segments with ``k > 0`` where
    defined.

    Example:
        >>> from vidmem.metrics.reference_evidence import SegmentEvidence, score_segment
        >>> a = score_segment(SegmentEvidence({"a"}, {"a"}, [{"a"}, set()]))
        >>> b = score_segment(SegmentEvidence({"a"}, {"a"}, []))
        >>> m = film_means([a, b])
        >>> m.precision, m.recall, m.f1, m.n_precision_undefined
        (0.5, 0.5, 0.3333, 1)
    """
    with_refs = [s for s in scores if s.k > 0]
    with_c = [s for s in scores if s.n_candidates > 0]
    return Averages(
        precision=_mean((s.precision for s in with_refs), ndigits),
        recall=_mean((s.recall for s in with_c), ndigits),
        f1=_mean((s.f1 for s in with_c), ndigits),
        r_v=_mean((s.r_v for s in with_refs), ndigits),
        r_s=_mean((s.r_s for s in with_refs), ndigits),
        sel_eff=_mean((s.sel_eff for s in with_refs), ndigits),
        refs_per_segment=_mean((s.k for s in with_refs), None if ndigits is None else 3),
        n_films=1,
        n_segments=len(scores),
        n_with_refs=len(with_refs),
        n_precision_undefined=len(scores) - len(with_refs),
        n_no_candidates=len(scores) - len(with_c),
        n_unparsable=sum(s.n_unparsable for s in scores),
    )


def mean_over_films(films: Sequence[Averages], *,
                    ndigits: int | None = FILM_MEAN_DIGITS) -> Averages:
    """Unweighted mean of film means (each metric over films where it is defined).

    Counts are summed.

    Example:
        >>> from vidmem.metrics.reference_evidence import SegmentEvidence, score_segment
        >>> one = film_means([score_segment(SegmentEvidence({"a"}, {"a"}, [{"a"}]))])
        >>> two = film_means([score_segment(SegmentEvidence({"a"}, {"a"}, [set(), set()]))])
        >>> m = mean_over_films([one, two])
        >>> m.precision, m.f1, m.refs_per_segment, m.n_films, m.n_segments
        (0.5, 0.5, 1.5, 2, 2)
    """
    means = {f: _mean((getattr(a, f) for a in films), ndigits) for f in _METRICS}
    counts = {f: sum(getattr(a, f) for a in films) for f in _COUNTS}
    return Averages(**means, **counts, n_films=sum(a.n_films for a in films))


def track_means(films_by_dataset: Mapping[str, Mapping[str, Averages]], *,
                ndigits: int | None = FILM_MEAN_DIGITS) -> tuple[dict[str, Averages], Averages]:
    """Per dataset folder and overall means of film means.

    Args:
        films_by_dataset: ``{dataset folder: {film id: film means}}``.
        ndigits: decimals to round to (``None``: exact).

    Returns:
        ``({dataset: mean over its films}, overall)``; overall is the mean over all
        films of all datasets, not over the datasets.

    Example:
        >>> from vidmem.metrics.reference_evidence import SegmentEvidence, score_segment
        >>> good = film_means([score_segment(SegmentEvidence({"a"}, {"a"}, [{"a"}]))])
        >>> bad = film_means([score_segment(SegmentEvidence({"a"}, {"a"}, [set()]))])
        >>> per, overall = track_means({"A": {"f1": good, "f2": good}, "B": {"f3": bad}})
        >>> per["A"].f1, per["B"].f1, overall.f1
        (1.0, 0.0, 0.666667)
    """
    per = {d: mean_over_films(list(films.values()), ndigits=ndigits)
           for d, films in sorted(films_by_dataset.items())}
    every = [a for films in films_by_dataset.values() for a in films.values()]
    return per, mean_over_films(every, ndigits=ndigits)
