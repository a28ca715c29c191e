"""Build synthetic VMem-Bench Track-A films: a video, its official gold and its truth.

Layout written under ``ROOT`` (``SimFilms`` plays the role of the release's dataset
folders such as ``BlenderOpenMovies``)::

    SimFilms/<film_id>/gold/chunk_index.json          official format (chunk spans)
    SimFilms/<film_id>/gold/chunk_annotations.json    official format, English prompts
    SimFilms/<film_id>/gold/entity_registry.json      official format, English names
    SimFilms/<film_id>/gold/variants/en/chunk_annotations.json   the same two files again,
    SimFilms/<film_id>/gold/variants/en/entity_registry.json     byte for byte
    videos/<film_id>.mp4                               the film (H.264, sim world spec in
                                                       its comment tag)
    _truth/<film_id>.json                              what the renderer showed
    _cards/                                            the sim card deck: the weights of
                                                       ``judge/sim-cards``

Film ids are ``sim_film_001_s<seed>``, ``sim_film_002_s<seed>``...; film ``k`` depends only
on ``(seed, k)``. The story, cast and rendering are :mod:`vidmem.sim.film`'s: 24
segments of 4 to 8 whole seconds (about 2.3 minutes), 320x180 at 8 fps, 2 characters,
3 props and 3 locations; characters and props leave and come back, places return,
a character and a prop change state.

**Language.** The release's default gold files are Chinese and some films add English
ones under ``gold/variants/en/``. Sim prompts are English only, so they are written to
``gold/`` *and* to ``gold/variants/en/``: a loader asked for either language finds them.

**Official format.** Every key of the release's three files is written with the type
the release uses (a test compares key sets and types recursively against the sample
film). Values are derived as follows; what has no meaning in the sim keeps the
release's empty or neutral value (``shot_span``/``frame_span`` ``[]``, ``fps`` and
``*_frame`` ``null``, ``forbidden`` ``[]``, ``prompt_completeness`` ``{}``, notes ``""``):

* chunk = segment; ``seconds_span`` ``[start, end]`` in seconds (the spans tile the
  video: no gaps, no overlaps); ``prompt`` = the segment's instruction text, each
  entity's appearance phrase in ``（...）`` where it first appears or changes
  (:mod:`vidmem.sim.story_grammar`);
* ``present``: every entity on screen (the location included), characters, then props,
  then locations; ``first_appearances``: those seen for the first time;
  ``gold_instructions``: ``introduce`` for a first appearance, else ``continuity``;
* ``scenario_tags`` (the release's vocabulary): ``re-appearance`` (a character or prop
  seen before that was not in the previous segment), ``scene-return`` (likewise a
  location), ``state-change`` (a state event in the segment), else ``none``;
* entities: ``kind`` character | prop | location, ``name`` (a sim vocabulary name),
  ``description`` = the initial appearance phrase (what ``judge/sim-cards`` reads as a
  roster line's ``appearance``), ``first_chunk``, ``presence_spans`` (whole seconds,
  touching segments merged), ``first_seconds``/``last_seconds``/``screen_time_seconds``/
  ``max_absence_seconds``; ``state_events`` ``{"event_id": "evt_c<chunk>_<eid>",
  "chunk_id", "description": "appearance_changed: <new appearance phrase>",
  "deprecates": [], "frame_index": null, "seconds"}`` (the text after ``": "`` is the
  new appearance, in the grammar); one ``representation`` per entity at the 2 fps
  sample nearest the middle of its first chunk: ``frame_index`` (video frame),
  ``bbox`` ``[x0, y0, x1, y1]`` pixels from the renderer (``[]`` for a location),
  ``bbox_source`` ``"sim_render"``;
* ``human_reviewed`` is ``false`` (the gold is exact by construction, nobody reviewed
  it); ``source``/``annotation_provenance`` name the sim.

Truth file ``_truth/<film_id>.json`` (for tests; scorers never read it)::

    {"film_id", "video": "videos/<film_id>.mp4", "width", "height", "fps", "n_frames",
     "duration_seconds", "min_visible",
     "entities": {eid: {"name", "kind", "asset" | "place", "states": {state: phrase}}},
     "chunks": [{"chunk_id", "seconds_span", "location", "present": [eid, ...],
                 "changes": [{"eid", "seconds", "state"}]}],
     "samples": {"1": [row, ...], "2": [row, ...]}}

``samples[f]`` holds one row per time ``t = k / f`` (``k = 0, 1, ...`` while ``t`` is
in the video): ``{"t", "frame" (the video frame shown at t), "segment" (chunk id),
"visible": [eid, ...], "fraction": {eid: visible fraction}, "box": {eid: [x0, y0, x1,
y1]}, "state": {eid: sim state}}`` -- from the renderer's own bookkeeping, never from
pixels (:func:`vidmem.sim.film.film_samples`; an entity is visible at a fraction of at
least :data:`vidmem.sim.film.MIN_VISIBLE`).
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from vidmem.sim.build import TRUTH_DIR, BuildSummary, check_n_cases
from vidmem.sim.cards import write_card_deck
from vidmem.sim.film import (
    DEFAULT_FORMAT,
    MIN_VISIBLE,
    film_samples,
    film_spec,
    plan_film,
    write_film,
)

__all__ = ["CARDS_DIR", "DATASET", "DEFAULT_N_FILMS", "SCHEMA_VERSION", "VIDEOS_DIR",
           "build_track_a", "film_gold"]

DEFAULT_N_FILMS = 1
#: the dataset folder of sim films (the release has e.g. ``BlenderOpenMovies``).
DATASET = "SimFilms"
VIDEOS_DIR = "videos"
CARDS_DIR = "_cards"
#: ``schema_version`` of the release's Track-A gold files.
SCHEMA_VERSION = "2.0.0"
_SOURCE = "vidmem_sim"
_KIND_ORDER = {"character": 0, "prop": 1, "location": 2}
_SCOPE = {"character": "individual", "prop": "individual", "location": "scene"}


def _dump(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def _ordered(ids: Any, kinds: dict[str, str]) -> list[str]:
    return sorted(ids, key=lambda e: (_KIND_ORDER[kinds[e]], e))


def _spans(chunks: list[tuple[int, int]]) -> list[list[int]]:
    """Merge touching ``(start, end)`` spans (sorted) into ``[[start, end], ...]``."""
    out: list[list[int]] = []
    for a, b in chunks:
        if out and out[-1][1] == a:
            out[-1][1] = b
        else:
            out.append([a, b])
    return out


def _nearest(rows: list[dict[str, Any]], t: float) -> dict[str, Any]:
    return min(rows, key=lambda r: (abs(r["t"] - t), r["t"]))


def film_gold(plan: dict[str, Any], samples: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The three official gold documents of a planned film (rules in the module doc).

    Args:
        plan: :func:`vidmem.sim.film.plan_film`'s plan.
        samples: :func:`vidmem.sim.film.film_samples` of its spec (the ``"2"`` rows
            give each entity's representation frame and box).

    Returns:
        ``{"chunk_index": ..., "chunk_annotations": ..., "entity_registry": ...}``.
    """
    fid = plan["film_id"]
    ents = plan["entities"]
    kinds = {eid: e["kind"] for eid, e in ents.items()}
    segs = plan["segments"]
    spans = [[float(s["start"]), float(s["end"])] for s in segs]
    layout_hash = hashlib.sha256(json.dumps([fid, spans]).encode()).hexdigest()[:16]
    index_chunks, ann_chunks = [], []
    seen: set[str] = set()
    prev: set[str] = set()
    present_in: dict[str, list[int]] = {eid: [] for eid in ents}
    for s, span in zip(segs, spans, strict=True):
        present = _ordered([*s["cast"], s["location"]], kinds)
        first = [e for e in present if e not in seen]
        tags = []
        if any(kinds[e] != "location" and e in seen and e not in prev for e in present):
            tags.append("re-appearance")
        if any(kinds[e] == "location" and e in seen and e not in prev for e in present):
            tags.append("scene-return")
        if s["changes"]:
            tags.append("state-change")
        base = {"chunk_id": s["index"], "shot_span": [], "frame_span": [], "seconds_span": span}
        index_chunks.append(dict(base))
        ann_chunks.append({
            **base, "prompt": s["prompt"], "present": present, "first_appearances": first,
            "gold_instructions": [{"entity_id": e, "requirement": "introduce" if e in first
                                   else "continuity", "note": ""} for e in present],
            "forbidden": [], "prompt_completeness": {}, "scenario_tags": tags or ["none"]})
        for e in present:
            present_in[e].append(s["index"])
        seen.update(present)
        prev = set(present)
    events: dict[str, list[dict[str, Any]]] = {eid: [] for eid in ents}
    for s in segs:
        for c in s["changes"]:
            k = len(events[c["eid"]])
            events[c["eid"]].append({
                "event_id": f"evt_c{s['index']:03d}_{c['eid']}" + (f".{k}" if k else ""),
                "chunk_id": s["index"],
                "description": "appearance_changed: " + ents[c["eid"]]["states"][c["state"]],
                "deprecates": [], "frame_index": None, "seconds": float(c["seconds"])})
    rows = samples["2"]
    registry = []
    for eid in _ordered(ents, kinds):
        e = ents[eid]
        chunks = present_in[eid]
        ps = _spans([(segs[c]["start"], segs[c]["end"]) for c in chunks])
        gaps = [float(b[0] - a[1]) for a, b in zip(ps, ps[1:], strict=False)]
        first_chunk = chunks[0]
        fs = segs[first_chunk]
        rep = _nearest([r for r in rows if r["segment"] == first_chunk],
                       (fs["start"] + fs["end"]) / 2.0)
        registry.append({
            "entity_id": eid, "kind": e["kind"], "name": e["name"], "description": e["appearance"],
            "first_chunk": first_chunk, "presence_spans": ps,
            "first_frame": None, "first_seconds": float(ps[0][0]),
            "last_frame": None, "last_seconds": float(ps[-1][1]),
            "screen_time_seconds": float(sum(b - a for a, b in ps)),
            "max_absence_frames": None, "max_absence_seconds": max(gaps, default=0.0),
            "representations": [{
                "representation_id": f"{eid}@c{first_chunk:03d}", "chunk_id": first_chunk,
                "crop_path": "", "bbox": list(rep["box"].get(eid, [])),
                "bbox_source": "sim_render", "frame_index": int(rep["frame"]),
                "embedding_key": "", "state": "default", "qa": {}}],
            "state_events": events[eid],
            "static_attributes": {"identity_scope": _SCOPE[e["kind"]]}})
    return {
        "chunk_index": {"schema_version": SCHEMA_VERSION, "movie_id": fid,
                        "layout_hash": layout_hash, "fps": None, "time_unit": "seconds",
                        "source": _SOURCE, "chunks": index_chunks},
        "chunk_annotations": {"schema_version": SCHEMA_VERSION, "movie_id": fid,
                              "human_reviewed": False, "chunks": ann_chunks},
        "entity_registry": {
            "schema_version": SCHEMA_VERSION, "movie_id": fid, "human_reviewed": False,
            "annotation_provenance": {
                "pipeline": _SOURCE, "model": "vidmem.sim.film", "layout_hash": layout_hash,
                "chunk_source": "sim_segments", "presence_time_unit": "seconds",
                "review": "none", "unknown_present_refs": []},
            "entities": registry},
    }


def film_truth(plan: dict[str, Any], spec: Any,
               samples: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The truth document of a film (layout in the module docstring)."""
    ents = {}
    for eid, e in plan["entities"].items():
        row = {"name": e["name"], "kind": e["kind"], "states": dict(e["states"])}
        row.update({k: e[k] for k in ("asset", "place") if k in e})
        ents[eid] = row
    kinds = {eid: e["kind"] for eid, e in plan["entities"].items()}
    return {
        "film_id": plan["film_id"], "video": f"{VIDEOS_DIR}/{plan['film_id']}.mp4",
        "width": spec.width, "height": spec.height, "fps": spec.fps, "n_frames": spec.n_frames,
        "duration_seconds": spec.duration_seconds, "min_visible": MIN_VISIBLE, "entities": ents,
        "chunks": [{"chunk_id": s["index"], "seconds_span": [float(s["start"]), float(s["end"])],
                    "location": s["location"],
                    "present": _ordered([*s["cast"], s["location"]], kinds),
                    "changes": [dict(c) for c in s["changes"]]} for s in plan["segments"]],
        "samples": samples,
    }


def build_track_a(out: Path | str, seed: int = 0, n: int = DEFAULT_N_FILMS, *,
                  n_cases: int | None = None, width: int = DEFAULT_FORMAT[0],
                  height: int = DEFAULT_FORMAT[1], fps: float = DEFAULT_FORMAT[2]) -> BuildSummary:
    """Write ``n`` sim Track-A films under ``out`` (layout in the module docstring).

    Args:
        out: output folder (created if missing; files of the same names are replaced).
        seed: build seed; film ``k`` depends only on ``(seed, k)`` and the format.
        n: number of films.
        n_cases: the same as ``n`` under the name the generic ``vidmem sim build``
            runner passes (wins when given).
        width, height, fps: film format (defaults: 320x180 at 8 fps, the size at
            which ``judge/sim-cards`` sees every sim prop).

    Returns:
        The :class:`~vidmem.sim.build.BuildSummary` (``seconds`` is the build's wall
        time; ``manifest`` is the dataset folder
        ``SimFilms``; ``n_items`` counts segments); ``extras`` has the film ids, the
        folders of videos, truth and card deck, the format, and per film its segment
        count and duration.

    Raises:
        UserInputError: a bad ``n`` or format.
    """
    start = time.perf_counter()
    count = check_n_cases(n_cases if n_cases is not None else n, DEFAULT_N_FILMS,
                          "vmem_track_a")
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    files: list[str] = []
    ids, n_segments, durations = [], {}, {}
    for index in range(count):
        plan = plan_film(seed, index, width=width, height=height, fps=fps)
        fid = plan["film_id"]
        spec = film_spec(plan)
        video = f"{VIDEOS_DIR}/{fid}.mp4"
        (root / VIDEOS_DIR).mkdir(parents=True, exist_ok=True)
        write_film(root / video, spec)
        samples = film_samples(spec, plan)
        gold = film_gold(plan, samples)
        base = f"{DATASET}/{fid}/gold"
        docs = {f"{base}/chunk_index.json": gold["chunk_index"],
                f"{base}/chunk_annotations.json": gold["chunk_annotations"],
                f"{base}/entity_registry.json": gold["entity_registry"],
                f"{base}/variants/en/chunk_annotations.json": gold["chunk_annotations"],
                f"{base}/variants/en/entity_registry.json": gold["entity_registry"],
                f"{TRUTH_DIR}/{fid}.json": film_truth(plan, spec, samples)}
        for rel, doc in docs.items():
            _dump(root / rel, doc)
        files += [video, *docs]
        ids.append(fid)
        n_segments[fid] = len(plan["segments"])
        durations[fid] = spec.duration_seconds
    deck = write_card_deck(root / CARDS_DIR)
    files += sorted(str(p.relative_to(root)) for p in deck.rglob("*") if p.is_file())
    return BuildSummary("vmem_track_a", root, seed, count, sum(n_segments.values()), DATASET,
                        tuple(sorted(files)), time.perf_counter() - start,
                        {"film_ids": ids, "dataset": DATASET, "videos": VIDEOS_DIR,
                         "truth": TRUTH_DIR, "card_deck": CARDS_DIR,
                         "format": {"width": int(width), "height": int(height),
                                    "fps": float(fps)},
                         "n_segments": n_segments, "duration_seconds": durations,
                         "langs": ["en"]})
