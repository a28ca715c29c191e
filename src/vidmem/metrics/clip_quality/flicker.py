"""Temporal flickering: VBench's mean absolute frame difference, as a score.

Part of :mod:`vidmem.metrics.clip_quality` (the overview and rules are there).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vidmem.metrics.clip_quality.frames import as_clip


def frame_differences(frames: np.ndarray | Sequence[np.ndarray]) -> np.ndarray:
    """``(T - 1,)`` mean absolute differences of consecutive frames (0..255 scale).

    Example:
        >>> f = np.zeros((3, 2, 2, 3), np.uint8); f[1] = 30
        >>> frame_differences(f).tolist()
        [30.0, 30.0]
    """
    clip = as_clip(frames, what="temporal flickering").astype(np.float32)
    return np.abs(np.diff(clip, axis=0)).reshape(clip.shape[0] - 1, -1).mean(
        axis=1, dtype=np.float64)


def temporal_flickering(frames: np.ndarray | Sequence[np.ndarray]) -> float:
    """``(255 - mean frame difference) / 255``: 1.0 for a frozen clip.

    Example:
        >>> f = np.zeros((3, 2, 2, 3), np.uint8); f[1] = 51
        >>> temporal_flickering(f)
        0.8
    """
    return float((255.0 - frame_differences(frames).mean()) / 255.0)
