"""Render sim frames and their truth: vectorised views of a panorama plus sprites.

How a frame is made (all in numpy / OpenCV, no Python loops over pixels):

1. **View window.** The camera pose gives the window centre ``(cu, cv)`` on the
   panorama and its scale ``s`` (panorama pixels per output pixel), see
   :func:`view_window`. Output pixel ``(x, y)`` (centre at ``x + 0.5``) shows the
   panorama at ``u = cu + (x + 0.5 - W / 2) * s``, ``v = cv + (y + 0.5 - H / 2) * s``.
   The background is sampled with one bilinear ``cv2.warpAffine`` from a copy of the
   panorama tiled three times side by side, so the 360-degree wrap needs no special
   case.
2. **Entities.** Each present track's sprite (premultiplied RGBA, see
   :mod:`vidmem.sim.assets`) is warped with sub-pixel accuracy into its region of the
   frame, at size ``nominal * track.scale / s``. The copy of the entity nearest to the
   view centre (``u + k * W_pano``) is the one drawn.
3. **Compositing, front to back.** A coverage buffer starts at zero; each entity, from
   the front (largest ``z``) to the back, adds ``alpha * (1 - coverage)`` to it and
   the same weight of its colour. The background fills what is left. This is the
   ordinary "over" operator, and it gives every entity's *visible* alpha directly.

Truth per entity (only entities with at least one pixel of visible alpha >= 0.5):

* ``box_xyxy``: half-open pixel box (ints) of the pixels whose visible alpha is at
  least 0.5: ``frame[y0:y1, x0:x1]`` is the crop, exactly as :mod:`vidmem.io.boxes`
  defines pixel boxes. It covers only the part inside the frame and not hidden by an
  entity in front.
* ``visible_fraction``: visible alpha mass inside the frame divided by the sprite's
  whole alpha mass at that size (1.0 = fully in view and unoccluded);
* ``mix`` (only for a track drawn as a cross-fade, the sim generator's imperfect
  memory): ``[other_asset, other_state, weight]``.

The same code runs without colour (``colour=False``) to get visibility cheaply; the
sim generator uses that to find when each entity was last seen, so its notion of a
"gap" is the truth's.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from vidmem.sim.assets import PANO_HEIGHT, panorama
from vidmem.sim.sprites import entity_sprite, mixed_sprite
from vidmem.sim.world import VIEW_HEIGHT_PX, Background, EntityTrack, Pose, WorldSpec

__all__ = [
    "Backdrop",
    "ViewWindow",
    "bake_panorama",
    "frame_truth",
    "iter_render",
    "render_frames",
    "render_view",
    "render_window",
    "view_window",
]

_MIX_STEPS = 64  # cross-fade weights are quantised to 1/64 (keeps the sprite cache small)


@dataclass(frozen=True)
class ViewWindow:
    """Where the output frame looks on the panorama.

    Attributes:
        cu: view-centre column in panorama pixels, wrapped into ``[0, W_pano)``.
        cv: view-centre row in panorama pixels.
        scale: panorama pixels per output pixel.
        width, height: output size in pixels.
    """

    cu: float
    cv: float
    scale: float
    width: int
    height: int

    @property
    def span_u(self) -> tuple[float, float]:
        """Panorama columns ``[u0, u1)`` covered by the frame (``u0`` may be < 0)."""
        half = self.width * self.scale / 2.0
        return self.cu - half, self.cu + half


def view_window(pose: Pose, width: int, height: int, pano_width: int) -> ViewWindow:
    """The window a pose sees (convention in :mod:`vidmem.sim.world`).

    Args:
        pose: camera pose.
        width, height: output size in pixels.
        pano_width: ``W_pano`` in pixels (360 degrees).

    Returns:
        The :class:`ViewWindow`.

    Example:
        >>> w = view_window(Pose(yaw=90.0), 320, 180, 2400)
        >>> (w.cu, w.cv, w.scale)
        (600.0, 135.0, 1.25)
    """
    px_per_rad = pano_width / (2.0 * math.pi)
    px_per_deg = pano_width / 360.0
    cu = (pose.yaw * px_per_deg + pose.tx * px_per_rad) % pano_width
    cv = PANO_HEIGHT / 2.0 - pose.pitch * px_per_deg + pose.ty * px_per_rad
    return ViewWindow(float(cu), float(cv), VIEW_HEIGHT_PX / pose.zoom / height, width, height)


class Backdrop:
    """A panorama prepared for wrap-around sampling.

    Args:
        image: ``(PANO_HEIGHT, W_pano, 3)`` uint8 RGB; column ``u`` is yaw
            ``u / W_pano * 360`` degrees.
    """

    def __init__(self, image: np.ndarray) -> None:
        image = np.ascontiguousarray(image, dtype=np.uint8)
        if image.ndim != 3 or image.shape[2] != 3:
            raise ValueError(f"backdrop must be (H, W, 3) uint8, found shape {image.shape}")
        self.image = image
        self.width = int(image.shape[1])
        self._tiled = np.concatenate([image, image, image], axis=1)

    @classmethod
    def for_background(cls, background: Background) -> Backdrop:
        """The (cached) backdrop of a spec's background."""
        return _backdrop_cached(background)

    def sample(self, win: ViewWindow) -> np.ndarray:
        """The background of one frame, ``(height, width, 3)`` uint8."""
        s = win.scale
        # dst (x, y) -> src (x', y') in tiled-image index coordinates (pixel centres).
        ox = win.cu + self.width - s * win.width / 2.0 + s / 2.0 - 0.5
        oy = win.cv - s * win.height / 2.0 + s / 2.0 - 0.5
        m = np.array([[s, 0.0, ox], [0.0, s, oy]], np.float64)
        return cv2.warpAffine(self._tiled, m, (win.width, win.height),
                              flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                              borderMode=cv2.BORDER_REPLICATE)


@functools.lru_cache(maxsize=16)
def _backdrop_cached(background: Background) -> Backdrop:
    if background.kind == "panorama":
        return Backdrop(panorama(background.places))
    img = np.empty((PANO_HEIGHT, background.pano_width, 3), np.uint8)
    img[:] = np.asarray(background.rgb, np.uint8)
    return Backdrop(img)


def _sprite_for(track: EntityTrack, state: str) -> np.ndarray:
    if track.mix is None or track.mix[2] <= 0.0:
        return entity_sprite(track.asset, state)
    w = min(1.0, round(track.mix[2] * _MIX_STEPS) / _MIX_STEPS)
    return mixed_sprite(track.asset, state, track.mix[0], track.mix[1], w)


def _entity_truths(
    tracks: Sequence[EntityTrack], t: float, win: ViewWindow, pano_width: int,
    bg: np.ndarray | None,
) -> tuple[np.ndarray | None, list[dict[str, Any]]]:
    """Composite present tracks over ``bg`` (or only measure them when ``bg`` is None)."""
    width, height = win.width, win.height
    present = [(i, tr) for i, tr in enumerate(tracks) if tr.present(t)]
    if not present:
        return (None if bg is None else bg), []
    present.sort(key=lambda it: (-it[1].z, it[0]))
    cover = np.zeros((height, width), np.float32)
    drawn: list[tuple[int, int, np.ndarray]] = []  # front to back: (x0, y0, warped part)
    truths: list[dict[str, Any]] = []
    s = win.scale
    for _, tr in present:
        state = tr.state(t)
        sprite = _sprite_for(tr, state)
        sh, sw = sprite.shape[:2]
        u, v = tr.position(t)
        u = u + pano_width * round((win.cu - u) / pano_width)
        cx = (u - win.cu) / s + width / 2.0
        cy = (v - win.cv) / s + height / 2.0
        hw = sw * tr.scale / (2.0 * s)
        hh = sh * tr.scale / (2.0 * s)
        x0, x1 = math.floor(cx - hw) - 1, math.ceil(cx + hw) + 1
        y0, y1 = math.floor(cy - hh) - 1, math.ceil(cy + hh) + 1
        if x1 <= 0 or y1 <= 0 or x0 >= width or y0 >= height:
            continue
        k = s / tr.scale  # sprite pixels per output pixel
        m = np.array([[k, 0.0, k * (x0 + 0.5 - (cx - hw)) - 0.5],
                      [0.0, k, k * (y0 + 0.5 - (cy - hh)) - 0.5]], np.float64)
        warped = cv2.warpAffine(sprite, m, (x1 - x0, y1 - y0),
                                flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                                borderMode=cv2.BORDER_CONSTANT, borderValue=0)
        total = float(warped[..., 3].sum())
        if total <= 0.0:
            continue
        cx0, cy0, cx1, cy1 = max(x0, 0), max(y0, 0), min(x1, width), min(y1, height)
        part = warped[cy0 - y0 : cy1 - y0, cx0 - x0 : cx1 - x0]
        cov = cover[cy0:cy1, cx0:cx1]
        vis = part[..., 3] * (1.0 - cov)
        cov += vis
        if bg is not None:
            drawn.append((cx0, cy0, part))
        rows = np.flatnonzero((vis >= 0.5).any(axis=1))
        if rows.size == 0:
            continue
        cols = np.flatnonzero((vis >= 0.5).any(axis=0))
        entry: dict[str, Any] = {
            "id": tr.id, "asset": tr.asset, "state": state,
            "box_xyxy": [int(cx0 + cols[0]), int(cy0 + rows[0]),
                         int(cx0 + cols[-1] + 1), int(cy0 + rows[-1] + 1)],
            "visible_fraction": round(min(1.0, float(vis.sum()) / total), 4),
        }
        if tr.mix is not None and tr.mix[2] > 0.0:
            entry["mix"] = [tr.mix[0], tr.mix[1], round(tr.mix[2], 6)]
        truths.append(entry)
    if bg is None:
        return None, truths
    # Colour: back to front with the "over" operator, touching only sprite regions.
    out = bg.copy()
    for x0, y0, part in reversed(drawn):
        h, w = part.shape[:2]
        region = out[y0 : y0 + h, x0 : x0 + w].astype(np.float32)
        region = part[..., :3] * 255.0 + (1.0 - part[..., 3:4]) * region
        out[y0 : y0 + h, x0 : x0 + w] = np.clip(region + 0.5, 0, 255).astype(np.uint8)
    return out, truths


def render_view(
    backdrop: Backdrop,
    pose: Pose,
    t: float,
    tracks: Sequence[EntityTrack],
    width: int,
    height: int,
    *,
    colour: bool = True,
) -> tuple[np.ndarray | None, list[dict[str, Any]]]:
    """Render one frame at an explicit pose.

    Args:
        backdrop: the panorama to look at.
        pose: camera pose.
        t: world time in seconds (selects entity positions and states).
        tracks: entity tracks.
        width, height: output size in pixels.
        colour: ``False`` skips the pixels and returns only the truth (fast).

    Returns:
        ``(frame, entities)``: frame ``(height, width, 3)`` uint8 RGB (``None`` when
        ``colour`` is False) and the per-entity truth dicts (module docstring).
    """
    return render_window(backdrop, view_window(pose, width, height, backdrop.width), t,
                         tracks, colour=colour)


def render_window(
    backdrop: Backdrop,
    win: ViewWindow,
    t: float,
    tracks: Sequence[EntityTrack],
    *,
    colour: bool = True,
) -> tuple[np.ndarray | None, list[dict[str, Any]]]:
    """Like :func:`render_view` for an explicit :class:`ViewWindow`."""
    bg = backdrop.sample(win) if colour else None
    return _entity_truths(tracks, t, win, backdrop.width, bg)


def bake_panorama(backdrop: Backdrop, tracks: Sequence[EntityTrack], t: float) -> np.ndarray:
    """The whole panorama with the entities present at ``t`` drawn in at scale 1.

    Returns:
        ``(PANO_HEIGHT, W_pano, 3)`` uint8, column ``u`` at yaw ``u / W_pano * 360``.
    """
    w = backdrop.width
    win = ViewWindow(w / 2.0, PANO_HEIGHT / 2.0, 1.0, w, PANO_HEIGHT)
    frame, _ = render_window(backdrop, win, t, tracks)
    assert frame is not None
    return frame


def frame_truth(i: int, t: float, pose: Pose, entities: list[dict[str, Any]]) -> dict[str, Any]:
    """The truth record of one frame (see :func:`render_frames`)."""
    return {
        "frame": i,
        "t": round(t, 6),
        "pose": pose.to_list(),
        "c2w": [[round(float(v), 6) for v in row] for row in pose.c2w()],
        "entities": entities,
    }


def iter_render(
    spec: WorldSpec,
    indices: Iterable[int] | None = None,
    *,
    backdrop: Backdrop | None = None,
    colour: bool = True,
) -> Iterator[tuple[np.ndarray | None, dict[str, Any]]]:
    """Yield ``(frame, truth)`` for frames of a spec, one at a time (bounded memory)."""
    bd = backdrop or Backdrop.for_background(spec.background)
    for i in range(spec.n_frames) if indices is None else indices:
        t = spec.time_of(i)
        pose = spec.pose_at(t)
        frame, ents = render_view(bd, pose, t, spec.entities, spec.width, spec.height,
                                  colour=colour)
        yield frame, frame_truth(i, t, pose, ents)


def render_frames(
    spec: WorldSpec,
    indices: Sequence[int] | None = None,
    *,
    backdrop: Backdrop | None = None,
) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """Render frames of a spec with their truth.

    Args:
        spec: the scene.
        indices: frame indices (default: all ``spec.n_frames``).
        backdrop: replace the spec's background (the sim generator's degraded views).

    Returns:
        ``(frames, truth)``: ``(T, height, width, 3)`` uint8 RGB and one dict per frame
        ``{"frame", "t" (s), "pose" [yaw, pitch, zoom, tx, ty], "c2w" (4x4),
        "entities": [{"id", "asset", "state", "box_xyxy", "visible_fraction"}]}``.
    """
    idx = list(range(spec.n_frames)) if indices is None else list(indices)
    frames = np.empty((len(idx), spec.height, spec.width, 3), np.uint8)
    truth = []
    for k, (frame, tr) in enumerate(iter_render(spec, idx, backdrop=backdrop)):
        frames[k] = frame
        truth.append(tr)
    return frames, truth
