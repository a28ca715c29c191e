"""classic/grabcut and classic/box: box-prompted masks on a synthetic disc."""

from __future__ import annotations

import numpy as np
import pytest

from vidmem.errors import UserInputError
from vidmem.models.backends.classic_segment import BoxSegmenter, GrabCutSegmenter, box_mask
from vidmem.models.protocols import Segmenter


def disc_scene(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A noisy red disc (radius 40 px, centre (85, 75)) on a striped, noisy green background."""
    rng = np.random.default_rng(seed)
    h, w = 160, 180
    yy, xx = np.mgrid[:h, :w]
    bg = np.stack(
        [
            60 + 40 * np.sin(xx / 5.0) + rng.integers(0, 40, (h, w)),
            110 + 30 * np.cos(yy / 7.0) + rng.integers(0, 40, (h, w)),
            70 + rng.integers(0, 50, (h, w)),
        ],
        axis=-1,
    )
    disc = (xx + 0.5 - 85) ** 2 + (yy + 0.5 - 75) ** 2 <= 40**2
    img = bg.astype(np.int64)
    img[disc] = np.array([210, 45, 40]) + rng.integers(-25, 25, (int(disc.sum()), 3))
    return np.clip(img, 0, 255).astype(np.uint8), disc


def iou(a: np.ndarray, b: np.ndarray) -> float:
    return float((a & b).sum() / (a | b).sum())


def test_grabcut_recovers_the_disc_from_a_loose_box() -> None:
    img, disc = disc_scene()
    seg = GrabCutSegmenter()
    assert isinstance(seg, Segmenter)
    boxes = [(30.0, 20.0, 140.0, 130.0), (38.0, 28.0, 133.5, 124.0)]  # 15 px and ~7 px slack
    masks = seg.segment([img, img], boxes)
    assert seg.last_fallbacks == [False, False]
    for mask in masks:
        assert mask.dtype == np.bool_ and mask.shape == disc.shape
        assert iou(mask, disc) > 0.8
    # The plain box is a much worse mask of a disc: GrabCut really did something.
    assert iou(box_mask(boxes[0], disc.shape), disc) < 0.5
    # Deterministic.
    np.testing.assert_array_equal(seg.segment([img], boxes[:1])[0], masks[0])


def test_grabcut_downscaled_window_still_works() -> None:
    img, disc = disc_scene(1)
    mask = GrabCutSegmenter(max_side=64).segment([img], [(30.0, 20.0, 140.0, 130.0)])[0]
    assert iou(mask, disc) > 0.8


def test_grabcut_falls_back_to_the_box() -> None:
    flat = np.full((40, 50, 3), 100, np.uint8)
    seg = GrabCutSegmenter()
    whole = (0.0, 0.0, 50.0, 40.0)  # no background pixels left for GrabCut
    tiny = (10.0, 10.0, 11.0, 11.0)
    masks = seg.segment([flat, flat], [whole, tiny])
    assert seg.last_fallbacks == [True, True]
    np.testing.assert_array_equal(masks[0], np.ones((40, 50), bool))
    np.testing.assert_array_equal(masks[1], box_mask(tiny, (40, 50)))
    assert seg.info().settings["fallback"] == "box"


def test_box_segmenter_mask_equals_the_box() -> None:
    img, _ = disc_scene()
    box = (30.0, 20.0, 140.0, 130.0)
    mask = BoxSegmenter().segment([img], [box])[0]
    expected = np.zeros(img.shape[:2], bool)
    expected[20:130, 30:140] = True
    np.testing.assert_array_equal(mask, expected)
    assert BoxSegmenter().info().name == "classic/box"


@pytest.mark.parametrize(
    ("box", "shape", "rows", "cols"),
    [
        ((0.2, 0.4, 2.6, 2.4), (5, 5), (0, 2), (0, 3)),  # centres 0.5, 1.5, 2.5 vs [0.2, 2.6)
        ((-10.0, -3.0, 2.0, 100.0), (5, 6), (0, 5), (0, 2)),  # clipped to the image
        ((3.1, 1.2, 3.3, 1.4), (5, 5), (1, 2), (3, 4)),  # thinner than a pixel: its centre pixel
    ],
)
def test_box_mask_pixel_convention(box: tuple, shape: tuple, rows: tuple, cols: tuple) -> None:
    expected = np.zeros(shape, bool)
    expected[rows[0] : rows[1], cols[0] : cols[1]] = True
    np.testing.assert_array_equal(box_mask(box, shape), expected)


@pytest.mark.parametrize(
    ("images", "boxes", "message"),
    [
        ([np.zeros((8, 8, 3), np.uint8)], [], r"got 1 images but 0 boxes"),
        (
            [np.zeros((8, 8, 3), np.uint8)],
            [(5.0, 1.0, 2.0, 4.0)],
            r"boxes\[0\]: expected a finite box",
        ),
        ([np.zeros((8, 8, 3), np.uint8)], [(20.0, 20.0, 30.0, 30.0)], r"overlaps the 8x8 image"),
        ([np.zeros((8, 8, 3), np.uint8)], [(0.0, 1.0, 2.0)], r"four numbers"),
        (
            [np.zeros((8, 8, 3), np.uint8)],
            [(0.0, float("nan"), 2.0, 3.0)],
            r"expected a finite box",
        ),
        (
            [np.zeros((8, 8), np.uint8)],
            [(0.0, 0.0, 2.0, 3.0)],
            r"images\[0\]: expected an RGB image",
        ),
    ],
)
@pytest.mark.parametrize("cls", [BoxSegmenter, GrabCutSegmenter])
def test_bad_input_raises_user_input_error(
    cls: type, images: list, boxes: list, message: str
) -> None:
    with pytest.raises(UserInputError, match=message):
        cls().segment(images, boxes)


def test_bad_settings() -> None:
    with pytest.raises(UserInputError, match=r"setting iterations must be"):
        GrabCutSegmenter(iterations=0)
    with pytest.raises(UserInputError, match=r"has no weights"):
        BoxSegmenter(weights="sam2")


@pytest.mark.parametrize("name", ["classic/grabcut", "classic/box", "classic/sift", "classic/hsv-lbp", "classic/tfidf"])
def test_misspelt_option_is_rejected_not_recorded(name):
    from vidmem.registry import BACKENDS

    with pytest.raises(TypeError):
        BACKENDS.load(name)(treshold=0.5)
