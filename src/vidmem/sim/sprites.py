"""Entity sprites: soft masks, procedural states and cross-fades (see :mod:`vidmem.sim.assets`).

A sprite is an ``(h, w, 4)`` float32 array with *premultiplied* colour in ``[0, 1]``
(channels 0-2 are ``rgb * alpha``, channel 3 is alpha). Sprites are built once per
process from the catalogue in :mod:`vidmem.sim.assets` and cached; GrabCut masks use a
fixed OpenCV RNG seed so they are the same in every process.
"""

from __future__ import annotations

import functools
import hashlib

import cv2
import numpy as np

from vidmem.sim.assets import COLOURS, ENTITIES, check_state, cover_resize, photo, tinted

__all__ = ["entity_sprite", "mixed_sprite"]


# --------------------------------------------------------------------------- masks


def _soft(mask_u8: np.ndarray, sigma: float = 0.9) -> np.ndarray:
    m = mask_u8.astype(np.float32) / 255.0
    return cv2.GaussianBlur(m, (0, 0), sigma)


def _ellipse_mask(h: int, w: int, inset: float = 0.03) -> np.ndarray:
    m = np.zeros((h, w), np.uint8)
    centre = (round(w / 2 * 16), round(h / 2 * 16))
    axes = (round(w / 2 * (1 - inset) * 16), round(h / 2 * (1 - inset) * 16))
    cv2.ellipse(m, centre, axes, 0, 0, 360, 255, -1, cv2.LINE_AA, shift=4)
    return m


def _rounded_mask(h: int, w: int, radius_frac: float = 0.22) -> np.ndarray:
    r = max(2, round(min(h, w) * radius_frac))
    m = np.zeros((h, w), np.uint8)
    cv2.rectangle(m, (r, 1), (w - 1 - r, h - 2), 255, -1)
    cv2.rectangle(m, (1, r), (w - 2, h - 1 - r), 255, -1)
    for cx, cy in ((r, r), (w - 1 - r, r), (r, h - 1 - r), (w - 1 - r, h - 1 - r)):
        cv2.circle(m, (cx, cy), r - 1, 255, -1, cv2.LINE_AA)
    return m


def _grabcut_mask(rgb: np.ndarray) -> np.ndarray:
    h, w = rgb.shape[:2]
    gc = np.zeros((h, w), np.uint8)
    bgd = np.zeros((1, 65), np.float64)
    fgd = np.zeros((1, 65), np.float64)
    cv2.setRNGSeed(20240229)
    rect = (3, 3, w - 6, h - 6)
    cv2.grabCut(np.ascontiguousarray(rgb[..., ::-1]), gc, rect, bgd, fgd, 5,
                cv2.GC_INIT_WITH_RECT)
    fg = np.where((gc == cv2.GC_FGD) | (gc == cv2.GC_PR_FGD), 255, 0).astype(np.uint8)
    # Keep the largest connected piece and close small holes.
    n, labels, stats, _ = cv2.connectedComponentsWithStats(fg, connectivity=8)
    if n > 1:
        biggest = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
        fg = np.where(labels == biggest, 255, 0).astype(np.uint8)
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (7, 7))
    fg = cv2.morphologyEx(fg, cv2.MORPH_CLOSE, kernel)
    if fg.mean() < 0.15 * 255:  # GrabCut failed: fall back to a rounded rectangle
        return _rounded_mask(h, w)
    return fg


# --------------------------------------------------------------------------- sprites


def _premultiplied(rgb_u8: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    a = np.clip(alpha, 0.0, 1.0).astype(np.float32)
    out = np.empty((*a.shape, 4), np.float32)
    out[..., :3] = rgb_u8.astype(np.float32) / 255.0 * a[..., None]
    out[..., 3] = a
    return out


def _straight(sprite: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Premultiplied float sprite -> (rgb uint8, alpha float32)."""
    a = sprite[..., 3]
    rgb = sprite[..., :3] / np.maximum(a, 1e-6)[..., None]
    return np.clip(rgb * 255.0 + 0.5, 0, 255).astype(np.uint8), a.copy()


def _frozen(arr: np.ndarray) -> np.ndarray:
    arr.setflags(write=False)
    return arr


@functools.cache
def _base_sprite(asset_id: str) -> np.ndarray:
    a = ENTITIES[asset_id]
    x0, y0, x1, y1 = a.crop_xyxy
    if a.mask == "silhouette":
        shape = ~np.asarray(photo(a.stencil or "horse"))[..., 0].astype(bool)
        ys, xs = np.nonzero(shape)
        shape = shape[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1]
        sh, sw = shape.shape
        h = a.height_px
        w = max(1, round(sw * h / sh))
        texture = photo(a.photo)[y0:y1, x0:x1]
        rgb = cover_resize(texture, h, w)
        m = cv2.resize(shape.astype(np.uint8) * 255, (w, h), interpolation=cv2.INTER_AREA)
    else:
        patch = photo(a.photo)[y0:y1, x0:x1]
        h = a.height_px
        w = max(1, round(patch.shape[1] * h / patch.shape[0]))
        rgb = cv2.resize(patch, (w, h), interpolation=cv2.INTER_AREA)
        if a.mask == "ellipse":
            m = _ellipse_mask(h, w)
        elif a.mask == "ellipses":
            m = np.zeros((h, w), np.uint8)
            for cx, cy, rx, ry in a.ellipses:
                cv2.ellipse(m, (round(cx * w * 16), round(cy * h * 16)),
                            (round(rx * w * 16), round(ry * h * 16)), 0, 0, 360, 255, -1,
                            cv2.LINE_AA, shift=4)
        elif a.mask == "rounded":
            m = _rounded_mask(h, w)
        else:
            m = _grabcut_mask(rgb)
    if a.tint is not None:
        rgb = tinted(rgb, a.tint)
    if a.flip:
        rgb = rgb[:, ::-1]
        m = m[:, ::-1]
    rgb = np.ascontiguousarray(rgb)
    if a.hue_shift_deg:
        rgb = _hue_rotated(rgb, a.hue_shift_deg)
    return _frozen(_premultiplied(rgb, _soft(np.ascontiguousarray(m))))


def _hue_rotated(rgb: np.ndarray, degrees: float, *, min_sat: float = 0.0) -> np.ndarray:
    hsv = cv2.cvtColor(rgb.astype(np.float32) / 255.0, cv2.COLOR_RGB2HSV)
    hsv[..., 0] = (hsv[..., 0] + degrees) % 360.0
    if min_sat:
        hsv[..., 1] = min_sat + (1.0 - min_sat) * hsv[..., 1]
    return np.clip(cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB) * 255.0 + 0.5, 0, 255).astype(np.uint8)


def _recoloured(rgb: np.ndarray, alpha: np.ndarray, colour: str) -> np.ndarray:
    hsv = cv2.cvtColor(rgb.astype(np.float32) / 255.0, cv2.COLOR_RGB2HSV)
    # Dominant hue of the visible, coloured pixels (circular mean weighted by S * alpha).
    wgt = hsv[..., 1] * alpha
    ang = np.deg2rad(hsv[..., 0])
    dominant = float(np.rad2deg(np.arctan2((np.sin(ang) * wgt).sum(), (np.cos(ang) * wgt).sum())))
    target = COLOURS[colour]
    # Pull every hue towards the target (keeping a little of the original variation)
    # and lift saturation so grey sources take the colour too.
    rel = ((hsv[..., 0] - dominant + 180.0) % 360.0) - 180.0
    hsv[..., 0] = (target + 0.25 * rel) % 360.0
    hsv[..., 1] = 0.45 + 0.55 * hsv[..., 1]
    return np.clip(cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB) * 255.0 + 0.5, 0, 255).astype(np.uint8)


def _seed_of(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def _accessory(rgb: np.ndarray, alpha: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    h, w = alpha.shape
    rgb = rgb.copy()
    alpha = alpha.copy()
    if kind == "character":
        # A striped party hat sitting on the top edge.
        hat = np.array([[w * 0.30, h * 0.30], [w * 0.70, h * 0.30], [w * 0.5, 0.0]])
        m = np.zeros((h, w), np.uint8)
        cv2.fillConvexPoly(m, np.round(hat * 16).astype(np.int32), 255, cv2.LINE_AA, shift=4)
        stripes = ((np.arange(h)[:, None] * 0 + np.arange(w)[None, :] + np.arange(h)[:, None])
                   // max(3, w // 12)) % 2
        colour = np.where(stripes[..., None] == 1, np.array([250, 220, 30], np.uint8),
                          np.array([200, 20, 120], np.uint8))
        mm = m.astype(np.float32)[..., None] / 255.0
        rgb = (rgb * (1 - mm) + colour * mm + 0.5).astype(np.uint8)
        alpha = np.maximum(alpha, mm[..., 0])
        cv2.circle(rgb, (round(w * 0.5), round(h * 0.02) + 2), max(2, w // 20),
                   (255, 255, 255), -1, cv2.LINE_AA)
    else:
        # A magenta band across the middle and a green star sticker at the upper right.
        y0, y1 = round(h * 0.55), round(h * 0.66)
        rgb[y0:y1] = (rgb[y0:y1] * 0.25 + np.array([230, 30, 200]) * 0.75).astype(np.uint8)
        r_out = max(4.0, 0.2 * min(h, w))
        cx, cy = w * 0.72, h * 0.26
        angles = np.deg2rad(-90 + 36 * np.arange(10))
        radii = np.where(np.arange(10) % 2 == 0, r_out, r_out * 0.45)
        star = np.stack([cx + radii * np.cos(angles), cy + radii * np.sin(angles)], 1)
        pts = np.round(star * 16).astype(np.int32)
        cv2.fillPoly(rgb, [pts], (40, 230, 60), cv2.LINE_AA, shift=4)
        cv2.polylines(rgb, [pts], True, (10, 10, 10), 1, cv2.LINE_AA, shift=4)
        m = np.zeros((h, w), np.uint8)
        cv2.fillPoly(m, [pts], 255, cv2.LINE_AA, shift=4)
        alpha = np.maximum(alpha, m.astype(np.float32) / 255.0)
    return rgb, alpha


def _broken(rgb: np.ndarray, alpha: np.ndarray, asset_id: str) -> tuple[np.ndarray, np.ndarray]:
    h, w = alpha.shape
    rng = np.random.default_rng(_seed_of("broken/" + asset_id))
    # A zig-zag crack from the top edge down to about two thirds of the height.
    n = 6
    ys = np.linspace(0, 0.7 * h, n)
    xs = 0.55 * w + rng.uniform(-0.09, 0.09, n) * w
    crack = np.stack([xs, ys], 1)
    # The fragment right of the crack in the upper part moves out by a few pixels.
    frag_poly = np.vstack([crack, [[w, 0.7 * h], [w, 0.0]]])
    fm = np.zeros((h, w), np.uint8)
    cv2.fillPoly(fm, [np.round(frag_poly * 16).astype(np.int32)], 255, cv2.LINE_AA, shift=4)
    f = fm.astype(np.float32) / 255.0
    dx, dy = max(2, round(w * 0.06)), -max(2, round(h * 0.04))
    shift = np.float32([[1, 0, dx], [0, 1, dy]])
    prem = _premultiplied(rgb, alpha)
    frag = prem * f[..., None]
    rest = prem * (1 - f[..., None])
    moved = cv2.warpAffine(frag, shift, (w, h), flags=cv2.INTER_LINEAR,
                           borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    out = moved + rest * (1 - moved[..., 3:4])
    rgb2, a2 = _straight(out)
    # Dark crack lines along the break and two short branches.
    pts = np.round(crack * 16).astype(np.int32)
    cv2.polylines(rgb2, [pts], False, (25, 20, 20), 2, cv2.LINE_AA, shift=4)
    for k in (2, 4):
        x, y = crack[k]
        end = np.array([[x, y], [x - 0.18 * w, y + rng.uniform(0.05, 0.12) * h]])
        cv2.polylines(rgb2, [np.round(end * 16).astype(np.int32)], False, (25, 20, 20), 1,
                      cv2.LINE_AA, shift=4)
    return rgb2, a2


def _closed(rgb: np.ndarray, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    h, w = alpha.shape
    rgb = rgb.copy()
    alpha = alpha.copy()
    centre = (round(0.5 * w * 16), round(0.33 * h * 16))
    axes = (round(0.44 * w * 16), round(0.26 * h * 16))
    m = np.zeros((h, w), np.uint8)
    cv2.ellipse(m, centre, axes, 0, 0, 360, 255, -1, cv2.LINE_AA, shift=4)
    lid = np.zeros_like(rgb)
    lid[:] = (78, 84, 96)
    cv2.ellipse(lid, (centre[0] - round(0.08 * w * 16), centre[1] - round(0.06 * h * 16)),
                (axes[0] // 2, axes[1] // 3), -10, 0, 360, (170, 178, 190), -1, cv2.LINE_AA,
                shift=4)
    cv2.circle(lid, (round(0.5 * w), round(0.33 * h)), max(3, w // 12), (30, 30, 34), -1,
               cv2.LINE_AA)
    mm = m.astype(np.float32)[..., None] / 255.0
    rgb = (rgb * (1 - mm) + lid * mm + 0.5).astype(np.uint8)
    return rgb, np.maximum(alpha, mm[..., 0])


@functools.lru_cache(maxsize=512)
def entity_sprite(asset_id: str, state: str = "base") -> np.ndarray:
    """The sprite of an entity in a state.

    Args:
        asset_id: key of :data:`ENTITIES`.
        state: see the module docstring.

    Returns:
        ``(h, w, 4)`` float32, premultiplied RGB in ``[0, 1]`` plus alpha; ``h`` is the
        asset's ``height_px``. Read-only (cached).

    Raises:
        UserInputError: unknown asset or state.
    """
    check_state(asset_id, state, "sim entity_sprite")
    base = _base_sprite(asset_id)
    if state in ("base", "open"):
        return base
    rgb, alpha = _straight(base)
    if state.startswith("recoloured:"):
        rgb = _recoloured(rgb, alpha, state.split(":", 1)[1])
    elif state == "accessory":
        rgb, alpha = _accessory(rgb, alpha, ENTITIES[asset_id].kind)
    elif state == "broken":
        rgb, alpha = _broken(rgb, alpha, asset_id)
    elif state == "closed":
        rgb, alpha = _closed(rgb, alpha)
    return _frozen(_premultiplied(rgb, alpha))


@functools.lru_cache(maxsize=256)
def mixed_sprite(asset_id: str, state: str, other_id: str, other_state: str,
                 weight: float) -> np.ndarray:
    """Cross-fade an entity's sprite towards another sprite (a wrong memory).

    The other sprite is resized to this sprite's size and the premultiplied values are
    blended: ``(1 - weight) * this + weight * other``.

    Args:
        asset_id, state: the true appearance.
        other_id, other_state: the wrong appearance.
        weight: ``0`` keeps the truth, ``1`` gives the other sprite (in this box).

    Returns:
        ``(h, w, 4)`` float32 premultiplied sprite of this asset's size (read-only).
    """
    a = entity_sprite(asset_id, state)
    if weight <= 0.0:
        return a
    b = entity_sprite(other_id, other_state)
    h, w = a.shape[:2]
    b = cv2.resize(b, (w, h), interpolation=cv2.INTER_AREA)
    return _frozen((1.0 - weight) * a + weight * b)
