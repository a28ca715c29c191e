"""The sim world's *card deck*: what ``judge/sim-cards`` knows of the sim, as plain files.

The card judge (:mod:`vidmem.models.backends.judge_sim_cards`) lives with the other
backends and may not import the sim (models sit below sim in the layer table). It reads
the sim's appearance knowledge from a folder this module writes, passed to the judge
as its ``weights``:

``deck.json``
    ``{"format": "vidmem-card-deck", "version", "card_scale", "key_rule",
    "phrases": {key: [asset | null, state, count, place | null]},
    "cards": {"<asset>|<state>": {"file", "sha256"}},
    "places": {place: {"file", "sha256"}}}``: every phrase of the appearance grammar
    (:mod:`vidmem.sim.story_grammar`) under its normalised key, and the files below
    with their SHA-256 (so the judge's weights hash in the run log pins every image).
``cards/<asset>.<state>.png``
    each entity state as a *card* (:func:`card_image`): RGBA, the sprite at
    :data:`CARD_SCALE` times its nominal size over mid grey, its alpha as channel 4.
``places/<place>.png``
    each place's panorama sector, RGB, as a location looks in a clip.
``hidden_state/*.png`` and ``deck.json["hidden_state"]``
    the container shots' cards (:mod:`vidmem.sim.mist_sprites`, :func:`hidden_state_cards`):
    every container open and closed (the open card's window transparent), every
    object and actor, RGBA at the canonical scale of a 180-pixel-high frame, with the
    canvas boxes (body, window, strip), the inside colour and each card's noun.

Every byte is a pure function of the sim's assets (no seed): the same vidmem version
writes the same deck.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from vidmem.errors import UserInputError
from vidmem.sim.assets import PLACES, SECTOR_WIDTH, panorama
from vidmem.sim.mist_grammar import ACTORS, OBJECTS, container_pool
from vidmem.sim.mist_sprites import (
    BODY_BOX,
    CANON_HEIGHT,
    CANVAS_SIZE,
    INSIDE_RGB,
    STRIP_BOX,
    WINDOW_BOX,
    actor_card,
    container_card,
    container_key,
    object_card,
)
from vidmem.sim.sprites import entity_sprite
from vidmem.sim.story_grammar import appearance_phrases

__all__ = ["CARD_SCALE", "DECK_FORMAT", "DECK_VERSION", "KEY_RULE", "card_image",
           "hidden_state_cards", "place_image", "write_card_deck"]

#: card size relative to the sprite's nominal size (sim Track-B clips draw sprites at
#: up to 1.2x: 480x270 frames over a 400 x 225 pixel view).
CARD_SCALE = 1.2
DECK_FORMAT = "vidmem-card-deck"
DECK_VERSION = 1
#: how an appearance text becomes a ``phrases`` key (the grammar's own normalisation).
KEY_RULE = "lower-case, runs of whitespace to one space, trailing full stops and spaces dropped"


@functools.lru_cache(maxsize=256)
def card_image(asset: str, state: str = "base", scale: float = CARD_SCALE) -> np.ndarray:
    """An entity's card: its sprite over mid grey with a 6-pixel margin.

    Returns:
        ``(h, w, 4)`` uint8: RGB plus the sprite's alpha (0-255) as the 4th channel.
    """
    sprite = entity_sprite(asset, state)
    h, w = sprite.shape[:2]
    size = (max(8, round(w * scale)), max(8, round(h * scale)))
    s = cv2.resize(sprite, size, interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR)
    rgb = s[..., :3] * 255.0 + (1.0 - s[..., 3:4]) * 128.0
    pad = 6
    out = np.full((size[1] + 2 * pad, size[0] + 2 * pad, 4), 128, np.uint8)
    out[..., 3] = 0
    out[pad:-pad, pad:-pad, :3] = np.clip(rgb + 0.5, 0, 255).astype(np.uint8)
    out[pad:-pad, pad:-pad, 3] = np.clip(s[..., 3] * 255.0 + 0.5, 0, 255).astype(np.uint8)
    out.setflags(write=False)
    return out


def place_image(place: str) -> np.ndarray:
    """A place as the first sector of a panorama: ``(PANO_HEIGHT, SECTOR_WIDTH, 3)`` uint8.

    The panorama pairs the place with the next place id in sorted order (the seam
    blends only the sector's edges).
    """
    others = sorted(PLACES)
    if place not in PLACES:
        raise UserInputError(f"sim place_image: unknown place {place!r}",
                             hint=f"use one of {', '.join(others)}")
    pano = panorama((place, others[(others.index(place) + 1) % len(others)]))
    return np.ascontiguousarray(pano[:, :SECTOR_WIDTH])


def _save_png(path: Path, image: np.ndarray, mode: str) -> str:
    Image.fromarray(np.ascontiguousarray(image), mode).save(path, format="PNG")
    return hashlib.sha256(path.read_bytes()).hexdigest()


def hidden_state_cards(root: Path) -> dict[str, object]:
    """Write the container shots' cards under ``root/hidden_state`` and describe them.

    Returns:
        ``{"canon_height", "canvas", "body", "window", "strip", "inside_rgb",
        "containers": {key: {"noun", "open": {"file", "sha256"}, "closed": ...}},
        "objects": {asset: {"noun", "plural", "file", "sha256"}}, "actors": {asset:
        {"noun", "file", "sha256"}}}`` (boxes are half-open ``[x0, y0, x1, y1]`` on the
        container canvas, canonical pixels).
    """
    (root / "hidden_state").mkdir(parents=True, exist_ok=True)

    def save(name: str, image: np.ndarray) -> dict[str, str]:
        rel = f"hidden_state/{name.replace(':', '-')}.png"
        return {"file": rel, "sha256": _save_png(root / rel, image, "RGBA")}

    containers = {}
    for entry in container_pool():
        key = container_key(entry)
        containers[key] = {"noun": entry["noun"], **{
            state: save(f"{key}.{state}", container_card(key, state)) for state in ("open",
                                                                                  "closed")}}
    objects = {asset: {"noun": noun, "plural": plural, **save(f"object.{asset}",
                                                               object_card(asset))}
               for noun, plural, asset in OBJECTS}
    actors = {asset: {"noun": noun, **save(f"actor.{asset}", actor_card(asset))}
              for noun, asset in ACTORS}
    return {"canon_height": CANON_HEIGHT, "canvas": list(CANVAS_SIZE), "body": list(BODY_BOX),
            "window": list(WINDOW_BOX), "strip": list(STRIP_BOX), "inside_rgb": list(INSIDE_RGB),
            "containers": containers, "objects": objects, "actors": actors}


def write_card_deck(out: str | os.PathLike[str]) -> Path:
    """Write the card deck (layout in the module docstring) into folder ``out``.

    Args:
        out: the deck folder (created if missing; the deck's files are replaced).

    Returns:
        The folder, ready to pass as ``weights=`` to ``judge/sim-cards``.

    Raises:
        UserInputError: ``out`` exists and is not a folder.
    """
    root = Path(out)
    if root.exists() and not root.is_dir():
        raise UserInputError(f"card deck: {root} exists and is not a folder",
                             hint="pass a new or existing folder")
    (root / "cards").mkdir(parents=True, exist_ok=True)
    (root / "places").mkdir(parents=True, exist_ok=True)
    phrases = appearance_phrases()
    cards: dict[str, dict[str, str]] = {}
    for look in phrases.values():
        key = f"{look.asset}|{look.state}"
        if look.asset is None or key in cards:
            continue
        rel = f"cards/{look.asset}.{look.state.replace(':', '-')}.png"
        cards[key] = {"file": rel, "sha256": _save_png(
            root / rel, card_image(look.asset, look.state), "RGBA")}
    places = {}
    for pid in sorted(PLACES):
        rel = f"places/{pid}.png"
        places[pid] = {"file": rel, "sha256": _save_png(root / rel, place_image(pid), "RGB")}
    doc = {"format": DECK_FORMAT, "version": DECK_VERSION, "card_scale": CARD_SCALE,
           "key_rule": KEY_RULE,
           "phrases": {k: [a.asset, a.state, a.count, a.place] for k, a in sorted(phrases.items())},
           "cards": cards, "places": places, "hidden_state": hidden_state_cards(root)}
    (root / "deck.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n",
                                    encoding="utf-8")
    return root
