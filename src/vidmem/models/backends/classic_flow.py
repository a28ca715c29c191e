"""Offline dense optical flow: OpenCV's Farneback, no weights, no torch.

The quality controls (:mod:`vidmem.metrics.clip_quality`) take a flow function; VBench
uses RAFT (dynamic degree) and AMT (frame interpolation for motion smoothness), which
need weights. This is the offline stand-in: a **proxy**, so ``official`` is False and
every score it produces is labelled.

A call ``FarnebackFlow()(frame0, frame1)`` takes two RGB frames ``(H, W, 3)`` (uint8 or
0..255 numbers; grey ``(H, W)`` is accepted too), converts them to BT.601 grey
(``cv2.COLOR_RGB2GRAY``) and returns the flow ``(H, W, 2)`` float32 in pixels,
``(dx, dy)`` with ``frame0(y, x) ~ frame1(y + dy, x + dx)`` (OpenCV's convention).
Settings are the OpenCV tutorial's: pyramid scale 0.5, 3 levels, 15-pixel window,
3 iterations, polynomial neighbourhood 5 with sigma 1.2.

Example:
    >>> import numpy as np
    >>> yy, xx = np.mgrid[0:64, 0:64]
    >>> img = (127 + 60 * np.sin(xx / 3.0) * np.cos(yy / 4.0)).astype(np.uint8)
    >>> f = FarnebackFlow()(img, np.roll(img, 2, axis=1))
    >>> f.shape, f.dtype.name, round(float(np.median(f[16:48, 16:48, 0])))
    ((64, 64, 2), 'float32', 2)
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from vidmem.errors import UserInputError
from vidmem.models.backends.base import BackendBase

__all__ = ["FARNEBACK", "FarnebackFlow"]

#: cv2.calcOpticalFlowFarneback settings (the OpenCV tutorial's)
FARNEBACK: dict[str, Any] = {"pyr_scale": 0.5, "levels": 3, "winsize": 15, "iterations": 3,
                             "poly_n": 5, "poly_sigma": 1.2, "flags": 0}


def _grey(frame: np.ndarray, which: str) -> np.ndarray:
    f = np.asarray(frame)
    if f.ndim == 3 and f.shape[2] == 3:
        f = cv2.cvtColor(np.clip(f, 0, 255).astype(np.uint8), cv2.COLOR_RGB2GRAY)
    elif f.ndim != 2:
        raise UserInputError(f"classic/farneback: {which} must be (H, W, 3) RGB or (H, W) "
                             f"grey, found shape {f.shape}")
    return np.clip(f, 0, 255).astype(np.uint8)


class FarnebackFlow(BackendBase):
    """Dense optical flow between two frames (OpenCV Farneback; module docstring)."""

    name = "classic/farneback"
    default_weights = None
    official = False

    def __init__(self, **settings: Any) -> None:
        farneback = {k: settings.pop(k) for k in list(settings) if k in FARNEBACK}
        super().__init__(**settings)
        self.params = {**FARNEBACK, **farneback}
        self.settings.update(self.params)

    def __call__(self, frame0: np.ndarray, frame1: np.ndarray) -> np.ndarray:
        """The flow from ``frame0`` to ``frame1``: ``(H, W, 2)`` float32 pixels."""
        g0, g1 = _grey(frame0, "frame0"), _grey(frame1, "frame1")
        if g0.shape != g1.shape:
            raise UserInputError(f"classic/farneback: frames differ in shape, {g0.shape} vs "
                                 f"{g1.shape}", hint="decode both frames at one size")
        return cv2.calcOpticalFlowFarneback(g0, g1, None, **self.params).astype(np.float32)
