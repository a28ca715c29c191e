"""Offline image embedders: colour histograms plus texture, no weights, no torch.

These are the ``classic/*`` image embedders that ``vidmem demo`` and the offline tests
use. They are **proxies**, not the embedders any protocol prescribes (DINOv2 / DINOv3),
so :attr:`BackendBase.official` is ``False`` and every score they produce is labelled.

How an image becomes a vector (every step is deterministic):

1. Optional mask: the image is cropped to the mask's bounding box, so the resolution
   goes to the object, and masked-out pixels are ignored by every histogram (HOG, which
   cannot ignore pixels, sees them filled with the mean colour of the kept pixels).
   An all-``False`` mask is treated as "no mask" (with a :class:`RuntimeWarning`), so a
   segmenter that found nothing does not crash a run.
2. Resize to ``size x size`` pixels (``cv2.INTER_AREA``; the aspect ratio is not kept).
3. Blocks, each a non-negative histogram:

   * ``hsv``: joint hue x saturation x value histogram, 8 x 4 x 4 = 128 bins (OpenCV
     8-bit HSV; the circular hue 0..179 is binned with the first bin centred on red).
   * ``lab``: joint L* x a* x b* histogram, 4 x 8 x 8 = 256 bins; a* and b* are binned
     over the OpenCV 8-bit range 80..176 (clipped), where nearly all natural colours lie.
   * ``lbp``: rotation-invariant uniform local binary patterns with 8 neighbours on the
     square ring at radius 1 and at radius 2 (10 codes each, 20 bins), on the grey image.
   * ``hog``: histogram of oriented gradients (``skimage.feature.hog``: 9 orientations,
     16 x 16-pixel cells, 2 x 2-cell blocks, L2-Hys), 324 bins at ``size=64``.

4. Each block is L1-normalised, square-rooted (Hellinger / "RootSIFT" mapping, so a dot
   product of two blocks is their Bhattacharyya coefficient) and scaled by
   ``sqrt(weight)``; the blocks are concatenated and the row is L2-normalised. With
   weights summing to 1 the cosine of two embeddings is therefore exactly the weighted
   mean of the per-block Bhattacharyya coefficients, a number in [0, 1].

Example:
    >>> import numpy as np
    >>> emb = HsvLbpEmbedder()
    >>> img = np.zeros((40, 30, 3), np.uint8); img[:, :, 0] = 200
    >>> vecs = emb.embed_images([img, img[5:35]])
    >>> vecs.shape, vecs.dtype.name, round(float(vecs[0] @ vecs[1]), 4)
    ((2, 148), 'float32', 1.0)
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

from vidmem.errors import UserInputError
from vidmem.models.backends.base import BackendBase

#: colour blocks and their bins per channel.
HSV_BINS = (8, 4, 4)
LAB_BINS = (4, 8, 8)
#: the OpenCV 8-bit a*/b* range that the Lab histogram spans (values outside are clipped).
LAB_AB_RANGE = (80.0, 176.0)
#: square-ring radii of the LBP histograms; 10 rotation-invariant uniform codes each.
LBP_RADII = (1, 2)
HOG_ORIENTATIONS = 9
HOG_CELL = 16
HOG_BLOCK = 2

_COLOUR_BLOCKS = ("hsv", "lab")
_TEXTURE_BLOCKS = ("lbp", "hog")


def check_rgb_image(image: Any, *, where: str) -> np.ndarray:
    """Validate one image of the protocol convention and return it as an ndarray.

    Args:
        image: expected ``uint8`` array of shape ``(H, W, 3)``, RGB, ``H, W >= 1``.
        where: what the image is, for the error message (e.g. ``"classic/sift: images[3]"``).

    Returns:
        The image as a ``uint8`` ``(H, W, 3)`` array (no copy when already one).

    Raises:
        UserInputError: when the array has another dtype, rank, channel count or is empty.

    Example:
        >>> check_rgb_image(np.zeros((2, 3, 3), np.uint8), where="x").shape
        (2, 3, 3)
    """
    arr = np.asarray(image)
    if arr.dtype != np.uint8 or arr.ndim != 3 or arr.shape[2] != 3 or arr.size == 0:
        raise UserInputError(
            f"{where}: expected an RGB image, a uint8 array of shape (H, W, 3) with H, W >= 1; "
            f"found dtype {arr.dtype} and shape {arr.shape}",
            hint="decode frames with vidmem.io (uint8 RGB); convert grey images with "
            "np.repeat(img[..., None], 3, axis=2) and floats with (img * 255).round().astype(np.uint8)",
        )
    return arr


def _check_mask(mask: Any, shape: tuple[int, int], *, where: str) -> np.ndarray:
    arr = np.asarray(mask)
    if arr.shape != shape or not (arr.dtype == np.bool_ or np.issubdtype(arr.dtype, np.integer)):
        raise UserInputError(
            f"{where}: expected a bool mask of shape {shape} (the image's H, W); "
            f"found dtype {arr.dtype} and shape {arr.shape}",
            hint="pass one bool (H, W) mask per image, or None for no mask; threshold "
            "probability masks first (mask > 0.5)",
        )
    return arr.astype(bool, copy=False)


def _mask_bbox(mask: np.ndarray) -> tuple[int, int, int, int]:
    rows = np.flatnonzero(mask.any(axis=1))
    cols = np.flatnonzero(mask.any(axis=0))
    return int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1


def _batched_histogram(index: np.ndarray, weight: np.ndarray, bins: int) -> np.ndarray:
    """Per-row histograms of bin indices, in one ``bincount`` for the whole batch.

    Args:
        index: ``(N, P)`` integer bin indices in ``[0, bins)``.
        weight: ``(N, P)`` float64 pixel weights (0 for masked-out pixels).
        bins: number of bins.

    Returns:
        ``(N, bins)`` float64 weighted counts.
    """
    n = index.shape[0]
    flat = (index + np.arange(n)[:, None] * bins).ravel()
    return np.bincount(flat, weights=weight.ravel(), minlength=n * bins).reshape(n, bins)


def _hsv_histogram(rgb: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Joint HSV histogram, ``(N, S, S, 3)`` uint8 RGB -> ``(N, 128)`` float64."""
    n, s = rgb.shape[0], rgb.shape[1]
    # cvtColor is per pixel, so the whole batch goes through as one tall image.
    hsv = cv2.cvtColor(rgb.reshape(n * s, s, 3), cv2.COLOR_RGB2HSV).reshape(n, s * s, 3)
    bh, bs, bv = HSV_BINS
    # Hue is circular (0..179 in OpenCV): bins are centred on 0, so red is not split.
    h = (hsv[..., 0].astype(np.int64) * 2 * bh + 180) // 360 % bh
    sat = hsv[..., 1].astype(np.int64) * bs // 256
    val = hsv[..., 2].astype(np.int64) * bv // 256
    return _batched_histogram((h * bs + sat) * bv + val, weight, bh * bs * bv)


def _lab_histogram(rgb: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Joint Lab histogram, ``(N, S, S, 3)`` uint8 RGB -> ``(N, 256)`` float64."""
    n, s = rgb.shape[0], rgb.shape[1]
    lab = cv2.cvtColor(rgb.reshape(n * s, s, 3), cv2.COLOR_RGB2LAB).reshape(n, s * s, 3)
    bl, ba, bb = LAB_BINS
    lo, hi = LAB_AB_RANGE
    lum = lab[..., 0].astype(np.int64) * bl // 256
    ab = (np.clip(lab[..., 1:].astype(np.float64), lo, hi - 1e-6) - lo) / (hi - lo)
    a = (ab[..., 0] * ba).astype(np.int64)
    b = (ab[..., 1] * bb).astype(np.int64)
    return _batched_histogram((lum * ba + a) * bb + b, weight, bl * ba * bb)


def _ring_offsets(radius: int) -> list[tuple[int, int]]:
    """8 neighbours on the square ring of ``radius``, in circular order."""
    r = radius
    return [(0, r), (-r, r), (-r, 0), (-r, -r), (0, -r), (r, -r), (r, 0), (r, r)]


def _lbp_histogram(grey: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Rotation-invariant uniform LBP histograms, ``(N, S, S)`` -> ``(N, 20)`` float64.

    For each pixel the 8 neighbours on the square ring are compared with the centre
    (``>=`` gives 1, edge-replicated borders). A pattern with at most two 0/1
    transitions around the ring is "uniform" and coded by its number of ones (0..8);
    every other pattern gets code 9. Vectorised over the batch.
    """
    n, s = grey.shape[0], grey.shape[1]
    g = grey.astype(np.int16)
    hists = []
    for radius in LBP_RADII:
        padded = np.pad(g, ((0, 0), (radius, radius), (radius, radius)), mode="edge")
        bits = np.stack(
            [
                padded[:, radius + dy : radius + dy + s, radius + dx : radius + dx + s] >= g
                for dy, dx in _ring_offsets(radius)
            ],
            axis=1,
        )  # (N, 8, S, S) bool
        ones = bits.sum(axis=1)
        transitions = (bits != np.roll(bits, 1, axis=1)).sum(axis=1)
        code = np.where(transitions <= 2, ones, 9).reshape(n, s * s)
        hists.append(_batched_histogram(code, weight, 10))
    return np.concatenate(hists, axis=1)


def _hog_features(grey: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """HOG of each ``(S, S)`` grey image, masked-out pixels filled with the kept mean."""
    from skimage.feature import hog

    rows = []
    for img, m in zip(grey, keep, strict=True):
        work = img.astype(np.float64)
        if not m.all():
            work = np.where(m, work, work[m].mean())
        rows.append(
            hog(
                work,
                orientations=HOG_ORIENTATIONS,
                pixels_per_cell=(HOG_CELL, HOG_CELL),
                cells_per_block=(HOG_BLOCK, HOG_BLOCK),
                block_norm="L2-Hys",
                feature_vector=True,
            )
        )
    return np.maximum(np.asarray(rows, dtype=np.float64), 0.0)


def _hellinger(block: np.ndarray) -> np.ndarray:
    """L1-normalise each row, then square-root; all-zero rows stay zero."""
    total = block.sum(axis=1, keepdims=True)
    return np.sqrt(np.divide(block, total, out=np.zeros_like(block), where=total > 0))


class ClassicEmbedder(BackendBase):
    """Colour-histogram + texture image embedder (weight-free, deterministic).

    Subclasses fix the blocks (:attr:`colour`, :attr:`texture`) and their default
    weights; the constructor can override ``size`` and the weights.

    Args:
        weights, device, dtype, batch_size: the common backend arguments; classic
            embedders have no weights (``weights`` must be ``None``), run on the CPU and
            process ``batch_size`` images per vectorised step.
        size: side in pixels of the square every image (or masked crop) is resized to;
            at least 32, and a multiple of 16 when a ``hog`` block is used.
        colour_weight: weight of the colour block in the cosine (0..1); the texture
            block gets ``1 - colour_weight``. Ignored when there is only one block.

    Attributes:
        dim: the embedding dimension ``D``.
    """

    name = "classic/unnamed"
    default_weights = None
    official = False
    colour: str | None = None
    texture: str | None = None
    default_colour_weight = 0.6

    def __init__(
        self,
        *,
        weights: Any = None,
        device: str = "cpu",
        dtype: str = "float32",
        batch_size: int = 64,
        size: int = 64,
        colour_weight: float | None = None,
    ) -> None:
        self._refuse_weights(
            weights, subject="this classic embedder", instead="a model backend such as dinov2/small"
        )
        super().__init__(weights=None, device=device, dtype=dtype, batch_size=batch_size)
        size = int(size)
        if size < 32 or (self.texture == "hog" and size % HOG_CELL):
            raise UserInputError(
                f"{self.name}: size must be an integer >= 32"
                + (f" and a multiple of {HOG_CELL} (HOG cells)" if self.texture == "hog" else "")
                + f"; found {size}",
                hint="use the default size=64",
            )
        cw = self.default_colour_weight if colour_weight is None else float(colour_weight)
        if not 0.0 <= cw <= 1.0:
            raise UserInputError(
                f"{self.name}: colour_weight must be in [0, 1]; found {cw}",
                hint=f"use the default {self.default_colour_weight}",
            )
        self.size = size
        blocks: dict[str, float] = {}
        if self.colour is not None and self.texture is not None:
            blocks = {self.colour: cw, self.texture: 1.0 - cw}
        elif self.colour is not None:
            blocks = {self.colour: 1.0}
        elif self.texture is not None:
            blocks = {self.texture: 1.0}
        self.block_weights = blocks
        self.dim = sum(self._block_dim(b) for b in blocks)
        self.settings.update({"size": size, "block_weights": dict(blocks), "dim": self.dim})

    def _block_dim(self, block: str) -> int:
        if block == "hsv":
            return int(np.prod(HSV_BINS))
        if block == "lab":
            return int(np.prod(LAB_BINS))
        if block == "lbp":
            return 10 * len(LBP_RADII)
        cells = self.size // HOG_CELL
        return (cells - HOG_BLOCK + 1) ** 2 * HOG_BLOCK**2 * HOG_ORIENTATIONS

    def _prepare(
        self, images: Sequence[np.ndarray], masks: Sequence[np.ndarray | None] | None, offset: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Crop, resize and stack: ``(N, S, S, 3)`` uint8 RGB and ``(N, S, S)`` bool kept."""
        s = self.size
        rgb = np.empty((len(images), s, s, 3), np.uint8)
        keep = np.ones((len(images), s, s), bool)
        for i, image in enumerate(images):
            where = f"{self.name}: images[{offset + i}]"
            img = check_rgb_image(image, where=where)
            mask = None if masks is None else masks[i]
            if mask is not None:
                mask = _check_mask(mask, img.shape[:2], where=f"{self.name}: masks[{offset + i}]")
                if not mask.any():
                    warnings.warn(
                        f"{self.name}: masks[{offset + i}] is empty; embedding the whole image",
                        RuntimeWarning,
                        stacklevel=3,
                    )
                    mask = None
            if mask is not None:
                y0, y1, x0, x1 = _mask_bbox(mask)
                img, mask = img[y0:y1, x0:x1], mask[y0:y1, x0:x1]
            rgb[i] = cv2.resize(img, (s, s), interpolation=cv2.INTER_AREA)
            if mask is not None and not mask.all():
                cover = cv2.resize(mask.astype(np.float32), (s, s), interpolation=cv2.INTER_AREA)
                kept = cover >= 0.5
                keep[i] = kept if kept.any() else cover > 0
        return rgb, keep

    def _embed_batch(self, rgb: np.ndarray, keep: np.ndarray) -> np.ndarray:
        n, s = rgb.shape[0], rgb.shape[1]
        weight = keep.reshape(n, s * s).astype(np.float64)
        grey = None
        parts = []
        for block, w in self.block_weights.items():
            if block == "hsv":
                hist = _hsv_histogram(rgb, weight)
            elif block == "lab":
                hist = _lab_histogram(rgb, weight)
            else:
                if grey is None:
                    grey = cv2.cvtColor(rgb.reshape(n * s, s, 3), cv2.COLOR_RGB2GRAY).reshape(
                        n, s, s
                    )
                hist = _lbp_histogram(grey, weight) if block == "lbp" else _hog_features(grey, keep)
            parts.append(_hellinger(hist) * np.sqrt(w))
        vec = np.concatenate(parts, axis=1)
        norm = np.linalg.norm(vec, axis=1, keepdims=True)
        # A zero row can only come from a flat grey image under HOG alone; give it a
        # fixed unit vector instead of NaNs so downstream cosines stay defined.
        zero = norm[:, 0] == 0
        if zero.any():
            vec[zero] = 1.0
            norm[zero] = np.sqrt(vec.shape[1])
        return (vec / norm).astype(np.float32)

    def embed_images(
        self, images: Sequence[np.ndarray], masks: Sequence[np.ndarray | None] | None = None
    ) -> np.ndarray:
        """Embed images (optionally only their masked pixels).

        Args:
            images: ``N`` RGB ``uint8`` arrays of shape ``(H_i, W_i, 3)``; sizes may differ.
            masks: optional ``N`` bool ``(H_i, W_i)`` masks (``None`` entries allowed);
                ``False`` pixels are ignored, see the module docstring.

        Returns:
            ``(N, D)`` float32, each row of unit L2 norm (``(0, D)`` for no images).

        Raises:
            UserInputError: on an image or mask that breaks the conventions, or when
                ``masks`` and ``images`` differ in length.
        """
        images = list(images)
        if masks is not None:
            masks = list(masks)
            if len(masks) != len(images):
                raise UserInputError(
                    f"{self.name}: got {len(images)} images but {len(masks)} masks",
                    hint="pass one mask per image (None for no mask), or masks=None",
                )
        out = np.empty((len(images), self.dim), np.float32)
        for start in range(0, len(images), self.batch_size):
            chunk = images[start : start + self.batch_size]
            mchunk = None if masks is None else masks[start : start + self.batch_size]
            rgb, keep = self._prepare(chunk, mchunk, start)
            out[start : start + len(chunk)] = self._embed_batch(rgb, keep)
        return out


class HsvLbpEmbedder(ClassicEmbedder):
    """``classic/hsv-lbp`` (the default): HSV histogram (0.6) + uniform LBP (0.4), D = 148."""

    name = "classic/hsv-lbp"
    colour = "hsv"
    texture = "lbp"
    default_colour_weight = 0.6


class LabHogEmbedder(ClassicEmbedder):
    """``classic/lab-hog``: Lab histogram (0.5) + HOG (0.5), D = 580 at ``size=64``.

    HOG keeps the coarse spatial layout, so this one is more shape-aware and less
    tolerant of shifts and rotations than ``classic/hsv-lbp``.
    """

    name = "classic/lab-hog"
    colour = "lab"
    texture = "hog"
    default_colour_weight = 0.5


class HsvHistEmbedder(ClassicEmbedder):
    """``classic/hsv-hist``: the HSV histogram alone (colour only), D = 128."""

    name = "classic/hsv-hist"
    colour = "hsv"
    texture = None
    default_colour_weight = 1.0


__all__ = [
    "ClassicEmbedder",
    "HsvHistEmbedder",
    "HsvLbpEmbedder",
    "LabHogEmbedder",
    "check_rgb_image",
]
