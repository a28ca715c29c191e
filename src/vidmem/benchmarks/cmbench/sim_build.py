"""Build a synthetic CMBench dataset in the benchmark's own on-disk format.

Layout written under ``ROOT``::

    metadata.jsonl                        one task per line, the CMBench schema exactly
    videos/synthetic/<video_id>.mp4       60 s context videos (6 clips x 10 s, 8 fps)
    _truth/<video_id>.json                truth: per-frame boxes, poses, task gaps

Each context video gives two tasks (plan in :mod:`vidmem.benchmarks.cmbench.sim_plan`):

* ``{video_id}_reappear_01``: an entity ``T`` seen in the first clips and gone for
  the rest; ``continue_prompt`` = ``"The <label> comes back into view."``;
* ``{video_id}_revisit_01``: the camera went ``A -> B -> A`` inside one clip; the
  continuation must go back to ``B``; the target is ``B``'s anchor entity;
  ``continue_prompt`` = ``"The camera pans back to the <place>."``.

The reference of a task is one frame where the target is fully visible, unoccluded and
at least 4 pixels from the frame border (for ``T`` the last such frame where it is at
rest, so it shows ``T``'s final state; for the anchor the middle such frame of ``B``'s
visit), with the true box ``[x0 / W, y0 / H, x1 / W, y1 / H]`` of its visible
pixels (unrounded, so that :func:`vidmem.io.boxes.normalized_to_pixel` gives back the
exact pixel box).

Truth file ``_truth/<video_id>.json``: ``{"video_id", "video", "fps", "width",
"height", "n_frames", "tasks": [{"task_id", "task_type", "target_id", "target_asset",
"target_state", "last_visible_frame", "gap_seconds", "reference_frame",
"reference_box_xyxy", "place"}], "frames": [per-frame truth as in
vidmem.sim.render.render_frames]}``. ``gap_seconds = (n_frames - 1 -
last_visible_frame) / fps``: seconds from the end of the target's last visible frame
to the start of the continuation.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from vidmem.benchmarks.cmbench.sim_plan import ContextPlan, plan_context
from vidmem.io.jsonl import write_jsonl
from vidmem.sim.assets import ENTITIES, PLACES
from vidmem.sim.build import TRUTH_DIR, BuildSummary, check_n_cases
from vidmem.sim.media import write_sim_video
from vidmem.sim.prompts import reappear_prompt, revisit_prompt
from vidmem.sim.render import iter_render

__all__ = ["DEFAULT_N_CASES", "build_cmbench", "video_id_for"]

DEFAULT_N_CASES = 4


def video_id_for(seed: int, index: int) -> str:
    """The id of context video ``index`` of a build with ``seed``."""
    return f"sim_s{seed}_v{index:03d}"


def _visible(frame_truth: dict[str, Any], track_id: str) -> dict[str, Any] | None:
    for e in frame_truth["entities"]:
        if e["id"] == track_id:
            return e
    return None


def _clean(e: dict[str, Any] | None, width: int, height: int, margin: int = 4) -> bool:
    """Fully visible, unoccluded and at least ``margin`` pixels from the border."""
    if e is None or e["visible_fraction"] < 0.999:
        return False
    x0, y0, x1, y1 = e["box_xyxy"]
    return x0 >= margin and y0 >= margin and x1 <= width - margin and y1 <= height - margin


def _reference(truth: list[dict[str, Any]], track_id: str, frames: list[int], width: int,
               height: int, fps: float) -> tuple[dict[str, Any], int, list[int]]:
    """The first frame of ``frames`` where the target is clean and at rest (its box is
    the same as in the frame before), else the first clean one."""
    clean = [i for i in frames if _clean(_visible(truth[i], track_id), width, height)]
    if not clean:
        raise RuntimeError(f"sim cmbench: {track_id} is never fully visible in frames "
                           f"{min(frames)}..{max(frames)}; the scene plan is broken")
    still = [i for i in clean if i > 0 and (prev := _visible(truth[i - 1], track_id))
             is not None and prev["box_xyxy"] == _visible(truth[i], track_id)["box_xyxy"]]
    i = (still or clean)[0]
    e = _visible(truth[i], track_id)
    assert e is not None
    x0, y0, x1, y1 = e["box_xyxy"]
    ref = {"timestamp_seconds": i / fps, "frame_index": i,
           "bbox_xyxy_normalized": [x0 / width, y0 / height, x1 / width, y1 / height]}
    return ref, i, [x0, y0, x1, y1]


def _tasks(plan: ContextPlan, video_id: str, truth: list[dict[str, Any]]) -> tuple[
        list[dict[str, Any]], list[dict[str, Any]]]:
    spec = plan.spec
    w, h, fps, n = spec.width, spec.height, spec.fps, spec.n_frames
    last: dict[str, int] = {}
    for fr in truth:
        for e in fr["entities"]:
            last[e["id"]] = fr["frame"]
    rows, facts = [], []
    clip = int(round(spec.info["clip_seconds"] * fps))
    # Reappear: the last frame where T is clean and at rest (so in its final state);
    # revisit: the middle of the frames where B's anchor is clean during the visit.
    t_frames = list(range(last[plan.target], -1, -1))
    ref_t, i_t, box_t = _reference(truth, plan.target, t_frames, w, h, fps)
    visit = [i for i in range(plan.revisit_clip * clip, (plan.revisit_clip + 1) * clip)
             if _clean(_visible(truth[i], plan.anchor), w, h)]
    if not visit:
        raise RuntimeError(f"sim cmbench {video_id}: the revisit anchor is never fully visible")
    ref_b, i_b, box_b = _reference(truth, plan.anchor, [visit[len(visit) // 2]], w, h, fps)
    clip_prompts = [{"clip_id": f"{k + 1:02d}", "clip_prompt": p}
                    for k, p in enumerate(plan.clip_prompts)]
    for task_type, tid, ref, i_ref, box, place in (
        ("reappear", plan.target, ref_t, i_t, box_t, None),
        ("revisit", plan.anchor, ref_b, i_b, box_b, plan.place_b),
    ):
        asset = ENTITIES[spec.track(tid).asset]
        gap = (n - 1 - last[tid]) / fps
        if gap <= 0:
            raise RuntimeError(f"sim cmbench {video_id}: {tid} is still visible at the end")
        prompt = (reappear_prompt(asset.label) if task_type == "reappear"
                  else revisit_prompt(PLACES[place].name if place else ""))
        task_id = f"{video_id}_{task_type}_01"
        rows.append({
            "type": "synthetic", "task_id": task_id, "scene": plan.scene,
            "video": f"videos/synthetic/{video_id}.mp4",
            "context_clip_prompts": clip_prompts, "continue_prompt": prompt,
            "task_type": task_type, "target_label": asset.label,
            "target_aliases": list(asset.aliases), "references": [ref],
        })
        seen = _visible(truth[i_ref], tid)
        facts.append({
            "task_id": task_id, "task_type": task_type, "target_id": tid,
            "target_asset": asset.id, "target_state": seen["state"] if seen else None,
            "last_visible_frame": last[tid], "gap_seconds": gap, "reference_frame": i_ref,
            "reference_box_xyxy": box, "place": place,
        })
    return rows, facts


def _frames_collecting(plan: ContextPlan, truth: list[dict[str, Any]]) -> Iterator[np.ndarray]:
    for frame, tr in iter_render(plan.spec):
        truth.append(tr)
        assert frame is not None
        yield frame


def build_cmbench(root: Path, *, seed: int = 0, n_cases: int | None = None) -> BuildSummary:
    """Write ``n_cases`` context videos and ``2 * n_cases`` tasks under ``root``.

    Args:
        root: output folder (exists).
        seed: build seed.
        n_cases: number of context videos (default :data:`DEFAULT_N_CASES`).

    Returns:
        The :class:`~vidmem.sim.build.BuildSummary` (``seconds`` is filled in by
        :func:`vidmem.sim.build.build`).
    """
    n = check_n_cases(n_cases, DEFAULT_N_CASES, "cmbench")
    (root / "videos" / "synthetic").mkdir(parents=True, exist_ok=True)
    (root / TRUTH_DIR).mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    files: list[str] = []
    gaps: dict[str, float] = {}
    for index in range(n):
        plan = plan_context(seed, index)
        vid = video_id_for(seed, index)
        rel = f"videos/synthetic/{vid}.mp4"
        truth: list[dict[str, Any]] = []
        write_sim_video(root / rel, _frames_collecting(plan, truth), plan.spec)
        task_rows, facts = _tasks(plan, vid, truth)
        rows += task_rows
        gaps.update({f["task_id"]: f["gap_seconds"] for f in facts})
        doc = {"video_id": vid, "video": rel, "fps": plan.spec.fps, "width": plan.spec.width,
               "height": plan.spec.height, "n_frames": plan.spec.n_frames, "tasks": facts,
               "frames": truth}
        truth_rel = f"{TRUTH_DIR}/{vid}.json"
        (root / truth_rel).write_text(json.dumps(doc, separators=(",", ":"), sort_keys=True),
                                      encoding="utf-8")
        files += [rel, truth_rel]
    write_jsonl(root / "metadata.jsonl", rows)
    files.append("metadata.jsonl")
    return BuildSummary("cmbench", root, seed, n, len(rows), "metadata.jsonl",
                        tuple(sorted(files)), 0.0, {"gap_seconds": gaps})
