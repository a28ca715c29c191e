"""Offline box-prompted segmenters: GrabCut and the plain box, no weights, no torch.

Two ``classic/*`` stand-ins for SAM 2's box prompt, used by ``vidmem demo`` and the
offline tests. Both are proxies (``official = False``).

* ``classic/box`` (:class:`BoxSegmenter`): the box itself is the mask -- the trivial,
  honest baseline any learned segmenter should beat.
* ``classic/grabcut`` (:class:`GrabCutSegmenter`): OpenCV's GrabCut (colour GMMs +
  graph cut) initialised with the box as "probably foreground" and everything outside
  it as background. For speed it works on a window around the box (the box grown by
  ``margin`` of its size on each side, at least 8 pixels) downscaled so its longer side
  is at most ``max_side``; the mask is scaled back with nearest-neighbour and kept
  inside the box. When GrabCut cannot run (no background pixels around a box that
  covers the whole image, or an OpenCV error) or its foreground is smaller than
  ``min_fraction`` of the box area, the box mask is returned instead, so every call
  gives a usable mask. The RNG of OpenCV is reseeded before every call, so the result
  is deterministic.

Pixel convention shared by both: pixel ``(row i, column j)`` covers
``[j, j + 1) x [i, i + 1)`` and is inside box ``(x0, y0, x1, y1)`` when its centre is:
``x0 <= j + 0.5 < x1`` and ``y0 <= i + 0.5 < y1``. A box thinner than a pixel still
marks the pixel holding its centre, so no mask of a box overlapping the image is empty.

Example:
    >>> import numpy as np
    >>> img = np.zeros((4, 6, 3), np.uint8)
    >>> BoxSegmenter().segment([img], [(1.0, 1.0, 4.0, 3.0)])[0].astype(int)
    array([[0, 0, 0, 0, 0, 0],
           [0, 1, 1, 1, 0, 0],
           [0, 1, 1, 1, 0, 0],
           [0, 0, 0, 0, 0, 0]])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

from vidmem.errors import UserInputError
from vidmem.models.backends.base import BackendBase
from vidmem.models.backends.classic_embed import check_rgb_image
from vidmem.models.protocols import Box


def _pixel_range(lo: float, hi: float, size: int) -> tuple[int, int]:
    """Indices ``[a, b)`` of pixels whose centres lie in ``[lo, hi)``, clipped to ``size``."""
    a = max(0, math.ceil(lo - 0.5))
    b = min(size, math.ceil(hi - 0.5))
    if b <= a:  # thinner than a pixel: take the pixel holding the centre
        c = min(size - 1, max(0, math.floor((lo + hi) / 2)))
        a, b = c, c + 1
    return a, b


def check_box(box: Any, shape: tuple[int, int], *, where: str) -> tuple[float, float, float, float]:
    """Validate a pixel box ``(x0, y0, x1, y1)`` against an image of ``shape = (H, W)``.

    Returns:
        The box as four floats.

    Raises:
        UserInputError: when the box is not four finite numbers with ``x1 > x0`` and
            ``y1 > y0``, or does not overlap the image.

    Example:
        >>> check_box((0, 0, 2, 3), (10, 10), where="x")
        (0.0, 0.0, 2.0, 3.0)
    """
    try:
        x0, y0, x1, y1 = (float(v) for v in box)
    except (TypeError, ValueError):
        raise UserInputError(
            f"{where}: expected a box (x0, y0, x1, y1) of four numbers; found {box!r}",
            hint="boxes are pixel coordinates, x to the right, y down",
        ) from None
    h, w = shape
    ok = all(math.isfinite(v) for v in (x0, y0, x1, y1)) and x1 > x0 and y1 > y0
    if not ok or x1 <= 0 or y1 <= 0 or x0 >= w or y0 >= h:
        raise UserInputError(
            f"{where}: expected a finite box (x0, y0, x1, y1) with x1 > x0, y1 > y0 that "
            f"overlaps the {w}x{h} image; found {(x0, y0, x1, y1)}",
            hint="pass pixel (x0, y0, x1, y1) boxes in the coordinates of the image they refer to",
        )
    return x0, y0, x1, y1


def box_mask(box: Box, shape: tuple[int, int]) -> np.ndarray:
    """The bool ``(H, W)`` mask of the pixels whose centres lie inside ``box``.

    Example:
        >>> int(box_mask((0.0, 0.0, 2.6, 2.0), (3, 3)).sum())
        6
    """
    h, w = shape
    r0, r1 = _pixel_range(box[1], box[3], h)
    c0, c1 = _pixel_range(box[0], box[2], w)
    mask = np.zeros((h, w), bool)
    mask[r0:r1, c0:c1] = True
    return mask


class _ClassicSegmenter(BackendBase):
    name = "classic/unnamed"
    default_weights = None
    official = False

    def __init__(
        self, *, weights: Any = None, device: str = "cpu", dtype: str = "float32", batch_size: int = 16
    ) -> None:
        self._refuse_weights(
            weights, subject="this classic segmenter", instead="a model segmenter such as sam2/tiny"
        )
        super().__init__(weights=None, device=device, dtype=dtype, batch_size=batch_size)

    def _mask(self, image: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray:
        raise NotImplementedError

    def segment(self, images: Sequence[np.ndarray], boxes: Sequence[Box]) -> list[np.ndarray]:
        """Return one mask per ``(image, box)`` pair.

        Args:
            images: ``N`` RGB ``uint8`` arrays of shape ``(H_i, W_i, 3)``.
            boxes: ``N`` pixel boxes ``(x0, y0, x1, y1)``, one per image.

        Returns:
            ``N`` bool arrays of shape ``(H_i, W_i)``, each non-empty and inside its box.

        Raises:
            UserInputError: when the lengths differ, or on a bad image or box.
        """
        images, boxes = list(images), list(boxes)
        if len(images) != len(boxes):
            raise UserInputError(
                f"{self.name}: got {len(images)} images but {len(boxes)} boxes",
                hint="pass one box per image (repeat the image to segment several boxes in it)",
            )
        out = []
        for i, (image, box) in enumerate(zip(images, boxes, strict=True)):
            img = check_rgb_image(image, where=f"{self.name}: images[{i}]")
            b = check_box(box, img.shape[:2], where=f"{self.name}: boxes[{i}]")
            out.append(self._mask(img, b))
        return out


class BoxSegmenter(_ClassicSegmenter):
    """``classic/box``: the box rectangle is the mask (see the module pixel convention)."""

    name = "classic/box"

    def _mask(self, image: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray:
        return box_mask(box, image.shape[:2])


class GrabCutSegmenter(_ClassicSegmenter):
    """``classic/grabcut``: GrabCut from a box prompt, falling back to the box.

    Args:
        weights, device, dtype, batch_size: the common backend arguments (no weights;
            CPU only; one pair at a time).
        iterations: GrabCut iterations (each re-fits the colour models and re-cuts).
        margin: background window around the box, as a fraction of the box size per side.
        max_side: longer side (pixels) of the working window; larger windows are
            downscaled for speed.
        min_fraction: a GrabCut foreground smaller than this fraction of the box area
            counts as a failure and the box mask is returned.
        largest_component: keep only the largest 8-connected foreground component.

    Attributes:
        last_fallbacks: for the latest :meth:`segment` call, one bool per pair telling
            whether the box mask was returned instead of GrabCut's.
    """

    name = "classic/grabcut"

    def __init__(
        self,
        *,
        iterations: int = 5,
        margin: float = 0.25,
        max_side: int = 256,
        min_fraction: float = 0.01,
        largest_component: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        checks = [
            ("iterations", iterations, int(iterations) >= 1, "an integer >= 1"),
            ("margin", margin, margin > 0, "> 0"),
            ("max_side", max_side, int(max_side) >= 32, "an integer >= 32"),
            ("min_fraction", min_fraction, 0.0 <= min_fraction < 1.0, "in [0, 1)"),
        ]
        self._check_settings(checks)
        self.iterations = int(iterations)
        self.margin = float(margin)
        self.max_side = int(max_side)
        self.min_fraction = float(min_fraction)
        self.largest_component = bool(largest_component)
        self.last_fallbacks: list[bool] = []
        self.settings.update(
            {
                "iterations": self.iterations,
                "margin": self.margin,
                "max_side": self.max_side,
                "min_fraction": self.min_fraction,
                "largest_component": self.largest_component,
                "fallback": "box",
            }
        )

    def segment(self, images: Sequence[np.ndarray], boxes: Sequence[Box]) -> list[np.ndarray]:
        """Segment each box with GrabCut; see :meth:`BoxSegmenter.segment` for the contract.

        Also resets :attr:`last_fallbacks` and fills it with one bool per pair.
        """
        self.last_fallbacks = []
        return super().segment(images, boxes)

    def _mask(self, image: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray:
        h, w = image.shape[:2]
        fallback = box_mask(box, (h, w))
        r0, r1 = _pixel_range(box[1], box[3], h)
        c0, c1 = _pixel_range(box[0], box[2], w)
        grow_y = max(8, math.ceil(self.margin * (r1 - r0)))
        grow_x = max(8, math.ceil(self.margin * (c1 - c0)))
        wy0, wy1 = max(0, r0 - grow_y), min(h, r1 + grow_y)
        wx0, wx1 = max(0, c0 - grow_x), min(w, c1 + grow_x)
        window = image[wy0:wy1, wx0:wx1]
        factor = min(1.0, self.max_side / max(window.shape[:2]))
        if factor < 1.0:
            size = (
                max(1, round(window.shape[1] * factor)),
                max(1, round(window.shape[0] * factor)),
            )
            window = cv2.resize(window, size, interpolation=cv2.INTER_AREA)
        wh, ww = window.shape[:2]
        ry0, rx0 = int((r0 - wy0) * factor), int((c0 - wx0) * factor)
        ry1 = min(wh, max(ry0 + 1, round((r1 - wy0) * factor)))
        rx1 = min(ww, max(rx0 + 1, round((c1 - wx0) * factor)))
        # GrabCut needs background samples; a box that fills the window leaves none.
        if (ry0 == 0 and rx0 == 0 and ry1 == wh and rx1 == ww) or ry1 - ry0 < 2 or rx1 - rx0 < 2:
            self.last_fallbacks.append(True)
            return fallback
        gc = np.zeros((wh, ww), np.uint8)
        bgd, fgd = np.zeros((1, 65), np.float64), np.zeros((1, 65), np.float64)
        bgr = np.ascontiguousarray(window[..., ::-1])
        try:
            cv2.setRNGSeed(0)
            cv2.grabCut(
                bgr,
                gc,
                (rx0, ry0, rx1 - rx0, ry1 - ry0),
                bgd,
                fgd,
                self.iterations,
                cv2.GC_INIT_WITH_RECT,
            )
        except cv2.error:
            self.last_fallbacks.append(True)
            return fallback
        fg = ((gc == cv2.GC_FGD) | (gc == cv2.GC_PR_FGD)).astype(np.uint8)
        if self.largest_component and fg.any():
            n, labels, stats, _ = cv2.connectedComponentsWithStats(fg, connectivity=8)
            if n > 2:
                fg = (labels == 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))).astype(np.uint8)
        if factor < 1.0:
            fg = cv2.resize(fg, (wx1 - wx0, wy1 - wy0), interpolation=cv2.INTER_NEAREST)
        mask = np.zeros((h, w), bool)
        mask[wy0:wy1, wx0:wx1] = fg.astype(bool)
        mask &= fallback
        if mask.sum() < max(1.0, self.min_fraction * fallback.sum()):
            self.last_fallbacks.append(True)
            return fallback
        self.last_fallbacks.append(False)
        return mask


__all__ = ["BoxSegmenter", "GrabCutSegmenter", "box_mask", "check_box"]
