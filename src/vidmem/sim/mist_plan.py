"""Container shots' timelines: who is where, which lid is open, what is inside, per frame.

Times below are for a 5-second shot (``T`` = duration / 5 s scales them); positions are
canonical pixels (:mod:`vidmem.sim.mist_render`). Every timeline ends static from
``4.2 T`` on, so the six reveal readings (0.90 ... 0.995 of the shot) see one state.

* **setup**: every container stands open and empty; the actor holds the objects up
  beside it; the operations run one after another in ``[0.5 T, 3.0 T]`` (a put flies
  the copies from the hand into the slots, a move flies them from one container to
  another; an object only *held up* goes back to the actor at ``1.6-2.2 T`` and is
  gone); every lid is ajar at ``3.3 T`` and closed from ``3.7 T``.
* **gap**: every lid closed; the actor idles at home. A *leak* opens one container
  ``1.2-3.6 T`` (ajar ``1.0 T`` and ``3.6 T``, closed from ``3.9 T``), long enough for
  evenly spaced frames of the shot to catch it.
* **reveal**: the actor walks to the container it acts on (``0-0.8 T``); an opening
  is ajar at ``0.8 T`` and open from ``1.2 T``; executed: the actor walks home
  ``1.8-2.6 T``; brief open: ajar again ``3.0 T``, closed ``3.4 T``, home by
  ``4.2 T``; occluded: the actor steps in front of the inside ``2.6-3.4 T`` and stays;
  no action: back home ``2.0-2.8 T``, nothing opens.

The actor bobs 2 pixels up and down (period 2.5 s). A container's inside counts as
*visible* when it is open and the actor's box covers at most half of its window.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vidmem.sim.mist_render import ACTOR_HOME_Y, CONTAINER_TOP, Drawable, compose
from vidmem.sim.mist_sprites import (
    WINDOW_BOX,
    actor_sprite,
    container_sprite,
    object_sprite,
    slot_centres,
)

__all__ = ["Flyer", "Script", "frame_at", "gap_script", "render_script", "reveal_script",
           "setup_script"]

_HAND_DX, _HAND_Y = 34, 84
_NEAR_DX, _NEAR_Y = -18, 100
_FRONT_DX, _FRONT_Y = 44, 124


@dataclass
class Flyer:
    """An object in the air: visible while ``shown_from <= t < shown_to``, moving from
    ``a`` to ``b`` (object centres) during ``[t0, t1]``."""

    asset: str
    a: tuple[float, float]
    b: tuple[float, float]
    t0: float
    t1: float
    shown_from: float = -1e9
    shown_to: float = 1e9
    z: int = 3


@dataclass
class Script:
    """One shot, as step functions and keyframes (see the module docstring)."""

    duration: float
    lids: dict[str, list[tuple[float, str]]]
    contents: dict[str, list[tuple[float, list[str]]]]
    actor: list[tuple[float, float, float]]
    flyers: list[Flyer] = field(default_factory=list)


def _step(steps: list[tuple[float, Any]], t: float) -> Any:
    value = steps[0][1]
    for ts, v in steps:
        if ts <= t + 1e-9:
            value = v
    return value


def _lerp_keys(keys: list[tuple[float, float, float]], t: float) -> tuple[float, float]:
    if t <= keys[0][0]:
        return keys[0][1], keys[0][2]
    for (ta, xa, ya), (tb, xb, yb) in zip(keys, keys[1:], strict=False):
        if t <= tb:
            s = (t - ta) / (tb - ta) if tb > ta else 1.0
            s = s * s * (3 - 2 * s)
            return xa + (xb - xa) * s, ya + (yb - ya) * s
    return keys[-1][1], keys[-1][2]


def _copies(items: list[dict[str, Any]]) -> list[str]:
    return [str(i["asset"]) for i in items for _ in range(int(i["count"]))][:4]


def _slot(x: int, n: int, j: int) -> tuple[float, float]:
    cx, cy = slot_centres(n)[j]
    return float(x + cx), float(CONTAINER_TOP + cy)


def _xs(scene: dict[str, Any]) -> dict[str, int]:
    return {c["id"]: int(c["x"]) for c in scene["containers"]}


def setup_script(scene: dict[str, Any], duration: float) -> Script:
    """The setup shot of a freshly parsed scene (module docstring)."""
    T, xs = duration / 5.0, _xs(scene)
    home = float(scene["actor_home"])
    assets = {o["id"]: o["asset"] for o in scene["objects"]}
    inside: dict[str, list[str]] = {c: [] for c in xs}
    contents = {c: [(0.0, [])] for c in xs}
    flyers: list[Flyer] = []
    ops = scene["operations"]
    span = 2.5 * T / max(1, len(ops))
    in_hand = 0
    for i, op in enumerate(ops):
        t0 = 0.5 * T + i * span
        t1 = t0 + 0.8 * span
        copies = [assets[op["object"]]] * int(op["count"])
        if op["op"] == "put":
            starts = [(home + _HAND_DX + 9 * (in_hand + j), float(_HAND_Y)) for j in
                      range(len(copies))]
            in_hand += len(copies)
        else:
            src = inside[op["from"]]
            starts = [_slot(xs[op["from"]], len(src), j) for j in range(len(src))][:len(copies)]
            inside[op["from"]] = src[len(copies):]
            contents[op["from"]].append((t0, list(inside[op["from"]])))
        dest = inside[op["to"]] + copies
        for j, (asset, a) in enumerate(zip(copies, starts, strict=False)):
            b = _slot(xs[op["to"]], len(dest), len(inside[op["to"]]) + j)
            flyers.append(Flyer(asset, a, b, t0, t1, shown_from=-1e9 if op["op"] == "put" else t0,
                                shown_to=t1))
        inside[op["to"]] = dest
        contents[op["to"]].append((t1, list(dest)))
    for j, oid in enumerate(scene.get("shown_only", [])):
        a = (home + _HAND_DX + 9 * (in_hand + j), float(_HAND_Y))
        flyers.append(Flyer(assets[oid], a, (home, float(ACTOR_HOME_Y)), 1.6 * T, 2.2 * T,
                            shown_to=2.2 * T, z=1))
    lids = {c: [(0.0, "open"), (3.3 * T, "ajar"), (3.7 * T, "closed")] for c in xs}
    return Script(duration, lids, contents, [(0.0, home, float(ACTOR_HOME_Y))], flyers)


def gap_script(scene: dict[str, Any], duration: float, leak: str | None) -> Script:
    """The gap shot; ``leak`` names the container that comes open, if any."""
    T, xs = duration / 5.0, _xs(scene)
    lids = {c: [(0.0, "closed")] for c in xs}
    contents = {c: [(0.0, _copies(scene["contents"].get(c, [])))] for c in xs}
    if leak is not None:
        lids[leak] = [(0.0, "closed"), (1.0 * T, "ajar"), (1.2 * T, "open"), (3.6 * T, "ajar"),
                      (3.9 * T, "closed")]
    home = float(scene["actor_home"])
    return Script(duration, lids, contents, [(0.0, home, float(ACTOR_HOME_Y))])


def reveal_script(scene: dict[str, Any], duration: float, move: dict[str, Any],
                  shown: list[dict[str, Any]] | None) -> Script:
    """The reveal shot for a drawn move (:func:`vidmem.sim.mist_reveal.draw_move`)."""
    T, xs = duration / 5.0, _xs(scene)
    home = (float(scene["actor_home"]), float(ACTOR_HOME_Y))
    lids = {c: [(0.0, "closed")] for c in xs}
    contents = {c: [(0.0, [])] for c in xs}
    goal = move.get("opened") or move.get("named")
    keys = [(0.0, *home)]
    if goal is not None:
        near = (float(xs[goal] + _NEAR_DX), float(_NEAR_Y))
        keys.append((0.8 * T, *near))
        failure = move.get("failure")
        opened = move.get("opened")
        if opened is not None:
            contents[opened] = [(0.0, _copies(shown or []))]
            lids[opened] = [(0.0, "closed"), (0.8 * T, "ajar"), (1.2 * T, "open")]
        if failure == "brief_open":
            lids[goal] += [(3.0 * T, "ajar"), (3.4 * T, "closed")]
            keys += [(3.4 * T, *near), (4.2 * T, *home)]
        elif failure == "occluded":
            front = (float(xs[goal] + _FRONT_DX), float(_FRONT_Y))
            keys += [(2.6 * T, *near), (3.4 * T, *front)]
        elif failure == "no_action":
            keys += [(2.0 * T, *near), (2.8 * T, *home)]
        else:
            keys += [(1.8 * T, *near), (2.6 * T, *home)]
    return Script(duration, lids, contents, keys)


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    return w * h / max(1e-9, (b[2] - b[0]) * (b[3] - b[1]))


def frame_at(scene: dict[str, Any], script: Script, t: float,
             k: float) -> tuple[list[Drawable], dict[str, Any]]:
    """Drawables of the frame at shot time ``t`` and its truth.

    Returns:
        ``(drawables, truth)``; ``truth = {"t", "actor_box": [x0, y0, x1, y1] output
        pixels, "flying": [asset...], "containers": {id: {"state", "inside_visible",
        "occluded", "contents": [{"asset", "count"}] | None}}}`` (contents only when
        the inside is visible).
    """
    actor = actor_sprite(scene["actor"]["asset"], k)
    ah, aw = actor.shape[0] / k, actor.shape[1] / k
    ax, ay = _lerp_keys(script.actor, t)
    ay += 2.0 * math.sin(2.0 * math.pi * t / 2.5)
    box = (ax - aw / 2, ay - ah / 2, ax + aw / 2, ay + ah / 2)
    drawables = [Drawable(actor, round(box[0]), round(box[1]), 2)]
    truth_c: dict[str, Any] = {}
    for c in scene["containers"]:
        cid, x = c["id"], int(c["x"])
        state = _step(script.lids[cid], t)
        drawables.append(Drawable(container_sprite(c["key"], state, k), x, CONTAINER_TOP, 0))
        copies = _step(script.contents[cid], t) if state == "open" else []
        for j, asset in enumerate(copies):
            cx, cy = _slot(x, len(copies), j)
            sprite = object_sprite(asset, k)
            drawables.append(Drawable(sprite, round(cx - sprite.shape[1] / k / 2),
                                      round(cy - sprite.shape[0] / k / 2), 1))
        wx0, wy0, wx1, wy1 = WINDOW_BOX
        window = (x + wx0, CONTAINER_TOP + wy0, x + wx1, CONTAINER_TOP + wy1)
        occluded = state == "open" and _overlap(box, window) > 0.5
        visible = state == "open" and not occluded
        counts: dict[str, int] = {}
        for asset in copies:
            counts[asset] = counts.get(asset, 0) + 1
        truth_c[cid] = {"state": state, "inside_visible": visible, "occluded": occluded,
                        "contents": [{"asset": a, "count": n} for a, n in sorted(counts.items())]
                        if visible else None}
    flying = []
    for f in script.flyers:
        if not f.shown_from <= t < f.shown_to:
            continue
        s = 0.0 if t <= f.t0 else 1.0 if t >= f.t1 else (t - f.t0) / (f.t1 - f.t0)
        cx = f.a[0] + (f.b[0] - f.a[0]) * s
        cy = f.a[1] + (f.b[1] - f.a[1]) * s - 18.0 * math.sin(math.pi * s)
        sprite = object_sprite(f.asset, k)
        drawables.append(Drawable(sprite, round(cx - sprite.shape[1] / k / 2),
                                  round(cy - sprite.shape[0] / k / 2), f.z))
        flying.append(f.asset)
    truth = {"t": round(t, 6), "actor_box": [int(round(v * k)) for v in box],
             "flying": flying, "containers": truth_c}
    return drawables, truth


def render_script(scene: dict[str, Any], script: Script, n_frames: int, fps: float,
                  background: np.ndarray, k: float) -> Iterator[tuple[np.ndarray, dict[str, Any]]]:
    """Yield ``(frame, truth)`` for every frame of a script."""
    for i in range(n_frames):
        drawables, truth = frame_at(scene, script, i / fps, k)
        truth["frame"] = i
        yield compose(background, drawables, k), truth
