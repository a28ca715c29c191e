"""Hard-cut detector: a frame pair is a cut when the grey frames differ by >= 22 on average.

Grey is BT.601 luma, ``Y = 0.299 R + 0.587 G + 0.114 B`` on the 0..255 scale, in float
(not rounded to uint8; rounding would move the mean by less than 0.5). The paper names
"gray-frame" without a formula, so BT.601 (what OpenCV's RGB-to-grey uses) is adopted.
The mean absolute difference of frames ``k - 1`` and ``k`` is over all pixels; a pair
with a difference >= ``threshold`` is a hard cut at **position k** (the first frame
after the cut). A clip passes continuity when it has no cut.

Every rule is in :data:`PROTOCOL` with its reason and source.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["BT601", "PROTOCOL", "THRESHOLD", "frame_pair_mad", "grey", "hard_cuts"]

THRESHOLD = 22.0
BT601 = (0.299, 0.587, 0.114)

PROTOCOL: dict[str, dict[str, str]] = {
    "threshold": {
        "rule": "a frame pair is a hard cut when the grey mean absolute difference >= 22",
        "reason": "the protocol's continuity check",
        "source": "PROTOCOLS.md section 5; seed 001 App. C ('at least 22')",
    },
    "grey": {
        "rule": "BT.601 luma 0.299 R + 0.587 G + 0.114 B, float on 0..255, not rounded",
        "reason": "the paper names a gray frame without a formula; BT.601 is OpenCV's",
        "source": "decided here (no reference code found)",
    },
    "position": {
        "rule": "a cut between frames k-1 and k is reported at position k",
        "reason": "k is the first frame of the new shot",
        "source": "decided here",
    },
}


def grey(frame: np.ndarray) -> np.ndarray:
    """BT.601 luma of one frame: ``(H, W, 3)`` RGB (any numeric dtype, 0..255) or an
    already grey ``(H, W)`` frame -> ``(H, W)`` float64.

    Example:
        >>> grey(np.array([[[255, 0, 0], [0, 0, 255]]], dtype=np.uint8)).round(3).tolist()
        [[76.245, 29.07]]
    """
    f = np.asarray(frame)
    if f.ndim == 2:
        return f.astype(np.float64)
    if f.ndim != 3 or f.shape[2] != 3:
        raise ValueError(f"frame: expected (H, W, 3) RGB or (H, W) grey, found shape {f.shape}")
    return f.astype(np.float64) @ np.asarray(BT601)


def frame_pair_mad(frames: Iterable[np.ndarray]) -> np.ndarray:
    """Mean absolute grey difference of each consecutive frame pair.

    Args:
        frames: a ``(T, H, W, 3)`` / ``(T, H, W)`` array, or any iterable of frames
            (decoded one at a time; only two are held).

    Returns:
        ``(T - 1,)`` float64; entry ``k - 1`` compares frames ``k - 1`` and ``k``.

    Example:
        >>> f = np.zeros((3, 2, 2, 3), np.uint8); f[2] = 100
        >>> frame_pair_mad(f).tolist()
        [0.0, 100.0]
    """
    out: list[float] = []
    prev: np.ndarray | None = None
    for k, frame in enumerate(frames):
        g = grey(frame)
        if prev is not None:
            if g.shape != prev.shape:
                raise ValueError(f"frame {k}: shape {g.shape} differs from frame {k - 1}'s "
                                 f"{prev.shape}")
            out.append(float(np.abs(g - prev).mean()))
        prev = g
    return np.asarray(out, dtype=np.float64)


def hard_cuts(frames: Iterable[np.ndarray], threshold: float = THRESHOLD) -> list[int]:
    """Positions ``k`` of the hard cuts of one clip (a cut between frames k-1 and k).

    Example:
        >>> f = np.full((4, 2, 2, 3), 50, np.uint8); f[2:] = 80
        >>> hard_cuts(f), hard_cuts(f, threshold=31.0)
        ([2], [])
    """
    mad = frame_pair_mad(frames)
    return [int(k) + 1 for k in np.flatnonzero(mad >= threshold)]
