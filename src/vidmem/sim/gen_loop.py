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
  ``k``: the start world, entities baked in, turned upside down and hue-rotated with
  saturation lifted -- :func:`vidmem.sim.memory.hallucinated_panorama`, ``retextured``).
* A frame that revisits nothing shows the true world.
* A revisit frame keeps the label of frame ``m(j)`` on a random fraction ``f`` of the
  tiles and shows a hallucinated world new to this *run* of consecutive revisit frames
  on the rest (one uniform random field per run, so tiles flip progressively, never
  flicker). Far from the revisited pose the effect fades: with pose distance ``d``, a
  fraction ``1 - rho`` of the tiles shows the truth, ``rho = 1`` for ``d <= 0.15`` (the
  benchmark's pairing radius) down to ``0`` at ``d = 0.3``.
* Pixels take their tile's world, with soft tile edges.

Consequence, what scorers are validated against: for a pair ``(m(j), j)`` with pose
distance <= 0.15, frame ``j`` is frame ``m(j)`` on about a fraction ``f`` of the view
and unrelated content elsewhere, so SSIM between the two is close to ``f`` and any
similarity (colour histograms, DINOv2 cosine) falls monotonically with ``dt`` at a rate
set by ``tau``, whatever the place looks like. ``perfect`` (and ``leaky``) never
forget; ``none`` replaces every revisited tile.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import cv2
import numpy as np

from vidmem.sim.assets import PANO_HEIGHT
from vidmem.sim.loops import loop_poses, revisit_schedule
from vidmem.sim.memory import MemoryKnob, hallucinated_panorama
from vidmem.sim.render import Backdrop, ViewWindow, bake_panorama, render_view, view_window
from vidmem.sim.world import Pose, WorldSpec

__all__ = ["PAIR_RADIUS", "SOFT_RADIUS", "TILE_PX", "plan_rollout", "rollout_frames"]

#: pose distance up to which a revisit is fully affected (the protocol's radius).
PAIR_RADIUS = 0.15
#: pose distance from which a frame is not treated as a revisit at all.
SOFT_RADIUS = 0.3
#: side of a forgetting tile in panorama pixels (16 output pixels at zoom 1).
TILE_PX = 20


def _grid(pano_width: int) -> tuple[int, int]:
    return -(-PANO_HEIGHT // TILE_PX), -(-pano_width // TILE_PX)


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
        ``(poses, labels, frames_info)``: one pose per frame; per frame an int16
        ``(ceil(PANO_HEIGHT / TILE_PX), W_pano / TILE_PX)`` label map (0 = true world,
        ``k`` = hallucinated world ``k``); per frame ``{"frame", "t", "match",
        "gap_seconds", "pose_distance", "fidelity", "rho"}``.
    """
    poses = loop_poses(loop_id, start, n_frames) if loop_id else [start] * n_frames
    c2w = np.stack([p.c2w() for p in poses])
    match, dist = revisit_schedule(c2w, fps, radius=SOFT_RADIUS)
    shape = _grid(pano_width)
    truth = np.zeros(shape, np.int16)
    labels: list[np.ndarray] = []
    info: list[dict[str, Any]] = []
    fields: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    run, in_run = 0, False
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
            fields[run] = (rng.random(shape), rng.random(shape))
        dt = (j - m) / fps
        f = knob.fidelity(dt)
        d = float(dist[j])
        rho = 1.0 if d <= PAIR_RADIUS else max(0.0, (SOFT_RADIUS - d) / (SOFT_RADIUS - PAIR_RADIUS))
        keep, back = fields[run]
        lab = np.where(keep < f, labels[m], np.int16(run))
        lab = np.where(back < 1.0 - rho, np.int16(0), lab).astype(np.int16)
        labels.append(lab)
        info.append({"frame": j, "t": j / fps, "match": m, "gap_seconds": dt,
                     "pose_distance": round(d, 6), "fidelity": f, "rho": round(rho, 6)})
    return poses, labels, info


def _tile_mask(one_hot: np.ndarray, win: ViewWindow) -> np.ndarray:
    """Sample a tile-resolution mask at every output pixel (bilinear, wrapping in u)."""
    gw = one_hot.shape[1]
    tiled = np.concatenate([one_hot, one_hot, one_hot], axis=1)
    k = win.scale / TILE_PX
    ox = (win.cu + (0.5 - win.width / 2.0) * win.scale) / TILE_PX - 0.5 + gw
    oy = (win.cv + (0.5 - win.height / 2.0) * win.scale) / TILE_PX - 0.5
    m = np.array([[k, 0.0, ox], [0.0, k, oy]], np.float64)
    out = cv2.warpAffine(tiled, m, (win.width, win.height),
                         flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                         borderMode=cv2.BORDER_REPLICATE)
    # Narrow the bilinear ramps so tiles have soft but short edges.
    return np.clip((out - 0.5) * 2.5 + 0.5, 0.0, 1.0)


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
        baked = bake_panorama(true_bd, spec.entities, spec.t0)
        seeds = rng.integers(0, 2**62, size=max(components) + 1)
        for k in components:
            sub = np.random.default_rng(int(seeds[k]))
            worlds[k] = Backdrop(hallucinated_panorama(baked, sub, mode="retextured"))
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
        masks = {k: _tile_mask((lab == k).astype(np.float32), win) for k in present}
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
