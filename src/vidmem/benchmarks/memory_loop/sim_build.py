"""Build a synthetic memory-loop dataset: start images and a case manifest.

Layout written under ``ROOT``::

    cases.jsonl                      one case per line: a start image x a loop
    start_images/<image_id>.png      320x180 start frames, world spec in a zTXt chunk
    _truth/<image_id>.json           truth of the start frame (entity boxes, pose)

Each start image looks at one place of a six-place panorama; every place has one
static entity, so views differ all the way round. ``cases.jsonl`` rows (key-sorted
JSON):

``case_id``          ``<image_id>_<loop_id>``
``start_image``      path relative to ``ROOT``
``loop_id``          one of :data:`vidmem.sim.loops.LOOP_IDS`
``prompt``           the loop's prompt target text (:data:`vidmem.sim.loops.LOOPS`)
``duration_seconds`` 60.0 by default
``fps``              8.0

The planned trajectory of a case is ``loop_poses(loop_id, start_pose, round(duration *
fps))`` where ``start_pose`` is in the image's world spec (``camera[0]``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from vidmem.io.jsonl import write_jsonl
from vidmem.sim.assets import ENTITIES, PLACES
from vidmem.sim.build import TRUTH_DIR, BuildSummary, check_n_cases
from vidmem.sim.loops import LOOP_IDS, LOOPS
from vidmem.sim.media import write_sim_png
from vidmem.sim.render import render_frames
from vidmem.sim.sprites import entity_sprite
from vidmem.sim.world import (
    DEFAULT_FPS,
    DEFAULT_HEIGHT,
    DEFAULT_WIDTH,
    Background,
    CameraKey,
    EntityTrack,
    Pose,
    WorldSpec,
)

__all__ = ["DEFAULT_DURATION_SECONDS", "DEFAULT_N_CASES", "build_memory_loop",
           "plan_start_image"]

DEFAULT_N_CASES = 2
DEFAULT_DURATION_SECONDS = 60.0


def image_id_for(seed: int, index: int) -> str:
    """The id of start image ``index`` of a build with ``seed``."""
    return f"sim_s{seed}_img{index:03d}"


def plan_start_image(seed: int, index: int) -> WorldSpec:
    """The world of start image ``index``: panorama, static entities, start pose.

    Args:
        seed: build seed.
        index: start image number.

    Returns:
        A one-frame :class:`~vidmem.sim.world.WorldSpec` of kind ``loop_start``.
    """
    rng = np.random.default_rng([int(seed), int(index), 0x100B])
    places = tuple(str(p) for p in rng.permutation(sorted(PLACES))[:6])
    assets = [str(a) for a in rng.permutation(sorted(ENTITIES))]
    chosen: list[str] = []
    for a in assets:
        if a not in chosen and ENTITIES[a].lookalike not in chosen:
            chosen.append(a)
        if len(chosen) == len(places):
            break
    tracks = []
    sector_w = Background("panorama", places).pano_width / len(places)
    for k, asset in enumerate(chosen):
        h, w = entity_sprite(asset).shape[:2]
        u = (k + 0.5) * sector_w + rng.uniform(-1, 1) * max(0.0, sector_w / 2 - w / 2 - 40)
        v = float(rng.uniform(115.0, 155.0))
        tracks.append(EntityTrack(asset, asset, -1e6, 1e6, ((0.0, float(u), v),),
                                  ((0.0, "base"),)))
    start = Pose(yaw=(int(rng.integers(len(places))) + 0.5) * 360.0 / len(places))
    return WorldSpec(seed=int(seed), width=DEFAULT_WIDTH, height=DEFAULT_HEIGHT, fps=DEFAULT_FPS,
                     n_frames=1, background=Background("panorama", places),
                     camera=(CameraKey(0.0, start),), entities=tuple(tracks), kind="loop_start",
                     info={"index": int(index)})


def build_memory_loop(root: Path, *, seed: int = 0, n_cases: int | None = None) -> BuildSummary:
    """Write ``n_cases`` start images and ``6 * n_cases`` loop cases under ``root``.

    Args:
        root: output folder (exists).
        seed: build seed.
        n_cases: number of start images (default :data:`DEFAULT_N_CASES`).

    Returns:
        The :class:`~vidmem.sim.build.BuildSummary`.
    """
    n = check_n_cases(n_cases, DEFAULT_N_CASES, "memory_loop")
    (root / "start_images").mkdir(parents=True, exist_ok=True)
    (root / TRUTH_DIR).mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    files: list[str] = []
    for index in range(n):
        spec = plan_start_image(seed, index)
        image_id = image_id_for(seed, index)
        frames, truth = render_frames(spec, [0])
        rel = f"start_images/{image_id}.png"
        write_sim_png(root / rel, frames[0], spec)
        truth_rel = f"{TRUTH_DIR}/{image_id}.json"
        doc = {"image_id": image_id, "start_image": rel, "width": spec.width,
               "height": spec.height, "start_pose": spec.camera[0].pose.to_list(),
               "frames": truth}
        (root / truth_rel).write_text(json.dumps(doc, separators=(",", ":"), sort_keys=True),
                                      encoding="utf-8")
        files += [rel, truth_rel]
        for loop_id in LOOP_IDS:
            rows.append({"case_id": f"{image_id}_{loop_id}", "start_image": rel,
                         "loop_id": loop_id, "prompt": LOOPS[loop_id].prompt,
                         "duration_seconds": DEFAULT_DURATION_SECONDS, "fps": spec.fps})
    write_jsonl(root / "cases.jsonl", rows)
    files.append("cases.jsonl")
    return BuildSummary("memory_loop", root, seed, n, len(rows), "cases.jsonl",
                        tuple(sorted(files)), 0.0)
