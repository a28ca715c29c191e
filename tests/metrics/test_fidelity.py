"""Revisit fidelity and SSIM: hand-computed values, scikit-image and an OpenCV reference."""

from __future__ import annotations

import numpy as np
import pytest
from skimage.metrics import structural_similarity

from vidmem.errors import UserInputError
from vidmem.metrics.fidelity import (
    SSIM_WIN_SIZE,
    pair_fidelity,
    per_channel_ssim_maps,
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


def test_pair_fidelity_counts_negative_ssim_as_zero():
    # Benchmark 1.3 (was: the raw SSIM weighted, 0.2 for the last line): the SSIM term
    # is clamped to [0, 1] before weighting, as the protocol's reference clamps SSIM.
    # 0.7 * 0 + 0.3 * 0 = 0
    assert pair_fidelity(-1.0, -0.5) == 0.0
    # 0.7 * 0.25 + 0.3 * 0 = 0.175 (the raw SSIM would give -0.095 -> 0)
    assert pair_fidelity(-0.5, -0.9) == pytest.approx(0.175, abs=1e-12)
    # 0.7 * 0.5 + 0.3 * 0 = 0.35 (the raw SSIM would give 0.2)
    assert pair_fidelity(0.0, -0.5) == pytest.approx(0.35, abs=1e-12)
    # a positive SSIM is weighted as it is
    assert pair_fidelity(0.0, 0.5) == pytest.approx(0.5, abs=1e-12)


def test_pair_fidelity_tolerates_round_off_and_clamps_to_one():
    assert pair_fidelity(1.0 + 1e-9, 1.0) == 1.0


def test_pair_fidelity_vectorised_and_broadcast():
    cos = np.array([1.0, -1.0, 0.0, 0.5])
    ssim = np.array([1.0, 0.0, 0.5, -1.0])
    out = pair_fidelity(cos, ssim)
    assert out.shape == (4,) and out.dtype == np.float64
    # SSIM -1 counts as 0 (benchmark 1.3): 0.7 * 0.75 = 0.525, not 0.225
    np.testing.assert_allclose(out, [1.0, 0.0, 0.5, 0.525])
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


def _skimage(a, b):
    """scikit-image's per-channel SSIM: the mean over pixels >= 5 px from every border."""
    return structural_similarity(
        a,
        b,
        channel_axis=-1 if a.ndim == 3 else None,
        gaussian_weights=True,
        sigma=1.5,
        use_sample_covariance=False,
        data_range=255,
    )


def _opencv_reference(a, b, dtype=np.float64):
    """The protocol reference's SSIM, written out with OpenCV: per RGB channel,
    GaussianBlur 11 x 11 with sigma 1.5 (default border, BORDER_REFLECT_101),
    population statistics, L = 255, the mean over the whole map, then the mean over
    the channels (the reference runs in float32; dtype picks)."""
    cv2 = pytest.importorskip("cv2")
    c1, c2 = (0.01 * 255.0) ** 2, (0.03 * 255.0) ** 2
    if a.ndim == 2:
        a, b = a[..., None], b[..., None]
    scores = []
    for k in range(a.shape[2]):
        x, y = a[..., k].astype(dtype), b[..., k].astype(dtype)
        blur = lambda z: cv2.GaussianBlur(z, (11, 11), 1.5)  # noqa: E731
        mx, my = blur(x), blur(y)
        vx, vy, vxy = blur(x * x) - mx * mx, blur(y * y) - my * my, blur(x * y) - mx * my
        m = ((2 * mx * my + c1) * (2 * vxy + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
        scores.append(float(np.mean(m)))
    return float(np.mean(scores))


def _smooth_frame(rng, shape):
    """A frame with structure at several scales (noise alone makes SSIM near 0)."""
    h, w = shape
    yy, xx = np.mgrid[0:h, 0:w]
    base = 128 + 60 * np.sin(xx / 5.0)[..., None] * np.cos(yy / 7.0)[..., None]
    base = base + rng.normal(0, 20, (h, w, 3))
    return np.clip(base, 0, 255).astype(np.uint8)


def _variants(rng, a):
    return (
        a,
        np.clip(a.astype(int) + rng.integers(-30, 31, a.shape), 0, 255).astype(np.uint8),
        np.roll(a, 3, axis=1),
        255 - a,
        rng.integers(0, 256, a.shape, dtype=np.uint8),
        np.zeros_like(a),
        a[..., ::-1].copy(),  # R and B swapped: a change of hue
    )


SHAPES = [(11, 11), (11, 40), (32, 48), (64, 64), (57, 23)]


@pytest.mark.parametrize("shape", SHAPES)
def test_ssim_matches_the_opencv_reference(shape):
    # Benchmark 1.3 (was: SSIM of BT.601 luma, border cropped, checked against skimage
    # on luma): per-RGB-channel SSIM averaged over the whole map, as the reference.
    rng = np.random.default_rng(sum(shape))
    a = _smooth_frame(rng, shape)
    for b in _variants(rng, a):
        assert ssim_pair(a, b) == pytest.approx(_opencv_reference(a, b), abs=1e-9)
        # the reference's own float32 arithmetic is within 1e-4 of the float64 value
        assert ssim_pair(a, b) == pytest.approx(_opencv_reference(a, b, np.float32), abs=1e-4)


@pytest.mark.parametrize("shape", SHAPES)
def test_ssim_maps_match_skimage_away_from_the_border(shape):
    # skimage's channel_axis SSIM is the same per-channel map averaged over the pixels
    # >= 5 px from every border; there the padding of the window plays no part.
    rng = np.random.default_rng(sum(shape) + 1)
    a = _smooth_frame(rng, shape)
    for b in _variants(rng, a):
        maps = per_channel_ssim_maps(a, b)
        assert maps.shape == (3, *shape)
        assert maps[:, 5:-5, 5:-5].mean() == pytest.approx(_skimage(a, b), abs=1e-9)


def test_hue_swap_at_equal_brightness_counts():
    # Two colours with exactly equal BT.601 luma (299 R + 587 G + 114 B = 107479):
    # swapping them on a block pattern leaves the luma frame unchanged (luma SSIM = 1,
    # vidmem < 1.3) but inverts the R, G and B structure where the swap happened.
    c1, c2 = np.array([120, 101, 108], np.uint8), np.array([101, 120, 60], np.uint8)
    assert 299 * 120 + 587 * 101 + 114 * 108 == 299 * 101 + 587 * 120 + 114 * 60
    rng = np.random.default_rng(3)
    mask = np.kron(rng.integers(0, 2, (8, 12)), np.ones((6, 6))) > 0  # 48 x 72 px
    a = np.where(mask[..., None], c1, c2).astype(np.uint8)
    b = a.copy()
    b[:, :36] = np.where(mask[:, :36, None], c2, c1)  # swap the hues on the left half
    np.testing.assert_allclose(rgb_to_luma(a), rgb_to_luma(b), atol=1e-9)
    value = ssim_pair(a, b)
    assert value == pytest.approx(_opencv_reference(a, b), abs=1e-9)
    assert value < 0.5  # about 0.43; luma SSIM would say the frames are identical


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
    # one grey channel: the whole-map mean (benchmark 1.3; was the border-cropped mean)
    assert ssim_pair(a, b) == pytest.approx(_opencv_reference(a, b), abs=1e-9)
    maps = per_channel_ssim_maps(a, b)
    assert maps.shape == (1, 20, 20)
    assert maps[0, 5:-5, 5:-5].mean() == pytest.approx(_skimage(a, b), abs=1e-9)


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
