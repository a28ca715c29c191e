"""Identity analysis, one story: every condition's unit similarities and the control pairs.

One stored work item per story (kind ``analysis:identity``), so a killed analysis
resumes story by story. It holds *measurements only* -- cosines and detection flags,
never a same/different call: the cut is fitted afterwards on the controls of every
story and frozen before any unit is called (see :mod:`.analysis_identity_stats`).

Rules (in :data:`PROTOCOL`):

* **Units**: :func:`~.identity_units.identity_units` of the story (characters and
  props, the run seed), plus, when ``locations`` is on, the two return families of its
  locations, drawn apart (``kinds=("location",)``) so the character/prop sample does
  not move; their families are reported as ``location:<family>``.
* **Sides**: the current side is the unit's segment clip searched with the unit's
  ``appearance``; the previous side the previous appearance's clip of the SAME
  condition, searched with ``previous_appearance``; a text detector's query also
  carries the entity's name (``text_query`` of the measure module).
* **Positive controls**: every distinct current side (condition, segment, entity) found
  in frames of both parities: the highest cosine between its even-position and its
  odd-position frames (two disjoint frame sets of one clip: the same entity).
* **Negative controls**: per condition and kind, each entity's earliest found current
  side; every unordered pair of different entities of that kind: the highest cosine
  between the two (two entities of the same kind and story).
* **Faces** (with a face embedder): characters' largest faces in the found crops are
  a kind of their own (``face``), with the same two control rules.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from vidmem.benchmarks.vmem_track_b.analysis_identity_measure import (
    Measurer,
    Sighting,
    best_cosine,
    split_halves,
)
from vidmem.benchmarks.vmem_track_b.identity_units import identity_units

__all__ = ["KIND", "PROTOCOL", "measure_story", "story_units"]

#: the item-store kind of the per-story measurements
KIND = "analysis:identity"

PROTOCOL: dict[str, dict[str, str]] = {
    "location_units": {
        "rule": "with locations on (default), the return_after_absence and "
                "recent_return_sample units of locations, drawn with kinds=('location',) "
                "apart from characters/props; reported as location:<family>",
        "reason": "the protocol compares locations whole-frame; drawing them apart keeps "
                  "the character/prop sample of identity_units unchanged",
        "source": "PROTOCOLS.md section 4 ('locations: whole frame'); split decided here",
    },
    "positive_controls": {
        "rule": "each distinct (condition, segment, entity) current side found in frames of "
                "both parities: highest cosine between its even- and odd-position frames",
        "reason": "two disjoint frame sets of one clip show the same entity",
        "source": "PROTOCOLS.md section 4 (positive control pairs)",
    },
    "negative_controls": {
        "rule": "per condition and kind: each entity's earliest found current side; every "
                "unordered pair of different entities: highest cosine between the two",
        "reason": "two different entities of the same kind and story",
        "source": "PROTOCOLS.md section 4 (negative control pairs); 'earliest' decided here",
    },
    "clips": {
        "rule": "both sides of a unit come from the same condition's rollout; a missing clip "
                "(scored with --allow-missing) is a side where nothing is found",
        "reason": "identity is carried inside one rollout",
        "source": "PROTOCOLS.md section 4 ('same rollout')",
    },
}

_MEASURERS: dict[str, Measurer] = {}


def _measurer(settings: Mapping[str, Any]) -> Measurer:
    import json

    key = json.dumps(settings, sort_keys=True)
    if key not in _MEASURERS:
        _MEASURERS.clear()  # one configuration per analysis run
        _MEASURERS[key] = Measurer(
            detector=settings["detector"], deck=settings.get("deck"),
            crop_embedder=settings["crop_embedder"], place_embedder=settings["place_embedder"],
            frames=int(settings["frames"]), threshold=float(settings["threshold"]),
            segmenter=settings.get("segmenter"), face_embedder=settings.get("face_embedder"),
            backend_options=settings.get("backend_options", {}))
    return _MEASURERS[key]


def story_units(story: Any, *, seed: int, locations: bool) -> list[tuple[str, Any]]:
    """``(reported family, unit)`` of a story, characters/props first."""
    out = [(u.family, u) for u in identity_units(story, seed=seed)]
    if locations:
        out += [(f"location:{u.family}", u)
                for u in identity_units(story, seed=seed, kinds=("location",))
                if u.family != "changed_long_gap"]
    return out


def _face_row(cur: Sighting, prev: Sighting) -> dict[str, Any]:
    a, b = cur.faces, prev.faces
    return {"faces_current": a.found, "faces_previous": b.found,
            "face_score": best_cosine(a.embeddings, b.embeddings) if a.found and b.found
            else None}


def measure_story(item: Any) -> dict[str, Any]:
    """The work function: the stored request -> every condition's unit records and controls."""
    from vidmem.benchmarks.vmem_track_b.stories import load_stories

    req = item.request
    (story,) = load_stories(req["gold_root"], int(req["number"]))
    m = _measurer(req["settings"])
    units = story_units(story, seed=int(req["seed"]), locations=bool(req["locations"]))
    out_units: dict[str, list[dict[str, Any]]] = {}
    positive: list[dict[str, Any]] = []
    negative: list[dict[str, Any]] = []
    try:
        for cond in req["conditions"]:
            clips = dict(zip((s.segment_id for s in story.segments), req["clips"][cond],
                             strict=True))
            seen: dict[tuple[int, str, str], Sighting] = {}

            def sight(seg: int, u: Any, appearance: str,
                      _clips: dict[int, Any] = clips,
                      _seen: dict[tuple[int, str, str], Sighting] = seen) -> Sighting:
                k = (seg, u.eid, appearance)
                if k not in _seen:
                    _seen[k] = m.sight(_clips.get(seg), u.kind, appearance, u.name)
                return _seen[k]

            rows, currents = [], {}
            for family, u in units:
                cur = sight(u.segment_id, u, u.appearance)
                prev = sight(u.previous_segment_id, u, u.previous_appearance)
                currents.setdefault((u.segment_id, u.eid), (u, cur))
                rows.append({"key": u.key,
                             "family": family, "kind": u.kind, "eid": u.eid, "gap": u.gap,
                             "segment_id": u.segment_id,
                             "previous_segment_id": u.previous_segment_id,
                             "found_current": cur.found, "found_previous": prev.found,
                             "why": cur.why or prev.why,
                             "score": best_cosine(cur.embeddings, prev.embeddings)
                             if cur.found and prev.found else None,
                             **(_face_row(cur, prev) if m.face is not None
                                and u.kind == "character" else {})})
            out_units[cond] = rows
            earliest: dict[tuple[str, str], tuple[int, Sighting]] = {}
            for (seg, eid), (u, found) in sorted(currents.items()):
                views = [(u.kind, found)]
                if m.face is not None and u.kind == "character":
                    views.append(("face", found.faces))
                for kind, s in views:
                    score = best_cosine(*split_halves(s))
                    if score is not None:
                        positive.append({"kind": kind, "condition": cond, "segment_id": seg,
                                         "eid": eid, "score": score})
                    if s.found and (kind, eid) not in earliest:
                        earliest[(kind, eid)] = (seg, s)
            for (ka, ea), (kb, eb) in itertools.combinations(sorted(earliest), 2):
                if ka != kb:
                    continue
                (sa, a), (sb, b) = earliest[(ka, ea)], earliest[(kb, eb)]
                negative.append({"kind": ka, "condition": cond, "pair": [ea, eb],
                                 "segments": [sa, sb],
                                 "score": best_cosine(a.embeddings, b.embeddings)})
    finally:
        m.forget_clips()
    result = {"story_id": story.story_id, "units": out_units,
              "controls": {"positive": positive, "negative": negative}}
    return {"response": result, "score": result}
