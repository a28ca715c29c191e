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

Modules:

* :mod:`~vidmem.metrics.reference_evidence.segment_metrics` -- the per-segment numbers
  from plain label sets: :func:`precision`, :func:`recall`, :func:`f1`, :func:`r_v`,
  :func:`sel_eff`, :func:`r_s`.
* :mod:`~vidmem.metrics.reference_evidence.segment` -- :class:`SegmentEvidence`,
  :class:`SegmentScore` and :func:`score_segment`.
* :mod:`~vidmem.metrics.reference_evidence.averages` -- :class:`Averages`,
  :func:`film_means`, :func:`mean_over_films`, :func:`track_means`.
* :mod:`~vidmem.metrics.reference_evidence.sweep` -- :data:`BUDGETS` and
  :func:`budget_sweep`.
* :mod:`~vidmem.metrics.reference_evidence.protocol` -- :data:`PROTOCOL`.

Every public name is importable from this package.
"""

from vidmem.metrics.reference_evidence.averages import FILM_MEAN_DIGITS as FILM_MEAN_DIGITS
from vidmem.metrics.reference_evidence.averages import (
    Averages,
    film_means,
    mean_over_films,
    track_means,
)
from vidmem.metrics.reference_evidence.protocol import PROTOCOL
from vidmem.metrics.reference_evidence.segment import SegmentEvidence, SegmentScore, score_segment
from vidmem.metrics.reference_evidence.segment_metrics import SEGMENT_DIGITS as SEGMENT_DIGITS
from vidmem.metrics.reference_evidence.segment_metrics import (
    f1,
    precision,
    r_s,
    r_v,
    recall,
    sel_eff,
)
from vidmem.metrics.reference_evidence.sweep import BUDGETS, budget_sweep

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
