"""One clip as a checked ``(T, H, W, 3)`` array; the types the metrics take.

Part of :mod:`vidmem.metrics.clip_quality` (the overview is there).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from vidmem.errors import UserInputError

#: a flow function: two RGB frames -> ``(H, W, 2)`` flow in pixels, ``(dx, dy)``, with
#: ``frame0(y, x) ~ frame1(y + dy, x + dx)``
Flow = Callable[[np.ndarray, np.ndarray], np.ndarray]
#: an image embedder: frames -> ``(T, D)`` vectors (e.g. an ImageEmbedder's embed_images)
Embed = Callable[[Sequence[np.ndarray]], np.ndarray]


def as_clip(frames: np.ndarray | Sequence[np.ndarray], *, min_frames: int = 2,
            what: str = "clip") -> np.ndarray:
    """The frames as one ``(T, H, W, 3)`` array (grey ``(T, H, W)`` becomes RGB).

    Raises:
        UserInputError: another shape, frames of different sizes, fewer than
            ``min_frames`` frames or values outside 0..255.

    Example:
        >>> as_clip(np.zeros((2, 4, 5), np.uint8)).shape
        (2, 4, 5, 3)
    """
    try:
        arr = np.asarray(frames)
    except ValueError as exc:  # ragged list of frames
        raise UserInputError(f"{what}: frames differ in size ({exc})",
                             hint="decode every frame of a clip at one size") from exc
    if arr.ndim == 3:
        arr = np.repeat(arr[..., None], 3, axis=3)
    if arr.ndim != 4 or arr.shape[3] != 3 or arr.dtype == object:
        raise UserInputError(f"{what}: expected (T, H, W, 3) RGB frames, found shape "
                             f"{arr.shape}", hint="pass decoded RGB frames, time first")
    if arr.shape[0] < min_frames:
        raise UserInputError(f"{what}: needs at least {min_frames} frames, found "
                             f"{arr.shape[0]}", hint="score clips, not single images")
    if arr.size and (arr.min() < 0 or arr.max() > 255):
        raise UserInputError(f"{what}: pixel values must lie in 0..255, found "
                             f"{arr.min()}..{arr.max()}", hint="pass uint8 frames")
    return arr


def mean_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    """Mean absolute difference of two frames over all pixels and channels.

    Example:
        >>> mean_abs_diff(np.zeros((2, 2, 3), np.uint8), np.full((2, 2, 3), 9, np.uint8))
        9.0
    """
    return float(np.abs(a.astype(np.float64) - b.astype(np.float64)).mean())
