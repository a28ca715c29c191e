"""Track-A corpus statistics from the gold alone (no videos): films, segments, hours,
entities by kind, slice counts -- for the whole corpus and per dataset folder.

The paper's Track-A corpus: 92 films, 16,548 segments, 44.91 h, 2,803 entities.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from vidmem.benchmarks.vmem_track_a.schema import ENTITY_KINDS, Film

__all__ = ["corpus_stats"]


def _block(films: list[Film]) -> dict[str, Any]:
    kinds = Counter(e.kind for f in films for e in f.entities.values())
    slices = Counter(tag for f in films for s in f.segments for tag in dict.fromkeys(s.scenario_tags))
    return {
        "films": len(films),
        "segments": sum(len(f.segments) for f in films),
        "hours": sum(s.duration_seconds for f in films for s in f.segments) / 3600.0,
        "entities": {**{k: kinds.get(k, 0) for k in ENTITY_KINDS}, "total": sum(kinds.values())},
        "slices": dict(sorted(slices.items())),
    }


def corpus_stats(films: Iterable[Film]) -> dict[str, Any]:
    """Counts of a Track-A corpus, overall and per dataset.

    ``hours`` is the sum of the segments' spans (``end - start``) in hours, so gaps
    between segments (titles, credits the gold leaves out) are not counted. Entities are
    counted per film (the same character in two films counts twice). ``slices`` counts
    segments per ``scenario_tags`` value; a segment with two tags counts under both.

    Args:
        films: loaded films (:func:`~vidmem.benchmarks.vmem_track_a.gold.load_gold`).

    Returns:
        ``{"films", "segments", "hours", "entities": {"character", "prop", "location",
        "total"}, "slices": {tag: segments}, "by_dataset": {dataset: the same keys}}``.

    Example:
        >>> from vidmem.benchmarks.vmem_track_a.schema import Entity, Segment
        >>> segs = (Segment("f", 0, 0, 0.0, 1800.0, scenario_tags=("none",)),
        ...         Segment("f", 1, 1, 1800.0, 3600.0, scenario_tags=("re-appearance", "state-change")))
        >>> film = Film("f", "BlenderOpenMovies", segs,
        ...             {"char_001": Entity("char_001", "character", "Llama"),
        ...              "loc_001": Entity("loc_001", "location", "Desert")})
        >>> stats = corpus_stats([film])
        >>> stats["films"], stats["segments"], stats["hours"]
        (1, 2, 1.0)
        >>> stats["entities"]
        {'character': 1, 'prop': 0, 'location': 1, 'total': 2}
        >>> stats["slices"]
        {'none': 1, 're-appearance': 1, 'state-change': 1}
        >>> list(stats["by_dataset"])
        ['BlenderOpenMovies']
    """
    films = list(films)
    by_dataset: dict[str, list[Film]] = {}
    for film in films:
        by_dataset.setdefault(film.dataset, []).append(film)
    return {**_block(films),
            "by_dataset": {name: _block(group) for name, group in sorted(by_dataset.items())}}
