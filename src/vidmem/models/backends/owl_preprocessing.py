"""Input preprocessing of the OWL-ViT and OWLv2 detectors in numpy/PIL/scipy (no torchvision).

* OWL-ViT (:func:`owlvit_pixels`): the whole frame is resized (aspect ratio NOT kept) to
  the model's square input with PIL bicubic on uint8, scaled to [0, 1] and normalised
  with the CLIP mean/std.
* OWLv2 (:func:`owlv2_pixels`): the frame is scaled to [0, 1], padded at the
  bottom/right to a square of side ``max(H, W)``, resized with a Gaussian anti-aliasing
  filter and linear interpolation (the scikit-image resize that the original and
  transformers use, via scipy), and normalised with the CLIP mean/std.

How predicted boxes map back to the frame is described in
:mod:`vidmem.models.backends.owlvit`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image

from vidmem.models.backends.hf_detection import normalize_to_chw, resize_to_chw
from vidmem.models.backends.hf_images import CLIP_MEAN, CLIP_STD

__all__ = ["owlv2_pixels", "owlvit_pixels"]


def owlvit_pixels(
    image: np.ndarray,
    size: int,
    mean: Sequence[float] = CLIP_MEAN,
    std: Sequence[float] = CLIP_STD,
) -> np.ndarray:
    """OWL-ViT input for one frame: stretch to ``size x size`` (PIL bicubic), normalise.

    Args:
        image: ``uint8 (H, W, 3)`` RGB.
        size: the model's square input side (``vision_config.image_size``).

    Returns:
        ``float32 (3, size, size)``.
    """
    return resize_to_chw(image, (size, size), Image.Resampling.BICUBIC, mean, std)


def owlv2_pixels(
    image: np.ndarray,
    size: int,
    mean: Sequence[float] = CLIP_MEAN,
    std: Sequence[float] = CLIP_STD,
    pad_value: float = 0.5,
) -> np.ndarray:
    """OWLv2 input for one frame: pad bottom/right to a square, anti-aliased resize.

    Args:
        image: ``uint8 (H, W, 3)`` RGB.
        size: the model's square input side (960 for the released checkpoints).
        pad_value: fill of the padding in [0, 1] units (0.5 = grey, the original's).

    Returns:
        ``float32 (3, size, size)``; the frame lies in the top-left
        ``round(W * size / S) x round(H * size / S)`` block, ``S = max(H, W)``.
    """
    from scipy import ndimage

    height, width = image.shape[:2]
    side = max(height, width)
    padded = np.full((side, side, 3), pad_value, dtype=np.float32)
    padded[:height, :width] = image.astype(np.float32) / 255.0
    factor = side / float(size)
    if side != size:
        if factor > 1:
            sigma = (factor - 1) / 2
            padded_f = ndimage.gaussian_filter(
                padded, sigma=(sigma, sigma, 0), cval=0, mode="mirror"
            )
        else:
            padded_f = padded
        out = ndimage.zoom(
            padded_f, (1 / factor, 1 / factor, 1), order=1, mode="mirror", cval=0, grid_mode=True
        )
        out = np.clip(out, padded.min(), padded.max())
    else:
        out = padded
    return normalize_to_chw(out, mean, std)
