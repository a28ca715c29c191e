"""The sim world's building blocks, cut from scikit-image's bundled photos.

Nothing here is downloaded: every picture comes from ``skimage.data`` functions that
read files shipped inside scikit-image (``astronaut``, ``coffee``, ``chelsea``,
``rocket``, ``coins``, ``horse``, ``brick``, ``grass``, ``gravel``, ``moon``, ``page``,
``hubble_deep_field``, ``immunohistochemistry``, ``retina``, ``colorwheel``,
``logo``, ``stereo_motorcycle``).

Two catalogues:

* :data:`PLACES` -- *locations*: one photo or texture each, cut to a sector of
  ``PANO_HEIGHT x SECTOR_WIDTH`` pixels. A panorama is a sequence of places joined
  side by side with cross-faded seams (the last one blends into the first, because the
  panorama is a cylinder).
* :data:`ENTITIES` -- *characters* and *props*: a hand-chosen crop of a photo, a soft
  mask (ellipse, rounded rectangle, GrabCut, or a silhouette used as a stencil over a
  texture) and a nominal height in panorama pixels. Look-alike pairs (``cup`` /
  ``blue_cup``, ``gold_coin`` / ``old_coin``, ``rocket`` / ``shuttle``) share a kind
  and most of their looks, so that recall must be specific.

Entity **states** (all drawn procedurally on the base sprite, deterministic):

``base``
    the photo patch as cut.
``recoloured:<colour>``
    hue moved to ``<colour>`` (one of :data:`COLOURS`), saturation lifted so that grey
    sources take the colour too.
``accessory``
    characters get a striped party hat, props a star sticker and a painted band.
``broken``
    crack lines plus one fragment pushed out of place, leaving a gap.
``open`` / ``closed``
    containers only (``container=True``); ``open`` looks like ``base``, ``closed`` adds
    a lid with a knob.

Sprites (the drawn entities, states applied) are built in :mod:`vidmem.sim.sprites`.
Pictures and panoramas are computed once per process and cached.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import cv2
import numpy as np

from vidmem.errors import UserInputError

__all__ = [
    "COLOURS",
    "ENTITIES",
    "PANO_HEIGHT",
    "PLACES",
    "SECTOR_WIDTH",
    "EntityAsset",
    "PlaceAsset",
    "check_state",
    "cover_resize",
    "panorama",
    "photo",
    "state_phrase",
    "states_for",
    "tinted",
]

#: height of the panorama and of every place sector, in panorama pixels.
PANO_HEIGHT = 270
#: width of one place sector in panorama pixels (60 degrees of yaw in the default world).
SECTOR_WIDTH = 400
#: width of the cross-fade between neighbouring places, in panorama pixels.
SEAM_WIDTH = 40

#: colour name -> target hue in degrees (HSV hue circle) for ``recoloured:<colour>``.
COLOURS: dict[str, float] = {
    "red": 0.0,
    "orange": 28.0,
    "yellow": 55.0,
    "green": 115.0,
    "teal": 175.0,
    "blue": 220.0,
    "purple": 275.0,
    "pink": 320.0,
}

Rgb = tuple[int, int, int]


@dataclass(frozen=True)
class PlaceAsset:
    """A location: one sector of a panorama.

    Attributes:
        id: catalogue key.
        name: what prompts call it (``"brick wall"``).
        aliases: other names a prompt may use.
        photo: ``skimage.data`` function name.
        crop_xyxy: part of the photo to use, source pixels, or ``None`` for all of it.
        tint: ``(dark, light)`` RGB colours mapped onto a grey source, or ``None``.
    """

    id: str
    name: str
    aliases: tuple[str, ...]
    photo: str
    crop_xyxy: tuple[int, int, int, int] | None = None
    tint: tuple[Rgb, Rgb] | None = None
    kind: str = "location"


@dataclass(frozen=True)
class EntityAsset:
    """A character or prop: a masked photo patch.

    Attributes:
        id: catalogue key (also the entity id used in world specs).
        label: the name used in prompts and as a benchmark ``target_label``.
        aliases: other names (``target_aliases``); look-alikes never share them.
        kind: ``"character"`` or ``"prop"``.
        photo: ``skimage.data`` function name of the colour source.
        crop_xyxy: hand-chosen crop of the photo, source pixels.
        height_px: nominal sprite height in panorama pixels (width keeps the aspect).
        mask: ``"ellipse"``, ``"ellipses"`` (the union of ``ellipses``), ``"rounded"``,
            ``"grabcut"`` or ``"silhouette"``.
        container: has ``open``/``closed`` states.
        lookalike: id of the entity it can be confused with, if any.
        tint: ``(dark, light)`` colours for a grey source.
        hue_shift_deg: permanent hue rotation (look-alikes).
        flip: mirror the patch left-right (look-alikes).
        stencil: for ``mask="silhouette"``: the ``skimage.data`` binary image whose
            ``False`` pixels are the shape; ``photo``/``crop_xyxy`` then give the texture.
        ellipses: for ``mask="ellipses"``: ``(cx, cy, rx, ry)`` as fractions of the
            sprite width/height.
    """

    id: str
    label: str
    aliases: tuple[str, ...]
    kind: str
    photo: str
    crop_xyxy: tuple[int, int, int, int]
    height_px: int
    mask: str
    container: bool = False
    lookalike: str | None = None
    tint: tuple[Rgb, Rgb] | None = None
    hue_shift_deg: float = 0.0
    flip: bool = False
    stencil: str | None = None
    ellipses: tuple[tuple[float, float, float, float], ...] = ()


#: cup outline in the coffee crop: rim and upper body, lower body, handle.
_CUP = ((0.49, 0.355, 0.44, 0.32), (0.5, 0.6, 0.33, 0.31), (0.25, 0.84, 0.13, 0.13))

PLACES: dict[str, PlaceAsset] = {
    p.id: p
    for p in (
        PlaceAsset("brick", "brick wall", ("bricks", "wall"), "brick",
                   tint=((70, 22, 12), (236, 150, 108))),
        PlaceAsset("lawn", "lawn", ("grass", "garden"), "grass",
                   tint=((12, 44, 8), (160, 226, 96))),
        PlaceAsset("gravel", "gravel yard", ("gravel", "yard"), "gravel",
                   tint=((62, 52, 40), (238, 222, 186))),
        PlaceAsset("stars", "star field", ("night sky", "stars"), "hubble_deep_field",
                   crop_xyxy=(0, 200, 1000, 872)),
        PlaceAsset("craters", "crater wall", ("moon wall", "craters"), "moon",
                   tint=((18, 24, 52), (206, 214, 255))),
        PlaceAsset("board", "notice board", ("board", "page"), "page",
                   tint=((40, 30, 24), (252, 244, 222))),
        PlaceAsset("dome", "red dome", ("dome",), "retina", crop_xyxy=(300, 420, 1180, 1000)),
        PlaceAsset("mosaic", "cell mosaic", ("mosaic",), "immunohistochemistry",
                   crop_xyxy=(0, 150, 512, 512)),
    )
}

ENTITIES: dict[str, EntityAsset] = {
    e.id: e
    for e in (
        EntityAsset("cup", "cup", ("mug", "coffee cup", "espresso cup"), "prop", "coffee",
                    (160, 5, 430, 315), 100, "ellipses", container=True, lookalike="blue_cup",
                    ellipses=_CUP),
        EntityAsset("blue_cup", "blue cup", ("blue mug",), "prop", "coffee",
                    (160, 5, 430, 315), 100, "ellipses", container=True, lookalike="cup",
                    hue_shift_deg=205.0, flip=True, ellipses=_CUP),
        EntityAsset("face", "woman", ("face", "person", "astronaut"), "character",
                    "astronaut", (140, 10, 310, 200), 104, "ellipse"),
        EntityAsset("cat", "cat", ("cat face", "kitten", "tabby"), "character", "chelsea",
                    (20, 0, 400, 300), 88, "ellipse"),
        EntityAsset("horse", "horse", ("pony", "stallion"), "character",
                    "immunohistochemistry", (0, 0, 512, 420), 96, "silhouette",
                    stencil="horse"),
        EntityAsset("rocket", "rocket", ("launch vehicle", "missile"), "prop", "rocket",
                    (250, 110, 390, 427), 124, "rounded", lookalike="shuttle"),
        EntityAsset("shuttle", "space shuttle", ("shuttle", "shuttle model"), "prop",
                    "astronaut", (350, 0, 475, 290), 120, "grabcut", lookalike="rocket"),
        EntityAsset("patch", "mission patch", ("badge", "emblem"), "prop", "astronaut",
                    (128, 343, 212, 427), 76, "ellipse"),
        EntityAsset("helmet", "helmet", ("space helmet", "visor"), "prop", "astronaut",
                    (272, 335, 512, 512), 80, "ellipse"),
        EntityAsset("gold_coin", "gold coin", ("coin", "medal"), "prop", "coins",
                    (295, 10, 370, 80), 72, "ellipse", lookalike="old_coin",
                    tint=((48, 30, 0), (255, 214, 110))),
        EntityAsset("old_coin", "old coin", ("bronze coin", "token"), "prop", "coins",
                    (312, 150, 384, 225), 72, "ellipse", lookalike="gold_coin",
                    tint=((40, 26, 6), (236, 186, 120))),
        EntityAsset("motorcycle", "motorcycle", ("motorbike", "bike"), "prop",
                    "stereo_motorcycle", (90, 75, 690, 455), 92, "rounded"),
        EntityAsset("logo", "snake sign", ("sign", "logo"), "prop", "logo",
                    (0, 0, 500, 500), 88, "ellipse"),
    )
}

_COMMON_STATES = ("base", "accessory", "broken")


# --------------------------------------------------------------------------- photos


@functools.cache
def photo(name: str) -> np.ndarray:
    """Load a bundled scikit-image picture as RGB.

    Args:
        name: ``skimage.data`` function name; ``stereo_motorcycle`` gives the left view.

    Returns:
        ``(H, W, 3)`` uint8 RGB (grey and binary images are replicated to 3 channels;
        the array must not be modified: it is shared by the cache).
    """
    import skimage.data

    loader = getattr(skimage.data, name, None)
    if loader is None:
        raise UserInputError(
            f"sim assets: skimage.data has no picture named {name!r}",
            hint="use one of the bundled pictures, e.g. 'astronaut', 'coffee', 'brick'",
        )
    img = loader()
    if isinstance(img, tuple):
        img = img[0]
    img = np.asarray(img)
    if img.dtype == bool:
        img = img.astype(np.uint8) * 255
    elif img.dtype != np.uint8:
        img = np.clip(img * (255.0 if img.max() <= 1.0 else 1.0), 0, 255).astype(np.uint8)
    if img.ndim == 2:
        img = np.repeat(img[..., None], 3, axis=2)
    img = np.ascontiguousarray(img[..., :3])
    img.setflags(write=False)
    return img


def tinted(grey_rgb: np.ndarray, tint: tuple[Rgb, Rgb]) -> np.ndarray:
    """Map grey levels onto the line from ``tint[0]`` (black) to ``tint[1]`` (white).

    Args:
        grey_rgb: ``(H, W, 3)`` uint8 image whose first channel is the grey level.
        tint: ``(dark, light)`` RGB colours.

    Returns:
        ``(H, W, 3)`` uint8 RGB.
    """
    g = grey_rgb[..., :1].astype(np.float32) / 255.0
    dark = np.asarray(tint[0], np.float32)
    light = np.asarray(tint[1], np.float32)
    return np.clip(dark + g * (light - dark), 0, 255).astype(np.uint8)


def cover_resize(img: np.ndarray, height: int, width: int) -> np.ndarray:
    """Resize to cover ``height x width`` pixels (keeping the aspect) and centre-crop.

    Returns:
        ``(height, width, C)`` array of the input's dtype.
    """
    h, w = img.shape[:2]
    f = max(height / h, width / w)
    size = (max(width, round(w * f)), max(height, round(h * f)))
    out = cv2.resize(img, size, interpolation=cv2.INTER_AREA if f < 1 else cv2.INTER_LINEAR)
    y0 = (out.shape[0] - height) // 2
    x0 = (out.shape[1] - width) // 2
    return out[y0 : y0 + height, x0 : x0 + width]


# --------------------------------------------------------------------------- places


@functools.cache
def _place_tile(place_id: str, width: int) -> np.ndarray:
    place = PLACES[place_id]
    img = photo(place.photo)
    if place.crop_xyxy is not None:
        x0, y0, x1, y1 = place.crop_xyxy
        img = img[y0:y1, x0:x1]
    if place.tint is not None:
        img = tinted(img, place.tint)
    return cover_resize(img, PANO_HEIGHT, width)


@functools.cache
def panorama(place_ids: tuple[str, ...]) -> np.ndarray:
    """Join places into one cylindrical panorama with cross-faded seams.

    Sector ``k`` covers columns ``[k * SECTOR_WIDTH, (k + 1) * SECTOR_WIDTH)``; around
    every boundary (including the wrap from the last sector to the first) the two
    places are blended linearly over :data:`SEAM_WIDTH` columns. The result gets a
    light Gaussian blur (sigma 0.6 px, wrapping around) against aliasing in views.

    Args:
        place_ids: ids from :data:`PLACES`, in yaw order (at least 2).

    Returns:
        ``(PANO_HEIGHT, SECTOR_WIDTH * len(place_ids), 3)`` uint8, read-only (cached).

    Raises:
        UserInputError: an unknown place id, or fewer than 2 places.
    """
    for pid in place_ids:
        if pid not in PLACES:
            raise UserInputError(
                f"sim panorama: unknown place id {pid!r}",
                hint=f"use ids from vidmem.sim.assets.PLACES: {', '.join(sorted(PLACES))}",
            )
    if len(place_ids) < 2:
        raise UserInputError(
            f"sim panorama: expected at least 2 places, found {len(place_ids)}",
            hint="pass e.g. ('brick', 'lawn', 'gravel', 'stars', 'craters', 'board')",
        )
    n = len(place_ids)
    half = SEAM_WIDTH // 2
    total = SECTOR_WIDTH * n
    acc = np.zeros((PANO_HEIGHT, total, 3), np.float32)
    weight = np.zeros((total,), np.float32)
    # Each place is drawn half a seam wider on both sides; its column weight ramps
    # from 0 to 1 across the seam, so neighbouring weights sum to 1 everywhere.
    ramp = np.ones(SECTOR_WIDTH + SEAM_WIDTH, np.float32)
    ramp[:SEAM_WIDTH] = (np.arange(SEAM_WIDTH, dtype=np.float32) + 0.5) / SEAM_WIDTH
    ramp[-SEAM_WIDTH:] = ramp[:SEAM_WIDTH][::-1]
    for k, pid in enumerate(place_ids):
        tile = _place_tile(pid, SECTOR_WIDTH + SEAM_WIDTH).astype(np.float32)
        cols = (np.arange(SECTOR_WIDTH + SEAM_WIDTH) + k * SECTOR_WIDTH - half) % total
        np.add.at(acc, (slice(None), cols), tile * ramp[None, :, None])
        np.add.at(weight, cols, ramp)
    out = np.clip(acc / weight[None, :, None] + 0.5, 0, 255).astype(np.uint8)
    # A light blur keeps the default 1.25x downsampling of the view from aliasing
    # (flicker during pans, and wasted bits in the encoder); columns wrap around.
    pad = 4
    wrapped = np.concatenate([out[:, -pad:], out, out[:, :pad]], axis=1)
    out = np.ascontiguousarray(cv2.GaussianBlur(wrapped, (0, 0), 0.6)[:, pad:-pad])
    out.setflags(write=False)
    return out


def states_for(asset_id: str) -> tuple[str, ...]:
    """All states an entity supports (``recoloured:*`` listed once per colour)."""
    a = ENTITIES[asset_id]
    extra = ("open", "closed") if a.container else ()
    return (*_COMMON_STATES, *(f"recoloured:{c}" for c in COLOURS), *extra)


def check_state(asset_id: str, state: str, where: str) -> None:
    """Raise a :class:`UserInputError` naming ``where`` unless the state is valid."""
    if asset_id not in ENTITIES:
        raise UserInputError(
            f"{where}: unknown entity asset {asset_id!r}",
            hint=f"use ids from vidmem.sim.assets.ENTITIES: {', '.join(sorted(ENTITIES))}",
        )
    if state not in states_for(asset_id):
        raise UserInputError(
            f"{where}: entity {asset_id!r} has no state {state!r}",
            hint=f"use one of: {', '.join(states_for(asset_id))}",
        )


def state_phrase(asset_id: str, state: str) -> str:
    """Words for an entity in a state, for clip prompts.

    Example:
        >>> state_phrase("cup", "recoloured:red"), state_phrase("cup", "broken")
        ('red cup', 'cracked cup')
        >>> state_phrase("cat", "accessory")
        'cat wearing a party hat'
    """
    a = ENTITIES[asset_id]
    if state.startswith("recoloured:"):
        return f"{state.split(':', 1)[1]} {a.label}"
    if state == "broken":
        return f"{a.label} with a crack across it" if a.kind == "character" else (
            f"cracked {a.label}")
    if state == "accessory":
        return f"{a.label} wearing a party hat" if a.kind == "character" else (
            f"{a.label} with a star sticker")
    if state == "closed":
        return f"{a.label} with its lid on"
    return a.label
