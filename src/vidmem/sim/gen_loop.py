"""The sim generator's memory-loop path: a camera loop from a start image, forgetting.

The camera follows the loop's planned trajectory (:func:`vidmem.sim.loops.loop_poses`)
from the start image's pose. The world is static, so a perfect memory shows the same
picture whenever the camera returns to a pose.

Forgetting is decided per frame from the trajectory alone, the way a model with a
memory horizon would fail. :func:`vidmem.sim.loops.revisit_schedule` pairs frame
``j`` with the earlier frame ``m(j)`` it revisits: the nearest pose within distance
0.3 that is at least 1 s older (the most recent on ties), kept only if the camera went
away from it in between (the benchmark's rule, :mod:`vidmem.metrics.revisit`). With
``dt = (j - m(j)) / fps`` and ``f = knob.fidelity(dt)``:

* The world is cut into square *tiles* of :data:`TILE_PX` panorama pixels. Every frame
  has a label per tile: ``0`` (the true world) or ``k >= 1`` (hallucinated world
  ``k``).
* A frame that revisits nothing shows the true world.
* A hallucinated world is a place-free noise texture in one of the
  :data:`FOG_HUES` hues the world uses least
  (:func:`vidmem.sim.memory.fog_panorama`), so a forgotten spot looks about equally
  unlike the truth anywhere on the loop.
* A revisit frame keeps the label of frame ``m(j)`` on a fraction ``f`` of the tiles
  (a clustered-dot dither per *run* of consecutive revisit frames,
  :func:`dither_field`, so the kept share of any view follows ``f`` and tiles drop out
  progressively, never flicker) and shows a hallucinated world new to the run on the
  rest. When ``m(j)`` is itself a revisit frame (a copy of a copy, as in the second
  turn of ``double_yaw_loop``), the new world takes the next hue, so nothing ``j``
  invents resembles what ``m(j)`` invented, even to a colour histogram (up to
  :data:`FOG_HUES` copies deep). Labels encode both: world ``FOG_HUES * (run - 1) +
  (depth - 1) % FOG_HUES + 1`` for copy depth ``depth`` in run ``run``. When the copy
  depth changes inside a run (``double_yaw_loop``'s second turn starts copying copies),
  the forgotten tiles switch to the next world in one frame. Far from the revisited pose the effect
  fades: with pose distance ``d``, a fraction ``1 - rho`` of the tiles shows the truth, ``rho = 1`` for ``d <= 0.15`` (the
  benchmark's pairing radius) down to ``0`` at ``d = 0.3``.
* Pixels take their tile's world, with edges softened by a small blur that keeps each
  world's share of the frame.

Consequence, what scorers are validated against: for a pair ``(m(j), j)`` with pose
distance <= 0.15, frame ``j`` is frame ``m(j)`` on about a fraction ``f`` of the view
and place-free noise elsewhere, so any similarity of the two (SSIM, colour histograms,
DINOv2 cosine) rises monotonically with ``f`` from a floor that hardly depends on the
place, and so falls with ``dt`` at a rate set by ``tau``. How exactly it rises with
``f`` depends on the measure (SSIM drops faster than the share where tile edges cross
its windows; a Hellinger-histogram cosine goes about like ``sqrt(f)``), so a fitted
decay time matches ``tau`` only within a factor. ``perfect`` (and ``leaky``) never
forget; ``none`` replaces every revisited tile.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import cv2
import numpy as np

from vidmem.sim.assets import PANO_HEIGHT
from vidmem.sim.loops import loop_poses, revisit_schedule
from vidmem.sim.memory import MemoryKnob, fog_panorama, least_used_hues
from vidmem.sim.render import Backdrop, ViewWindow, bake_panorama, render_view, view_window
from vidmem.sim.world import Pose, WorldSpec

__all__ = ["FOG_HUES", "LOOP_FORGETTING_VERSION", "PAIR_RADIUS", "SOFT_RADIUS", "TILE_PX", "plan_rollout", "rollout_frames"]

#: pose distance up to which a revisit is fully affected (the protocol's radius).
PAIR_RADIUS = 0.15
#: pose distance from which a frame is not treated as a revisit at all.
SOFT_RADIUS = 0.3
#: side of a forgetting tile in panorama pixels (16 output pixels at zoom 1).
TILE_PX = 20
#: hallucinated worlds of a run come in this many hues (one per copy depth).
FOG_HUES = 3
#: version of this forgetting model (2: fog worlds, clustered-dot dither, copy depths).
LOOP_FORGETTING_VERSION = "2"


def _grid(pano_width: int) -> tuple[int, int]:
    return -(-PANO_HEIGHT // TILE_PX), -(-pano_width // TILE_PX)


#: side, in tiles, of a dither cell.
DITHER_CELL = 6


def _clustered_dot(n: int) -> np.ndarray:
    """Ranks ``0 .. n*n - 1`` of an ``n x n`` cell, growing a dot from its centre."""
    y, x = np.mgrid[0:n, 0:n] + 0.5 - n / 2.0
    order = np.lexsort((np.arctan2(y, x).ravel(), np.hypot(x, y).ravel()))
    ranks = np.empty(n * n, np.int64)
    ranks[order] = np.arange(n * n)
    return ranks.reshape(n, n)


_DOT = _clustered_dot(DITHER_CELL)


def dither_field(shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    """Per-tile thresholds of one run of revisit frames: a clustered-dot dither.

    A tile is kept while its threshold is below the remembered fraction ``f``. Each
    cell of ``DITHER_CELL x DITHER_CELL`` tiles keeps a round blob of about
    ``f * DITHER_CELL**2`` tiles around its centre, so every stretch of a view keeps
    about the share ``f``, tiles drop out one by one as ``f`` falls (never flickering
    back), and the kept and forgotten parts stay compact (a scattered pattern would
    put a tile edge in every image window and make the similarity of a frame fall far
    faster than the share of the view it got wrong). A random offset per cell spreads
    the cells' steps over ``f``, and a random roll per run gives each run its own
    placement.

    Example:
        >>> field = dither_field((18, 36), np.random.default_rng(0))
        >>> round(float((field < 0.25).mean()), 2)
        0.25
    """
    n = DITHER_CELL
    rows, cols = -(-shape[0] // n) + 1, -(-shape[1] // n) + 1
    jitter = rng.random((rows, cols))
    cells = (_DOT[None, :, None, :] + jitter[:, None, :, None]) / (n * n)
    tiled = cells.reshape(rows * n, cols * n)
    r0, c0 = (int(v) for v in rng.integers(0, n, size=2))
    return tiled[r0:r0 + shape[0], c0:c0 + shape[1]]


def plan_rollout(start: Pose, loop_id: str | None, knob: MemoryKnob, rng: np.random.Generator,
                 *, n_frames: int, fps: float, pano_width: int,
                 ) -> tuple[list[Pose], list[np.ndarray], list[dict[str, Any]]]:
    """Poses and per-frame tile labels of a rollout.

    Args:
        start: the start image's camera pose.
        loop_id: the loop to follow, or ``None`` to hold the start pose.
        knob: the memory setting.
        rng: the request's random stream (tile fields are drawn from it).
        n_frames: number of frames (>= 2).
        fps: frames per second.
        pano_width: ``W_pano`` of the world, pixels.

    Returns:
        ``(poses, labels, frames_info)``: one pose per frame; per frame an int32
        ``(ceil(PANO_HEIGHT / TILE_PX), W_pano / TILE_PX)`` label map (0 = true world,
        ``k`` = hallucinated world ``k``); per frame ``{"frame", "t", "match",
        "gap_seconds", "pose_distance", "fidelity", "rho"}``.
    """
    poses = loop_poses(loop_id, start, n_frames) if loop_id else [start] * n_frames
    c2w = np.stack([p.c2w() for p in poses])
    match, dist = revisit_schedule(c2w, fps, radius=SOFT_RADIUS)
    shape = _grid(pano_width)
    truth = np.zeros(shape, np.int32)
    labels: list[np.ndarray] = []
    info: list[dict[str, Any]] = []
    fields: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    run, in_run = 0, False
    depth = np.zeros(n_frames, np.int64)  # revisit of a revisit of ... of a true frame
    for j in range(n_frames):
        m = int(match[j])
        if m < 0:
            labels.append(truth)
            in_run = False
            info.append({"frame": j, "t": j / fps, "match": None, "gap_seconds": None,
                         "pose_distance": None, "fidelity": 1.0, "rho": 0.0})
            continue
        if not in_run:
            run += 1
            in_run = True
            fields[run] = (dither_field(shape, rng), rng.random(shape))
        dt = (j - m) / fps
        f = knob.fidelity(dt)
        d = float(dist[j])
        rho = 1.0 if d <= PAIR_RADIUS else max(0.0, (SOFT_RADIUS - d) / (SOFT_RADIUS - PAIR_RADIUS))
        keep, back = fields[run]
        # A copy of a copy (frame m itself a revisit) forgets into a world of the
        # next hue, so nothing j invents resembles what m invented.
        depth[j] = depth[m] + 1
        own = np.int32(FOG_HUES * (run - 1) + (depth[j] - 1) % FOG_HUES + 1)
        lab = np.where(keep < f, labels[m], own)
        lab = np.where(back < 1.0 - rho, np.int32(0), lab).astype(np.int32)
        labels.append(lab)
        info.append({"frame": j, "t": j / fps, "match": m, "gap_seconds": dt,
                     "pose_distance": round(d, 6), "fidelity": f, "rho": round(rho, 6)})
    return poses, labels, info


def _view_labels(labels: np.ndarray, win: ViewWindow) -> np.ndarray:
    """The tile label under every output pixel (nearest tile, wrapping in u)."""
    gw = labels.shape[1]
    tiled = np.concatenate([labels, labels, labels], axis=1).astype(np.float32)
    k = win.scale / TILE_PX
    ox = (win.cu + (0.5 - win.width / 2.0) * win.scale) / TILE_PX - 0.5 + gw
    oy = (win.cv + (0.5 - win.height / 2.0) * win.scale) / TILE_PX - 0.5
    m = np.array([[k, 0.0, ox], [0.0, k, oy]], np.float64)
    out = cv2.warpAffine(tiled, m, (win.width, win.height),
                         flags=cv2.INTER_NEAREST | cv2.WARP_INVERSE_MAP,
                         borderMode=cv2.BORDER_REPLICATE)
    return np.rint(out).astype(np.int32)


def _soft_masks(view_labels: np.ndarray, present: list[int]) -> dict[int, np.ndarray]:
    """Per label, its share of each pixel: the hard tile map with slightly soft edges.

    The same blur on every label keeps the shares summing to 1 and keeps each label's
    area (a bilinear ramp sharpened around 0.5 would shrink isolated tiles).
    """
    return {k: cv2.GaussianBlur((view_labels == k).astype(np.float32), (5, 5), 1.0,
                                borderType=cv2.BORDER_REPLICATE)
            for k in present}


def rollout_frames(spec: WorldSpec, poses: list[Pose], labels: list[np.ndarray],
                   rng: np.random.Generator, *, width: int, height: int, fps: float,
                   true_fraction: list[float] | None = None) -> Iterator[np.ndarray]:
    """Yield the rollout's frames, ``(height, width, 3)`` uint8 each.

    Args:
        spec: the start image's world (static entities).
        poses, labels: from :func:`plan_rollout`.
        rng: the request's random stream (hallucinated worlds are drawn from it).
        width, height, fps: output format.
        true_fraction: if given, the fraction of each frame showing the true world is
            appended to it.
    """
    true_bd = Backdrop.for_background(spec.background)
    components = sorted({int(k) for lab in labels for k in np.unique(lab) if k > 0})
    worlds: dict[int, Backdrop] = {}
    if components:
        hues = least_used_hues(bake_panorama(true_bd, spec.entities, spec.t0), FOG_HUES)
        seeds = rng.integers(0, 2**62, size=max(components) + 1)
        for k in components:
            sub = np.random.default_rng(int(seeds[k]))
            hue = hues[(k - 1) % FOG_HUES]
            worlds[k] = Backdrop(fog_panorama((PANO_HEIGHT, true_bd.width), hue, sub))
    for j, (pose, lab) in enumerate(zip(poses, labels, strict=True)):
        t = spec.t0 + j / fps
        frame, _ = render_view(true_bd, pose, t, spec.entities, width, height)
        assert frame is not None
        present = [int(k) for k in np.unique(lab)]
        if present == [0]:
            if true_fraction is not None:
                true_fraction.append(1.0)
            yield frame
            continue
        win = view_window(pose, width, height, true_bd.width)
        masks = _soft_masks(_view_labels(lab, win), present)
        total = np.maximum(sum(masks.values()), 1e-6)
        acc = frame.astype(np.float32) * (masks[0] / total)[..., None] if 0 in masks else 0.0
        for k in present:
            if k == 0:
                continue
            img, _ = render_view(worlds[k], pose, t, (), width, height)
            assert img is not None
            acc = acc + img.astype(np.float32) * (masks[k] / total)[..., None]
        if true_fraction is not None:
            true_fraction.append(float((masks[0] / total).mean()) if 0 in masks else 0.0)
        yield np.clip(np.asarray(acc) + 0.5, 0, 255).astype(np.uint8)
