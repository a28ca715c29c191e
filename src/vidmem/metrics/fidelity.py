"""Revisit fidelity: how much a revisit frame still looks like the frame it revisits.

For a revisit pair ``(a, b)`` (see :mod:`vidmem.metrics.revisit`),

    fidelity = clamp(0.7 * (cos + 1) / 2 + 0.3 * clamp(ssim, 0, 1), 0, 1)

where ``cos`` is the cosine similarity of the two frames' image embeddings (DINOv2
in the protocol; computed by a model backend, outside this pure module) and ``ssim``
is the structural similarity of the two frames (:func:`ssim_pair`). The sample
fidelity of a video is the mean over its pairs. The card (PROTOCOLS.md section 2)
gives the weights and the outer clamp; it is silent on what SSIM is computed on and
on a negative SSIM, so both follow its reference implementation (WorldAtlas Arena
``memory_loop``, whose SSIM helper clamps its mean to ``[0, 1]`` before weighting):
a negative SSIM adds nothing rather than taking fidelity away.

:func:`ssim_pair` is implemented here with :mod:`scipy.ndimage` so that this layer
needs only numpy and scipy. It follows Wang et al. (2004) the way the reference
computes it:

* each RGB channel is compared on its own (float64 in ``[0, 255]``) and the three
  channel SSIMs are averaged, so a change of hue at equal brightness counts (a
  ``(H, W)`` frame is one grey channel);
* local means, variances and covariance use a Gaussian window with ``sigma = 1.5``
  px truncated at ``3.5 sigma`` (an 11 x 11 window, the same normalised taps as
  OpenCV's ``GaussianBlur((11, 11), 1.5)``), population (not sample) statistics,
  ``K1 = 0.01``, ``K2 = 0.03``, ``L = 255``;
* the SSIM map is averaged over **every** pixel, the window mirrored at the borders
  without repeating the edge pixel (``scipy.ndimage`` mode ``"mirror"``, OpenCV's
  default ``BORDER_REFLECT_101``), as the reference does.

On the pixels at least 5 px from every border the map equals scikit-image's
``structural_similarity(channel_axis=-1, gaussian_weights=True, sigma=1.5,
use_sample_covariance=False, data_range=255)``, which averages only those pixels;
the full-map mean differs from it by the border rows and columns. The reference runs
its filters in float32; this module uses float64, so the two agree to about ``1e-5``.
Frames must be at least 11 x 11 (vidmem's check).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import ndimage

from vidmem.errors import UserInputError

__all__ = [
    "COSINE_WEIGHT",
    "SSIM_K1",
    "SSIM_K2",
    "SSIM_SIGMA",
    "SSIM_TRUNCATE",
    "SSIM_WEIGHT",
    "SSIM_WIN_SIZE",
    "pair_fidelity",
    "per_channel_ssim_maps",
    "rgb_to_luma",
    "sample_fidelity",
    "ssim_pair",
]

COSINE_WEIGHT = 0.7
SSIM_WEIGHT = 0.3
SSIM_SIGMA = 1.5
SSIM_TRUNCATE = 3.5
#: Side of the Gaussian window in pixels: ``2 * int(3.5 * 1.5 + 0.5) + 1 = 11``.
SSIM_WIN_SIZE = 2 * int(SSIM_TRUNCATE * SSIM_SIGMA + 0.5) + 1
SSIM_K1 = 0.01
SSIM_K2 = 0.03
#: Border handling of the Gaussian window (OpenCV's BORDER_REFLECT_101).
SSIM_BORDER_MODE = "mirror"
_DATA_RANGE = 255.0
_LUMA = np.array([0.299, 0.587, 0.114])
#: Round-off allowed beyond [-1, 1] (cosine, SSIM) and [0, 1] (fidelities).
_SLACK = 1e-6


def _real_array(x: object, name: str, where: str) -> np.ndarray:
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise UserInputError(
            f"{where}: {name} could not be read as numbers ({exc})",
            hint=f"pass {name} as a float or an array of floats",
        ) from exc
    if arr.dtype.kind not in "biuf":
        raise UserInputError(
            f"{where}: {name} must hold real numbers, found dtype {arr.dtype}",
            hint=f"pass {name} as floats",
        )
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise UserInputError(
            f"{where}: {name} holds NaN or infinity "
            f"({int(np.count_nonzero(~np.isfinite(arr)))} of {arr.size} values)",
            hint="drop pairs whose embedding or SSIM could not be computed",
        )
    return arr


def _in_range(arr: np.ndarray, lo: float, hi: float, name: str, where: str) -> None:
    if arr.size and (arr.min() < lo - _SLACK or arr.max() > hi + _SLACK):
        raise UserInputError(
            f"{where}: {name} must lie in [{lo:g}, {hi:g}], found values from "
            f"{arr.min():.6g} to {arr.max():.6g}",
            hint=f"check that {name} is what this function expects",
        )


def pair_fidelity(cosine: object, ssim: object) -> float | np.ndarray:
    """Revisit fidelity ``clamp(0.7 * (cosine + 1) / 2 + 0.3 * clamp(ssim, 0, 1), 0, 1)``.

    Vectorised: ``cosine`` and ``ssim`` broadcast against each other. A negative SSIM
    counts as 0, as in the protocol's reference implementation (see the module
    docstring).

    Args:
        cosine: Cosine similarity of the two frames' embeddings, in ``[-1, 1]``
            (``1e-6`` of round-off tolerated), scalar or array.
        ssim: SSIM of the two frames, in ``[-1, 1]``, scalar or array.

    Returns:
        A ``float`` for scalar inputs, else a float64 array of the broadcast shape;
        values in ``[0, 1]``, unitless.

    Raises:
        UserInputError: on NaN or infinity, values outside ``[-1, 1]``, non-numeric
            input or shapes that do not broadcast.

    Example:
        >>> pair_fidelity(1.0, 1.0), pair_fidelity(-1.0, 0.0), pair_fidelity(0.0, 0.5)
        (1.0, 0.0, 0.5)
        >>> pair_fidelity([0.0, 1.0], -0.5).tolist()  # SSIM -0.5 counts as 0
        [0.35, 0.7]
    """
    where = "pair_fidelity"
    c = _real_array(cosine, "cosine", where)
    s = _real_array(ssim, "ssim", where)
    _in_range(c, -1.0, 1.0, "cosine", where)
    _in_range(s, -1.0, 1.0, "ssim", where)
    try:
        c, s = np.broadcast_arrays(c, s)
    except ValueError as exc:
        raise UserInputError(
            f"{where}: cosine shape {c.shape} and ssim shape {s.shape} do not broadcast",
            hint="pass one cosine and one SSIM per pair",
        ) from exc
    out = np.clip(COSINE_WEIGHT * (c + 1.0) / 2.0 + SSIM_WEIGHT * np.clip(s, 0.0, 1.0), 0.0, 1.0)
    return float(out) if out.ndim == 0 else out


def sample_fidelity(pair_fidelities: object) -> float | None:
    """Sample fidelity: the mean revisit fidelity over a video's pairs.

    Args:
        pair_fidelities: Fidelity of each pair, shape ``(n,)``, values in ``[0, 1]``.

    Returns:
        The mean as a ``float`` in ``[0, 1]``, or ``None`` when there are no pairs.

    Raises:
        UserInputError: on NaN or infinity, values outside ``[0, 1]``, or input that
            is not a 1-D array of numbers.

    Example:
        >>> sample_fidelity([0.9, 0.7, 0.8])
        0.8
        >>> sample_fidelity([]) is None
        True
    """
    where = "sample_fidelity"
    arr = _real_array(pair_fidelities, "pair_fidelities", where)
    if arr.ndim != 1:
        raise UserInputError(
            f"{where}: pair_fidelities must be 1-D, found shape {arr.shape}",
            hint="pass one fidelity per pair",
        )
    if arr.size == 0:
        return None
    _in_range(arr, 0.0, 1.0, "pair_fidelities", where)
    return min(max(math.fsum(arr.tolist()) / arr.size, 0.0), 1.0)


def _check_frame(x: object, name: str, where: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype != np.uint8:
        raise UserInputError(
            f"{where}: {name} must be uint8, found dtype {arr.dtype}",
            hint="pass decoded frames as uint8 (H, W, 3) RGB arrays",
        )
    if not (arr.ndim == 2 or (arr.ndim == 3 and arr.shape[2] == 3)):
        raise UserInputError(
            f"{where}: {name} must have shape (H, W, 3) or (H, W), found {arr.shape}",
            hint="pass one RGB frame, channels last",
        )
    return arr


def rgb_to_luma(frame: np.ndarray) -> np.ndarray:
    """BT.601 luma of a uint8 RGB frame, ``0.299 R + 0.587 G + 0.114 B``.

    Not used by :func:`ssim_pair`, which compares the RGB channels one by one
    (benchmark version 1.3; earlier versions compared luma).

    Args:
        frame: uint8 array, shape ``(H, W, 3)`` RGB; a ``(H, W)`` frame is taken as
            already grey.

    Returns:
        float64 array, shape ``(H, W)``, values in ``[0, 255]`` (not rounded).

    Raises:
        UserInputError: if ``frame`` is not uint8 of shape ``(H, W, 3)`` or ``(H, W)``.

    Example:
        >>> import numpy as np
        >>> frame = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255]]], dtype=np.uint8)
        >>> np.round(rgb_to_luma(frame), 3).tolist()
        [[76.245, 149.685, 29.07]]
    """
    arr = _check_frame(frame, "frame", "rgb_to_luma")
    if arr.ndim == 2:
        return arr.astype(np.float64)
    return arr.astype(np.float64) @ _LUMA


def _checked_pair(a: object, b: object, where: str) -> tuple[np.ndarray, np.ndarray]:
    fa = _check_frame(a, "a", where)
    fb = _check_frame(b, "b", where)
    if fa.shape != fb.shape:
        raise UserInputError(
            f"{where}: frames differ in shape, a is {fa.shape} and b is {fb.shape}",
            hint="resize one frame to the other's size before comparing",
        )
    if min(fa.shape[:2]) < SSIM_WIN_SIZE:
        raise UserInputError(
            f"{where}: frames of {fa.shape[0]}x{fa.shape[1]} px are smaller than the "
            f"{SSIM_WIN_SIZE}x{SSIM_WIN_SIZE} SSIM window",
            hint="compare frames at least 11 px on each side",
        )
    return fa, fb


def _channel_map(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """SSIM map of one channel pair (float64 ``(H, W)`` in ``[0, 255]``)."""
    # Five local statistics in one filter pass; sigma 0 on the stacking axis.
    stats = ndimage.gaussian_filter(
        np.stack([x, y, x * x, y * y, x * y]),
        sigma=(0.0, SSIM_SIGMA, SSIM_SIGMA),
        mode=SSIM_BORDER_MODE,
        truncate=SSIM_TRUNCATE,
    )
    ux, uy, uxx, uyy, uxy = stats
    vx = uxx - ux * ux
    vy = uyy - uy * uy
    vxy = uxy - ux * uy
    c1 = (SSIM_K1 * _DATA_RANGE) ** 2
    c2 = (SSIM_K2 * _DATA_RANGE) ** 2
    return ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux * ux + uy * uy + c1) * (vx + vy + c2))


def per_channel_ssim_maps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The SSIM map of every channel of two frames (see the module docstring).

    Args:
        a: uint8 RGB frame, shape ``(H, W, 3)`` (or ``(H, W)`` grey), ``H, W >= 11``.
        b: uint8 frame of the same shape as ``a``.

    Returns:
        float64 array of shape ``(C, H, W)`` (``C = 3`` for RGB, 1 for grey), values
        in ``[-1, 1]``; :func:`ssim_pair` is its mean.

    Raises:
        UserInputError: as :func:`ssim_pair`.
    """
    return _maps(a, b, "per_channel_ssim_maps")


def _maps(a: object, b: object, where: str) -> np.ndarray:
    fa, fb = _checked_pair(a, b, where)
    if fa.ndim == 2:
        fa, fb = fa[..., None], fb[..., None]
    # One channel at a time keeps the filter's temporaries at 5 frames of float64.
    return np.stack([
        _channel_map(fa[..., k].astype(np.float64), fb[..., k].astype(np.float64))
        for k in range(fa.shape[2])
    ])


def ssim_pair(a: np.ndarray, b: np.ndarray) -> float:
    """Mean SSIM of two frames, averaged over the RGB channels and every pixel.

    The per-channel Gaussian-window SSIM of the module docstring (the protocol's
    reference computation); :func:`pair_fidelity` clamps it at 0 when weighting.

    Args:
        a: uint8 RGB frame, shape ``(H, W, 3)`` (or ``(H, W)`` grey), ``H, W >= 11``.
        b: uint8 frame of the same shape as ``a``.

    Returns:
        Mean SSIM in ``[-1, 1]`` (1.0 for identical frames), unitless.

    Raises:
        UserInputError: if a frame is not uint8 ``(H, W, 3)``/``(H, W)``, the shapes
            differ, or a side is shorter than 11 px.

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> a = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
        >>> ssim_pair(a, a)
        1.0
        >>> round(ssim_pair(a, 255 - a), 3) < 0
        True
    """
    maps = _maps(a, b, "ssim_pair")
    # Channel means first, then their mean, as the reference averages channel SSIMs.
    value = float(np.mean([m.mean(dtype=np.float64) for m in maps]))
    return min(max(value, -1.0), 1.0)
