"""Revisit fidelity and SSIM: hand-computed values and scikit-image as the reference."""

from __future__ import annotations

import numpy as np
import pytest
from skimage.metrics import structural_similarity

from vidmem.errors import UserInputError
from vidmem.metrics.fidelity import (
    SSIM_WIN_SIZE,
    pair_fidelity,
    rgb_to_luma,
    sample_fidelity,
    ssim_pair,
)

# ---------------------------------------------------------------- pair fidelity


@pytest.mark.parametrize(
    ("cos", "ssim", "expected"),
    [
        (1.0, 1.0, 1.0),  # 0.7 * 1 + 0.3 * 1
        (-1.0, 0.0, 0.0),  # 0.7 * 0 + 0
        (0.0, 0.5, 0.5),  # 0.7 * 0.5 + 0.3 * 0.5
        (0.5, 0.2, 0.585),  # 0.7 * 0.75 + 0.06
        (1.0, 0.0, 0.7),
        (-1.0, 1.0, 0.3),
    ],
)
def test_pair_fidelity_hand_values(cos, ssim, expected):
    out = pair_fidelity(cos, ssim)
    assert isinstance(out, float)
    assert out == pytest.approx(expected, abs=1e-12)


def test_pair_fidelity_clamps_negative_ssim():
    # 0.7 * 0 + 0.3 * (-0.5) = -0.15 -> 0
    assert pair_fidelity(-1.0, -0.5) == 0.0
    # 0.7 * 0.25 + 0.3 * (-0.9) = -0.095 -> 0
    assert pair_fidelity(-0.5, -0.9) == 0.0
    # 0.7 * 0.5 + 0.3 * (-0.5) = 0.2, not clamped
    assert pair_fidelity(0.0, -0.5) == pytest.approx(0.2)


def test_pair_fidelity_tolerates_round_off_and_clamps_to_one():
    assert pair_fidelity(1.0 + 1e-9, 1.0) == 1.0


def test_pair_fidelity_vectorised_and_broadcast():
    cos = np.array([1.0, -1.0, 0.0, 0.5])
    ssim = np.array([1.0, 0.0, 0.5, -1.0])
    out = pair_fidelity(cos, ssim)
    assert out.shape == (4,) and out.dtype == np.float64
    np.testing.assert_allclose(out, [1.0, 0.0, 0.5, 0.225])
    np.testing.assert_allclose(pair_fidelity(cos, 1.0), 0.7 * (cos + 1) / 2 + 0.3)
    assert pair_fidelity(np.ones((2, 3)), np.ones((2, 3))).shape == (2, 3)


@pytest.mark.parametrize(
    ("cos", "ssim", "match"),
    [
        (float("nan"), 0.5, "cosine holds NaN or infinity"),
        (0.5, [0.1, float("inf")], "ssim holds NaN or infinity"),
        (1.5, 0.5, r"cosine must lie in \[-1, 1\]"),
        (0.5, -2.0, r"ssim must lie in \[-1, 1\]"),
        ([0.1, 0.2], [0.1, 0.2, 0.3], "do not broadcast"),
        ("0.5", 0.5, "cosine must hold real numbers"),
    ],
)
def test_pair_fidelity_rejects_bad_input(cos, ssim, match):
    with pytest.raises(UserInputError, match=match):
        pair_fidelity(cos, ssim)


# ---------------------------------------------------------------- sample fidelity


def test_sample_fidelity_mean_and_empty():
    assert sample_fidelity([0.2, 0.4, 0.9]) == pytest.approx(0.5)
    assert sample_fidelity(np.array([1.0])) == 1.0
    assert sample_fidelity([]) is None
    assert sample_fidelity(np.zeros(0)) is None
    assert isinstance(sample_fidelity(np.array([0.25, 0.75])), float)


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ([0.5, float("nan")], "NaN or infinity"),
        ([0.5, 1.5], r"must lie in \[0, 1\]"),
        ([[0.5, 0.5]], "must be 1-D"),
    ],
)
def test_sample_fidelity_rejects_bad_input(values, match):
    with pytest.raises(UserInputError, match=match):
        sample_fidelity(values)


# ---------------------------------------------------------------- SSIM


def _reference(a, b):
    return structural_similarity(
        rgb_to_luma(a),
        rgb_to_luma(b),
        gaussian_weights=True,
        sigma=1.5,
        use_sample_covariance=False,
        data_range=255,
    )


def _smooth_frame(rng, shape):
    """A frame with structure at several scales (noise alone makes SSIM near 0)."""
    h, w = shape
    yy, xx = np.mgrid[0:h, 0:w]
    base = 128 + 60 * np.sin(xx / 5.0)[..., None] * np.cos(yy / 7.0)[..., None]
    base = base + rng.normal(0, 20, (h, w, 3))
    return np.clip(base, 0, 255).astype(np.uint8)


@pytest.mark.parametrize("shape", [(11, 11), (11, 40), (32, 48), (64, 64), (57, 23)])
def test_ssim_matches_skimage(shape):
    rng = np.random.default_rng(sum(shape))
    a = _smooth_frame(rng, shape)
    for b in (
        a,
        np.clip(a.astype(int) + rng.integers(-30, 31, a.shape), 0, 255).astype(np.uint8),
        np.roll(a, 3, axis=1),
        255 - a,
        rng.integers(0, 256, a.shape, dtype=np.uint8),
        np.zeros_like(a),
    ):
        assert ssim_pair(a, b) == pytest.approx(_reference(a, b), abs=1e-6)


def test_ssim_identical_is_one_and_symmetric():
    rng = np.random.default_rng(1)
    a = _smooth_frame(rng, (24, 24))
    b = _smooth_frame(rng, (24, 24))
    assert ssim_pair(a, a) == pytest.approx(1.0, abs=1e-12)
    assert ssim_pair(a, b) == pytest.approx(ssim_pair(b, a), abs=1e-12)
    flat = np.full((16, 16, 3), 77, dtype=np.uint8)
    assert ssim_pair(flat, flat) == 1.0


def test_ssim_grey_frames_accepted():
    rng = np.random.default_rng(2)
    a = rng.integers(0, 256, (20, 20), dtype=np.uint8)
    b = rng.integers(0, 256, (20, 20), dtype=np.uint8)
    ref = structural_similarity(
        a.astype(float),
        b.astype(float),
        gaussian_weights=True,
        sigma=1.5,
        use_sample_covariance=False,
        data_range=255,
    )
    assert ssim_pair(a, b) == pytest.approx(ref, abs=1e-6)


def test_luma_weights():
    px = np.array([[[255, 255, 255], [10, 20, 30]]], dtype=np.uint8)
    np.testing.assert_allclose(
        rgb_to_luma(px), [[255.0, 0.299 * 10 + 0.587 * 20 + 0.114 * 30]], rtol=1e-12
    )


@pytest.mark.parametrize(
    ("a", "b", "match"),
    [
        (np.zeros((16, 16, 3), np.float32), np.zeros((16, 16, 3), np.uint8), "a must be uint8"),
        (np.zeros((16, 16, 3), np.uint8), np.zeros((16, 17, 3), np.uint8), "differ in shape"),
        (np.zeros((10, 16, 3), np.uint8), np.zeros((10, 16, 3), np.uint8), "smaller than the"),
        (np.zeros((16, 16, 4), np.uint8), np.zeros((16, 16, 4), np.uint8), r"\(H, W, 3\)"),
    ],
)
def test_ssim_rejects_bad_frames(a, b, match):
    with pytest.raises(UserInputError, match=match):
        ssim_pair(a, b)


def test_window_size_is_eleven():
    assert SSIM_WIN_SIZE == 11
