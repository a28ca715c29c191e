"""SAM 2 and SAM box-prompted segmenters (transformers), families ``sam2`` / ``sam``.

Registered variants:

====================  ==================================  =========
name                  default weights                     official
====================  ==================================  =========
``sam2/tiny``         ``facebook/sam2.1-hiera-tiny``      yes (CMBench: "SAM 2")
``sam2/small``        ``facebook/sam2.1-hiera-small``     yes
``sam2/base-plus``    ``facebook/sam2.1-hiera-base-plus`` yes
``sam2/large``        ``facebook/sam2.1-hiera-large``     yes
``sam/vit-base``      ``facebook/sam-vit-base``           no
``sam/vit-large``     ``facebook/sam-vit-large``          no
``sam/vit-huge``      ``facebook/sam-vit-huge``           no
====================  ==================================  =========

``segment(images, boxes)`` returns one ``bool (H, W)`` mask per ``(image, box)`` pair.

One mask per box. By default the decoder runs with ``multimask_output=False`` -- the
setting the SAM authors recommend for unambiguous prompts such as boxes. For SAM 2 this
is the single-mask token with SAM 2's own stability fallback (when that mask is unstable,
the best of the three multimask outputs by predicted IoU is used instead, as in the
official predictor); for SAM it is the single-mask token. With ``multimask_output=True``
the three candidate masks are computed and the one with the highest predicted IoU kept.

Sharing image embeddings. Pairs whose image is the *same array object* (checked with
``id()``, nothing is hashed) share one image-embedding pass, and all their boxes are
decoded together. ``batch_size`` counts distinct images per encoder pass.

Preprocessing (numpy/PIL; no torchvision):

* SAM 2: resize the frame to the square model input (1024 x 1024, aspect not kept), PIL
  bilinear on uint8, scale to [0, 1], ImageNet mean/std. Boxes are scaled by
  ``(1024 / W, 1024 / H)``. The 256 x 256 mask logits are upsampled bilinearly
  (``align_corners=False``) straight to ``(H, W)`` and thresholded at 0 -- the official
  ``SAM2Transforms.postprocess_masks`` without hole filling.
* SAM: resize so that the longer side is 1024 (``round`` half up, as SAM's
  ``ResizeLongestSide``), PIL bilinear, ImageNet mean/std, pad bottom/right with zeros to
  1024 x 1024. Boxes are scaled by ``(w' / W, h' / H)`` of the resized frame. Mask logits
  are upsampled to 1024 x 1024, cropped to ``h' x w'``, upsampled to ``(H, W)`` and
  thresholded at 0 (SAM's ``postprocess_masks``).

PIL's bilinear downscaling is antialiased, like torchvision's ``Resize`` on tensors in
the official SAM 2 transforms; the two are close but not bit-identical.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from vidmem.errors import UserInputError
from vidmem.models.backends.base import batched, import_torch
from vidmem.models.backends.hf_detection import HFDetectionBase, check_images, resize_to_chw
from vidmem.models.backends.hf_images import IMAGENET_MEAN, IMAGENET_STD
from vidmem.models.protocols import Box

__all__ = [
    "Sam2BasePlus",
    "Sam2Large",
    "Sam2Segmenter",
    "Sam2Small",
    "Sam2Tiny",
    "SamSegmenter",
    "SamVitBase",
    "SamVitHuge",
    "SamVitLarge",
    "check_boxes",
    "longest_side_size",
    "sam2_pixels",
    "sam_pixels",
    "upsample_mask_logits",
]

#: boxes decoded together per image at most (bounds memory; no effect on the masks)
MAX_BOXES_PER_PASS = 64


def check_boxes(boxes: Sequence[Box], n_images: int, *, where: str) -> np.ndarray:
    """Validate one box per image; return ``(N, 4)`` float64.

    Raises:
        UserInputError: count mismatch, not 4 finite numbers, or ``x1 <= x0`` / ``y1 <= y0``.
    """
    items = list(boxes)
    if len(items) != n_images:
        raise UserInputError(
            f"{where}: expected one box per image, found {len(items)} boxes for {n_images} images",
            hint="repeat the image object in `images` once per box (the embedding is shared)",
        )
    out = np.zeros((len(items), 4), dtype=np.float64)
    for i, box in enumerate(items):
        try:
            values = [float(v) for v in box]
        except (TypeError, ValueError):
            raise UserInputError(
                f"{where}: box {i} must be 4 numbers (x0, y0, x1, y1), found {box!r}"
            ) from None
        if len(values) != 4 or not all(math.isfinite(v) for v in values):
            raise UserInputError(
                f"{where}: box {i} must be 4 finite numbers (x0, y0, x1, y1), found {box!r}"
            )
        x0, y0, x1, y1 = values
        if not (x1 > x0 and y1 > y0):
            raise UserInputError(
                f"{where}: box {i} must have x1 > x0 and y1 > y0 (pixel corners), found {box!r}",
                hint="boxes are (x0, y0, x1, y1), not (x, y, w, h)",
            )
        out[i] = values
    return out


def longest_side_size(height: int, width: int, longest: int) -> tuple[int, int]:
    """``(h', w')`` with the longer side scaled to ``longest`` (round half up), as SAM.

    Example:
        >>> longest_side_size(480, 640, 1024)
        (768, 1024)
        >>> longest_side_size(100, 300, 64)
        (21, 64)
    """
    scale = longest / max(height, width)
    return int(height * scale + 0.5), int(width * scale + 0.5)


def sam2_pixels(
    image: np.ndarray,
    size: int,
    mean: Sequence[float] = IMAGENET_MEAN,
    std: Sequence[float] = IMAGENET_STD,
) -> np.ndarray:
    """SAM 2 input for one frame: stretch to ``size x size`` (PIL bilinear), normalise -> ``float32 (3, size, size)``."""
    return resize_to_chw(image, (size, size), Image.Resampling.BILINEAR, mean, std)


def sam_pixels(
    image: np.ndarray,
    size: int,
    mean: Sequence[float] = IMAGENET_MEAN,
    std: Sequence[float] = IMAGENET_STD,
) -> np.ndarray:
    """SAM input for one frame: longest side to ``size``, normalise, zero-pad to ``size x size``.

    Returns:
        ``float32 (3, size, size)``; the frame fills the top-left ``h' x w'`` block of
        :func:`longest_side_size`.
    """
    h, w = longest_side_size(image.shape[0], image.shape[1], size)
    chw = resize_to_chw(image, (h, w), Image.Resampling.BILINEAR, mean, std)
    out = np.zeros((3, size, size), dtype=np.float32)
    out[:, :h, :w] = chw
    return out


def upsample_mask_logits(
    logits: Any,
    original_size: tuple[int, int],
    *,
    padded_size: tuple[int, int] | None = None,
    valid_size: tuple[int, int] | None = None,
) -> Any:
    """Bring low-resolution mask logits back to the original frame (torch, bilinear).

    Args:
        logits: ``(N, h, w)`` float tensor of mask logits.
        original_size: ``(H, W)`` of the frame.
        padded_size: SAM only -- first upsample to the padded model input ``(S, S)``...
        valid_size: ...then crop to the resized frame ``(h', w')`` before the final resize.

    Returns:
        ``(N, H, W)`` float tensor of logits (threshold at 0 for the mask).
    """
    torch = import_torch()
    functional = torch.nn.functional
    x = logits[:, None].float()
    if padded_size is not None:
        x = functional.interpolate(x, size=padded_size, mode="bilinear", align_corners=False)
        if valid_size is not None:
            x = x[..., : valid_size[0], : valid_size[1]]
    x = functional.interpolate(x, size=original_size, mode="bilinear", align_corners=False)
    return x[:, 0]


class _BoxSegmenter(HFDetectionBase):
    """Shared ``segment`` loop: group pairs by image identity, encode, decode per image."""

    name = "sam/custom"

    def __init__(
        self,
        *,
        weights: str | Path | None = None,
        device: str = "cpu",
        dtype: str = "float32",
        batch_size: int = 4,
        model_dir: str | Path | None = None,
        multimask_output: bool = False,
    ) -> None:
        super().__init__(
            weights=weights,
            device=device,
            dtype=dtype,
            batch_size=batch_size,
            model_dir=model_dir,
            multimask_output=bool(multimask_output),
        )
        self.multimask_output = bool(multimask_output)
        self.image_size = int(self.model.config.prompt_encoder_config.image_size)
        self._read_preprocessing(IMAGENET_MEAN, IMAGENET_STD)
        self.settings.update(
            image_size=self.image_size,
            image_mean=list(self.image_mean),
            image_std=list(self.image_std),
            mask_threshold=0.0,
            mask_selection="highest predicted IoU of 3"
            if self.multimask_output
            else "single-mask output",
        )

    # subclass hooks -------------------------------------------------------------------

    def _pixel_array(self, image: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _decode(
        self, embeddings: Any, j: int, boxes: np.ndarray, shape: tuple[int, int]
    ) -> np.ndarray:
        raise NotImplementedError

    # shared ---------------------------------------------------------------------------

    def _embed(self, pixel_values: Any) -> Any:
        return self.model.get_image_embeddings(pixel_values)

    def _decode_boxes(
        self, image_embeddings: Any, boxes: np.ndarray, scale_x: float, scale_y: float
    ) -> Any:
        """Decode pixel ``boxes`` scaled to the model input by ``(scale_x, scale_y)``: the
        low-resolution mask logits per box (with ``multimask_output``, the best by IoU)."""
        scaled = boxes * np.array([scale_x, scale_y, scale_x, scale_y])
        input_boxes = self._torch.as_tensor(
            scaled[None], dtype=self._param.dtype, device=self._param.device
        )
        out = self.model(
            image_embeddings=image_embeddings,
            input_boxes=input_boxes,
            multimask_output=self.multimask_output,
        )
        # (nb, k, h, w) candidates + (nb, k) predicted IoU -> (nb, h, w)
        pred_masks, iou_scores = out.pred_masks[0], out.iou_scores[0]
        if pred_masks.shape[1] == 1:
            return pred_masks[:, 0]
        best = iou_scores.argmax(dim=1)
        return pred_masks[self._torch.arange(pred_masks.shape[0], device=pred_masks.device), best]

    def segment(self, images: Sequence[np.ndarray], boxes: Sequence[Box]) -> list[np.ndarray]:
        """Segment the object inside each box.

        Args:
            images: ``uint8 (H, W, 3)`` RGB frames, one per box; pass the same array
                object several times to segment several boxes of one frame with one
                image-embedding pass.
            boxes: pixel ``(x0, y0, x1, y1)`` in the coordinates of the paired image.

        Returns:
            One ``bool (H, W)`` mask per pair, in input order.

        Raises:
            UserInputError: bad images, boxes, or a count mismatch.
        """
        where = f"{self.name}.segment"
        frames = check_images(images, where=where)
        box_arr = check_boxes(boxes, len(frames), where=where)
        groups: dict[int, list[int]] = {}
        for i, frame in enumerate(frames):
            groups.setdefault(id(frame), []).append(i)
        uniques = [(frames[idx[0]], idx) for idx in groups.values()]
        masks: list[np.ndarray | None] = [None] * len(frames)
        torch = self._torch
        for chunk in batched(uniques, self.batch_size):
            pixel_values = self._model_input(np.stack([self._pixel_array(img) for img, _ in chunk]))
            with torch.inference_mode():
                embeddings = self._embed(pixel_values)
                for j, (img, indices) in enumerate(chunk):
                    for sub in batched(indices, MAX_BOXES_PER_PASS):
                        sub_masks = self._decode(embeddings, j, box_arr[list(sub)], img.shape[:2])
                        for k, i in enumerate(sub):
                            masks[i] = sub_masks[k]
        return [
            m if m is not None else np.zeros(f.shape[:2], bool)
            for m, f in zip(masks, frames, strict=True)
        ]


class Sam2Segmenter(_BoxSegmenter):
    """SAM 2 / 2.1 (``Sam2Model``) with box prompts; see the module docstring.

    Args:
        weights: local directory or hub id (default: the variant's checkpoint).
        device: torch device string.
        dtype: ``"float32"`` (default), ``"float16"`` or ``"bfloat16"``.
        batch_size: distinct images per image-encoder pass.
        model_dir: extra directory searched for hub ids.
        multimask_output: ``False`` (default) single mask; ``True`` best of 3 by predicted IoU.
    """

    name = "sam2/custom"
    _model_class = "Sam2Model"
    _model_types = ("sam2",)

    def _pixel_array(self, image: np.ndarray) -> np.ndarray:
        return sam2_pixels(image, self.image_size, self.image_mean, self.image_std)

    def _decode(
        self, embeddings: Any, j: int, boxes: np.ndarray, shape: tuple[int, int]
    ) -> np.ndarray:
        height, width = shape
        s = float(self.image_size)
        low = self._decode_boxes([e[j : j + 1] for e in embeddings], boxes, s / width, s / height)
        return (upsample_mask_logits(low, (height, width)) > 0).cpu().numpy()


class SamSegmenter(_BoxSegmenter):
    """SAM (``SamModel``) with box prompts; the alternative to SAM 2. Arguments as :class:`Sam2Segmenter`."""

    name = "sam/custom"
    _model_class = "SamModel"
    _model_types = ("sam",)

    def _pixel_array(self, image: np.ndarray) -> np.ndarray:
        return sam_pixels(image, self.image_size, self.image_mean, self.image_std)

    def _decode(
        self, embeddings: Any, j: int, boxes: np.ndarray, shape: tuple[int, int]
    ) -> np.ndarray:
        height, width = shape
        new_h, new_w = longest_side_size(height, width, self.image_size)
        low = self._decode_boxes(embeddings[j : j + 1], boxes, new_w / width, new_h / height)
        up = upsample_mask_logits(
            low,
            (height, width),
            padded_size=(self.image_size, self.image_size),
            valid_size=(new_h, new_w),
        )
        return (up > 0).cpu().numpy()


class Sam2Tiny(Sam2Segmenter):
    """``sam2/tiny``: SAM 2.1 Hiera-T."""

    name = "sam2/tiny"
    default_weights = "facebook/sam2.1-hiera-tiny"
    official = True


class Sam2Small(Sam2Segmenter):
    """``sam2/small``: SAM 2.1 Hiera-S."""

    name = "sam2/small"
    default_weights = "facebook/sam2.1-hiera-small"
    official = True


class Sam2BasePlus(Sam2Segmenter):
    """``sam2/base-plus``: SAM 2.1 Hiera-B+."""

    name = "sam2/base-plus"
    default_weights = "facebook/sam2.1-hiera-base-plus"
    official = True


class Sam2Large(Sam2Segmenter):
    """``sam2/large``: SAM 2.1 Hiera-L."""

    name = "sam2/large"
    default_weights = "facebook/sam2.1-hiera-large"
    official = True


class SamVitBase(SamSegmenter):
    """``sam/vit-base``."""

    name = "sam/vit-base"
    default_weights = "facebook/sam-vit-base"


class SamVitLarge(SamSegmenter):
    """``sam/vit-large``."""

    name = "sam/vit-large"
    default_weights = "facebook/sam-vit-large"


class SamVitHuge(SamSegmenter):
    """``sam/vit-huge``."""

    name = "sam/vit-huge"
    default_weights = "facebook/sam-vit-huge"
