"""The sim generator honours every memory knob, reads only what a model reads, fails politely."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from vidmem.errors import UserInputError
from vidmem.generators.protocol import GenerationRequest, Generator
from vidmem.generators.sim import SimGenerator
from vidmem.io.boxes import crop, normalized_to_pixel
from vidmem.io.video import probe, read_frames, write_video
from vidmem.registry import GENERATORS
from vidmem.sim.memory import parse_memory


def _row(rows, task_type, video=0):
    return [r for r in rows if r["task_type"] == task_type][video]


def _reference_crop(root, row):
    ref = row["references"][0]
    frame = read_frames(root / row["video"], [ref["frame_index"]])[0]
    return crop(frame, normalized_to_pixel(ref["bbox_xyxy_normalized"], 320, 180))


def _target_crop(result, row, truth_id):
    """The target's pixels in the last continuation frame, from the sim's own truth."""
    truth = json.loads(Path(result.extras["truth_path"]).read_text("utf-8"))
    last = truth["frames"][-1]
    ent = next(e for e in last["entities"] if e["id"] == truth_id)
    frame = read_frames(result.video_path, [last["frame"]])[0]
    return crop(frame, ent["box_xyxy"])


def _inner(img):
    h, w = img.shape[:2]
    return img[h // 4: h - h // 4, w // 4: w - w // 4]


def _similarity(a, b, hist_cosine):
    """Colour-histogram cosine of the inner halves, after resizing b to a's size."""
    b = cv2.resize(b, (a.shape[1], a.shape[0]), interpolation=cv2.INTER_AREA)
    return hist_cosine(_inner(a), _inner(b))


def test_protocol_and_info():
    gen = SimGenerator(memory="decay:20", seed="3")
    assert isinstance(gen, Generator) and gen.name == "sim"
    assert GENERATORS.load("sim") is SimGenerator  # the catalog's target (old path, a shim)
    info = gen.info()
    assert info["memory"] == "decay:20" and info["tau_seconds"] == 20.0 and info["seed"] == 3


@pytest.mark.parametrize("bad", ["perfekt", "decay", "decay:0", "decay:-3", "decay:x",
                                 "leaky:1.5", "leaky:", "none:1", 7])
def test_memory_knob_is_parsed_strictly(bad):
    with pytest.raises(UserInputError, match="memory"):
        SimGenerator(memory=bad)


def test_knob_fidelity():
    assert parse_memory("perfect").fidelity(100.0) == 1.0
    assert parse_memory("none").fidelity(0.125) == 0.0
    assert parse_memory("decay:10").fidelity(10.0) == pytest.approx(np.exp(-1.0))
    assert parse_memory("leaky:0.3").fidelity(100.0) == 1.0


def test_reappear_perfect_recalls_none_forgets(cmbench_root, cmbench_rows, cmbench_truth,
                                                continuation, hist_cosine):
    row = _row(cmbench_rows, "reappear")
    target = next(t for t in cmbench_truth(row["video"][17:-4])["tasks"]
                  if t["task_id"] == row["task_id"])["target_id"]
    ref = _reference_crop(cmbench_root, row)
    sims = {}
    for mem in ("perfect", "none", "decay:3", "decay:1000"):
        res = continuation("reappear", mem, duration=4.0)
        assert res.status == "ok", res.error
        assert res.extras["actions"] == [["reappear", row["target_label"]]]
        sims[mem] = _similarity(ref, _target_crop(res, row, target), hist_cosine)
    assert sims["perfect"] > 0.8  # same sprite; only the background seen through it differs
    assert sims["perfect"] > sims["none"] + 0.2
    assert sims["decay:1000"] > sims["decay:3"] + 0.1
    assert sims["decay:3"] == pytest.approx(sims["none"], abs=0.1)  # gap >> 3 s


def test_revisit_perfect_returns_to_the_place(cmbench_root, cmbench_rows, continuation):
    row = _row(cmbench_rows, "revisit")
    ref_frame = read_frames(cmbench_root / row["video"], [row["references"][0]["frame_index"]])[0]
    mse = {}
    for mem in ("perfect", "none"):
        res = continuation("revisit", mem)
        assert res.status == "ok", res.error
        last = read_frames(res.video_path, [probe(res.video_path).n_frames - 1])[0]
        mse[mem] = float(np.mean((last.astype(float) - ref_frame.astype(float)) ** 2))
    assert mse["perfect"] < 30.0  # the same view, up to compression
    assert mse["none"] > 10 * mse["perfect"]


def test_leaky_copies_retired_entities(continuation):
    leak = continuation("revisit", "leaky:1.0")
    tight = continuation("revisit", "leaky:0.0")
    assert leak.status == tight.status == "ok"
    assert leak.extras["leaked"] and not tight.extras["leaked"]
    last = json.loads(Path(leak.extras["truth_path"]).read_text("utf-8"))["frames"][-1]
    leaked = [e for e in last["entities"] if e["id"].endswith("_leak")]
    assert leaked and leaked[0]["visible_fraction"] > 0.5
    last = json.loads(Path(tight.extras["truth_path"]).read_text("utf-8"))["frames"][-1]
    assert not [e for e in last["entities"] if e["id"].endswith("_leak")]


def test_same_request_same_bytes(continuation):
    a = continuation("reappear", "none", duration=2.0)
    b = continuation("reappear", "none", duration=2.0, tag="again")
    assert Path(a.video_path).read_bytes() == Path(b.video_path).read_bytes()
    assert a.extras["n_frames"] == 16 and probe(a.video_path).fps == 8.0


def test_unknown_prompt_is_ignored(cmbench_root, cmbench_rows, tmp_path):
    row = cmbench_rows[0]
    req = GenerationRequest("odd", "cmbench", "Dance wildly. The unicorn comes back into view.",
                            str(tmp_path / "odd.mp4"), context_video=str(cmbench_root / row["video"]),
                            duration_seconds=1.0)
    res = SimGenerator().generate(req)
    assert res.status == "ok", res.error
    assert res.extras["ignored_sentences"] == ["Dance wildly."]
    assert res.extras["unknown_names"] == ["unicorn"]
    # Nothing asked for: the continuation continues the last context view.
    last_ctx = read_frames(cmbench_root / row["video"], [479])[0].astype(float)
    first = read_frames(res.video_path, [0])[0].astype(float)
    assert np.mean((first - last_ctx) ** 2) < 30.0


def test_requests_it_cannot_serve_are_error_results(tmp_path):
    plain = tmp_path / "plain.mp4"
    write_video(plain, np.zeros((4, 32, 32, 3), np.uint8), 8)
    gen = SimGenerator()
    res = gen.generate(GenerationRequest("task_7", "cmbench", "x", str(tmp_path / "o.mp4"),
                                         context_video=str(plain)))
    assert res.status == "error" and res.video_path is None
    assert "request task_7" in res.error and "carries no sim world spec" in res.error
    cv2.imwrite(str(tmp_path / "plain.png"), np.zeros((18, 32, 3), np.uint8))
    res = gen.generate(GenerationRequest("case_2", "memory_loop", "x", str(tmp_path / "o.mp4"),
                                         start_image=str(tmp_path / "plain.png")))
    assert res.status == "error" and "request case_2" in res.error
    res = gen.generate(GenerationRequest("empty_1", "cmbench", "x", str(tmp_path / "o.mp4")))
    assert res.status == "error" and "request empty_1" in res.error
    res = gen.generate(GenerationRequest("gone_1", "cmbench", "x", str(tmp_path / "o.mp4"),
                                         context_video=str(tmp_path / "missing.mp4")))
    assert res.status == "error" and "request gone_1" in res.error and "not found" in res.error
