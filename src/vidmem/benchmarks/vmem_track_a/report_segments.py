"""What the Track-A report reads back from a run, and which segments it shows.

The stored film responses (the item whose score is the film's ``scores.jsonl`` row), the
film's gold when it still hashes as scored, the choice of segments shown reference by
reference (:func:`choose_segments`), and each reference's caption and thumbnail. Used by
:mod:`.report` and by the demo.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image

from vidmem.metrics import reference_evidence as ev

__all__ = ["RETURN_TAGS", "THUMBNAILS", "ChosenSegment", "choose_segments", "film_responses", "segment_rows",
           "load_gold_for", "reference_caption", "thumbnail_of"]

#: the run directory's folder of reference thumbnails (benchmark.THUMBNAILS)
THUMBNAILS = "thumbnails"
#: scenario tags that make a segment the "memory" pick
RETURN_TAGS = ("re-appearance", "scene-return")
_PLACEHOLDER = np.full((72, 128, 3), 235, dtype=np.uint8)


# --------------------------------------------------------------------------- reading


def film_responses(run: Any, rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per scored film, its stored request and response: ``film_id -> {"request", "response"}``.

    The store may also hold items of earlier gold (same run configuration, other file
    hashes); the item whose score is the film's row in ``scores.jsonl`` is the one shown.
    """
    wanted = {r["film_id"]: {k: v for k, v in r.items() if k != "status"}
              for r in rows if r.get("status") == "scored"}
    out: dict[str, dict[str, Any]] = {}
    with run.items() as store:
        for s in store.iter_items(kind="score", status="done"):
            row = wanted.get(s.item_id)
            if row is None or s.score != row:
                continue
            seen = out.get(s.item_id)
            if seen is None or s.updated_at >= seen["updated_at"]:
                out[s.item_id] = {"request": s.request, "response": s.response,
                                  "updated_at": s.updated_at}
    return out


def load_gold_for(run: Any, request: Mapping[str, Any], lang: str) -> tuple[Any | None, str]:
    """The film's gold as the run scored it, or ``None`` and why not.

    Args:
        run: the run directory.
        request: the film's stored request (``film_dir``, ``gold_sha256``).
        lang: the gold language the run scored.
    """
    from vidmem.benchmarks.vmem_track_a.gold import load_film
    from vidmem.errors import VidmemError

    film_dir = request.get("film_dir")
    if not film_dir or not run.manifest.config.get("gold_root"):
        return None, "the run did not record where its gold lies"
    try:
        film = load_film(film_dir, lang)
    except (VidmemError, OSError, ValueError) as exc:
        return None, f"its gold at {film_dir} cannot be read now ({getattr(exc, 'message', exc)})"
    if dict(film.sha256) != dict(request.get("gold_sha256") or {}):
        return None, f"its gold at {film_dir} changed after the run scored it"
    return film, ""


# --------------------------------------------------------------------------- choosing


@dataclass
class ChosenSegment:
    """A segment shown reference by reference.

    Attributes:
        film_id: the film.
        segment: the segment index (film order, 0-based).
        why: the rule that picked it, in words.
        recall: per policy, the segment's recall at K = budget (``None``: C empty, or C
            unknown without the gold).
        covered: per policy, the number of distinct roster entities its references show.
    """

    film_id: str
    segment: int
    why: str
    recall: dict[str, float | None] = field(default_factory=dict)
    covered: dict[str, int] = field(default_factory=dict)


def _shows(ref: Mapping[str, Any]) -> frozenset[str] | None:
    return None if ref.get("shows") is None else frozenset(ref["shows"])


def segment_rows(details: Mapping[str, Sequence[Mapping[str, Any]]]
                  ) -> dict[int, dict[str, Mapping[str, Any]]]:
    """``segment index -> policy -> its detail row``."""
    out: dict[int, dict[str, Mapping[str, Any]]] = {}
    for policy, rows in details.items():
        for row in rows:
            out.setdefault(int(row["segment"]), {})[policy] = row
    return out


def choose_segments(films: Sequence[tuple[str, Mapping[str, Any], Any | None]],
                    budget: int) -> list[ChosenSegment]:
    """Pick the segments the report shows reference by reference.

    Rule (films in ``scores.jsonl`` order, segments in film order, ties to the earliest):

    1. *memory*: the first segment whose gold scenario tags include ``re-appearance``
       or ``scene-return`` and whose candidate set C (present minus first appearances)
       is not empty;
    2. *disagreement*: among the other segments with C not empty, the one where the
       policies' recall at K = budget spreads most (max - min over policies); when the
       spread is 0 everywhere, none. Without a film's gold (C unknown), the spread of
       the number of distinct entities the policies' references show stands in for it.

    Args:
        films: per film, ``(film_id, details, gold film or None)`` where ``details`` is
            the stored response's ``details`` (policy -> per-segment rows).
        budget: K; references beyond the first K of a ranking are not counted.

    Returns:
        At most two picks, memory first.
    """
    scored: list[ChosenSegment] = []
    tagged: list[ChosenSegment] = []
    for film_id, details, gold in films:
        segments = {s.index: s for s in gold.segments} if gold is not None else {}
        for index, by_policy in sorted(segment_rows(details).items()):
            seg = segments.get(index)
            pick = ChosenSegment(film_id, index, "")
            for policy, row in by_policy.items():
                shows = [_shows(r) for r in row["refs"][:budget]]
                pick.covered[policy] = len(frozenset().union(*(s for s in shows if s)))
                if seg is not None:
                    c = frozenset(seg.present) - frozenset(seg.first_appearances)
                    pick.recall[policy] = ev.recall(shows, c)
            if seg is not None:
                c = frozenset(seg.present) - frozenset(seg.first_appearances)
                if not c:
                    continue
                if any(t in RETURN_TAGS for t in seg.scenario_tags):
                    tagged.append(pick)
            scored.append(pick)
    chosen: list[ChosenSegment] = []
    if tagged:
        first = tagged[0]
        tags = "/".join(RETURN_TAGS)
        first.why = f"it is the first segment tagged {tags} with candidates to recall"
        chosen.append(first)

    def spread(p: ChosenSegment) -> float:
        values = ([v for v in p.recall.values() if v is not None] if p.recall
                  else [float(v) for v in p.covered.values()])
        return max(values) - min(values) if len(values) > 1 else 0.0

    rest = [p for p in scored if not any(p is c for c in chosen)]
    if rest:
        best = max(rest, key=spread)  # max keeps the first of equal spreads
        if spread(best) > 0:
            what = ("recall at K = budget" if best.recall
                    else "distinct entities shown (no gold: C unknown)")
            best.why = (f"the policies disagree most here in {what}: max - min = "
                        f"{spread(best):.3g}")
            chosen.append(best)
    return chosen


# --------------------------------------------------------------------------- drawing


def reference_caption(rank: int, ref: Mapping[str, Any]) -> str:
    """``"#rank, t s: labels"``; labels are entity ids, ``"unparsable"`` or ``"nothing"``.

    Example:
        >>> reference_caption(1, {"t": 42.5, "shows": ["char_001", "loc_001"]})
        '#1, 42.5 s: char_001, loc_001'
        >>> reference_caption(2, {"t": 3.25, "shows": None})
        '#2, 3.25 s: unparsable'
    """
    shows = ref.get("shows")
    label = "unparsable" if shows is None else (", ".join(shows) if shows else "nothing")
    return f"#{rank}, {float(ref['t']):g} s: {label}"


def thumbnail_of(run: Any, rel: str | None) -> np.ndarray:
    """A stored reference thumbnail (``RUN/thumbnails/<rel>``), or a grey placeholder."""
    if not rel:
        return _PLACEHOLDER
    path = run.path / THUMBNAILS / rel
    try:
        with Image.open(path) as im:
            return np.asarray(im.convert("RGB"))
    except OSError:
        return _PLACEHOLDER
