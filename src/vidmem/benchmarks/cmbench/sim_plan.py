"""Plan one CMBench-style context: a 60-second world with a reappear and a revisit.

The context is six 10-second clips on a six-place panorama (60 degrees per place; at
zoom 1 the view shows exactly one place). With ``A`` the start place, ``B`` a
neighbour and ``C``, ``D`` the places on the other side:

* clip 0: the camera holds on ``A``; the anchor of ``A`` stands there and the
  *reappear target* ``T`` slides in from one side and settles;
* clips 1 .. r-1: the camera holds on ``A`` or pushes in slightly and back; in clip
  ``e`` (drawn in ``1 .. r-1``) ``T`` slides out of view and leaves the world;
* clip ``r`` (drawn in ``2 .. 4``): the *revisit* -- the camera pans ``A -> B``,
  lingers on the anchor of ``B`` (the revisit target) and pans back to ``A``;
* the remaining clips move away from ``B``: pan to ``C``, hold on ``C`` (a walker,
  ``T``'s look-alike when it has one, crosses the view), pan to ``D``.

So at the end of the context ``T`` has been gone for tens of seconds and ``B`` has
not been seen since clip ``r``; the two gaps vary with the seed. Every choice comes
from ``numpy.random.default_rng([seed, index, ...])``: the plan is a pure function of
``(seed, index)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vidmem.sim.assets import ENTITIES, PLACES, SECTOR_WIDTH, state_phrase
from vidmem.sim.sprites import entity_sprite
from vidmem.sim.world import (
    DEFAULT_FPS,
    DEFAULT_HEIGHT,
    DEFAULT_WIDTH,
    VIEW_HEIGHT_PX,
    Background,
    CameraKey,
    EntityTrack,
    Pose,
    WorldSpec,
)

__all__ = ["CLIP_SECONDS", "N_CLIPS", "ContextPlan", "plan_context"]

CLIP_SECONDS = 10.0
N_CLIPS = 6
_SLIDE = 2.0  # seconds an entity takes to slide in or out
_V_MID = 135.0  # panorama row of the view centre at pitch 0
#: assets good as anchors (distinct, well textured); all assets can be targets.
_POOL = tuple(sorted(ENTITIES))


@dataclass
class ContextPlan:
    """A planned context and the facts its tasks need.

    Attributes:
        spec: the world spec to render.
        clip_prompts: six clip descriptions.
        scene: one-line scene description.
        target: reappear target track id.
        anchor: revisit target track id (the salient entity of place ``B``).
        place_b: place id the revisit goes back to.
        revisit_clip, exit_clip: clip indices (0-based) of the revisit and of ``T``'s exit.
    """

    spec: WorldSpec
    clip_prompts: list[str]
    scene: str
    target: str
    anchor: str
    place_b: str
    revisit_clip: int
    exit_clip: int
    notes: dict[str, Any] = field(default_factory=dict)


def _pick_state(rng: np.random.Generator, asset: str) -> str:
    r = float(rng.random())
    if r < 0.3:
        return "base"
    if r < 0.55:
        colours = ("red", "yellow", "green", "teal", "blue", "purple", "pink", "orange")
        return f"recoloured:{colours[int(rng.integers(len(colours)))]}"
    if r < 0.7:
        return "accessory"
    if r < 0.85 or not ENTITIES[asset].container:
        return "broken"
    return "closed"


def _size(asset: str) -> tuple[float, float]:
    h, w = entity_sprite(asset).shape[:2]
    return w / 2.0, h / 2.0


def _spot(rng: np.random.Generator, sector: int, asset: str, side: str) -> tuple[float, float]:
    """A resting centre inside a sector's left/right/middle part, fully in view."""
    hw, hh = _size(asset)
    lo, hi = sector * SECTOR_WIDTH + hw + 14, (sector + 1) * SECTOR_WIDTH - hw - 14
    mid = (lo + hi) / 2.0
    if side == "left":
        u = rng.uniform(lo, min(hi, lo + 40))
    elif side == "right":
        u = rng.uniform(max(lo, hi - 40), hi)
    else:
        u = rng.uniform(mid - 30, mid + 30)
    top = _V_MID - VIEW_HEIGHT_PX / 2 + hh + 8
    bottom = _V_MID + VIEW_HEIGHT_PX / 2 - hh - 8
    v = rng.uniform(max(top, 105.0), min(bottom, 165.0))
    return float(u), float(v)


def _slide_track(tid: str, asset: str, state: str, sector: int, rest: tuple[float, float],
                 side: str, t_enter: float, t_exit: float | None, z: int) -> EntityTrack:
    hw, _ = _size(asset)
    u_off = (sector * SECTOR_WIDTH - hw - 10) if side == "left" else (
        (sector + 1) * SECTOR_WIDTH + hw + 10)
    u, v = rest
    keys = [(t_enter, u_off, v), (t_enter + _SLIDE, u, v)]
    t_out = 1e6
    if t_exit is not None:
        keys += [(t_exit, u, v), (t_exit + _SLIDE, u_off, v)]
        t_out = t_exit + _SLIDE + 0.05
    return EntityTrack(tid, asset, t_enter, t_out, tuple(keys), ((0.0, state),), z=z)


def plan_context(seed: int, index: int, *, width: int = DEFAULT_WIDTH,
                 height: int = DEFAULT_HEIGHT, fps: float = DEFAULT_FPS) -> ContextPlan:
    """Plan context ``index`` of a build with ``seed`` (see the module docstring).

    Args:
        seed: build seed.
        index: context number within the build.
        width, height, fps: output format.

    Returns:
        The :class:`ContextPlan`.
    """
    rng = np.random.default_rng([int(seed), int(index), 0xC0B])
    places = tuple(str(p) for p in rng.permutation(sorted(PLACES))[:6])
    n = len(places)
    a = int(rng.integers(n))
    d = int(rng.choice([-1, 1]))
    b, c, dd = (a + d) % n, (a - d) % n, (a - 2 * d) % n
    step = 360.0 / n
    yaw_a = (a + 0.5) * step
    yaw_b, yaw_c, yaw_d = yaw_a + d * step, yaw_a - d * step, yaw_a - 2 * d * step
    r = int(rng.integers(2, 5))
    e = int(rng.integers(1, r))
    assets = [str(x) for x in rng.permutation(_POOL)]
    target = assets.pop()
    banned = {target, ENTITIES[target].lookalike}
    picks = [x for x in assets if x not in banned]
    anchor_a, anchor_b, anchor_c, anchor_d = picks[:4]
    walker = ENTITIES[target].lookalike or picks[4]
    side_t = str(rng.choice(["left", "right"]))
    side_a = "right" if side_t == "left" else "left"

    name = {k: PLACES[places[k]].name for k in range(n)}
    word = {1: "right", -1: "left"}
    prompts: list[list[str]] = [[] for _ in range(N_CLIPS)]
    keys: list[CameraKey] = [CameraKey(0.0, Pose(yaw_a))]
    tracks: list[EntityTrack] = []

    st_anchor = {k: _pick_state(rng, x) if rng.random() < 0.4 else "base"
                 for k, x in (("a", anchor_a), ("b", anchor_b), ("c", anchor_c), ("d", anchor_d))}
    for tid, asset, sector, side, st in (
        (anchor_a, anchor_a, a, side_a, st_anchor["a"]),
        (anchor_b, anchor_b, b, "middle", st_anchor["b"]),
        (anchor_c, anchor_c, c, "middle", st_anchor["c"]),
        (anchor_d, anchor_d, dd, "middle", st_anchor["d"]),
    ):
        u, v = _spot(rng, sector, asset, side)
        tracks.append(EntityTrack(tid, asset, -1e6, 1e6, ((0.0, u, v),), ((0.0, st),)))
    phrase = {tr.id: state_phrase(tr.asset, tr.states[0][1]) for tr in tracks}

    # The reappear target: in during clip 0, out during clip e.
    st_t = _pick_state(rng, target)
    t_enter = float(rng.uniform(1.0, 3.0))
    t_exit = float(CLIP_SECONDS * e + rng.uniform(2.0, 6.0))
    rest_t = _spot(rng, a, target, side_t)
    tracks.append(_slide_track(target, target, st_t, a, rest_t, side_t, t_enter, t_exit, 1))
    phrase[target] = state_phrase(target, st_t)

    prompts[0].append(f"The camera holds on the {name[a]}, where a {phrase[anchor_a]} stands.")
    prompts[0].append(f"A {phrase[target]} slides in from the {side_t} and stops.")
    for k in range(1, r):
        t0 = CLIP_SECONDS * k
        if rng.random() < 0.5:
            z = float(rng.uniform(1.08, 1.15))
            keys += [CameraKey(t0 + 1.0, Pose(yaw_a)), CameraKey(t0 + 5.0, Pose(yaw_a, zoom=z)),
                     CameraKey(t0 + 9.0, Pose(yaw_a))]
            prompts[k].append(f"The camera pushes in slowly on the {name[a]} and eases back.")
        else:
            prompts[k].append(f"The camera stays on the {name[a]}.")
        if k == e:
            prompts[k].append(f"The {phrase[target]} slides out of view to the {side_t}.")

    t0 = CLIP_SECONDS * r
    keys += [CameraKey(t0 + 0.5, Pose(yaw_a)), CameraKey(t0 + 3.0, Pose(yaw_b)),
             CameraKey(t0 + 6.0, Pose(yaw_b)), CameraKey(t0 + 8.5, Pose(yaw_a))]
    prompts[r].append(
        f"The camera pans {word[d]} from the {name[a]} to the {name[b]}, lingers on the "
        f"{phrase[anchor_b]} there, and pans back to the {name[a]}.")
    later = list(range(r + 1, N_CLIPS))
    plan = ["pan_c", "hold_c", "pan_d"][: len(later)]
    for k, action in zip(later, plan, strict=True):
        t0 = CLIP_SECONDS * k
        if action == "pan_c":
            keys += [CameraKey(t0 + 1.0, Pose(yaw_a)), CameraKey(t0 + 4.0, Pose(yaw_c))]
            prompts[k].append(f"The camera pans {word[-d]} from the {name[a]} to the "
                              f"{name[c]}, where a {phrase[anchor_c]} stands.")
        elif action == "hold_c":
            st_w = _pick_state(rng, walker)
            rest_w = _spot(rng, c, walker, "right" if d == 1 else "left")
            side_w = "right" if d == 1 else "left"
            tracks.append(_slide_track(walker, walker, st_w, c, rest_w, side_w, t0 + 1.0,
                                       t0 + 6.0, 1))
            wp = state_phrase(walker, st_w)
            prompts[k].append(f"The camera holds on the {name[c]}. A {wp} slides in from the "
                              f"{side_w}, pauses, and slides back out.")
        else:
            keys += [CameraKey(t0 + 1.0, Pose(yaw_c)), CameraKey(t0 + 4.0, Pose(yaw_d))]
            prompts[k].append(f"The camera pans {word[-d]} from the {name[c]} to the "
                              f"{name[dd]}, where a {phrase[anchor_d]} stands.")
    n_frames = int(round(N_CLIPS * CLIP_SECONDS * fps))
    scene = ("A round courtyard walled by six places: " + ", ".join(name[k] for k in range(n))
             + ".")
    spec = WorldSpec(
        seed=int(seed), width=width, height=height, fps=float(fps), n_frames=n_frames,
        background=Background("panorama", places), camera=tuple(keys), entities=tuple(tracks),
        kind="cmbench_context",
        info={"index": int(index), "clip_seconds": CLIP_SECONDS, "n_clips": N_CLIPS},
    )
    return ContextPlan(spec, [" ".join(p) for p in prompts], scene, target, anchor_b,
                       places[b], r, e, {"place_a": places[a], "direction": d})
