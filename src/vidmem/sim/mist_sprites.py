"""Container shots' drawings: lidded containers, the objects inside, the actor.

Everything is drawn at a *canonical* scale -- a frame 180 pixels high
(:data:`CANON_HEIGHT`) -- and resized by ``k = frame height / 180``, so the card deck
(:func:`container_card` and friends, written by :mod:`vidmem.sim.cards`) shows exactly
what a 180-pixel frame shows. Sprites are premultiplied float32 RGBA as in
:mod:`vidmem.sim.sprites`.

A container is drawn on a canvas of :data:`CANVAS_SIZE` (canonical pixels):

* the **body** (:data:`BODY_BOX`): a drawn box (a rounded block of its colour, a dark
  outline and a light band) or a cup asset's photo sprite stretched to the body;
* ``closed``: a lid slab with a knob on top of the body;
* ``ajar``: the lid lifted a few pixels and tilted, the body still whole;
* ``open``: the lid raised and tilted behind, and the **inside** shown as a dark
  window (:data:`WINDOW_BOX`) cut into the body, in which the contents sit in the slots
  of :func:`slot_centres` (objects :data:`OBJECT_HEIGHT` pixels high).

The bottom rows of the body (:data:`STRIP_BOX`) look the same in every state and are
never covered by the actor, so a judge can find a container before it reads its state.
Container keys: the cup assets' ids (``cup``, ``blue_cup``) and ``box:<colour>``.
"""

from __future__ import annotations

import functools
from typing import Any

import cv2
import numpy as np

from vidmem.errors import UserInputError
from vidmem.sim.sprites import entity_sprite

__all__ = ["ACTOR_HEIGHT", "BODY_BOX", "BOX_RGB", "CANON_HEIGHT", "CANVAS_SIZE", "INSIDE_RGB",
           "OBJECT_HEIGHT", "STRIP_BOX", "WINDOW_BOX", "actor_card", "actor_sprite", "container_card",
           "container_key", "container_sprite", "object_card", "object_sprite", "scaled",
           "slot_centres"]

CANON_HEIGHT = 180
#: (width, height) of a container's canvas, canonical pixels
CANVAS_SIZE = (108, 100)
#: half-open (x0, y0, x1, y1) boxes on the canvas
BODY_BOX = (4, 28, 84, 100)
WINDOW_BOX = (10, 34, 78, 86)
STRIP_BOX = (4, 88, 84, 100)
OBJECT_HEIGHT = 22
ACTOR_HEIGHT = 56
BOX_RGB = {"red": (196, 44, 40), "green": (46, 150, 70), "yellow": (226, 196, 46),
           "purple": (128, 64, 168)}
INSIDE_RGB = (26, 22, 30)
_CUP_LID_RGB = (120, 126, 138)
_KNOB_RGB = (34, 34, 38)
_LIDS = {
    "closed": ((2, 18), (86, 18), (86, 30), (2, 30)),
    "ajar": ((2, 12), (86, 7), (86, 19), (2, 24)),
    "open": ((12, 20), (94, 4), (97, 14), (15, 30)),
}
_STATES = ("closed", "ajar", "open")


def container_key(container: dict[str, Any]) -> str:
    """The drawing key of a card's container dict (``cup``, ``box:red``...).

    Example:
        >>> container_key({"kind": "drawn_box", "colour": "red"}), container_key({"asset": "cup"})
        ('box:red', 'cup')
    """
    if container.get("kind") == "drawn_box" or container.get("colour") and not container.get(
            "asset"):
        colour = str(container.get("colour"))
        if colour not in BOX_RGB:
            raise UserInputError(f"sim container shot: no drawn box in colour {colour!r}",
                                 hint=f"use one of {', '.join(BOX_RGB)}")
        return f"box:{colour}"
    asset = str(container.get("asset"))
    if asset not in ("cup", "blue_cup"):
        raise UserInputError(f"sim container shot: {asset!r} is not a container asset",
                             hint="use the cup or blue_cup asset, or a drawn_box with a colour")
    return asset


def slot_centres(n: int) -> list[tuple[int, int]]:
    """Canvas centres of ``n`` objects in the window (at most 4 are drawn).

    Example:
        >>> slot_centres(2)
        [(28, 60), (60, 60)]
    """
    table = {1: [(44, 60)], 2: [(28, 60), (60, 60)], 3: [(28, 47), (60, 47), (44, 73)],
             4: [(28, 47), (60, 47), (28, 73), (60, 73)]}
    return table.get(min(max(n, 0), 4), [])


def _premultiplied(rgb: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    out = np.empty((*alpha.shape, 4), np.float32)
    out[..., :3] = rgb.astype(np.float32) / 255.0 * alpha[..., None]
    out[..., 3] = alpha
    return out


def _over(dst: np.ndarray, src: np.ndarray) -> None:
    """Premultiplied ``src`` over ``dst`` in place (same shape)."""
    dst *= 1.0 - src[..., 3:4]
    dst += src


def _poly_layer(shape: tuple[int, int], pts: Any, rgb: tuple[int, int, int],
                outline: tuple[int, int, int] | None = None) -> np.ndarray:
    h, w = shape
    mask = np.zeros((h, w), np.uint8)
    poly = np.round(np.asarray(pts, np.float64) * 16).astype(np.int32)
    cv2.fillPoly(mask, [poly], 255, cv2.LINE_AA, shift=4)
    colour = np.zeros((h, w, 3), np.uint8)
    colour[:] = rgb
    if outline is not None:
        cv2.polylines(colour, [poly], True, outline, 2, cv2.LINE_AA, shift=4)
    return _premultiplied(colour, mask.astype(np.float32) / 255.0)


def _box_body(colour: str) -> np.ndarray:
    w, h = CANVAS_SIZE
    c = np.array(BOX_RGB[colour], np.float64)
    x0, y0, x1, y1 = BODY_BOX
    mask = np.zeros((h, w), np.uint8)
    cv2.rectangle(mask, (x0, y0), (x1 - 1, y1 - 1), 255, -1)
    rgb = np.zeros((h, w, 3), np.uint8)
    rgb[:] = tuple(int(v) for v in c)
    dark = tuple(int(v) for v in 0.5 * c)
    light = tuple(int(v) for v in 0.55 * c + 0.45 * 255)
    cv2.rectangle(rgb, (x0 + 3, y1 - 10), (x1 - 4, y1 - 6), light, -1)
    cv2.rectangle(rgb, (x0 + 6, y0 + 4), (x1 - 7, y1 - 16), tuple(int(v) for v in 0.82 * c), 1)
    cv2.rectangle(rgb, (x0, y0), (x1 - 1, y1 - 1), dark, 2)
    return _premultiplied(rgb, mask.astype(np.float32) / 255.0)


def _cup_body(asset: str) -> np.ndarray:
    w, h = CANVAS_SIZE
    x0, y0, x1, y1 = BODY_BOX
    sprite = cv2.resize(entity_sprite(asset, "base"), (x1 - x0, y1 - y0),
                        interpolation=cv2.INTER_AREA)
    out = np.zeros((h, w, 4), np.float32)
    out[y0:y1, x0:x1] = sprite
    return out


def _lid_rgb(key: str) -> tuple[int, int, int]:
    if key.startswith("box:"):
        c = np.array(BOX_RGB[key[4:]], np.float64)
        return tuple(int(v) for v in 0.72 * c + 12)  # type: ignore[return-value]
    return _CUP_LID_RGB


@functools.lru_cache(maxsize=64)
def _canvas(key: str, state: str, window_alpha: float) -> np.ndarray:
    if state not in _STATES:
        raise UserInputError(f"sim container shot: unknown container state {state!r}",
                             hint=f"use one of {', '.join(_STATES)}")
    w, h = CANVAS_SIZE
    body = _box_body(key[4:]) if key.startswith("box:") else _cup_body(key)
    lid_rgb = _lid_rgb(key)
    outline = tuple(int(v * 0.55) for v in lid_rgb)
    lid = _poly_layer((h, w), _LIDS[state], lid_rgb, outline)
    quad = np.asarray(_LIDS[state], np.float64)
    top = (quad[0] + quad[1]) / 2.0  # the middle of the lid's top edge
    cv2.circle(lid, (int(round(top[0])), int(round(top[1]))), 4,
               (_KNOB_RGB[0] / 255, _KNOB_RGB[1] / 255, _KNOB_RGB[2] / 255, 1.0), -1,
               cv2.LINE_AA)
    out = np.zeros((h, w, 4), np.float32)
    if state == "open":  # the raised lid hangs behind the body
        _over(out, lid)
        _over(out, body)
        x0, y0, x1, y1 = WINDOW_BOX
        inside = np.zeros((h, w, 4), np.float32)
        inside[y0:y1, x0:x1, :3] = np.array(INSIDE_RGB, np.float32) / 255.0 * window_alpha
        inside[y0:y1, x0:x1, 3] = window_alpha
        if window_alpha > 0:
            _over(out, inside)
        else:  # a card: the window is a hole (its contents vary)
            out[y0:y1, x0:x1] = 0.0
    else:
        _over(out, body)
        _over(out, lid)
    out.setflags(write=False)
    return out


def scaled(sprite: np.ndarray, k: float) -> np.ndarray:
    """A premultiplied sprite resized by ``k`` (returned as is when ``k == 1``)."""
    if abs(k - 1.0) < 1e-9:
        return sprite
    h, w = sprite.shape[:2]
    size = (max(1, round(w * k)), max(1, round(h * k)))
    return cv2.resize(sprite, size, interpolation=cv2.INTER_AREA if k < 1 else cv2.INTER_LINEAR)


@functools.lru_cache(maxsize=128)
def container_sprite(key: str, state: str, k: float = 1.0) -> np.ndarray:
    """A container's canvas in a state (``closed``, ``ajar``, ``open``), scaled by ``k``.

    Returns:
        ``(round(100 k), round(108 k), 4)`` float32 premultiplied RGBA (read-only).
    """
    out = scaled(_canvas(key, state, 1.0), k)
    out.setflags(write=False)
    return out


def _fit_height(sprite: np.ndarray, height: int) -> np.ndarray:
    h, w = sprite.shape[:2]
    size = (max(1, round(w * height / h)), height)
    return cv2.resize(sprite, size, interpolation=cv2.INTER_AREA)


@functools.lru_cache(maxsize=64)
def object_sprite(asset: str, k: float = 1.0) -> np.ndarray:
    """An object as drawn inside a container: :data:`OBJECT_HEIGHT` * ``k`` pixels high."""
    out = _fit_height(entity_sprite(asset, "base"), max(4, round(OBJECT_HEIGHT * k)))
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=16)
def actor_sprite(asset: str, k: float = 1.0) -> np.ndarray:
    """The actor: :data:`ACTOR_HEIGHT` * ``k`` pixels high."""
    out = _fit_height(entity_sprite(asset, "base"), max(8, round(ACTOR_HEIGHT * k)))
    out.setflags(write=False)
    return out


def _as_card(sprite: np.ndarray) -> np.ndarray:
    """Premultiplied float sprite -> ``(h, w, 4)`` uint8: RGB over mid grey, alpha last."""
    a = sprite[..., 3:4]
    rgb = sprite[..., :3] * 255.0 + (1.0 - a) * 128.0
    out = np.concatenate([rgb, a * 255.0], axis=2)
    return np.clip(out + 0.5, 0, 255).astype(np.uint8)


def container_card(key: str, state: str) -> np.ndarray:
    """A container state as a judge card at canonical scale: ``(100, 108, 4)`` uint8.

    The ``open`` card's window is transparent (alpha 0): what is inside varies.
    """
    return _as_card(_canvas(key, state, 0.0 if state == "open" else 1.0))


def object_card(asset: str) -> np.ndarray:
    """An object as a judge card at canonical scale (``(22, w, 4)`` uint8)."""
    return _as_card(object_sprite(asset, 1.0))


def actor_card(asset: str) -> np.ndarray:
    """The actor as a judge card at canonical scale (``(56, w, 4)`` uint8)."""
    return _as_card(actor_sprite(asset, 1.0))
