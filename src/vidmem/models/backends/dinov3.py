"""DINOv3 image embeddings (``transformers.DINOv3ViTModel``).

Feature: the model's ``pooler_output``, i.e. the CLS token of the sequence after the
final ``norm`` (register and patch tokens are ignored), L2-normalised, float32, shape
``(N, hidden_size)``: 384 (vits16), 768 (vitb16), 1024 (vitl16).

Preprocessing reproduces ``DINOv3ViTImageProcessor``'s defaults in numpy/PIL (that class
needs torchvision): scale by 1/255, resize to ``image_size`` x ``image_size`` (no crop,
aspect ratio not kept) with an antialiased bilinear filter *on the float image* (the
official order is rescale -> resize -> normalise), then normalise with the ImageNet
mean/std. DINOv3 uses rotary position embeddings, so any ``image_size`` that is a
multiple of the patch size (16) works; 224 is the default.

Registered as ``dinov3/vits16|vitb16|vitl16`` (weights
``facebook/dinov3-<variant>-pretrain-lvd1689m``; gated on the hub, fetch them once
with an accepted licence).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from vidmem.models.backends.hf_images import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    HFEmbedderBase,
    check_images,
    normalise,
    resample_filter,
    resize_float,
    to_nchw,
)


class Dinov3Embedder(HFEmbedderBase):
    """DINOv3 CLS embeddings of image crops (default: ``facebook/dinov3-vits16-pretrain-lvd1689m``).

    Args:
        weights: local model directory or hub id (looked up offline).
        device: torch device string.
        dtype: ``"float32"``, ``"float16"`` or ``"bfloat16"`` for the model; output is float32.
        batch_size: images per forward pass.
        image_size: side of the square the image is resized to (pixels, multiple of 16).
        resample: PIL filter for the resize (``"bilinear"`` as in the official processor).
        model_dir: extra directory searched for hub ids.
    """

    name = "dinov3/vits16"
    default_weights = "facebook/dinov3-vits16-pretrain-lvd1689m"
    official = True
    model_class = "DINOv3ViTModel"
    model_types = ("dinov3_vit",)

    def __init__(
        self,
        *,
        weights: str | Path | None = None,
        device: str = "cpu",
        dtype: str = "float32",
        batch_size: int = 32,
        image_size: int = 224,
        resample: str = "bilinear",
        model_dir: str | Path | None = None,
    ) -> None:
        super().__init__(
            weights=weights, device=device, dtype=dtype, batch_size=batch_size, model_dir=model_dir
        )
        self._resample = resample_filter(resample, where=self.name)
        self._load_model()
        self._check_patch_multiple(image_size, default_patch=16)
        self.image_size = int(image_size)
        self.dim = int(self.config["hidden_size"])
        self.settings = {
            "feature": "pooler_output (CLS token after the final norm), L2-normalised",
            "resize": [self.image_size, self.image_size],
            "resize_order": "rescale -> resize (float) -> normalise",
            "resample": resample,
            "mean": list(IMAGENET_MEAN),
            "std": list(IMAGENET_STD),
            "dim": self.dim,
            "batch_size": self.batch_size,
        }

    def preprocess(self, images: Sequence[np.ndarray]) -> np.ndarray:
        """Images -> float32 ``(N, 3, image_size, image_size)``, as the official processor."""
        size = (self.image_size, self.image_size)
        return to_nchw(
            [
                normalise(
                    resize_float(img.astype(np.float32) / np.float32(255), size, self._resample),
                    IMAGENET_MEAN,
                    IMAGENET_STD,
                )
                for img in images
            ]
        )

    def embed_images(self, images: Sequence[np.ndarray]) -> np.ndarray:
        """Return ``(len(images), D)`` float32 CLS embeddings with unit L2 norm per row."""
        images = check_images(images, where=self.name)

        def encode(chunk: Sequence[np.ndarray]):
            out = self.model(pixel_values=self._pixels(self.preprocess(chunk)))
            return out.pooler_output

        return self._run_batched(images, encode, self.dim)


class Dinov3ViTS16(Dinov3Embedder):
    """``dinov3/vits16``: ViT-S/16 distilled, 21M parameters, 384-d."""

    name = "dinov3/vits16"
    default_weights = "facebook/dinov3-vits16-pretrain-lvd1689m"


class Dinov3ViTB16(Dinov3Embedder):
    """``dinov3/vitb16``: ViT-B/16 distilled, 86M parameters, 768-d."""

    name = "dinov3/vitb16"
    default_weights = "facebook/dinov3-vitb16-pretrain-lvd1689m"


class Dinov3ViTL16(Dinov3Embedder):
    """``dinov3/vitl16``: ViT-L/16 distilled, 300M parameters, 1024-d."""

    name = "dinov3/vitl16"
    default_weights = "facebook/dinov3-vitl16-pretrain-lvd1689m"
