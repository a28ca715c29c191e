"""Axis-aligned box helpers (pure functions, no I/O).

Boxes are ``(x0, y0, x1, y1)`` ("xyxy") with ``x`` to the right and ``y`` down, in one
of two units:

* **normalised**: floats in ``[0, 1]``, fractions of the frame width and height;
* **pixel**: ints, half-open, so the box covers columns ``x0 .. x1 - 1`` and rows
  ``y0 .. y1 - 1`` and ``image[y0:y1, x0:x1]`` is its crop.

Converting normalised to pixel boxes rounds *outwards* (floor the start, ceil the
end) so that the pixel box always contains the normalised one, after snapping values
within ``1e-8`` of an integer onto it, so float noise such as ``0.29 * 100 ==
28.999999999999996`` does not grow the box by a whole pixel.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from vidmem.errors import UserInputError

__all__ = [
    "SNAP_TOLERANCE",
    "box_area",
    "box_iou",
    "check_normalized_box",
    "clip_box",
    "crop",
    "normalized_to_pixel",
]

#: Values this close to an integer (in pixels) are treated as that integer.
SNAP_TOLERANCE = 1e-8

Box = tuple[float, float, float, float]
PixelBox = tuple[int, int, int, int]


def _four_numbers(box: object, what: str) -> Box:
    """Return ``box`` as four floats or raise a UserInputError naming ``what``."""
    if isinstance(box, np.ndarray):
        box = box.tolist()
    if isinstance(box, (str, bytes)) or not isinstance(box, Sequence) or len(box) != 4:
        raise UserInputError(
            f"{what}: expected 4 numbers (x0, y0, x1, y1), found {box!r}",
            hint="pass a tuple or list like (0.1, 0.2, 0.5, 0.7)",
        )
    out = []
    for name, v in zip(("x0", "y0", "x1", "y1"), box, strict=True):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.number)):
            raise UserInputError(
                f"{what}: {name} must be a number, found {type(v).__name__} {v!r}",
                hint="pass four numbers",
            )
        out.append(float(v))
    return (out[0], out[1], out[2], out[3])


def _check_size(width: object, height: object, what: str) -> tuple[int, int]:
    for name, v in (("width", width), ("height", height)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v <= 0:
            raise UserInputError(
                f"{what}: {name} must be a positive int (pixels), found {v!r}",
                hint="pass the frame size, e.g. width=640, height=360",
            )
    return int(width), int(height)  # type: ignore[call-overload]


def _snap(v: float) -> float:
    r = round(v)
    return float(r) if abs(v - r) <= SNAP_TOLERANCE else v


def normalized_to_pixel(box_xyxy_norm: Sequence[float], width: int, height: int) -> PixelBox:
    """Convert a normalised box to the smallest pixel box that contains it.

    Multiplies by ``[W, H, W, H]``, snaps values within ``1e-8`` of an integer to it,
    floors ``x0, y0``, ceils ``x1, y1`` and clips to ``[0, W] x [0, H]``. The box is not
    otherwise validated (see :func:`check_normalized_box`); an inverted box stays
    inverted and has zero :func:`box_area`.

    Args:
        box_xyxy_norm: ``(x0, y0, x1, y1)`` as fractions of the frame size.
        width: frame width W in pixels.
        height: frame height H in pixels.

    Returns:
        ``(x0, y0, x1, y1)`` ints with ``0 <= x <= W`` and ``0 <= y <= H``.

    Raises:
        UserInputError: not four finite numbers, or a non-positive frame size.

    Example:
        >>> normalized_to_pixel((0.1, 0.2, 0.5, 0.7), 640, 360)
        (64, 72, 320, 252)

        ``0.29 * 100`` is ``28.999999999999996`` and ``0.30000000001 * 100`` is
        ``30.000000001``; both snap instead of growing the box to ``(28, ..., 31, ...)``:

        >>> normalized_to_pixel((0.29, 0.0, 0.30000000001, 1.0), 100, 50)
        (29, 0, 30, 50)

        Genuine fractions round outwards, and the result is clipped to the frame:

        >>> normalized_to_pixel((0.255, -0.1, 1.2, 0.5), 100, 50)
        (25, 0, 100, 25)
    """
    w, h = _check_size(width, height, "normalized_to_pixel")
    x0, y0, x1, y1 = _four_numbers(box_xyxy_norm, "normalized_to_pixel box")
    if not all(math.isfinite(v) for v in (x0, y0, x1, y1)):
        raise UserInputError(
            f"normalized_to_pixel box: expected finite numbers, found {tuple(box_xyxy_norm)!r}",
            hint="drop or repair boxes with NaN or infinite coordinates",
        )
    px0 = math.floor(_snap(x0 * w))
    py0 = math.floor(_snap(y0 * h))
    px1 = math.ceil(_snap(x1 * w))
    py1 = math.ceil(_snap(y1 * h))
    return (
        min(max(px0, 0), w),
        min(max(py0, 0), h),
        min(max(px1, 0), w),
        min(max(py1, 0), h),
    )


def check_normalized_box(box: object) -> list[str]:
    """List what is wrong with a normalised box (empty list when it is valid).

    A valid box has four finite numbers in ``[0, 1]`` with ``x0 < x1`` and ``y0 < y1``
    (positive area).

    Args:
        box: candidate ``(x0, y0, x1, y1)``.

    Returns:
        Human-readable problems, one per line of a report.

    Example:
        >>> check_normalized_box((0.1, 0.2, 0.5, 0.7))
        []
        >>> check_normalized_box((0.5, 0.2, 0.5, 1.5))
        ['y1 = 1.5 is outside [0, 1]', 'zero or negative width: x0 = 0.5 >= x1 = 0.5']
        >>> check_normalized_box((0.1, float("nan"), 0.2))
        ['expected 4 numbers (x0, y0, x1, y1), found 3']
    """
    if isinstance(box, np.ndarray):
        box = box.tolist()
    if isinstance(box, (str, bytes)) or not isinstance(box, Sequence):
        return [f"expected a sequence of 4 numbers (x0, y0, x1, y1), found {type(box).__name__}"]
    if len(box) != 4:
        return [f"expected 4 numbers (x0, y0, x1, y1), found {len(box)}"]
    problems: list[str] = []
    values: dict[str, float] = {}
    for name, v in zip(("x0", "y0", "x1", "y1"), box, strict=True):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.number)):
            problems.append(f"{name} = {v!r} is not a number")
            continue
        fv = float(v)
        if not math.isfinite(fv):
            problems.append(f"{name} = {fv} is not finite")
            continue
        if not 0.0 <= fv <= 1.0:
            problems.append(f"{name} = {fv} is outside [0, 1]")
        values[name] = fv
    if "x0" in values and "x1" in values and values["x0"] >= values["x1"]:
        problems.append(f"zero or negative width: x0 = {values['x0']} >= x1 = {values['x1']}")
    if "y0" in values and "y1" in values and values["y0"] >= values["y1"]:
        problems.append(f"zero or negative height: y0 = {values['y0']} >= y1 = {values['y1']}")
    return problems


def clip_box(box: Sequence[float], width: float, height: float) -> Box:
    """Clip a box to ``[0, width] x [0, height]`` (any unit, e.g. pixels or 1 x 1).

    Args:
        box: ``(x0, y0, x1, y1)``.
        width: right limit.
        height: bottom limit.

    Returns:
        The clipped box; ints stay ints when all inputs are ints.

    Example:
        >>> clip_box((-5, 10, 700, 300), 640, 360)
        (0, 10, 640, 300)
        >>> clip_box((0.2, -0.1, 1.3, 0.5), 1.0, 1.0)
        (0.2, 0.0, 1.0, 0.5)
    """
    x0, y0, x1, y1 = _four_numbers(box, "clip_box box")
    for name, v in (("width", width), ("height", height)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.number)) or not v >= 0:
            raise UserInputError(
                f"clip_box: {name} must be a number >= 0, found {v!r}",
                hint="pass the frame size",
            )
    out = (
        min(max(x0, 0.0), float(width)),
        min(max(y0, 0.0), float(height)),
        min(max(x1, 0.0), float(width)),
        min(max(y1, 0.0), float(height)),
    )
    all_int = all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (*box, width, height)
    )
    if all_int:
        return (int(out[0]), int(out[1]), int(out[2]), int(out[3]))
    return out


def box_area(box: Sequence[float]) -> float:
    """Area of a box; inverted or degenerate boxes have area 0.

    Example:
        >>> box_area((64, 72, 320, 252))
        46080.0
        >>> box_area((5, 5, 2, 9))
        0.0
    """
    x0, y0, x1, y1 = _four_numbers(box, "box_area box")
    return max(0.0, x1 - x0) * max(0.0, y1 - y0)


def box_iou(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over union of two boxes in the same unit.

    Returns 0.0 when the union is empty (two degenerate boxes).

    Example:
        >>> box_iou((0, 0, 2, 2), (1, 1, 3, 3))  # intersection 1, union 4 + 4 - 1
        0.14285714285714285
        >>> box_iou((0, 0, 1, 1), (0, 0, 1, 1))
        1.0
        >>> box_iou((0, 0, 1, 1), (2, 2, 3, 3))
        0.0
    """
    ax0, ay0, ax1, ay1 = _four_numbers(a, "box_iou a")
    bx0, by0, bx1, by1 = _four_numbers(b, "box_iou b")
    inter = max(0.0, min(ax1, bx1) - max(ax0, bx0)) * max(0.0, min(ay1, by1) - max(ay0, by0))
    union = box_area(a) + box_area(b) - inter
    return inter / union if union > 0 else 0.0


def crop(image: np.ndarray, box: Sequence[int]) -> np.ndarray:
    """Return the pixels of ``image`` inside an integer pixel box.

    The box is clipped to the image first (detector boxes often poke out by a pixel).
    The result is a *view* (no copy): writing to it writes into ``image``; call
    ``.copy()`` to keep it independently.

    Args:
        image: ``(H, W)`` or ``(H, W, C)`` array.
        box: ``(x0, y0, x1, y1)`` ints, half-open.

    Returns:
        ``image[y0:y1, x0:x1]`` after clipping, shape ``(y1 - y0, x1 - x0[, C])``.

    Raises:
        UserInputError: the box is not four ints, or is empty after clipping.

    Example:
        >>> img = np.arange(12).reshape(3, 4)
        >>> crop(img, (1, 0, 3, 2))
        array([[1, 2],
               [5, 6]])
        >>> crop(img, (2, 1, 9, 9)).shape
        (2, 2)
    """
    if not isinstance(image, np.ndarray) or image.ndim not in (2, 3):
        found = f"shape {image.shape}" if isinstance(image, np.ndarray) else type(image).__name__
        raise UserInputError(
            f"crop: image must be an (H, W) or (H, W, C) array, found {found}",
            hint="pass a decoded frame",
        )
    if isinstance(box, np.ndarray):
        box = box.tolist()
    if (
        isinstance(box, (str, bytes))
        or not isinstance(box, Sequence)
        or len(box) != 4
        or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in box)
    ):
        raise UserInputError(
            f"crop: box must be 4 ints (x0, y0, x1, y1) in pixels, found {box!r}",
            hint="convert normalised boxes with normalized_to_pixel(box, width, height)",
        )
    h, w = image.shape[:2]
    x0, y0, x1, y1 = (int(v) for v in box)
    cx0, cy0, cx1, cy1 = max(x0, 0), max(y0, 0), min(x1, w), min(y1, h)
    if cx1 <= cx0 or cy1 <= cy0:
        raise UserInputError(
            f"crop: box {tuple(box)} is empty inside the {w}x{h} (WxH) image; after clipping "
            f"it is ({cx0}, {cy0}, {cx1}, {cy1})",
            hint="check that the box is in pixels of this image and that x0 < x1, y0 < y1",
        )
    return image[cy0:cy1, cx0:cx1]
