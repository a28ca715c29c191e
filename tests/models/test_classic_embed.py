"""classic image embedders: same object closer than different objects; shapes, norms, masks."""

from __future__ import annotations

from functools import cache

import cv2
import numpy as np
import pytest
import skimage.data

from vidmem.errors import UserInputError
from vidmem.models.backends.classic_embed import (
    ClassicEmbedder,
    HsvHistEmbedder,
    HsvLbpEmbedder,
    LabHogEmbedder,
)
from vidmem.models.protocols import ImageEmbedder

EMBEDDERS = [HsvLbpEmbedder, LabHogEmbedder, HsvHistEmbedder]
DIMS = {"classic/hsv-lbp": 148, "classic/lab-hog": 580, "classic/hsv-hist": 128}


@cache
def half(name: str) -> np.ndarray:
    """A bundled photo at half resolution (keeps the tests fast)."""
    img = getattr(skimage.data, name)()
    return cv2.resize(img, (img.shape[1] // 2, img.shape[0] // 2), interpolation=cv2.INTER_AREA)


def cat_views() -> list[np.ndarray]:
    """Four views of the cat's face: reference, shifted, rescaled, brightened."""
    ch = half("chelsea")
    ref = ch[25:140, 55:185]
    shifted = ch[35:150, 65:190]
    rescaled = cv2.resize(ch[30:135, 60:180], None, fx=1.4, fy=1.4, interpolation=cv2.INTER_LINEAR)
    brighter = np.clip(ref.astype(np.float32) * 1.1, 0, 255).astype(np.uint8)
    return [ref, shifted, rescaled, brighter]


def other_objects() -> list[np.ndarray]:
    """The cup, the astronaut's face and the rocket."""
    return [
        half("coffee")[5:150, 80:215],
        half("astronaut")[10:90, 70:155],
        half("rocket")[55:210, 135:190],
    ]


@pytest.mark.parametrize("cls", EMBEDDERS)
def test_same_object_closer_than_different_objects(cls: type[ClassicEmbedder]) -> None:
    emb = cls()
    views, others = cat_views(), other_objects()
    vec = emb.embed_images(views + others)
    same = vec[: len(views)] @ vec[: len(views)].T
    cross = vec[: len(views)] @ vec[len(views) :].T
    # Every pair of cat views is closer than any cat view is to any other object.
    assert same[np.triu_indices(len(views), 1)].min() > cross.max()


@pytest.mark.parametrize("cls", EMBEDDERS)
def test_shape_dtype_norm_determinism_and_batching(cls: type[ClassicEmbedder]) -> None:
    emb = cls(batch_size=3)
    assert isinstance(emb, ImageEmbedder)
    images = cat_views()
    out = emb.embed_images(images)
    assert out.shape == (4, DIMS[cls.name]) == (4, emb.dim)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    assert (out >= 0).all()
    np.testing.assert_array_equal(out, emb.embed_images(images))
    singles = np.concatenate([cls().embed_images([img]) for img in images])
    np.testing.assert_allclose(out, singles, rtol=1e-6, atol=1e-7)
    assert emb.embed_images([]).shape == (0, emb.dim)


def test_info_records_settings() -> None:
    info = HsvLbpEmbedder(colour_weight=0.7).info()
    assert info.name == "classic/hsv-lbp" and info.official is False and info.weights is None
    assert info.settings["size"] == 64
    assert info.settings["block_weights"] == pytest.approx({"hsv": 0.7, "lbp": 0.3})


def test_cosine_is_weighted_mean_of_block_coefficients() -> None:
    a, b = cat_views()[0], other_objects()[0]
    hsv, lbp = (
        HsvHistEmbedder().embed_images([a, b]),
        HsvLbpEmbedder(colour_weight=0.0).embed_images([a, b]),
    )
    mixed = HsvLbpEmbedder(colour_weight=0.25).embed_images([a, b])
    expected = 0.25 * float(hsv[0] @ hsv[1]) + 0.75 * float(lbp[0] @ lbp[1])
    assert float(mixed[0] @ mixed[1]) == pytest.approx(expected, abs=1e-5)


def test_mask_ignores_the_background() -> None:
    """The cat pasted on two different backgrounds: masked embeddings agree, plain ones less."""
    cat = cat_views()[0]
    h, w = cat.shape[:2]
    composites, masks = [], []
    for bg_name, (y, x) in (("coffee", (20, 30)), ("rocket", (40, 100))):
        bg = half(bg_name)[:200, :300].copy()
        mask = np.zeros(bg.shape[:2], bool)
        mask[y : y + h, x : x + w] = True
        bg[mask] = cat.reshape(-1, 3)
        composites.append(bg)
        masks.append(mask)
    emb = HsvLbpEmbedder()
    masked = emb.embed_images(composites, masks=masks)
    plain = emb.embed_images(composites)
    alone = emb.embed_images([cat])[0]
    assert float(masked[0] @ masked[1]) > 0.999
    assert float(masked[0] @ alone) > 0.99
    assert float(plain[0] @ plain[1]) < 0.9
    # None entries mean "no mask" for that image.
    mixed = emb.embed_images(composites, masks=[masks[0], None])
    np.testing.assert_array_equal(mixed, np.stack([masked[0], plain[1]]))


def test_empty_mask_falls_back_to_whole_image_with_warning() -> None:
    img = other_objects()[0]
    emb = HsvLbpEmbedder()
    with pytest.warns(RuntimeWarning, match=r"masks\[0\] is empty"):
        out = emb.embed_images([img], masks=[np.zeros(img.shape[:2], bool)])
    np.testing.assert_array_equal(out, emb.embed_images([img]))


def test_flat_and_tiny_images_stay_unit_norm() -> None:
    flat = np.full((10, 10, 3), 77, np.uint8)
    tiny = np.zeros((1, 1, 3), np.uint8)
    for cls in EMBEDDERS:
        out = cls().embed_images([flat, tiny])
        assert np.isfinite(out).all()
        np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize(
    ("images", "masks", "message"),
    [
        (
            [np.zeros((8, 8), np.uint8)],
            None,
            r"images\[0\]: expected an RGB image.*found dtype uint8 and shape \(8, 8\)",
        ),
        ([np.zeros((8, 8, 3), np.float64)], None, r"images\[0\]: expected an RGB image.*float64"),
        (
            [np.zeros((8, 8, 3), np.uint8)],
            [np.ones((4, 4), bool)],
            r"masks\[0\]: expected a bool mask of shape \(8, 8\)",
        ),
        (
            [np.zeros((8, 8, 3), np.uint8)],
            [np.ones((8, 8), np.float32)],
            r"masks\[0\]: expected a bool mask",
        ),
        ([np.zeros((8, 8, 3), np.uint8)], [], r"got 1 images but 0 masks"),
    ],
)
def test_bad_input_raises_user_input_error(images: list, masks: list | None, message: str) -> None:
    with pytest.raises(UserInputError, match=message):
        HsvLbpEmbedder().embed_images(images, masks=masks)


def test_bad_settings() -> None:
    with pytest.raises(UserInputError, match=r"multiple of 16"):
        LabHogEmbedder(size=40)
    with pytest.raises(UserInputError, match=r"colour_weight must be in \[0, 1\]"):
        HsvLbpEmbedder(colour_weight=1.5)
    with pytest.raises(UserInputError, match=r"has no weights"):
        HsvLbpEmbedder(weights="facebook/dinov2-small")
