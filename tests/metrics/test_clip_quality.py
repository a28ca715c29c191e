"""Clip-quality controls on synthetic clips whose behaviour is known: a frozen clip
(flicker 1, smoothness 1, consistency 1, not dynamic), a flickering clip (its flicker
score is exactly 1 - step/255), a smooth pan (dynamic, smooth) and random noise (not
smooth); the formulas against loop transcriptions of VBench's code; Spearman against
hand-ranked values."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage

from vidmem.errors import UserInputError
from vidmem.metrics.clip_quality import (
    PROTOCOL,
    background_consistency,
    clip_quality,
    dynamic_degree,
    dynamic_degree_detail,
    embedding_consistency,
    flow_peak,
    motion_smoothness,
    spearman_with_recall,
    subject_consistency,
    temporal_flickering,
)
from vidmem.models.backends.classic_flow import FarnebackFlow

FLOW = FarnebackFlow()
SIZE = 128


def texture(h: int, w: int, seed: int = 0) -> np.ndarray:
    """A smooth random RGB texture in 30..195 (room for a +60 flicker without clipping)."""
    rng = np.random.default_rng(seed)
    chans = [ndimage.gaussian_filter(rng.normal(size=(h, w)), 3.0) for _ in range(3)]
    out = np.stack([(c - c.min()) / np.ptp(c) for c in chans], axis=-1)
    return (30 + 165 * out).round().astype(np.uint8)


def frozen(n: int = 17) -> np.ndarray:
    return np.repeat(texture(SIZE, SIZE)[None], n, axis=0)


def flickering(n: int = 17, step: int = 60) -> np.ndarray:
    clip = frozen(n).astype(np.int16)
    clip[1::2] += step
    return clip.astype(np.uint8)


def pan(n: int = 17, speed: int = 4) -> np.ndarray:
    """A window sliding ``speed`` pixels per frame to the right over a wide texture."""
    wide = texture(SIZE, SIZE + speed * n, seed=1)
    return np.stack([wide[:, k * speed:k * speed + SIZE] for k in range(n)])


def noise(n: int = 17) -> np.ndarray:
    return np.random.default_rng(2).integers(0, 256, (n, SIZE, SIZE, 3), dtype=np.uint8)


def thumbs(frames) -> np.ndarray:
    """A tiny embedder: 8x8 block means, mean-centred, flattened."""
    f = np.asarray(frames, dtype=np.float64)
    t = f.reshape(f.shape[0], 8, f.shape[1] // 8, 8, f.shape[2] // 8, 3).mean(axis=(2, 4))
    t = t.reshape(f.shape[0], -1)
    return t - t.mean(axis=1, keepdims=True)


# ------------------------------------------------------------------ reference transcriptions


def vbench_consistency(vectors) -> float:
    """VBench subject_consistency's loop, transcribed (torch replaced by numpy)."""
    video_sim, first, former = 0.0, None, None
    for i, v in enumerate(vectors):
        f = np.asarray(v, float) / max(np.linalg.norm(v), 1e-12)
        if i == 0:
            first = f
        else:
            video_sim += (max(0.0, float(former @ f)) + max(0.0, float(first @ f))) / 2
        former = f
    return video_sim / (len(vectors) - 1)


def vbench_flicker(frames) -> float:
    diffs = [np.mean(np.abs(frames[i].astype(np.float32) - frames[i + 1].astype(np.float32)))
             for i in range(len(frames) - 1)]
    return (255.0 - np.mean(diffs)) / 255.0


def test_consistency_matches_vbench_loop():
    rng = np.random.default_rng(5)
    for _ in range(5):
        v = rng.normal(size=(12, 7))
        assert embedding_consistency(v) == pytest.approx(vbench_consistency(v), abs=1e-12)
    assert embedding_consistency([[1.0, 0.0]]) == 1.0


def test_flicker_matches_vbench_loop():
    for clip in (pan(), noise(), flickering()):
        # VBench sums in float32: equal to ~1e-7
        assert temporal_flickering(clip) == pytest.approx(vbench_flicker(clip), abs=1e-6)


# ------------------------------------------------------------------------- known clips


def test_frozen_clip():
    clip = frozen()
    q = clip_quality(clip, 16, flow=FLOW, subject_embed=thumbs, background_embed=thumbs)
    assert q.temporal_flickering == 1.0
    assert q.motion_smoothness == 1.0
    assert q.dynamic_degree is False
    assert q.subject_consistency == pytest.approx(1.0)
    assert q.background_consistency == pytest.approx(1.0)
    assert (q.n_frames, q.fps) == (17, 16.0)


def test_flickering_clip_scores_one_minus_the_step():
    clip = flickering(step=60)
    assert temporal_flickering(clip) == pytest.approx(1 - 60 / 255)
    assert temporal_flickering(flickering(step=20)) == pytest.approx(1 - 20 / 255)
    # the odd frames are bright, their neighbours dark: not smooth either
    assert motion_smoothness(clip, FLOW) == pytest.approx(1 - 60 / 255, abs=0.01)


def test_smooth_pan_is_dynamic_and_smooth():
    clip = pan(speed=4)
    q = clip_quality(clip, 16, flow=FLOW, subject_embed=thumbs)
    assert q.dynamic_degree is True
    assert q.motion_smoothness > 0.98
    assert q.temporal_flickering < 0.99  # it moves, so frames differ
    # the flow reads the pan: 8 pixels between frames two apart (16 fps samples every 2)
    d = dynamic_degree_detail(clip, 16, FLOW)
    assert d.interval == 2 and d.threshold == pytest.approx(6 * SIZE / 256)
    assert np.median(d.peaks) == pytest.approx(8.0, abs=1.0)


def test_random_noise_is_not_smooth():
    clip = noise()
    assert motion_smoothness(clip, FLOW) < 0.8
    assert motion_smoothness(clip, FLOW) < motion_smoothness(pan(), FLOW) - 0.15
    assert temporal_flickering(clip) == pytest.approx(1 - 85 / 255, abs=0.01)  # E|U-U'| = 255/3
    assert subject_consistency(clip, thumbs) < 0.3 < subject_consistency(pan(), thumbs)


def test_dynamic_degree_threshold_by_hand():
    # 16 fps compares frames 2 apart; at 128 px the threshold is 6 * 128 / 256 = 3 px, so
    # a 1 px/frame pan (2 px per pair) is static and a 4 px/frame pan (8 px) moves
    assert dynamic_degree(pan(speed=1), 16, FLOW) is False
    assert dynamic_degree(pan(speed=4), 16, FLOW) is True
    # a constant flow of known size around the threshold (64 px: threshold 1.5 px)
    clip = np.zeros((17, 64, 64, 3), np.uint8)
    assert dynamic_degree(clip, 8, lambda a, b: np.full((64, 64, 2), [1.5, 0.0])) is False
    assert dynamic_degree(clip, 8, lambda a, b: np.full((64, 64, 2), [1.6, 0.0])) is True
    # 4 fps: threshold doubles (max(1, 8 / 4) = 2)
    assert dynamic_degree_detail(clip, 4, lambda a, b: np.zeros((64, 64, 2))).threshold == 3.0


def test_dynamic_degree_needs_enough_moving_pairs():
    # 17 frames at 8 fps: 16 pairs, round(4 * 17 / 16) = 4 must move
    clip = np.zeros((17, 64, 64, 3), np.uint8)
    moving = {0, 5, 9}

    def flow(a, b):
        k = flow.calls
        flow.calls += 1
        return np.full((64, 64, 2), 5.0 if k in moving else 0.0)

    flow.calls = 0
    d = dynamic_degree_detail(clip, 8, flow)
    assert (d.needed, sum(p > d.threshold for p in d.peaks), d.moving) == (4, 3, False)
    moving.add(12)
    flow.calls = 0
    assert dynamic_degree_detail(clip, 8, flow).moving is True


def test_flow_peak_is_the_top_five_percent_mean():
    f = np.zeros((20, 20, 2))  # 400 px -> top 20
    f.reshape(-1, 2)[:10] = [6.0, 8.0]  # 10 px of magnitude 10
    assert flow_peak(f) == pytest.approx(5.0)


def test_flows_are_shared_between_metrics():
    calls = []

    def counting(a, b):
        calls.append(1)
        return FLOW(a, b)

    clip_quality(pan(n=9), 16, flow=counting)
    # smoothness: 4 midpoints x 2 flows; dynamic degree at 16 fps reuses the 4 forward ones
    assert len(calls) == 8


def test_with_the_classic_embedder():
    from vidmem.models.backends.classic_embed import HsvLbpEmbedder

    emb = HsvLbpEmbedder()
    assert background_consistency(frozen(5), emb.embed_images) == pytest.approx(1.0, abs=1e-6)
    assert background_consistency(noise(5), emb.embed_images) < 1.0


@pytest.mark.parametrize("frames, word", [
    (np.zeros((1, 8, 8, 3), np.uint8), "at least 2 frames"),
    (np.zeros((3, 8, 8, 4), np.uint8), r"\(T, H, W, 3\)"),
    (np.full((3, 8, 8, 3), 300.0), "0..255"),
])
def test_bad_clips_are_named(frames, word):
    with pytest.raises(UserInputError, match=word):
        temporal_flickering(frames)


def test_bad_flow_embedder_and_fps_are_named():
    clip = frozen(5)
    with pytest.raises(UserInputError, match="flow: frames 0 -> 2"):
        motion_smoothness(clip, lambda a, b: np.zeros((4, 4, 2)))
    with pytest.raises(UserInputError, match="embedder returned shape"):
        subject_consistency(clip, lambda fs: np.zeros((2, 3)))
    with pytest.raises(UserInputError, match="fps"):
        dynamic_degree(clip, 0, FLOW)
    with pytest.raises(UserInputError, match="at least 3 frames"):
        motion_smoothness(clip[:2], FLOW)
    assert clip_quality(clip[:2], 16, flow=FLOW).motion_smoothness is None


# ------------------------------------------------------------------------------ spearman


def test_spearman_by_hand():
    assert spearman_with_recall([0.1, 0.2, 0.3, 0.4], [0.0, 0.5, 0.6, 1.0]).rho == \
        pytest.approx(1.0)
    assert spearman_with_recall([0.1, 0.2, 0.3, 0.4], [1.0, 0.6, 0.5, 0.0]).rho == \
        pytest.approx(-1.0)
    # ranks (1, 2, 3, 4) vs (2, 1, 4, 3): sum d^2 = 4, rho = 1 - 6 * 4 / (4 * 15) = 0.6
    s = spearman_with_recall({"a": 0.1, "b": 0.2, "c": 0.3, "d": 0.4, "e": None},
                             {"b": 0.1, "a": 0.2, "d": 0.3, "c": 0.4, "e": 0.9})
    assert (round(s.rho, 6), s.n, s.n_dropped) == (0.6, 4, 1)
    assert s.to_dict()["n"] == 4


def test_spearman_undefined_and_bad_input():
    assert spearman_with_recall([0.1, 0.2], [0.3, 0.4]).rho is None  # too few clips
    assert spearman_with_recall([0.5, 0.5, 0.5], [0.1, 0.2, 0.3]).rho is None  # constant
    with pytest.raises(UserInputError, match="2 quality values but 3"):
        spearman_with_recall([0.1, 0.2], [0.1, 0.2, 0.3])
    with pytest.raises(UserInputError, match="clips without recall"):
        spearman_with_recall({"a": 0.1}, {"b": 0.1})


def test_protocol_names_every_difference_from_vbench():
    differs = {k for k, r in PROTOCOL.items() if r["rule"].startswith("DIFFERS")}
    assert {"consistency_embedder", "motion_smoothness_interpolator", "dynamic_degree_flow",
            "temporal_flickering_scope", "dynamic_degree_count"} == differs
    assert all(set(r) == {"rule", "reason", "source"} for r in PROTOCOL.values())
