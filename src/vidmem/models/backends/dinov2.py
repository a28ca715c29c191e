"""DINOv2 image embeddings (``transformers.Dinov2Model``), the protocols' crop embedder.

Feature: the model's ``pooler_output``, i.e. the CLS token of ``last_hidden_state``
*after* the final layernorm (``Dinov2Model`` applies ``layernorm`` to the whole sequence
and pools position 0), L2-normalised, float32, shape ``(N, hidden_size)``: 384 (small),
768 (base), 1024 (large), 1536 (giant).

Preprocessing reproduces the official processor (``BitImageProcessor`` as configured in
``facebook/dinov2-*``: ``size={"shortest_edge": 256}``, bicubic, ``crop_size=224``) in
numpy/PIL: resize the shorter side to ``resize_size`` (bicubic, PIL on uint8, longer
side ``int(256 * long / short)``), center crop ``image_size`` x ``image_size``, scale by
1/255, normalise with the ImageNet mean/std. ``image_size`` is configurable (it must be
a multiple of the patch size, 14); ``resize_size`` defaults to ``image_size * 256 / 224``.

Registered as ``dinov2/small|base|large|giant`` (weights ``facebook/dinov2-<variant>``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from vidmem.errors import UserInputError
from vidmem.models.backends.hf_images import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    HFEmbedderBase,
    center_crop,
    check_images,
    normalise,
    resample_filter,
    resize_shorter_side,
    to_nchw,
)


class Dinov2Embedder(HFEmbedderBase):
    """DINOv2 CLS embeddings of image crops (default: ``facebook/dinov2-small``).

    Args:
        weights: local model directory or hub id (looked up offline, see
            :func:`vidmem.models.weights.resolve_weights`).
        device: torch device string (``"cpu"``, ``"cuda"``, ``"cuda:1"``).
        dtype: ``"float32"``, ``"float16"`` or ``"bfloat16"`` for the model; the output
            is always float32.
        batch_size: images per forward pass.
        image_size: side of the square center crop fed to the model (pixels).
        resize_size: shorter side after the first resize (pixels); ``None`` means
            ``int(image_size * 256 / 224)`` (256 for the default 224).
        resample: PIL filter for the resize (``"bicubic"`` as in the official processor).
        model_dir: extra directory searched for hub ids.

    Example:
        >>> emb = Dinov2Embedder(weights="/models/dinov2-small")  # doctest: +SKIP
        >>> emb.embed_images([crop_a, crop_b]).shape  # doctest: +SKIP
        (2, 384)
    """

    name = "dinov2/small"
    default_weights = "facebook/dinov2-small"
    official = True
    model_class = "Dinov2Model"
    model_types = ("dinov2",)

    def __init__(
        self,
        *,
        weights: str | Path | None = None,
        device: str = "cpu",
        dtype: str = "float32",
        batch_size: int = 32,
        image_size: int = 224,
        resize_size: int | None = None,
        resample: str = "bicubic",
        model_dir: str | Path | None = None,
    ) -> None:
        super().__init__(
            weights=weights, device=device, dtype=dtype, batch_size=batch_size, model_dir=model_dir
        )
        self._resample = resample_filter(resample, where=self.name)
        self._load_model()
        self._check_patch_multiple(image_size, default_patch=14)
        if resize_size is None:
            resize_size = int(image_size * 256 / 224)
        if resize_size < image_size:
            raise UserInputError(
                f"backend '{self.name}': resize_size ({resize_size}) must be >= image_size "
                f"({image_size}) so that the center crop fits",
                hint="leave resize_size unset to use image_size * 256 / 224",
            )
        self.image_size = int(image_size)
        self.resize_size = int(resize_size)
        self.dim = int(self.config["hidden_size"])
        self.settings = {
            "feature": "pooler_output (CLS token after the final layernorm), L2-normalised",
            "resize_shorter_side": self.resize_size,
            "center_crop": self.image_size,
            "resample": resample,
            "mean": list(IMAGENET_MEAN),
            "std": list(IMAGENET_STD),
            "dim": self.dim,
            "batch_size": self.batch_size,
        }

    def crop(self, images: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Resize the shorter side (bicubic, uint8) and center crop: uint8 ``(S, S, 3)`` each."""
        size = (self.image_size, self.image_size)
        return [
            center_crop(resize_shorter_side(img, self.resize_size, self._resample), size)
            for img in images
        ]

    def preprocess(self, images: Sequence[np.ndarray]) -> np.ndarray:
        """Images -> float32 ``(N, 3, image_size, image_size)``, as the official processor.

        :meth:`embed_images` does the same steps but normalises the stacked uint8 crops
        in torch on the model's device (equal to within float32 rounding).
        """
        return to_nchw([normalise(c, IMAGENET_MEAN, IMAGENET_STD) for c in self.crop(images)])

    def embed_images(self, images: Sequence[np.ndarray]) -> np.ndarray:
        """Return ``(len(images), D)`` float32 CLS embeddings with unit L2 norm per row."""
        images = check_images(images, where=self.name)

        def encode(chunk: Sequence[np.ndarray]):
            pixels = self._pixels_from_uint8(self.crop(chunk), IMAGENET_MEAN, IMAGENET_STD)
            return self.model(pixel_values=pixels).pooler_output

        return self._run_batched(images, encode, self.dim)


class Dinov2Small(Dinov2Embedder):
    """``dinov2/small``: ViT-S/14, 22M parameters, 384-d."""

    name = "dinov2/small"
    default_weights = "facebook/dinov2-small"


class Dinov2Base(Dinov2Embedder):
    """``dinov2/base``: ViT-B/14, 86M parameters, 768-d."""

    name = "dinov2/base"
    default_weights = "facebook/dinov2-base"


class Dinov2Large(Dinov2Embedder):
    """``dinov2/large``: ViT-L/14, 304M parameters, 1024-d."""

    name = "dinov2/large"
    default_weights = "facebook/dinov2-large"


class Dinov2Giant(Dinov2Embedder):
    """``dinov2/giant``: ViT-g/14, 1.1B parameters, 1536-d."""

    name = "dinov2/giant"
    default_weights = "facebook/dinov2-giant"
