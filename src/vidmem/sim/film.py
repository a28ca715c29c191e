"""Sim films: one continuous video of a planned story, and what is on screen at every time.

A *film* is a sequence of shots (segments) cut together into ONE video: characters and
props that leave and come back, places that return, and state changes in the middle of
a shot. It is the sim world's stand-in for a real film with per-segment annotations
(:mod:`vidmem.benchmarks.vmem_track_a.sim_build` writes the official gold from it).

Three steps, each a pure function of its input:

1. :func:`plan_film` (:mod:`vidmem.sim.film_plan`) -- the plan, plain data: entities
   (official Track-A style ids, appearance phrases of :mod:`vidmem.sim.story_grammar`)
   and segments (whole seconds tiling the film, cast, changes, prompt); the story is
   that module's :data:`~vidmem.sim.film_plan.SCENES`.
2. :func:`film_spec` -- the :class:`~vidmem.sim.world.WorldSpec` of the whole film: a
   panorama of the film's places, one camera cut per segment (a slow pan of
   :data:`PAN_DEGREES` inside it) and one sprite track per (entity, segment), id
   ``<eid>@<segment index>``; a change switches the track's state at its time.
   :func:`write_film` renders and encodes it (the spec rides in the MP4 ``comment`` tag,
   as in :mod:`vidmem.sim.media`).
3. :func:`film_samples` -- the renderer's own truth at sampled times ``t = k / fps``:
   which entities are visible (a character or prop when at least half of its sprite is
   in view, unhidden; a location when its place fills at least half of the view), with
   their visible fractions, boxes and states. No image analysis is involved.

The plan's names (:func:`plan_film`, :func:`film_id_for`, :data:`SCENES`,
:data:`DEFAULT_FORMAT`) are importable from here too, as before the plan moved out.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from vidmem.errors import UserInputError
from vidmem.io.video import write_video
from vidmem.sim.camera import Pose
from vidmem.sim.film_plan import DEFAULT_FORMAT, SCENES, film_id_for, film_rng, plan_film
from vidmem.sim.media import VIDEO_CRF, VIDEO_GOP, VIDEO_TAG_PREFIX, VIDEO_X264_PARAMS
from vidmem.sim.render import Backdrop, iter_render, render_view, view_window
from vidmem.sim.sprites import entity_sprite
from vidmem.sim.world import VIEW_HEIGHT_PX, Background, CameraKey, EntityTrack, WorldSpec

__all__ = ["DEFAULT_FORMAT", "FILM_KIND", "FILM_X264_SPEED", "MIN_VISIBLE", "PAN_DEGREES", "SCENES",
           "film_id_for", "film_samples", "film_spec", "plan_film", "write_film"]

#: ``WorldSpec.kind`` of a sim film.
FILM_KIND = "sim_film"
#: a sprite counts as visible when at least this share of it is in view and unhidden
#: (the same rule as the sim generator's references); a place, of the view.
MIN_VISIBLE = 0.5
#: x264 settings added to the sim's own for films (fast motion search, no B-frames, no
#: look-ahead); one thread keeps the bytes a pure function of the frames.
FILM_X264_SPEED = "subme=2:me=dia:ref=1:trellis=0:rc-lookahead=0:bframes=0"
#: the camera pans this many degrees of yaw across each segment (left or right).
PAN_DEGREES = 3.0


def _places(plan: dict[str, Any]) -> tuple[str, ...]:
    return tuple(e["place"] for e in plan["entities"].values() if e["kind"] == "location")


def _slots(n: int, view_w: float) -> tuple[list[tuple[float, float]], float, float]:
    """Slot centres ``(du, dv)`` (panorama pixels from the view centre), cell width, height."""
    cell_w = min(130.0, view_w / 3.1)
    if n <= 3:
        return [((j - (n - 1) / 2.0) * cell_w, 10.0) for j in range(n)], cell_w, 190.0
    return [((c - 1) * cell_w, dv) for dv in (-55.0, 55.0) for c in range(3)], cell_w, 105.0


def film_spec(plan: dict[str, Any]) -> WorldSpec:
    """The world spec of a planned film (tracks and camera as in the module docstring)."""
    width, height, fps = int(plan["width"]), int(plan["height"]), float(plan["fps"])
    background = Background("panorama", _places(plan))
    view_w = VIEW_HEIGHT_PX * width / height
    cv = background.pano_height / 2.0
    ents = plan["entities"]
    state = {eid: next(iter(e["states"])) for eid, e in ents.items()}
    camera: list[CameraKey] = []
    tracks: list[EntityTrack] = []
    for seg in plan["segments"]:
        a, b = float(seg["start"]), float(seg["end"])
        rng = film_rng(plan["seed"], plan["index"], 1 + int(seg["index"]))
        yaw = background.place_yaw(ents[seg["location"]]["place"])
        pan = float(rng.choice([-1.0, 1.0])) * PAN_DEGREES / 2.0
        camera += [CameraKey(a, Pose(yaw - pan)), CameraKey(b - 1e-3, Pose(yaw + pan))]
        cast = list(seg["cast"])
        slots, cell_w, cell_h = _slots(len(cast), view_w)
        order = rng.permutation(len(slots))
        changes = {c["eid"]: c for c in seg["changes"]}
        place_u = yaw / 360.0 * background.pano_width
        for eid, slot in zip(cast, order, strict=False):
            asset = ents[eid]["asset"]
            states = [(a, state[eid])]
            if eid in changes:
                states.append((float(changes[eid]["seconds"]), changes[eid]["state"]))
                state[eid] = changes[eid]["state"]
            h = max(entity_sprite(asset, s).shape[0] for _, s in states)
            w = max(entity_sprite(asset, s).shape[1] for _, s in states)
            scale = min(1.0, 0.85 * cell_w / w, 0.85 * cell_h / h)
            du, dv = slots[int(slot)]
            drift = float(rng.choice([-1.0, 1.0])) * 5.0
            u, v = place_u + du, cv + dv
            tracks.append(EntityTrack(f"{eid}@{int(seg['index']):03d}", asset, a, b,
                                      ((a, u - drift, v), (b, u + drift, v)), tuple(states),
                                      scale=round(scale, 5)))
    n_frames = round(float(plan["segments"][-1]["end"]) * fps)
    info = {"film_id": plan["film_id"],
            "segments": [[s["start"], s["end"], s["location"]] for s in plan["segments"]]}
    return WorldSpec(seed=int(plan["seed"]), width=width, height=height, fps=fps,
                     n_frames=n_frames, background=background, camera=tuple(camera),
                     entities=tuple(tracks), t0=0.0, kind=FILM_KIND, info=info)


def _colour_frames(spec: WorldSpec) -> Iterator[np.ndarray]:
    for frame, _ in iter_render(spec):
        if frame is not None:  # always, with colour on
            yield frame


def write_film(path: str | os.PathLike[str], spec: WorldSpec) -> int:
    """Render and encode a film in one pass (bounded memory); returns the frames written.

    Encoded like every sim video (:func:`vidmem.sim.media.write_sim_video`: libx264 at
    :data:`~vidmem.sim.media.VIDEO_CRF`, one thread, ``mbtree=0``, the spec in the
    ``comment`` tag, so :func:`~vidmem.sim.media.read_video_spec` reads it back) plus the
    faster x264 settings :data:`FILM_X264_SPEED` (about three times faster on a film of
    a thousand frames, a larger file, the same quality to within a few tenths of a dB).
    """
    return write_video(path, _colour_frames(spec), spec.fps, crf=VIDEO_CRF, gop=VIDEO_GOP, threads=1,
                       x264_params=f"{VIDEO_X264_PARAMS}:{FILM_X264_SPEED}",
                       metadata={"comment": VIDEO_TAG_PREFIX + spec.to_json()})


def _overlap(a0: float, a1: float, b0: float, b1: float, period: float) -> float:
    total = 0.0
    for k in (-1, 0, 1):
        lo, hi = max(a0, b0 + k * period), min(a1, b1 + k * period)
        total += max(0.0, hi - lo)
    return total


def film_samples(spec: WorldSpec, plan: dict[str, Any],
                 sample_fps: Iterable[float] = (1.0, 2.0)) -> dict[str, list[dict[str, Any]]]:
    """What the renderer shows at ``t = k / f`` for each sampling rate ``f``.

    Args:
        spec: the film's spec (:func:`film_spec`).
        plan: its plan (for the entity ids of the places).
        sample_fps: sampling rates in frames per second; each must divide the film's fps.

    Returns:
        ``{str(f): [{"t", "frame", "segment", "visible": [eid, ...] (sorted),
        "fraction": {eid: visible fraction}, "box": {eid: [x0, y0, x1, y1]},
        "state": {eid: sim state}}]}``; ``f`` written as ``"1"``, ``"2"``...
        ``fraction``/``box``/``state`` cover every entity drawn at all, ``visible``
        those at or over :data:`MIN_VISIBLE` (a location's fraction is the share of the
        view its place fills; it has no box).
    """
    backdrop = Backdrop.for_background(spec.background)
    pano_w = backdrop.width
    sector = pano_w / len(spec.background.places)
    place_eid = {e["place"]: eid for eid, e in plan["entities"].items() if e["kind"] == "location"}
    starts = [float(s["start"]) for s in plan["segments"]]
    out: dict[str, list[dict[str, Any]]] = {}
    for f in sample_fps:
        step = spec.fps / float(f)
        if abs(step - round(step)) > 1e-9:
            raise UserInputError(f"sim film: sampling at {f} fps does not fall on frames of a "
                                 f"{spec.fps} fps film", hint="use rates that divide the fps")
        rows = []
        for frame in range(0, spec.n_frames, round(step)):
            t = spec.time_of(frame)
            pose = spec.pose_at(t)
            _, drawn = render_view(backdrop, pose, t, spec.entities, spec.width, spec.height,
                                   colour=False)
            fraction: dict[str, float] = {}
            box: dict[str, list[int]] = {}
            state: dict[str, str] = {}
            for d in drawn:
                eid = d["id"].split("@", 1)[0]
                fraction[eid] = float(d["visible_fraction"])
                box[eid] = list(d["box_xyxy"])
                state[eid] = d["state"]
            win = view_window(pose, spec.width, spec.height, pano_w)
            u0, u1 = win.span_u
            for k, place in enumerate(spec.background.places):
                share = _overlap(u0, u1, k * sector, (k + 1) * sector, pano_w) / (u1 - u0)
                if share > 0:
                    fraction[place_eid[place]] = round(min(1.0, share), 4)
                    state[place_eid[place]] = "base"
            seg = int(np.searchsorted(starts, t + 1e-9, side="right")) - 1
            rows.append({"t": round(t, 6), "frame": frame, "segment": seg,
                         "visible": sorted(e for e, v in fraction.items() if v >= MIN_VISIBLE),
                         "fraction": dict(sorted(fraction.items())),
                         "box": dict(sorted(box.items())), "state": dict(sorted(state.items()))})
        key = str(int(f)) if float(f) == int(f) else str(float(f))
        out[key] = rows
    return out

