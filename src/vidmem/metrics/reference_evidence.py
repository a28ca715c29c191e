"""VMem-Bench Track-A: how good is the reference evidence a memory policy hands over.

For segment ``n`` of a film a policy returns ``k`` references (past frames) in rank
order, before the segment is revealed. A judge then says, for each reference, which
entities of the film's roster it shows. Against the segment's gold:

* ``P``, the entities on screen in the segment (``present``), and
* ``C``, the candidates: entities of ``P`` that appeared before the segment
  (``present`` minus ``first_appearances``), the ones a memory could supply,

the per-segment numbers are (section 3 of PROTOCOLS.md, paper section 3.3):

* **precision** = references that show at least one entity of ``P`` / ``k``;
  ``None`` when ``k = 0``.
* **recall** = share of ``C`` shown by at least one reference; 0 when ``k = 0``;
  ``None`` when ``C`` is empty (nothing to remember; such a segment does not enter a
  recall or F1 mean).
* **f1** = harmonic mean of the two; 0 when ``k = 0`` or both are 0.
* **r_v** (view repetition) = share of the correct references (those showing an entity
  of ``P``) that add no new view: every (entity, view) they show was already shown by
  a higher-ranked reference. ``None`` when no reference is correct.
* **r_s** (appearance similarity) = pair-weighted mean cosine of the image embeddings
  of references showing the same entity; ``None`` when no entity is shown by two.
* **sel_eff** = precision x (1 - r_v) = (correct - repeating) / ``k``.

A reference whose judge answer could not be parsed (``None`` in place of its label
set) still counts in ``k`` and shows nothing: it lowers precision, covers no candidate,
and is counted (``n_unparsable``) so that a reader sees how many there were.

What a *view* is, is the caller's decision made once, outside this module: it passes,
for each reference and each entity that reference shows, a hashable *view key*; two
references with equal keys for an entity show the same view of it (the reference code
asks the judge how many visually distinct views a same-entity group holds, so
near-duplicates share a key). From pairwise "same view?" answers a key can be built
rank by rank: a reference takes the key of the first higher-ranked reference judged to
show the same view of that entity, else a fresh key; such keys depend only on
higher-ranked references, so they stay valid for every budget ``K``.

Averages are unweighted: per film over its segments (:func:`film_means`), then over
films (:func:`mean_over_films`), per dataset folder and overall (:func:`track_means`);
overall is the mean over all films, not over datasets. :func:`budget_sweep` truncates
each segment's own ranking at ``K = 1..16`` and rescores, judging nothing again.

Every rule adopted from the published code (Suchenl/VMem-Bench) or decided here is in
:data:`PROTOCOL`, with its reason and its source, for the run log.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean

import numpy as np

from vidmem.errors import UserInputError

__all__ = [
    "BUDGETS",
    "PROTOCOL",
    "Averages",
    "SegmentEvidence",
    "SegmentScore",
    "budget_sweep",
    "f1",
    "film_means",
    "mean_over_films",
    "precision",
    "r_s",
    "r_v",
    "recall",
    "score_segment",
    "sel_eff",
    "track_means",
]

#: per-segment values and film means are rounded to this many decimals
SEGMENT_DIGITS = 4
#: means over films (per dataset, overall) are rounded to this many decimals
FILM_MEAN_DIGITS = 6
#: reference budgets of the sweep (each policy's own ranking cut at K)
BUDGETS = tuple(range(1, 17))

_REF = "Suchenl/VMem-Bench"
_VC = f"{_REF} src/vmem_bench/scoring/visual_coverage.py"
_AGG = f"{_REF} scripts/evaluate_baselines/trackA/aggregate_trackA_outputs.py"

#: every rule this module applies: what it is, why, and where it comes from
PROTOCOL: dict[str, dict[str, str]] = {
    "candidates": {
        "rule": "C = present - first_appearances of the segment (computed by the caller)",
        "reason": "a memory can only supply what it has seen; first appearances are not recallable",
        "source": f"{_VC} _load_gold ('continuity'); PROTOCOLS.md section 3",
    },
    "correct_reference": {
        "rule": "a reference is correct when it shows >= 1 entity present in the segment "
                "(any of P, first appearances included), not only one of C",
        "reason": "the reference scorer counts a reference whose label set over the "
                  "gold-present roster is non-empty",
        "source": f"{_VC} _score_segment_v3 (precision = non-empty entity_ids / n); "
                  f"{_REF} docs/benchmark/scoring_v3.md 'Metrics'",
    },
    "labels_outside_present": {
        "rule": "entity ids a judge names outside P are ignored (neither correct nor covering)",
        "reason": "the roster the judge sees is the present set; coverage is intersected with it",
        "source": f"{_VC} _score_segment_v3 (covered = union of labels & present_set)",
    },
    "unparsable_reference": {
        "rule": "a reference whose judge answer is unparsable counts in k, shows nothing, "
                "and is counted (n_unparsable)",
        "reason": "conservative: never credit an unreadable answer, never hide it (the card: "
                  "counted per policy and shown); the reference scorer raises instead",
        "source": f"decided here; {_VC} _parse_v3_reference raises on an invalid answer",
    },
    "duplicates": {
        "rule": "every returned reference counts in k, repeated images included; the ids in "
                "one answer are a set",
        "reason": "the reference keeps every selected image; a duplicate is a repeated view "
                  "(R_V, R_S), not a reason to shrink k; its judge rejects repeated ids",
        "source": f"{_VC} _load_selection (appends every representation), _parse_v3_reference",
    },
    "recall": {
        "rule": "recall = |C & union of the references' labels| / |C|",
        "reason": "coverage of the candidates by the selection as a whole",
        "source": f"{_VC} _score_segment_v3 (missing = present - covered)",
    },
    "empty_selection": {
        "rule": "k = 0: precision None (counted as undefined), recall 0, F1 0; the segment "
                "stays in the recall and F1 means",
        "reason": "the card overrides the reference, whose F1 is None there and drops out "
                  "of the F1 mean, which rewards returning nothing",
        "source": f"PROTOCOLS.md section 3 (override); {_VC} _score_segment_v3 n == 0 branch",
    },
    "no_candidates": {
        "rule": "C empty: recall and F1 are None and the segment enters neither mean "
                "(precision, R_V, R_S and SelEff still count)",
        "reason": "the reference scores a vacuous recall 1.0 and then keeps only segments "
                  "with n_continuity > 0 in recall_mean and f1_mean; None gives the same "
                  "means and cannot leak a vacuous 1.0 into another mean",
        "source": f"{_VC} _score_segment_v3 ('if continuity_set else 1.0') and run() "
                  "summary (recall_mean, f1_mean filters)",
    },
    "f1": {
        "rule": "F1 = 2PR / (P + R) from the rounded P and R, 0 when P + R = 0",
        "reason": "as the reference computes it",
        "source": f"{_VC} _f1",
    },
    "redundancy_groups": {
        "rule": "R_V and R_S group correct references by entity; a reference showing several "
                "entities joins each of their groups (multimembership)",
        "reason": "paper App. D.1: a multi-entity reference contributes to each group rather "
                  "than to an arbitrary first label; the v2 reference code groups single "
                  "labels, its v3 leaves redundancy null",
        "source": f"paper App. D.1 (seed 000); {_VC} _score_segment_v2 (per-entity groups)",
    },
    "view": {
        "rule": "a view is a near-duplicate class of one entity's references (same viewpoint "
                "and appearance), given by the caller as a key per (reference, entity); "
                "not the entity's state, not its source segment",
        "reason": "the reference asks its judge how many visually distinct views a "
                  "same-entity group holds, near-duplicates counting once",
        "source": f"{_VC} _distinct_views",
    },
    "r_v": {
        "rule": "R_V = correct references all of whose (entity, view) pairs a higher-ranked "
                "reference already showed / correct references; None when none is correct",
        "reason": "the card's 'share of references repeating an already covered view'; with "
                  "one label per reference it equals the reference's sum over groups of "
                  "(size - distinct views) / on-screen references",
        "source": f"{_VC} _score_segment_v2 (redundancy_vlm); PROTOCOLS.md section 3",
    },
    "sel_eff": {
        "rule": "SelEff = (correct - repeating references) / k = precision x (1 - R_V); "
                "0 when no reference is correct; None when k = 0",
        "reason": "the reference's 'useful (on-screen and not a near-duplicate) / total', "
                  "which is the card's Prec x (1 - R_V)",
        "source": f"{_VC} _score_segment_v2 (selection_efficiency); PROTOCOLS.md section 3",
    },
    "r_s": {
        "rule": "R_S = sum over entity groups of the pairwise cosines / number of pairs "
                "(pair-weighted); an entity with one reference adds no pair; None when "
                "there is no pair",
        "reason": "the reference's threshold-free same-entity self-similarity",
        "source": f"{_VC} _mean_pairwise_sim and _score_segment_v2 (redundancy_sim); "
                  f"{_REF} scripts/evaluate_baselines/trackA/recompute_redundancy_sim.py "
                  "_chunk_sim",
    },
    "r_s_embeddings": {
        "rule": "embedding rows are scaled to unit length, so the cosine is their dot product",
        "reason": "the reference's embedder returns unit vectors and uses the dot product",
        "source": f"{_VC} _mean_pairwise_sim",
    },
    "film_mean": {
        "rule": "unweighted mean over all the film's segments where the value is defined: "
                "precision over k > 0 (the rest counted), recall and F1 over C non-empty, "
                "R_V, R_S and SelEff over k > 0",
        "reason": "paper App. D.1: unweighted means over a film's segments; the reference's "
                  "duration-weighted *_wmean columns are not the reported ones",
        "source": f"{_VC} run() summary (agg filters); paper App. D.1",
    },
    "film_segments": {
        "rule": "every gold segment of the film enters its average, those where the policy "
                "returned nothing included (the caller passes them all)",
        "reason": "the reference scores every segment of the gold, empty selections included",
        "source": f"{_VC} run() (cids = sorted(segments))",
    },
    "dataset_mean": {
        "rule": "per dataset folder, the unweighted mean of the film means over films where "
                "the value is defined",
        "reason": "the paper's table is per dataset; films weigh equally",
        "source": f"{_AGG} _macro_avg and _write_aggregates (by_dataset)",
    },
    "overall_mean": {
        "rule": "overall = unweighted mean over all films of all datasets, not the mean of "
                "the dataset means",
        "reason": "as the reference's leaderboard computes its overall row",
        "source": f"{_AGG} _write_aggregates (overall = _macro_avg(all_rows))",
    },
    "rounding": {
        "rule": "per-segment values and film means to 4 decimals, means over films to 6; "
                "refs per segment to 3 per film",
        "reason": "as the reference rounds them",
        "source": f"{_VC} _score_segment_v3, _f1, run() agg; {_AGG} _macro_avg",
    },
    "budget_sweep": {
        "rule": "K = 1..16: each segment's own ranked references cut to the first K and "
                "rescored from the same labels, view keys and embeddings; a segment with "
                "fewer than K keeps all",
        "reason": "a diagnostic of the policy's own ranking, with no re-judging and no "
                  "per-K retuning",
        "source": "paper App. D.1 'Causal guard and budget sweeps'; PROTOCOLS.md section 3",
    },
}


def _fail(where: str, expected: str, found: object, fix: str) -> UserInputError:
    return UserInputError(f"{where}: expected {expected}, found {found!r}", hint=fix)


def _round(x: float, ndigits: int | None) -> float:
    return float(x) if ndigits is None else round(float(x), ndigits)


def _ids(value: object, where: str) -> frozenset[str]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise _fail(where, "a set of entity ids", value, "pass a set, list or tuple of ids")
    return frozenset(str(e) for e in value)


def _labels(shows: Sequence[Iterable[str] | None]) -> list[frozenset[str] | None]:
    return [None if s is None else _ids(s, f"shows[{i}]") for i, s in enumerate(shows)]


def _correct(shows: Sequence[Iterable[str] | None], present: Iterable[str]) -> list[frozenset[str]]:
    """Per reference, the entities of ``present`` it shows (empty for an unparsable one)."""
    p = _ids(present, "present")
    return [frozenset() if s is None else s & p for s in _labels(shows)]


def _view(views: Sequence[Mapping[str, Hashable] | None], i: int, entity: str) -> Hashable:
    row = views[i]
    if row is None or entity not in row:
        raise _fail(f"views[{i}]", f"a view key for entity {entity!r} (reference {i} shows it)",
                    None if row is None else sorted(row), "give every reference a key for "
                    "each present entity it shows")
    key = row[entity]
    try:
        hash(key)
    except TypeError:
        raise _fail(f"views[{i}][{entity!r}]", "a hashable view key", key,
                    "use a str, int or tuple as the key") from None
    return key


def precision(shows: Sequence[Iterable[str] | None], present: Iterable[str], *,
              ndigits: int | None = SEGMENT_DIGITS) -> float | None:
    """Share of the ``k`` references that show an entity on screen in the segment.

    Args:
        shows: per reference in rank order, the roster ids the judge says it shows, or
            ``None`` for an unparsable answer (counts in ``k``, shows nothing).
        present: ``P``, the entity ids on screen in the segment.
        ndigits: decimals to round to (``None``: exact).

    Returns:
        The share, or ``None`` when ``k = 0`` (not defined).

    Example:
        >>> precision([{"a"}, set(), None, {"zz"}], {"a", "b"})
        0.25
        >>> precision([], {"a"}) is None
        True
    """
    if not shows:
        return None
    correct = _correct(shows, present)
    return _round(sum(1 for s in correct if s) / len(correct), ndigits)


def recall(shows: Sequence[Iterable[str] | None], candidates: Iterable[str], *,
           ndigits: int | None = SEGMENT_DIGITS) -> float | None:
    """Share of the candidates ``C`` shown by at least one reference.

    Returns 0.0 for an empty selection and ``None`` when ``C`` is empty (the segment
    enters no recall or F1 mean).

    Example:
        >>> recall([{"a"}, {"a", "x"}, None], {"a", "b"})
        0.5
        >>> recall([], {"a"}), recall([{"a"}], set())
        (0.0, None)
    """
    c = _ids(candidates, "candidates")
    if not c:
        return None
    covered = frozenset().union(*(s for s in _labels(shows) if s is not None))
    return _round(len(c & covered) / len(c), ndigits)


def f1(p: float | None, r: float | None, *, ndigits: int | None = SEGMENT_DIGITS) -> float | None:
    """Per-segment F1 from its precision ``p`` and recall ``r``.

    ``r is None`` (no candidates) gives ``None``; ``p is None`` (empty selection) gives
    0.0, as does ``p + r == 0``.

    Example:
        >>> f1(0.5, 1.0), f1(None, 0.0), f1(0.0, 0.0), f1(1.0, None)
        (0.6667, 0.0, 0.0, None)
    """
    if r is None:
        return None
    if p is None or p + r == 0:
        return 0.0
    return _round(2 * p * r / (p + r), ndigits)


def _repeating(correct: list[frozenset[str]],
               views: Sequence[Mapping[str, Hashable] | None]) -> int:
    """Correct references all of whose (entity, view) pairs rank below an earlier one."""
    if views is None or len(views) != len(correct):
        raise _fail("views", f"one entry per reference ({len(correct)})",
                    None if views is None else len(views),
                    "pass a view-key mapping (or None) for every reference, in rank order")
    seen: set[tuple[str, Hashable]] = set()
    repeating = 0
    for i, entities in enumerate(correct):
        if not entities:
            continue
        pairs = {(e, _view(views, i, e)) for e in sorted(entities)}
        repeating += pairs <= seen
        seen |= pairs
    return repeating


def r_v(shows: Sequence[Iterable[str] | None], present: Iterable[str],
        views: Sequence[Mapping[str, Hashable] | None], *,
        ndigits: int | None = SEGMENT_DIGITS) -> float | None:
    """Share of correct references that repeat views already covered higher in the ranking.

    A correct reference repeats when, for every present entity it shows, a
    higher-ranked reference showed that entity with the same view key.

    Args:
        shows: per reference, roster ids shown (``None``: unparsable).
        present: ``P``.
        views: per reference, ``{entity: view key}`` for the present entities it shows
            (``None`` or anything for a reference that shows none).
        ndigits: decimals to round to (``None``: exact).

    Returns:
        The share, or ``None`` when no reference is correct.

    Example:
        >>> r_v([{"a"}, {"a"}, {"a", "b"}, {"a"}], {"a", "b"},
        ...     [{"a": 1}, {"a": 1}, {"a": 1, "b": 7}, {"a": 2}])
        0.25
    """
    correct = _correct(shows, present)
    n_correct = sum(1 for s in correct if s)
    if n_correct == 0:
        return None
    return _round(_repeating(correct, views) / n_correct, ndigits)


def sel_eff(shows: Sequence[Iterable[str] | None], present: Iterable[str],
            views: Sequence[Mapping[str, Hashable] | None], *,
            ndigits: int | None = SEGMENT_DIGITS) -> float | None:
    """Selection efficiency: correct references that add a new view, over ``k``.

    Equal to ``precision x (1 - r_v)``; 0.0 when no reference is correct, ``None``
    when ``k = 0``.

    Example:
        >>> sel_eff([{"a"}, {"a"}, set(), {"b"}], {"a", "b"}, [{"a": 0}, {"a": 0}, None, {"b": 0}])
        0.5
    """
    if not shows:
        return None
    correct = _correct(shows, present)
    useful = sum(1 for s in correct if s) - _repeating(correct, views)
    return _round(useful / len(correct), ndigits)


def _unit_rows(embeddings: object, k: int) -> np.ndarray:
    x = np.asarray(embeddings, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] != k:
        raise _fail("embeddings", f"a (k={k}, d) array, one row per reference",
                    f"shape {x.shape}", "pass one image embedding per reference, in rank order")
    if not np.isfinite(x).all():
        raise _fail("embeddings", "finite values", "NaN or inf", "re-embed the references")
    return x


def r_s(shows: Sequence[Iterable[str] | None], present: Iterable[str], embeddings: object, *,
        ndigits: int | None = SEGMENT_DIGITS) -> float | None:
    """Pair-weighted mean cosine among references that show the same present entity.

    Args:
        shows: per reference, roster ids shown (``None``: unparsable, in no group).
        present: ``P``.
        embeddings: ``(k, d)`` float image embeddings, one row per reference in rank
            order; rows are scaled to unit length (a zero row in a pair is an error).
        ndigits: decimals to round to (``None``: exact).

    Returns:
        Sum over entity groups of their pairwise cosines divided by the number of
        pairs, or ``None`` when no entity is shown by two references.

    Example:
        >>> r_s([{"a"}, {"a"}, {"a", "b"}, {"b"}], {"a", "b"},
        ...     [[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
        0.5
    """
    correct = _correct(shows, present)
    x = _unit_rows(embeddings, len(correct))
    groups: dict[str, list[int]] = {}
    for i, entities in enumerate(correct):
        for e in entities:
            groups.setdefault(e, []).append(i)
    total, pairs = 0.0, 0
    for e in sorted(groups):
        idx = groups[e]
        if len(idx) < 2:
            continue
        g = x[idx]
        norms = np.linalg.norm(g, axis=1)
        if (norms == 0).any():
            raise _fail("embeddings", "non-zero rows", f"a zero row among references {idx}",
                        "re-embed the references")
        g = g / norms[:, None]
        upper = np.triu_indices(len(idx), 1)
        total += float((g @ g.T)[upper].sum())
        pairs += len(upper[0])
    return None if pairs == 0 else _round(total / pairs, ndigits)


@dataclass(frozen=True)
class SegmentEvidence:
    """One segment: its gold sets and the references a policy returned, as judged.

    Attributes:
        present: ``P``, entity ids on screen in the segment.
        candidates: ``C``, the entities of ``P`` that appeared before the segment.
        shows: per reference in rank order, the roster ids the judge says it shows, or
            ``None`` when its answer was unparsable.
        views: per reference, ``{entity: view key}`` for the present entities it shows
            (see the module docstring); ``None``: R_V and SelEff are not computed.
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
    """Track-A numbers of one segment (see the module docstring for the rules).

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
    kept = [v for v in values if v is not None]
    return _round(fmean(kept), ndigits) if kept else None


def film_means(scores: Sequence[SegmentScore], *, ndigits: int | None = SEGMENT_DIGITS) -> Averages:
    """Unweighted means of one film over its segments (pass every gold segment).

    Precision over segments with ``k > 0`` (the others counted in
    ``n_precision_undefined``); recall and F1 over segments with candidates, empty
    selections included as 0; R_V, R_S and SelEff over segments with ``k > 0`` where
    defined.

    Example:
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


def budget_sweep(segments: Sequence[SegmentEvidence], budgets: Iterable[int] = BUDGETS, *,
                 ndigits: int | None = SEGMENT_DIGITS) -> dict[int, list[SegmentScore]]:
    """Per budget ``K``, every segment scored on the first ``K`` of its own ranking.

    Labels, view keys and embeddings are reused as judged; nothing is judged again. A
    segment with fewer than ``K`` references keeps them all.

    Example:
        >>> seg = SegmentEvidence({"a", "b"}, {"a", "b"}, [{"a"}, set(), {"b"}])
        >>> {k: s[0].f1 for k, s in budget_sweep([seg], [1, 2, 3, 16]).items()}
        {1: 0.6667, 2: 0.5, 3: 0.8, 16: 0.8}
    """
    out: dict[int, list[SegmentScore]] = {}
    for k in budgets:
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise _fail("budgets", "integers >= 1", k, "use K = 1..16")
        out[int(k)] = [score_segment(s.truncated(int(k)), ndigits=ndigits) for s in segments]
    return out

