"""Container shots' frames: a table scene, then sprites composited front to back.

The stage (canonical pixels, a frame 180 high; see :mod:`vidmem.sim.mist_sprites`): a
place of the sim (:data:`vidmem.sim.assets.PLACES`) blurred and faded as the wall, a
wooden table from row :data:`TABLE_TOP` down, the containers standing on it with their
canvas top at row :data:`CONTAINER_TOP`, the actor in front of the wall. Positions are
canonical and rounded to whole output pixels after scaling, so a 180-pixel frame shows
the cards' pixels exactly (before compression).

:func:`layout` places one to three containers and the actor's home for a frame width;
:func:`compose` draws a frame from drawables (sprite, top-left, depth).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from vidmem.sim.assets import PLACES, SECTOR_WIDTH, cover_resize, panorama
from vidmem.sim.mist_sprites import CANON_HEIGHT, CANVAS_SIZE

__all__ = ["ACTOR_HOME_Y", "CONTAINER_TOP", "TABLE_TOP", "Drawable", "compose", "layout",
           "stage_background"]

TABLE_TOP = 138
CONTAINER_TOP = 70
ACTOR_HOME_Y = 104
_WALL_FADE = 0.45  # share of flat grey mixed into the blurred place
_WOOD = ((150, 108, 70), (112, 78, 48))


@dataclass(frozen=True)
class Drawable:
    """A sprite at a canonical top-left position; larger ``z`` is drawn in front."""

    sprite: np.ndarray
    x: float
    y: float
    z: int = 0


def layout(n_containers: int, canon_width: float) -> tuple[list[int], int]:
    """Canvas left edges of the containers and the actor's home centre (canonical x).

    Example:
        >>> layout(2, 320.0), layout(1, 320.0)
        (([80, 196], 40), ([132], 40))
    """
    w = float(canon_width)
    spots = {1: (0.58,), 2: (0.42, 0.78), 3: (0.36, 0.62, 0.88)}[max(1, min(n_containers, 3))]
    half = CANVAS_SIZE[0] / 2.0
    return [int(round(w * f - half)) for f in spots], int(round(w * 0.125))


@functools.lru_cache(maxsize=16)
def stage_background(place: str, width: int, height: int) -> np.ndarray:
    """The empty stage for a frame size: ``(height, width, 3)`` float32 in [0, 1]."""
    others = sorted(PLACES)
    pano = panorama((place, others[(others.index(place) + 1) % len(others)]))
    wall = cover_resize(np.ascontiguousarray(pano[:, :SECTOR_WIDTH]), height, width)
    k = height / CANON_HEIGHT
    wall = cv2.GaussianBlur(wall.astype(np.float32), (0, 0), 3.0 * k)
    wall = (1.0 - _WALL_FADE) * wall + _WALL_FADE * 150.0
    top = int(round(TABLE_TOP * k))
    rows = np.linspace(0.0, 1.0, max(1, height - top), dtype=np.float32)[:, None, None]
    wood = (1 - rows) * np.array(_WOOD[0], np.float32) + rows * np.array(_WOOD[1], np.float32)
    wall[top:] = np.broadcast_to(wood, (height - top, width, 3))
    wall[top:top + max(1, round(2 * k))] = (186, 150, 110)
    out = np.ascontiguousarray(wall / 255.0, dtype=np.float32)
    out.setflags(write=False)
    return out


def compose(background: np.ndarray, drawables: Sequence[Drawable], k: float) -> np.ndarray:
    """Draw ``drawables`` (back to front by ``z``, then list order) over ``background``.

    Args:
        background: ``(H, W, 3)`` float32 in [0, 1] (:func:`stage_background`).
        drawables: sprites at canonical positions (scaled by ``k`` and rounded).
        k: output pixels per canonical pixel.

    Returns:
        ``(H, W, 3)`` uint8 RGB.
    """
    out = background.copy()
    h, w = out.shape[:2]
    for d in sorted(drawables, key=lambda d: d.z):
        s = d.sprite
        sh, sw = s.shape[:2]
        x0, y0 = int(round(d.x * k)), int(round(d.y * k))
        fx0, fy0, fx1, fy1 = max(0, x0), max(0, y0), min(w, x0 + sw), min(h, y0 + sh)
        if fx1 <= fx0 or fy1 <= fy0:
            continue
        part = s[fy0 - y0:fy1 - y0, fx0 - x0:fx1 - x0]
        region = out[fy0:fy1, fx0:fx1]
        region *= 1.0 - part[..., 3:4]
        region += part[..., :3]
    return np.clip(out * 255.0 + 0.5, 0, 255).astype(np.uint8)
