"""The sim generator's CMBench path: continue a context video with tunable memory.

Given the context's world spec (read from the video's metadata), the continuation is
the same world from the moment the context ends (``T0 = n_frames / fps``):

* the camera starts at the context's last pose; ``revisit`` pans back to the named
  place's centre (about 2.5 s per 60 degrees, 1.5-4 s) and holds;
* entities still in the world stay where they are; a ``reappear`` target slides in
  from the nearer edge of the final view to a free spot and stays; it keeps the state
  it had when last seen;
* ``leaky:P``: every entity seen in the context (or in a sim reference image) that
  the world has retired and the prompt did not ask for (at most three) is, with
  probability ``P``, placed at a free spot of the final view.

Memory: an entity's *gap* is the time from the end of its last visible context frame
to the continuation's start, ``(n_frames - 1 - last_visible_frame) / fps``
(``0`` if it is on screen at the end); each panorama column has a gap the same way,
from the last frame whose view covered it. With fidelity ``f = knob.fidelity(gap)``:
an entity is drawn as ``f * itself + (1 - f) * impostor`` (``mix`` of its track),
and each column of the background as ``f * truth + (1 - f) * hallucination``
(smoothed over 8 px). Things never seen in the context are new and drawn true.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from vidmem.sim.assets import ENTITIES, PLACES
from vidmem.sim.memory import (
    MemoryKnob,
    blend_panoramas,
    hallucinated_panorama,
    impostor_for,
    smooth_columns,
)
from vidmem.sim.prompts import Action
from vidmem.sim.render import Backdrop, ViewWindow, iter_render, view_window
from vidmem.sim.sprites import entity_sprite
from vidmem.sim.world import CameraKey, EntityTrack, Pose, WorldSpec

__all__ = ["ContextMemory", "analyse_context", "plan_continuation", "resolve_entity",
           "resolve_place"]

_FOREVER = 1e6
#: at most this many leak candidates are considered per request.
_MAX_LEAKS = 3


@dataclass(frozen=True)
class ContextMemory:
    """What the context showed, measured with the renderer's own visibility rule.

    Attributes:
        n_frames, fps: of the context.
        last_frame: track id -> last frame where it had visible pixels.
        last_state: track id -> its state in that frame.
        column_last: ``(W_pano,)`` int, last frame whose view covered each panorama
            column (``-1`` never).
        final_pose: camera pose at the continuation's start.
    """

    n_frames: int
    fps: float
    last_frame: dict[str, int]
    last_state: dict[str, str]
    column_last: np.ndarray
    final_pose: Pose

    def gap(self, frame: int) -> float:
        """Seconds from the end of ``frame`` to the continuation's start."""
        return (self.n_frames - 1 - frame) / self.fps


def analyse_context(spec: WorldSpec) -> ContextMemory:
    """Replay the context without pixels to learn when everything was last seen."""
    last: dict[str, int] = {}
    state: dict[str, str] = {}
    w = spec.background.pano_width
    cols = np.full(w, -1, np.int64)
    for _, tr in iter_render(spec, colour=False):
        i = tr["frame"]
        for e in tr["entities"]:
            last[e["id"]] = i
            state[e["id"]] = e["state"]
        win = view_window(Pose(*tr["pose"]), spec.width, spec.height, w)
        u0, u1 = win.span_u
        idx = np.arange(math.floor(u0), math.ceil(u1)) % w
        cols[idx] = i
    final = spec.pose_at(spec.time_of(spec.n_frames))
    return ContextMemory(spec.n_frames, spec.fps, last, state, cols, final)


def resolve_entity(spec: WorldSpec, name: str) -> str | None:
    """Track id whose asset label (first) or alias (then) is ``name``, else None."""
    name = name.strip().lower()
    for field in ("label", "alias"):
        for tr in spec.entities:
            a = ENTITIES[tr.asset]
            names = (a.label,) if field == "label" else a.aliases
            if name in (n.lower() for n in names):
                return tr.id
    return None


def resolve_place(spec: WorldSpec, name: str) -> str | None:
    """Place id of the spec's panorama whose name or alias is ``name``, else None."""
    name = name.strip().lower()
    for pid in spec.background.places:
        p = PLACES[pid]
        if name == p.name.lower() or name in (a.lower() for a in p.aliases):
            return pid
    return None


def _half_width(asset: str, scale: float = 1.0) -> float:
    return entity_sprite(asset).shape[1] * scale / 2.0


def _free_spot(win: ViewWindow, occupied: list[tuple[float, float]], half_w: float,
               pano_w: int) -> float:
    """A column in the view, fully showing a sprite of ``half_w``, far from others."""
    u0, u1 = win.span_u
    margin = half_w + 6.0 * win.scale
    lo, hi = u0 + margin, u1 - margin
    if hi <= lo:
        return win.cu
    best, best_score = win.cu, -np.inf
    for f in (0.5, 0.2, 0.8, 0.0, 1.0, 0.35, 0.65, 0.1, 0.9):
        u = lo + f * (hi - lo)
        score = np.inf
        for uo, hwo in occupied:
            uo = uo + pano_w * round((u - uo) / pano_w)
            score = min(score, abs(u - uo) - (half_w + hwo))
        if score > best_score + 1e-9:
            best, best_score = u, score
    return float(best)


def plan_continuation(
    spec: WorldSpec, mem: ContextMemory, actions: list[Action], knob: MemoryKnob,
    rng: np.random.Generator, *, n_frames: int, fps: float, width: int, height: int,
    extra_seen: list[tuple[str, str]], request_id: str,
) -> tuple[WorldSpec, Backdrop, dict[str, Any]]:
    """Build the continuation's world, its (possibly degraded) backdrop and a report.

    Args:
        spec: the context's world spec.
        mem: :func:`analyse_context` of it.
        actions: recognised prompt sentences (``loop`` actions are ignored here).
        knob: the memory setting.
        rng: the request's random stream.
        n_frames, fps, width, height: output format.
        extra_seen: ``(asset, state)`` of entities seen in sim reference images.
        request_id: recorded in the spec's ``info``.

    Returns:
        ``(continuation spec, backdrop, report)``; the report lists what was done
        (targets, places, gaps, fidelities, leaks, ignored names).
    """
    t0 = spec.time_of(spec.n_frames)
    pano_w = spec.background.pano_width
    report: dict[str, Any] = {"reappear": [], "revisit": [], "leaked": [], "unknown_names": [],
                              "entity_gap_seconds": {}, "entity_fidelity": {}}
    start_pose = mem.final_pose
    keys = [CameraKey(t0, start_pose)]
    arrive = t0
    final_pose = start_pose
    for act in actions:
        if act.kind != "revisit":
            continue
        pid = resolve_place(spec, act.name) if spec.background.kind == "panorama" else None
        if pid is None:
            report["unknown_names"].append(act.name)
            continue
        target = spec.background.place_yaw(pid)
        yaw = final_pose.yaw + ((target - final_pose.yaw + 180.0) % 360.0 - 180.0)
        dur = float(np.clip(abs(yaw - final_pose.yaw) / 60.0 * 2.5, 1.5, 4.0))
        keys += [CameraKey(arrive + 0.5, final_pose), CameraKey(arrive + 0.5 + dur, Pose(yaw))]
        arrive += 0.5 + dur
        final_pose = Pose(yaw)
        report["revisit"].append({"place": pid, "arrive_seconds": round(arrive - t0, 4)})
    final_win = view_window(final_pose, width, height, pano_w)

    wanted: list[str] = []
    for act in actions:
        if act.kind == "reappear":
            tid = resolve_entity(spec, act.name)
            if tid is None:
                report["unknown_names"].append(act.name)
            elif tid not in wanted:
                wanted.append(tid)
    kept = [tr for tr in spec.entities if tr.t_out > t0 and tr.id not in wanted]
    t_check = t0 + n_frames / fps
    occupied = [(tr.position(t_check)[0], _half_width(tr.asset, tr.scale)) for tr in kept]
    present_assets = {tr.asset for tr in kept}

    def mixed(tr: EntityTrack, seen_frame: int | None) -> EntityTrack:
        if seen_frame is None:
            return tr
        gap = mem.gap(seen_frame)
        f = knob.fidelity(gap)
        report["entity_gap_seconds"][tr.id] = gap
        report["entity_fidelity"][tr.id] = f
        if f >= 1.0:
            return tr
        other = impostor_for(tr.asset, tr.states[-1][1], sorted(present_assets), rng)
        return replace(tr, mix=(other[0], other[1], 1.0 - f))

    tracks = [mixed(tr, mem.last_frame.get(tr.id)) for tr in kept]
    v = final_win.cv + 5.0
    for tid in wanted:
        old = spec.track(tid)
        state = mem.last_state.get(tid, old.state(t0))
        hw = _half_width(old.asset, old.scale)
        u = _free_spot(final_win, occupied, hw, pano_w)
        u0, u1 = final_win.span_u
        u_off = u0 - hw - 6.0 if (u - u0) <= (u1 - u) else u1 + hw + 6.0
        t_in = arrive + 0.3
        new = EntityTrack(tid, old.asset, t_in, _FOREVER,
                          ((t_in, u_off, v), (t_in + 2.0, u, v)), ((t0, state),),
                          scale=old.scale, z=2)
        occupied.append((u, hw))
        present_assets.add(old.asset)
        tracks.append(mixed(new, mem.last_frame.get(tid)))
        report["reappear"].append({"id": tid, "state": state, "enter_seconds": t_in - t0})

    if knob.leak_probability > 0:
        retired = [(tr.id, tr.asset, mem.last_state[tr.id]) for tr in spec.entities
                   if tr.t_out <= t0 and tr.id in mem.last_frame and tr.id not in wanted]
        retired += [(f"{a}_ref", a, s) for a, s in extra_seen
                     if a not in present_assets and all(a != r[1] for r in retired)]
        for tid, asset, state in retired[:_MAX_LEAKS]:
            if float(rng.random()) >= knob.leak_probability:
                continue
            hw = _half_width(asset)
            u = _free_spot(final_win, occupied, hw, pano_w)
            occupied.append((u, hw))
            tracks.append(EntityTrack(f"{tid}_leak", asset, t0, _FOREVER, ((t0, u, v),),
                                      ((t0, state),), z=1))
            report["leaked"].append({"id": f"{tid}_leak", "asset": asset, "state": state})

    backdrop = Backdrop.for_background(spec.background)
    seen = mem.column_last >= 0
    gaps = np.where(seen, (mem.n_frames - 1 - mem.column_last) / mem.fps, 0.0)
    col_w = np.where(seen, 1.0 - knob.fidelities(gaps), 0.0)
    col_w = smooth_columns(col_w)
    if float(col_w.max()) > 1e-4:
        wrong = hallucinated_panorama(backdrop.image, rng)
        backdrop = Backdrop(blend_panoramas(backdrop.image, wrong, col_w))
    for item in report["revisit"]:
        k = spec.background.places.index(item["place"])
        sector = col_w[k * pano_w // len(spec.background.places):
                       (k + 1) * pano_w // len(spec.background.places)]
        item["background_wrong_weight"] = round(float(sector.mean()), 6)

    cont = WorldSpec(
        seed=spec.seed, width=width, height=height, fps=fps, n_frames=n_frames,
        background=spec.background, camera=tuple(keys), entities=tuple(tracks), t0=t0,
        kind="cmbench_continuation",
        info={"request_id": request_id, "memory": knob.text,
              "note": "the background is drawn with per-column memory degradation "
                      "(see the truth sidecar); entity tracks carry their own mix"},
    )
    return cont, backdrop, report
