"""The builders write each benchmark's exact format, deterministically, with true truth."""

from __future__ import annotations

import json
import re

import pytest

from vidmem.errors import UnknownNameError, UserInputError
from vidmem.io.boxes import box_iou, check_normalized_box, crop, normalized_to_pixel
from vidmem.io.video import probe, read_frames
from vidmem.models.backends.classic_sift import SiftDetector
from vidmem.runners.sim_build import build
from vidmem.sim.assets import ENTITIES
from vidmem.sim.loops import LOOP_IDS, LOOPS
from vidmem.sim.media import read_png, read_png_spec, read_video_spec

CMBENCH_FIELDS = {"type", "task_id", "scene", "video", "context_clip_prompts", "continue_prompt",
                  "task_type", "target_label", "target_aliases", "references"}


def test_cmbench_rows_have_the_exact_schema(cmbench_root, cmbench_rows):
    assert len(cmbench_rows) == 4
    assert len({r["task_id"] for r in cmbench_rows}) == 4
    for r in cmbench_rows:
        assert set(r) == CMBENCH_FIELDS
        assert r["type"] == "synthetic"
        assert r["task_type"] in ("reappear", "revisit")
        video_id = re.fullmatch(r"videos/synthetic/(.+)\.mp4", r["video"]).group(1)
        assert re.fullmatch(rf"{re.escape(video_id)}_{r['task_type']}_\d\d", r["task_id"])
        assert (cmbench_root / r["video"]).is_file()
        clips = r["context_clip_prompts"]
        assert [c["clip_id"] for c in clips] == ["01", "02", "03", "04", "05", "06"]
        assert all(set(c) == {"clip_id", "clip_prompt"} and c["clip_prompt"].strip() for c in clips)
        for key in ("scene", "continue_prompt", "target_label"):
            assert isinstance(r[key], str) and r[key].strip()
        assert isinstance(r["target_aliases"], list) and all(isinstance(a, str) for a in r["target_aliases"])
        assert r["references"]
        for ref in r["references"]:
            assert set(ref) == {"timestamp_seconds", "frame_index", "bbox_xyxy_normalized"}
            assert isinstance(ref["frame_index"], int) and ref["frame_index"] >= 0
            assert ref["timestamp_seconds"] == pytest.approx(ref["frame_index"] / 8.0)
            assert check_normalized_box(ref["bbox_xyxy_normalized"]) == []
    by_video = {}
    for r in cmbench_rows:
        by_video.setdefault(r["video"], []).append(r["task_type"])
    assert all(sorted(v) == ["reappear", "revisit"] for v in by_video.values())


def test_cmbench_videos_are_one_minute_and_carry_their_world(cmbench_root, cmbench_rows):
    info = probe(cmbench_root / cmbench_rows[0]["video"])
    assert (info.n_frames, info.fps, info.width, info.height) == (480, 8.0, 320, 180)
    spec = read_video_spec(cmbench_root / cmbench_rows[0]["video"])
    assert spec is not None and spec.n_frames == 480 and spec.kind == "cmbench_context"


def test_reference_box_is_the_truth_and_the_gap_is_real(cmbench_rows, cmbench_truth):
    for r in cmbench_rows:
        video_id = r["video"].split("/")[-1][:-4]
        truth = cmbench_truth(video_id)
        task = next(t for t in truth["tasks"] if t["task_id"] == r["task_id"])
        ref = r["references"][0]
        assert task["reference_frame"] == ref["frame_index"]
        frame = truth["frames"][ref["frame_index"]]
        seen = next(e for e in frame["entities"] if e["id"] == task["target_id"])
        px = normalized_to_pixel(ref["bbox_xyxy_normalized"], 320, 180)
        assert list(px) == seen["box_xyxy"] == task["reference_box_xyxy"]
        assert seen["visible_fraction"] >= 0.999
        assert ENTITIES[task["target_asset"]].label == r["target_label"]
        # Gone from the recent view: not visible since last_visible_frame.
        last = task["last_visible_frame"]
        assert all(e["id"] != task["target_id"] for f in truth["frames"][last + 1:]
                   for e in f["entities"])
        assert task["gap_seconds"] == pytest.approx((479 - last) / 8.0) and task["gap_seconds"] >= 5


def test_sift_finds_the_target_in_the_reference_frame(cmbench_root, cmbench_rows):
    det = SiftDetector()
    found = 0
    for r in cmbench_rows:
        ref = r["references"][0]
        frame = read_frames(cmbench_root / r["video"], [ref["frame_index"]])[0]
        box = normalized_to_pixel(ref["bbox_xyxy_normalized"], 320, 180)
        hits = det.detect([frame], image_query=crop(frame, box).copy())[0]
        found += bool(hits) and box_iou(hits[0].box, box) > 0.7
    assert found >= len(cmbench_rows) - 1


def test_memory_loop_manifest_and_start_images(loop_root):
    rows = [json.loads(x) for x in (loop_root / "cases.jsonl").read_text().splitlines()]
    assert [r["loop_id"] for r in rows] == list(LOOP_IDS)
    for r in rows:
        assert set(r) == {"case_id", "start_image", "loop_id", "prompt", "duration_seconds", "fps"}
        assert r["prompt"] == LOOPS[r["loop_id"]].prompt
        assert r["duration_seconds"] == 60.0 and r["fps"] == 8.0
        assert r["case_id"].endswith(r["loop_id"])
    img = read_png(loop_root / rows[0]["start_image"])
    spec = read_png_spec(loop_root / rows[0]["start_image"])
    assert img.shape == (180, 320, 3) and spec is not None and spec.kind == "loop_start"
    truth = json.loads((loop_root / "_truth" / "sim_s0_img000.json").read_text())
    assert truth["frames"][0]["entities"]  # the start view shows at least one entity


def _tree(root):
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.slow  # four more builds: ~5 s
def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path, loop_root, cmbench_root):
    a = build("memory_loop", tmp_path / "a", seed=0, n_cases=1)
    b = build("memory_loop", tmp_path / "b", seed=1, n_cases=1)
    assert _tree(tmp_path / "a") == _tree(loop_root)
    png_a = (tmp_path / "a" / "start_images" / "sim_s0_img000.png").read_bytes()
    png_b = (tmp_path / "b" / "start_images" / "sim_s1_img000.png").read_bytes()
    assert png_a != png_b and a.files != b.files
    # CMBench: context video 0 of seed 0 is the same whatever n_cases; seed 1 differs.
    build("cmbench", tmp_path / "c", seed=0, n_cases=1)
    c = _tree(tmp_path / "c")
    full = _tree(cmbench_root)
    for name in ("videos/synthetic/sim_s0_v000.mp4", "_truth/sim_s0_v000.json"):
        assert c[name] == full[name]
    first_two = b"".join(full["metadata.jsonl"].splitlines(keepends=True)[:2])
    assert c["metadata.jsonl"] == first_two
    build("cmbench", tmp_path / "d", seed=1, n_cases=1)
    d = _tree(tmp_path / "d")
    assert d["videos/synthetic/sim_s1_v000.mp4"] != c["videos/synthetic/sim_s0_v000.mp4"]
    assert d["metadata.jsonl"] != c["metadata.jsonl"]


def test_build_rejects_unknown_benchmarks_and_bad_counts(tmp_path):
    with pytest.raises(UnknownNameError, match="did you mean 'cmbench'.*memory_loop"):
        build("cmbnch", tmp_path)
    with pytest.raises(UserInputError, match="n_cases must be an int >= 1"):
        build("memory_loop", tmp_path, n_cases=0)
    with pytest.raises(UserInputError, match="seed must be an int >= 0"):
        build("memory_loop", tmp_path, seed=-1)
