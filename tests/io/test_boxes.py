"""Box maths in vidmem.io.boxes, checked against hand-computed answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vidmem.errors import UserInputError
from vidmem.io.boxes import (
    box_area,
    box_iou,
    check_normalized_box,
    clip_box,
    crop,
    normalized_to_pixel,
)


@pytest.mark.parametrize(
    ("box", "size", "expected"),
    [
        # 0.1*640 = 64, 0.2*360 = 72, 0.5*640 = 320, 0.7*360 = 251.99999999999997 -> 252
        ((0.1, 0.2, 0.5, 0.7), (640, 360), (64, 72, 320, 252)),
        # 0.29*100 = 28.999999999999996 snaps to 29 (a plain floor would give 28)
        ((0.29, 0.0, 0.5, 1.0), (100, 50), (29, 0, 50, 50)),
        # 0.30000000001*100 = 30.000000001 snaps to 30 (a plain ceil would give 31)
        ((0.0, 0.0, 0.30000000001, 1.0), (100, 50), (0, 0, 30, 50)),
        # 1e-7 px off an integer is a real fraction: round outwards
        ((0.0, 0.0, 0.300000001, 1.0), (100, 50), (0, 0, 31, 50)),
        # fractions round outwards: 0.255*100 = 25.5 -> 25, 0.333*50 = 16.65 -> 17
        ((0.255, 0.1, 0.505, 0.333), (100, 50), (25, 5, 51, 17)),
        # out of frame: clipped to [0, W] x [0, H]
        ((-0.2, -1.0, 1.5, 2.0), (64, 48), (0, 0, 64, 48)),
        ((0.0, 0.0, 1.0, 1.0), (1, 1), (0, 0, 1, 1)),
        (np.array([0.25, 0.25, 0.75, 0.75]), (8, 4), (2, 1, 6, 3)),
    ],
)
def test_normalized_to_pixel(
    box: tuple[float, ...], size: tuple[int, int], expected: tuple[int, ...]
) -> None:
    got = normalized_to_pixel(box, *size)
    assert got == expected
    assert all(type(v) is int for v in got)


@pytest.mark.parametrize(
    ("box", "size", "message"),
    [
        ((0.1, 0.2, 0.5), (10, 10), r"expected 4 numbers"),
        ((0.1, float("nan"), 0.5, 0.6), (10, 10), r"expected finite numbers"),
        ((0.1, "a", 0.5, 0.6), (10, 10), r"y0 must be a number, found str"),
        ((0.1, 0.2, 0.5, 0.6), (0, 10), r"width must be a positive int"),
        ((0.1, 0.2, 0.5, 0.6), (10, 2.5), r"height must be a positive int"),
    ],
)
def test_normalized_to_pixel_rejects(
    box: tuple[object, ...], size: tuple[object, object], message: str
) -> None:
    with pytest.raises(UserInputError, match=message):
        normalized_to_pixel(box, *size)  # type: ignore[arg-type]


def test_check_normalized_box() -> None:
    assert check_normalized_box((0.0, 0.0, 1.0, 1.0)) == []
    assert check_normalized_box([0.1, 0.2, 0.5, 0.7]) == []
    assert check_normalized_box((0.6, 0.2, 0.5, 0.2)) == [
        "zero or negative width: x0 = 0.6 >= x1 = 0.5",
        "zero or negative height: y0 = 0.2 >= y1 = 0.2",
    ]
    assert check_normalized_box((-0.1, 0.0, 1.2, float("inf"))) == [
        "x0 = -0.1 is outside [0, 1]",
        "x1 = 1.2 is outside [0, 1]",
        "y1 = inf is not finite",
    ]
    assert check_normalized_box((0, 0, None, 1)) == ["x1 = None is not a number"]
    assert check_normalized_box("0 0 1 1") == [
        "expected a sequence of 4 numbers (x0, y0, x1, y1), found str"
    ]
    assert check_normalized_box([0.1] * 5) == ["expected 4 numbers (x0, y0, x1, y1), found 5"]


def test_clip_box() -> None:
    assert clip_box((-3, 4, 20, 50), 16, 40) == (0, 4, 16, 40)
    assert clip_box((0.5, 0.5, 1.5, 0.75), 1.0, 1.0) == (0.5, 0.5, 1.0, 0.75)
    assert clip_box((30, 30, 40, 40), 16, 16) == (16, 16, 16, 16)  # fully outside: empty
    with pytest.raises(UserInputError, match=r"width must be a number >= 0"):
        clip_box((0, 0, 1, 1), -1, 1)


def test_box_area_and_iou() -> None:
    assert box_area((2, 3, 6, 8)) == 20.0
    assert box_area((6, 3, 2, 8)) == 0.0
    # a = 4x4 = 16, b = 4x2 = 8, intersection (2..4)x(1..3) = 2x2 = 4, union 20
    assert box_iou((0, 0, 4, 4), (2, 1, 6, 3)) == pytest.approx(4 / 20)
    assert box_iou((0, 0, 4, 4), (0, 0, 4, 4)) == 1.0
    assert box_iou((0, 0, 4, 4), (4, 0, 8, 4)) == 0.0  # touching edges only
    assert box_iou((1, 1, 1, 1), (1, 1, 1, 1)) == 0.0  # empty union
    assert box_iou((0.1, 0.2, 0.5, 0.7), (0.1, 0.2, 0.5, 0.7)) == 1.0
    assert box_iou((0, 0, 2, 2), (1, 1, 3, 3)) == pytest.approx(1 / 7)
    assert math.isclose(box_iou((0, 0, 2, 2), (1, 1, 3, 3)), box_iou((1, 1, 3, 3), (0, 0, 2, 2)))


def test_crop_returns_a_view() -> None:
    img = np.arange(5 * 6 * 3, dtype=np.uint8).reshape(5, 6, 3)
    out = crop(img, (1, 2, 4, 5))
    assert out.shape == (3, 3, 3)
    assert np.array_equal(out, img[2:5, 1:4])
    out[0, 0, 0] = 255
    assert img[2, 1, 0] == 255  # a view: writes go through
    assert crop(img, (-2, -2, 100, 100)).shape == (5, 6, 3)  # clipped to the image
    assert crop(img[..., 0], np.array([0, 0, 2, 1])).shape == (1, 2)


@pytest.mark.parametrize(
    ("box", "message"),
    [
        ((2, 2, 2, 4), r"box \(2, 2, 2, 4\) is empty inside the 6x5 \(WxH\) image"),
        ((10, 0, 12, 3), r"after clipping it is \(10, 0, 6, 3\)"),
        ((0.5, 0, 2, 3), r"box must be 4 ints"),
        ((0, 0, 2), r"box must be 4 ints"),
    ],
)
def test_crop_rejects(box: tuple[object, ...], message: str) -> None:
    img = np.zeros((5, 6, 3), np.uint8)
    with pytest.raises(UserInputError, match=message):
        crop(img, box)  # type: ignore[arg-type]


def test_crop_rejects_non_images() -> None:
    with pytest.raises(UserInputError, match=r"image must be an \(H, W\) or \(H, W, C\) array"):
        crop(np.zeros(5), (0, 0, 1, 1))
