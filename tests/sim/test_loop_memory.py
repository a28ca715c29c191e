"""Loop rollouts: the planned poses are the ones used, and the decay knob is measurable.

Revisit fidelity of a pair here is ``0.7 * (hist_cos + 1) / 2 + 0.3 * SSIM`` with a
colour-histogram cosine standing in for the embedding cosine of the protocol (no model
backends in these tests). Pairs are the sim's own (pose distance <= 0.02, at least 1 s
apart, camera departed in between).
"""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from scipy.stats import spearmanr
from skimage.metrics import structural_similarity

from vidmem.generators.protocol import GenerationRequest
from vidmem.generators.sim import SimGenerator
from vidmem.io.video import probe, read_frames
from vidmem.sim.loops import LOOPS, loop_c2w, revisit_schedule
from vidmem.sim.media import read_png_spec

SECONDS, W, H = 16.0, 160, 90


@pytest.fixture(scope="module")
def rollout(loop_root, tmp_path_factory, hist_cosine):
    out_dir = tmp_path_factory.mktemp("sim_rollouts")
    start = loop_root / "start_images" / "sim_s0_img000.png"
    cache = {}

    def run(loop_id: str, memory: str):
        if (loop_id, memory) not in cache:
            out = out_dir / f"{loop_id}_{memory.replace(':', '_')}.mp4"
            req = GenerationRequest(f"sim_s0_img000_{loop_id}", "memory_loop",
                                    LOOPS[loop_id].prompt, str(out), start_image=str(start),
                                    duration_seconds=SECONDS, fps=8.0, width=W, height=H)
            res = SimGenerator(memory=memory).generate(req)
            assert res.status == "ok", res.error
            poses = json.loads(Path(res.extras["poses_path"]).read_text("utf-8"))
            c2w = np.asarray(poses["c2w"])
            match, _ = revisit_schedule(c2w, poses["fps"], radius=0.02)
            js = np.flatnonzero(match >= 0)
            frames = read_frames(out, list(range(probe(out).n_frames)))
            grey = [cv2.cvtColor(f, cv2.COLOR_RGB2GRAY) for f in frames]
            fid = np.array([
                0.7 * (hist_cosine(frames[j], frames[match[j]]) + 1) / 2
                + 0.3 * structural_similarity(grey[j], grey[match[j]], data_range=255)
                for j in js])
            cache[loop_id, memory] = (res, c2w, (js - match[js]) / poses["fps"], fid)
        return cache[loop_id, memory]

    return run


def test_pose_sidecar_is_the_planned_loop(rollout, loop_root):
    res, c2w, _, _ = rollout("yaw_loop_180", "perfect")
    spec = read_png_spec(loop_root / "start_images" / "sim_s0_img000.png")
    assert c2w.shape == (128, 4, 4) and res.extras["loop_id"] == "yaw_loop_180"
    assert np.allclose(c2w, loop_c2w("yaw_loop_180", spec.camera[0].pose, 128), atol=1e-8)
    assert probe(res.video_path).n_frames == 128
    # Frame 0 of the rollout is the start image (same world, same pose).
    start = cv2.resize(read_frames(res.video_path, [0])[0], (320, 180))
    assert start.shape == (180, 320, 3)


def _tau_hat(gaps, fid, floor, top):
    """Least-squares decay time of (fid - floor) / (top - floor) = exp(-gap / tau)."""
    y = np.clip((fid - floor) / (top - floor), 1e-3, 1.0)
    return float(-np.sum(gaps * gaps) / np.sum(gaps * np.log(y)))


@pytest.mark.parametrize("loop_id", ["yaw_loop_180", "palindrome_loop"])
def test_revisit_fidelity_falls_with_gap_at_the_rate_tau_sets(rollout, loop_id):
    _, _, gaps, perfect = rollout(loop_id, "perfect")
    _, _, _, none = rollout(loop_id, "none")
    assert len(gaps) >= 20 and gaps.max() - gaps.min() > 5.0
    assert perfect.min() > 0.95  # a perfect memory shows the same picture again
    assert none.max() < 0.6 and none.mean() < perfect.mean() - 0.4
    taus = {}
    for tau in (4, 16, 64):
        _, _, g, fid = rollout(loop_id, f"decay:{tau}")
        if tau == 16:
            assert spearmanr(g, fid).correlation < -0.8  # monotone in the gap
        taus[tau] = _tau_hat(g, fid, none.mean(), perfect.mean())
    assert taus[4] < taus[16] < taus[64]  # the fitted decay time ranks the knob
    assert 4 < taus[16] < 40


def test_same_rollout_request_same_bytes(rollout, loop_root, tmp_path):
    res, _, _, _ = rollout("yaw_loop_180", "decay:16")
    req = GenerationRequest("sim_s0_img000_yaw_loop_180", "memory_loop",
                            LOOPS["yaw_loop_180"].prompt, str(tmp_path / "again.mp4"),
                            start_image=str(loop_root / "start_images" / "sim_s0_img000.png"),
                            duration_seconds=SECONDS, fps=8.0, width=W, height=H)
    again = SimGenerator(memory="decay:16").generate(req)
    assert Path(again.video_path).read_bytes() == Path(res.video_path).read_bytes()
    assert (Path(again.extras["poses_path"]).read_bytes()
            == Path(res.extras["poses_path"]).read_bytes())
