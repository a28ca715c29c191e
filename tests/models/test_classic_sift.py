"""classic/sift: find photo crops pasted into other photos under scale/rotation/brightness.

Pass criterion (stated, and asserted below): over a grid of 4 objects x 5 transforms
(scale 0.6-1.5, rotation up to 30 degrees, brightness x0.7-1.3) = 20 composites, at
least 80% are found with IoU > 0.5 against the true pasted box and a score above the
default threshold; over 12 photos that do not contain the crop, at least 80% give no
detection above the default threshold.
"""

from __future__ import annotations

from functools import cache

import cv2
import numpy as np
import pytest
import skimage.data

from vidmem.errors import UserInputError
from vidmem.models.backends.classic_sift import DEFAULT_THRESHOLD, SiftDetector
from vidmem.models.protocols import Detection, Detector

#: object crops: (photo, y0, y1, x0, x1 in full-resolution pixels, longer side after resize)
CROPS = {
    "cat_face": ("chelsea", 50, 280, 110, 370, 140),
    "cup": ("coffee", 10, 300, 160, 430, 140),
    "astronaut_face": ("astronaut", 20, 180, 140, 310, 140),
    "rocket": ("rocket", 110, 420, 270, 380, 180),
}
BACKGROUNDS = ("astronaut", "coffee", "chelsea", "rocket", "brick", "gravel")
#: (scale, rotation in degrees, brightness factor)
TRANSFORMS = [
    (1.0, 0.0, 1.0),
    (0.6, 15.0, 1.2),
    (1.5, -20.0, 0.8),
    (0.8, 30.0, 1.3),
    (1.3, -30.0, 0.7),
]


@cache
def photo(name: str) -> np.ndarray:
    img = getattr(skimage.data, name)()
    return np.repeat(img[..., None], 3, axis=2) if img.ndim == 2 else img[..., :3]


def resize_short(img: np.ndarray, short: int) -> np.ndarray:
    f = short / min(img.shape[:2])
    size = (round(img.shape[1] * f), round(img.shape[0] * f))
    return cv2.resize(img, size, interpolation=cv2.INTER_AREA)


@cache
def crop(name: str) -> np.ndarray:
    src, y0, y1, x0, x1, side = CROPS[name]
    piece = photo(src)[y0:y1, x0:x1]
    f = side / max(piece.shape[:2])
    size = (round(piece.shape[1] * f), round(piece.shape[0] * f))
    return cv2.resize(piece, size, interpolation=cv2.INTER_AREA)


@cache
def background(name: str) -> np.ndarray:
    return resize_short(photo(name), 320)


def paste(
    bg: np.ndarray,
    piece: np.ndarray,
    scale: float,
    angle: float,
    brightness: float,
    where: tuple[float, float],
) -> tuple[np.ndarray, tuple[float, float, float, float]]:
    """Paste ``piece`` scaled, rotated and brightened; return the image and its true box.

    ``where`` places the pasted piece's bounding box at that fraction of the free room.
    The true box is the bounding box of the piece's transformed outer pixel corners,
    in the module's pixel-edge convention.
    """
    out = bg.copy()
    big_h, big_w = out.shape[:2]
    h, w = piece.shape[:2]
    m = cv2.getRotationMatrix2D((w / 2 - 0.5, h / 2 - 0.5), angle, scale)
    corners = np.array([[-0.5, -0.5], [w - 0.5, -0.5], [w - 0.5, h - 0.5], [-0.5, h - 0.5]])
    moved = corners @ m[:, :2].T + m[:, 2]
    lo, hi = moved.min(axis=0), moved.max(axis=0)
    room = np.array([big_w, big_h]) - (hi - lo)
    assert (room > 0).all(), "test setup: pasted piece must fit in the background"
    m[:, 2] += room * np.array(where) - lo
    moved = corners @ m[:, :2].T + m[:, 2]
    bright = np.clip(piece.astype(np.float32) * brightness, 0, 255).astype(np.uint8)
    warped = cv2.warpAffine(bright, m, (big_w, big_h), flags=cv2.INTER_LINEAR)
    inside = cv2.warpAffine(np.ones((h, w), np.float32), m, (big_w, big_h)) > 0.5
    out[inside] = warped[inside]
    x0, y0 = moved.min(axis=0) + 0.5
    x1, y1 = moved.max(axis=0) + 0.5
    return out, (float(x0), float(y0), float(x1), float(y1))


def iou(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union


@pytest.fixture(scope="module")
def detector() -> SiftDetector:
    return SiftDetector()


def test_protocol_and_info(detector: SiftDetector) -> None:
    assert isinstance(detector, Detector)
    assert detector.supports_text is False and detector.supports_image_query is True
    info = detector.info()
    assert info.name == "classic/sift" and info.official is False and info.weights is None
    assert info.settings["threshold"] == DEFAULT_THRESHOLD


def test_finds_pasted_crops_under_transforms(detector: SiftDetector) -> None:
    outcomes = []
    for ci, name in enumerate(CROPS):
        others = [b for b in BACKGROUNDS if b != CROPS[name][0]]
        for ti, (scale, angle, brightness) in enumerate(TRANSFORMS):
            bg = background(others[(ci + ti) % len(others)])
            where = ((0.15 + 0.37 * ti) % 1.0, (0.1 + 0.61 * ti + 0.2 * ci) % 1.0)
            image, truth = paste(bg, crop(name), scale, angle, brightness, where)
            found = detector.detect([image], image_query=crop(name))[0]
            ok = bool(found) and iou(found[0].box, truth) > 0.5
            outcomes.append((name, scale, angle, brightness, ok))
    rate = sum(o[-1] for o in outcomes) / len(outcomes)
    assert len(outcomes) >= 12
    assert rate >= 0.8, f"pass rate {rate:.2f}; misses: {[o[:4] for o in outcomes if not o[-1]]}"


def test_photos_without_the_crop_give_no_detection(detector: SiftDetector) -> None:
    outcomes = []
    for ci, name in enumerate(CROPS):
        others = [b for b in BACKGROUNDS if b != CROPS[name][0]]
        for k in range(3):
            found = detector.detect(
                [background(others[(ci + 2 * k) % len(others)])], image_query=crop(name)
            )
            outcomes.append(not found[0])
    assert len(outcomes) == 12
    assert sum(outcomes) / len(outcomes) >= 0.8


def test_box_clipped_to_frame_and_one_detection_per_image(detector: SiftDetector) -> None:
    piece = crop("cat_face")
    image, truth = paste(background("brick"), piece, 1.0, 0.0, 1.0, (0.0, 0.0))
    shifted = np.roll(image, (-40, -50), axis=(0, 1))  # push the cat past the top-left edge
    results = detector.detect([image, shifted], image_query=piece)
    assert [len(r) for r in results] == [1, 1]
    det = results[1][0]
    assert isinstance(det, Detection) and det.label == "image_query" and 0.0 <= det.score <= 1.0
    x0, y0, x1, y1 = det.box
    assert x0 >= 0 and y0 >= 0 and x1 <= image.shape[1] and y1 <= image.shape[0]
    assert iou(det.box, (0.0, 0.0, truth[2] - 50, truth[3] - 40)) > 0.5


def test_threshold_filters_and_query_cache(detector: SiftDetector) -> None:
    piece = crop("cup")
    image, _ = paste(background("gravel"), piece, 0.6, 15.0, 1.2, (0.5, 0.5))
    query_copy = piece.copy()
    first = detector.detect([image], image_query=piece)[0]
    assert first and DEFAULT_THRESHOLD <= first[0].score < 1.0
    assert (
        detector.detect([image], image_query=piece, threshold=min(1.0, first[0].score + 1e-6))[0]
        == []
    )
    # Same content, different array object: served from the cache, same answer.
    cached = len(detector._query_cache)
    assert detector.detect([image], image_query=query_copy)[0] == first
    assert len(detector._query_cache) == cached


def test_few_keypoints_give_no_detection_not_an_error(detector: SiftDetector) -> None:
    flat = np.full((50, 60, 3), 90, np.uint8)
    tiny = np.zeros((1, 1, 3), np.uint8)
    assert detector.detect([flat, tiny], image_query=crop("cup")) == [[], []]
    assert detector.detect([background("coffee")], image_query=flat) == [[]]
    assert detector.detect([], image_query=crop("cup")) == []


def test_text_queries_are_refused_with_the_text_capable_backends(detector: SiftDetector) -> None:
    with pytest.raises(UserInputError, match=r"cannot do text queries") as err:
        detector.detect([background("coffee")], text_queries=["a cup"])
    for name in ("owlvit/", "owlv2/", "grounding-dino/"):
        assert name in str(err.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, r"needs image_query"),
        ({"image_query": np.zeros((5, 5), np.uint8)}, r"image_query: expected an RGB image"),
        (
            {"image_query": np.zeros((5, 5, 3), np.uint8), "threshold": 1.5},
            r"threshold must be in \[0, 1\]",
        ),
    ],
)
def test_bad_calls_raise_user_input_errors(
    detector: SiftDetector, kwargs: dict, message: str
) -> None:
    with pytest.raises(UserInputError, match=message):
        detector.detect([background("coffee")], **kwargs)


def test_bad_frame_and_settings() -> None:
    with pytest.raises(UserInputError, match=r"images\[1\]: expected an RGB image"):
        SiftDetector().detect(
            [background("coffee"), np.zeros((4, 4, 3), np.float32)], image_query=crop("cup")
        )
    with pytest.raises(UserInputError, match=r"setting ratio must be in \(0, 1\]"):
        SiftDetector(ratio=1.5)
    with pytest.raises(UserInputError, match=r"has no weights"):
        SiftDetector(weights="some/model")
