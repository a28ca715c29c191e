"""The sim generator's Track-B path: one 5-second story segment with tunable memory.

Input: the segment prompt (grammar in :mod:`vidmem.sim.story_grammar`), the reference
images of the request and the rollout's earlier clips (:mod:`vidmem.sim.story_memory`).
For each name the prompt mentions as present:

* with a readable appearance ``（...）`` -- drawn as written (an introduction or a
  change), and the rollout's script learns it;
* without one (a recall) -- the generator *remembers* the appearance the script holds
  with probability ``f = knob.fidelity(gap_seconds)``, where ``gap_seconds =
  (index - last_segment) * segment_seconds`` (from the start of the segment where the
  name was last asked for to the start of this one): ``perfect`` and ``leaky:P``
  always, ``none`` never, ``decay:TAU`` with ``exp(-gap_seconds / TAU)``. If it does
  not remember but a reference shows the name, it copies the appearance (asset, state,
  count) from the reference -- this is what makes retrieval help. Otherwise it draws an
  *impostor*: another asset of the same kind (:func:`vidmem.sim.memory.impostor_for`),
  one copy. A name never introduced in the rollout is drawn as a random asset of the
  kind its vocabulary list says.
* with ``ignore_references=P`` (default 0), a name the generator would copy from a
  reference is, with probability ``P``, drawn as an impostor instead (source
  ``reference_ignored``): a *synthesis* failure -- the reference handed over shows it,
  the clip does not. The draw comes from the request's stream and is made only when
  ``P > 0``, so ``P = 0`` writes the bytes it always wrote. Locations always follow
  their reference.

A temporal reference (``the group from the opening``,
:func:`vidmem.sim.story_grammar.parse_temporal_references`) names no one: the generator
resolves it with the script of its previous clip -- the name of that kind the rollout
introduced first (each script entry keeps ``introduced``: ``[segment, position of the
name among the segment's mentions]``) -- and then treats it as a mention of that name
without appearance (a recall, with the memory rules above). One that resolves to no
name (nothing of its kind introduced yet) is not drawn; a resolved location counts as a
named one when the prompt names no present location.

Names mentioned as absent (``X is gone``, ``Y remembers X``, ``Z looks like X``) are not
drawn. With ``leaky:P`` every name a reference shows that is not drawn otherwise -- even
one the prompt says is gone -- is copied in with probability ``P``. Locations follow the same
rule with places (an impostor is another place); a prompt naming no location keeps the
place drawn in the previous clip, whatever the memory (the shot continues; a plain grey
background when there is none).

Picture: the location's place fills the view (480x270 at 8 fps by default); up to 6
sprites sit in one row (up to 3) or two rows of 3, shuffled over the slots, drifting a
few pixels during the clip. Sprites beyond 6 are not drawn (reported).

Truth sidecar ``X.mp4.truth.json``: ``{"request_id", "kind": "trackb_segment",
"story", "segment_index", "memory", "prompt", "location": {"name", "place",
"intended", "source", "correct"}, "entities": [{"name", "kind", "track_ids", "asset",
"state", "count", "source" (prompt | memory | reference | reference_ignored | impostor
| leak), "intended": {"asset", "state", "count"} | null, "appearance_correct": bool |
null, "gap_segments"}], "absent_mentions", "temporal_references": [{"phrase", "kind",
"present", "resolves_to" (a name, or null when unresolved)}], "leaked", "not_drawn",
"unreadable_references", "frames": [per-frame truth as in vidmem.sim.render]}``, plus
``"ignore_references": P`` when ``P > 0``.
``appearance_correct`` compares what was drawn with what the rollout's prompts
established for the name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from vidmem.sim.assets import ENTITIES, PLACES
from vidmem.sim.media import write_sim_video
from vidmem.sim.memory import MemoryKnob, impostor_for, request_rng
from vidmem.sim.render import iter_render
from vidmem.sim.sprites import entity_sprite
from vidmem.sim.story_grammar import Mention, name_kind, parse_mentions, parse_temporal_references
from vidmem.sim.story_memory import (
    SEGMENT_KIND,
    previous_clip,
    reference_view,
    rollout_clips,
    segment_key,
)
from vidmem.sim.world import Background, CameraKey, EntityTrack, Pose, WorldSpec

if TYPE_CHECKING:  # annotations only: the sim never imports the generators layer
    from vidmem.generators.requests import GenerationRequest

__all__ = ["DEFAULT_SIZE", "generate_segment"]

#: default output (width, height, fps) and segment length in seconds.
DEFAULT_SIZE = (480, 270, 8.0)
DEFAULT_SEGMENT_SECONDS = 5.0
_MAX_SPRITES = 6
_CELL_W = 130.0
_KIND_ASSETS = {"character": sorted(a.id for a in ENTITIES.values() if a.kind == "character"),
                "prop": sorted(a.id for a in ENTITIES.values() if a.kind == "prop")}


class _Planner:
    """Decides what one segment draws (one instance per request)."""

    def __init__(self, knob: MemoryKnob, rng: np.random.Generator, index: int,
                 segment_seconds: float, script: dict[str, Any], refs: Any,
                 ignore_references: float = 0.0) -> None:
        self.knob, self.rng, self.index = knob, rng, index
        self.segment_seconds = segment_seconds
        self.script = {k: dict(v) for k, v in script.items()}
        self.refs = refs
        self.ignore_references = float(ignore_references)

    def ignores_reference(self) -> bool:
        # no draw at P = 0: the stream, and so every clip, stays what it was
        return self.ignore_references > 0.0 and float(self.rng.random()) < self.ignore_references

    def impostor(self, mention: Any, entry: dict[str, Any] | None,
                 drawn_assets: list[str]) -> tuple[str, str, int]:
        if entry is not None:
            other = impostor_for(entry["asset"], entry["state"], drawn_assets, self.rng)
            return other[0], other[1], 1
        pool = _KIND_ASSETS["character" if mention.kind == "character" else "prop"]
        return pool[int(self.rng.integers(len(pool)))], "base", 1

    def remembers(self, entry: dict[str, Any] | None) -> bool:
        if entry is None:
            return False
        f = self.knob.fidelity((self.index - int(entry["last_segment"])) * self.segment_seconds)
        return f >= 1.0 or (f > 0.0 and float(self.rng.random()) < f)

    def introduced(self, entry: dict[str, Any] | None, position: int) -> list[int]:
        """``[segment, position]`` of the name's first entry into the script."""
        if entry is not None and "introduced" in entry:
            return [int(x) for x in entry["introduced"]]
        return [self.index, int(position)]

    def location(self, mention: Any, position: int) -> dict[str, Any]:
        name, entry = mention.name, self.script.get(mention.name)
        intended = entry["place"] if entry else None
        if mention.parsed is not None and mention.parsed.place is not None:
            place, source = mention.parsed.place, "prompt"
            intended = place
        elif self.remembers(entry):
            place, source = intended, "memory"
        elif name in self.refs.locations:
            place, source = self.refs.locations[name], "reference"
        else:
            pool = [p for p in sorted(PLACES) if p != intended]
            place, source = pool[int(self.rng.integers(len(pool)))], "impostor"
        if intended is not None:
            self.script[name] = {"kind": "location", "place": intended, "state": "base",
                                 "count": 1, "last_segment": self.index,
                                 "introduced": self.introduced(entry, position)}
        return {"name": name, "place": place, "intended": intended, "source": source,
                "correct": None if intended is None else place == intended}

    def entity(self, mention: Any, drawn_assets: list[str], position: int) -> dict[str, Any]:
        name, entry = mention.name, self.script.get(mention.name)
        gap = None if entry is None else self.index - int(entry["last_segment"]) - 1
        parsed = mention.parsed
        if parsed is not None and parsed.asset is not None:
            look, source = (parsed.asset, parsed.state, parsed.count), "prompt"
            entry = {"kind": mention.kind, "asset": parsed.asset, "state": parsed.state,
                     "count": parsed.count}
        elif self.remembers(entry):
            assert entry is not None
            look, source = (entry["asset"], entry["state"], int(entry["count"])), "memory"
        elif name in self.refs.entities and self.ignores_reference():
            look, source = self.impostor(mention, entry, drawn_assets), "reference_ignored"
        elif name in self.refs.entities:
            look, source = self.refs.entities[name], "reference"
        else:
            look, source = self.impostor(mention, entry, drawn_assets), "impostor"
        intended = None
        if entry is not None:
            entry = {**entry, "last_segment": self.index,
                     "introduced": self.introduced(self.script.get(name), position)}
            self.script[name] = entry
            intended = {"asset": entry["asset"], "state": entry["state"], "count": int(entry["count"])}
        drawn = {"asset": look[0], "state": look[1], "count": int(look[2])}
        return {"name": name, "kind": mention.kind, **drawn, "source": source,
                "intended": intended, "track_ids": [],
                "appearance_correct": None if intended is None else drawn == intended,
                "gap_segments": gap}


def _resolve(script: dict[str, Any], kind: str) -> str | None:
    """The name a temporal reference to ``kind`` means: the first of that kind introduced."""
    found = [(list(e.get("introduced") or [e.get("last_segment", 0), 0]), name)
             for name, e in script.items() if e.get("kind") == kind]
    return min(found)[1] if found else None


def _layout(items: list[dict[str, Any]], rng: np.random.Generator, place_u: float, cv: float,
            duration: float) -> tuple[list[EntityTrack], dict[str, str], list[str]]:
    sprites = [(it, k) for it in items for k in range(it["count"])]
    not_drawn = sorted({it["name"] for it, _ in sprites[_MAX_SPRITES:]})
    sprites = sprites[:_MAX_SPRITES]
    n = len(sprites)
    if n <= 3:
        slots = [((j - (n - 1) / 2.0) * _CELL_W, 10.0) for j in range(n)]
        cell_h = 190.0
    else:
        slots = [((c - 1) * _CELL_W, dv) for dv in (-55.0, 55.0) for c in range(3)]
        cell_h = 105.0
    order = rng.permutation(len(slots))
    tracks, names = [], {}
    for (it, k), slot in zip(sprites, order, strict=False):
        du, dv = slots[int(slot)]
        h, w = entity_sprite(it["asset"], it["state"]).shape[:2]
        scale = min(1.0, 0.85 * _CELL_W / w, 0.85 * cell_h / h)
        drift = float(rng.choice([-1.0, 1.0])) * 5.0
        u, v = place_u + du, cv + dv
        tid = it["name"] if k == 0 else f"{it['name']}#{k + 1}"
        tracks.append(EntityTrack(tid, it["asset"], -1e6, 1e6,
                                  ((0.0, u - drift, v), (duration, u + drift, v)),
                                  ((0.0, it["state"]),), scale=scale))
        names[tid] = it["name"]
        it["track_ids"].append(tid)
    return tracks, names, not_drawn


def _size(req: GenerationRequest, fps_override: float | None) -> tuple[int, int, float]:
    w, h = req.width, req.height
    if not (isinstance(w, int) and isinstance(h, int) and w >= 16 and h >= 16 and not (w % 2 or h % 2)):
        w, h = DEFAULT_SIZE[0], DEFAULT_SIZE[1]
    fps = fps_override or (float(req.fps) if req.fps and req.fps > 0 else DEFAULT_SIZE[2])
    return w, h, fps


def generate_segment(req: GenerationRequest, out: Path, *, knob: MemoryKnob, seed: int,
                     fps: float | None = None, duration: float | None = None,
                     ignore_references: float = 0.0) -> dict[str, Any]:
    """Write one Track-B segment clip and its truth sidecar (semantics in the module doc).

    Args:
        req: a story-segment request (no context video, no start image; its story
            and segment from :func:`vidmem.sim.story_memory.segment_key`).
        out: the MP4 to write (its folder holds the rollout's earlier clips).
        knob: the generator's memory setting.
        seed: generator seed (with the request id, seeds every random choice).
        fps, duration: overrides of the request's frame rate and length (seconds).
        ignore_references: probability in ``[0, 1]`` of drawing an impostor instead of
            copying a name from a reference (module doc).

    Returns:
        Extras for the generator's result (``GenerationResult.extras``).
    """
    story, index = segment_key(req.request_id, req.extras)
    width, height, fps = _size(req, fps)
    seconds = float(duration or (req.duration_seconds if req.duration_seconds and
                                 req.duration_seconds > 0 else DEFAULT_SEGMENT_SECONDS))
    clips = rollout_clips(out.parent, story, index)
    prev = previous_clip(clips)
    script = dict(prev.info.get("script", {})) if prev is not None else {}
    refs = reference_view(req.references, clips)
    rng = request_rng(seed, req.request_id, "trackb")
    plan = _Planner(knob, rng, index, seconds, script, refs, ignore_references)
    mentions = parse_mentions(req.prompt)
    position = {m.name: k for k, m in enumerate(mentions)}
    references = []
    for r in parse_temporal_references(req.prompt):
        name = _resolve(script, r.kind)
        references.append({"phrase": r.phrase, "kind": r.kind, "present": r.present,
                           "resolves_to": name})
        if name is not None and r.present and not any(m.name == name and m.present
                                                       for m in mentions):
            mentions = [m for m in mentions if m.name != name]
            mentions.append(Mention(name, r.kind, True))
            position.setdefault(name, len(position))
    loc_mentions = [m for m in mentions if m.kind == "location" and m.present]
    if loc_mentions:
        location = plan.location(loc_mentions[0], position[loc_mentions[0].name])
    else:
        last = dict(prev.info.get("location") or {}) if prev is not None else {}
        entry = plan.script.get(last.get("name") or "")
        intended = entry["place"] if entry else None
        location = {"name": last.get("name"), "place": last.get("place"), "intended": intended,
                    "source": "continued",
                    "correct": None if intended is None else last.get("place") == intended}
    items: list[dict[str, Any]] = []
    for m in mentions:
        if m.kind != "location" and m.present and all(it["name"] != m.name for it in items):
            items.append(plan.entity(m, [it["asset"] for it in items], position[m.name]))
    leaked = []
    if knob.leak_probability > 0:
        for name, (asset, state, count) in refs.entities.items():
            if any(it["name"] == name for it in items):
                continue
            if float(rng.random()) < knob.leak_probability:
                entry = plan.script.get(name)
                items.append({"name": name, "kind": name_kind(name), "asset": asset,
                              "state": state, "count": count, "source": "leak",
                              "intended": None if entry is None else
                              {k: entry[k] for k in ("asset", "state", "count")},
                              "track_ids": [], "appearance_correct": None,
                              "gap_segments": None})
                leaked.append(name)
    place = location["place"]
    if place is not None:
        others = [p for p in sorted(PLACES) if p != place]
        background = Background("panorama", (place, others[index % len(others)]))
        yaw = background.place_yaw(place)
    else:
        background, yaw = Background("plain", rgb=(128, 128, 128), sectors=2), 90.0
    place_u = yaw / 360.0 * background.pano_width
    tracks, names, not_drawn = _layout(items, rng, place_u, background.pano_height / 2.0, seconds)
    info = {"request_id": req.request_id, "story": story, "segment_index": index,
            "memory": knob.text, "script": plan.script, "tracks": names,
            "location": {"name": location["name"], "place": place}}
    spec = WorldSpec(seed=seed, width=width, height=height, fps=fps,
                     n_frames=max(1, round(seconds * fps)), background=background,
                     camera=(CameraKey(0.0, Pose(yaw)),), entities=tuple(tracks), t0=0.0,
                     kind=SEGMENT_KIND, info=info)
    frames_truth: list[dict[str, Any]] = []

    def frames():
        for frame, tr in iter_render(spec):
            frames_truth.append(tr)
            yield frame

    n = write_sim_video(out, frames(), spec)
    truth_path = out.with_name(out.name + ".truth.json")
    doc = {"request_id": req.request_id, "kind": SEGMENT_KIND, "story": story,
           "segment_index": index, "memory": knob.text, "prompt": req.prompt,
           "location": location, "entities": items,
           "absent_mentions": [m.name for m in mentions if not m.present],
           "temporal_references": references,
           "leaked": leaked, "not_drawn": not_drawn, "unreadable_references": refs.unreadable,
           "frames": frames_truth}
    if ignore_references > 0:  # only then: a P = 0 sidecar keeps its old bytes
        doc["ignore_references"] = float(ignore_references)
    truth_path.write_text(json.dumps(doc, separators=(",", ":"), sort_keys=True), encoding="utf-8")
    return {"n_frames": n, "fps": fps, "width": width, "height": height, "memory": knob.text,
            "story": story, "segment_index": index, "truth_path": str(truth_path),
            "drawn": [[it["name"], it["asset"], it["state"], it["count"], it["source"]]
                      for it in items],
            "leaked": leaked, "not_drawn": not_drawn, "segment_seconds": seconds}
