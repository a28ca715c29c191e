"""The measured half of the memory loop's camera gate: frame-to-frame motion in pixels.

:mod:`vidmem.metrics.camera_motion` compares measured with planned motion and stays
pure (numbers in, numbers out); this module does the image work it needs -- grey,
downscale, dense optical flow -- with OpenCV, through the ``classic/farneback``
backend (:mod:`vidmem.models.backends.classic_flow`), whose Farneback settings it uses.
"""

from __future__ import annotations

import cv2
import numpy as np

from vidmem.errors import UserInputError
from vidmem.models.backends.classic_flow import FARNEBACK, FarnebackFlow

__all__ = ["FARNEBACK", "MOTION_WIDTH", "flow_motion"]

#: Frames are downscaled to this width (pixels) before the flow.
MOTION_WIDTH = 160

_FLOW = FarnebackFlow()


def _grey_small(frame: np.ndarray, width: int) -> np.ndarray:
    img = np.asarray(frame)
    if img.ndim == 3:
        img = cv2.cvtColor(np.ascontiguousarray(img[..., :3], dtype=np.uint8), cv2.COLOR_RGB2GRAY)
    elif img.ndim != 2:
        raise UserInputError(f"flow_motion: a frame must be (H, W) or (H, W, 3), found shape "
                             f"{img.shape}", hint="pass decoded RGB uint8 frames")
    img = np.ascontiguousarray(img, dtype=np.uint8)
    h, w = img.shape
    if w != width:
        img = cv2.resize(img, (width, max(1, round(h * width / w))), interpolation=cv2.INTER_AREA)
    return img


def flow_motion(first: np.ndarray, second: np.ndarray, *, width: int = MOTION_WIDTH) -> float:
    """Mean dense optical-flow magnitude from ``first`` to ``second``, in frame widths.

    Args:
        first, second: ``(H, W, 3)`` RGB or ``(H, W)`` grey uint8 frames of one size.
        width: frames are downscaled to this width first (pixels).

    Returns:
        Mean Farneback flow magnitude divided by ``width`` (about 0 for identical frames).

    Raises:
        UserInputError: frames of different shapes or not 2-D/3-D.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> tex = cv2.GaussianBlur(rng.integers(0, 256, (90, 200)).astype(np.uint8), (0, 0), 2)
        >>> a, b = tex[:, 20:180], tex[:, 24:184]  # the view pans 4 px (of 160)
        >>> round(flow_motion(a, b) * 160)  # about 4 px (borders see less of the pan)
        4
        >>> flow_motion(a, a) < 1e-4  # identical frames: no motion
        True
    """
    if np.shape(first) != np.shape(second):
        raise UserInputError(f"flow_motion: frames differ in shape ({np.shape(first)} vs "
                             f"{np.shape(second)})", hint="compare frames of one video")
    a, b = _grey_small(first, width), _grey_small(second, width)
    flow = _FLOW(a, b)
    return float(np.hypot(flow[..., 0], flow[..., 1]).mean()) / width
