"""OWL-ViT and OWLv2 open-vocabulary detectors (transformers), family ``owlvit`` / ``owlv2``.

Registered variants:

=============================  ===================================  =========
name                           default weights                      official
=============================  ===================================  =========
``owlvit/base-patch32``        ``google/owlvit-base-patch32``       yes (CMBench)
``owlvit/base-patch16``        ``google/owlvit-base-patch16``       no
``owlvit/large-patch14``       ``google/owlvit-large-patch14``      no
``owlv2/base-patch16-ensemble`` ``google/owlv2-base-patch16-ensemble`` no
=============================  ===================================  =========

Both kinds of query are supported:

* **text** (``text_queries=[...]``): every query is tokenised with the CLIP tokenizer
  found in the weights directory (padded/truncated to the text tower's 16 positions);
  each predicted box gets ``score = max_q sigmoid(logit_q)`` and ``label`` = the query
  string (exactly as given) that reached that maximum. A box is kept when
  ``score > threshold`` (default 0.1, as transformers' ``post_process_object_detection``);
  no NMS unless ``text_nms_iou`` is set.
* **image** (``image_query=crop``): image-guided one-shot detection. The query image is
  embedded once per call and its query embedding chosen exactly as
  ``image_guided_detection`` does (OWL-ViT: the box covering most of the query image;
  OWLv2: the box with the highest objectness). ``score = sigmoid(logit)``, kept when
  ``score > image_threshold`` (OWL-ViT 0.6, OWLv2 0.9: the values of the transformers
  documentation examples), then greedy NMS at IoU ``image_nms_iou`` = 0.3 (as
  ``post_process_image_guided_detection``). The reported score is the raw sigmoid,
  not the display "alpha" transformers rescales it to. ``label`` is ``"image_query"``.

Preprocessing (numpy/PIL/scipy, no torchvision) is in
:mod:`vidmem.models.backends.owl_preprocessing`:

* OWL-ViT stretches the whole frame (aspect ratio NOT kept) to the model's square input
  (``vision_config.image_size``: 768 for B/32 and B/16, 840 for L/14), so a predicted
  box ``(cx, cy, w, h)`` normalised to the model input maps back with x scaled by the
  frame width and y by the frame height (:func:`relative_boxes_to_pixels`).
* OWLv2 pads the frame at the bottom/right to a square of side ``max(H, W)`` with
  ``pad_value`` (0.5 grey, as the original OWLv2 code and transformers 4.x;
  transformers 5 pads with 0.0) before resizing it to 960 x 960. Boxes are normalised
  to the padded square, so both axes scale by ``max(H, W)``
  (:func:`padded_square_boxes_to_pixels`).

Boxes come back in pixels of the original frame, clipped to ``[0, W] x [0, H]``; boxes
that are empty after clipping (entirely in the padding) are dropped; detections are
sorted by descending score (ties keep the model's patch order).

The helpers shared with the other transformers detection and segmentation backends
(image/threshold validation, model loading, box maths, NMS) live in
:mod:`vidmem.models.backends.hf_detection` and are re-exported here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vidmem.errors import UserInputError
from vidmem.models.backends.base import batched
from vidmem.models.backends.hf_detection import (
    HFDetectionBase,
    check_images,
    check_text_queries,
    check_threshold,
    cxcywh_to_xyxy,
    finalize_detections,
    greedy_nms,
    load_hf_model,
    load_tokenizer,
    normalize_to_chw,
    padded_square_boxes_to_pixels,
    preprocessor_mean_std,
    query_detections,
    read_preprocessor_config,
    relative_boxes_to_pixels,
)
from vidmem.models.backends.hf_images import CLIP_MEAN, CLIP_STD, IMAGENET_MEAN, IMAGENET_STD
from vidmem.models.backends.owl_preprocessing import owlv2_pixels, owlvit_pixels
from vidmem.models.protocols import Detection

__all__ = [
    "CLIP_MEAN",
    "CLIP_STD",
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "OwlVitBasePatch16",
    "OwlVitBasePatch32",
    "OwlVitDetector",
    "OwlVitLargePatch14",
    "Owlv2BasePatch16Ensemble",
    "Owlv2Detector",
    "check_images",
    "check_text_queries",
    "check_threshold",
    "cxcywh_to_xyxy",
    "finalize_detections",
    "greedy_nms",
    "load_hf_model",
    "load_tokenizer",
    "normalize_to_chw",
    "owlv2_pixels",
    "owlvit_pixels",
    "padded_square_boxes_to_pixels",
    "preprocessor_mean_std",
    "read_preprocessor_config",
    "relative_boxes_to_pixels",
]

IMAGE_QUERY_LABEL = "image_query"


class OwlVitDetector(HFDetectionBase):
    """OWL-ViT detector (``OwlViTForObjectDetection``); see the module docstring.

    Args:
        weights: local directory or hub id (default: the variant's checkpoint).
        device: torch device string.
        dtype: ``"float32"`` (default), ``"float16"`` or ``"bfloat16"``.
        batch_size: frames per forward pass.
        model_dir: extra directory searched for hub ids.
        threshold: default score threshold for text queries (0.1).
        image_threshold: default score threshold for image queries (0.6 OWL-ViT, 0.9 OWLv2).
        image_nms_iou: greedy-NMS IoU for image queries (0.3; ``None`` = off).
        text_nms_iou: greedy-NMS IoU for text queries (``None`` = off, the default).
    """

    name = "owlvit/custom"
    supports_text = True
    supports_image_query = True

    _model_class = "OwlViTForObjectDetection"
    _model_types: tuple[str, ...] = ("owlvit",)
    default_threshold = 0.1
    default_image_threshold = 0.6
    preprocessing = "resize to square (aspect not kept), PIL bicubic, CLIP mean/std"

    def __init__(
        self,
        *,
        weights: str | Path | None = None,
        device: str = "cpu",
        dtype: str = "float32",
        batch_size: int = 16,
        model_dir: str | Path | None = None,
        threshold: float | None = None,
        image_threshold: float | None = None,
        image_nms_iou: float | None = 0.3,
        text_nms_iou: float | None = None,
    ) -> None:
        where = f"{self.name}"
        thr = check_threshold(
            self.default_threshold if threshold is None else threshold, where=where
        )
        img_thr = check_threshold(
            self.default_image_threshold if image_threshold is None else image_threshold,
            where=where,
            name="image_threshold",
        )
        img_nms = (
            None
            if image_nms_iou is None
            else check_threshold(image_nms_iou, where=where, name="image_nms_iou")
        )
        txt_nms = (
            None
            if text_nms_iou is None
            else check_threshold(text_nms_iou, where=where, name="text_nms_iou")
        )
        super().__init__(
            weights=weights,
            device=device,
            dtype=dtype,
            batch_size=batch_size,
            model_dir=model_dir,
            threshold=thr,
            image_threshold=img_thr,
            image_nms_iou=img_nms,
            text_nms_iou=txt_nms,
            **self._extra_settings(),
        )
        self.threshold = thr
        self.image_threshold = img_thr
        self.image_nms_iou = img_nms
        self.text_nms_iou = txt_nms
        assert self.weights_path is not None
        self.tokenizer = load_tokenizer(self.weights_path, backend=self.name)
        config = self.model.config
        image_size = config.vision_config.image_size
        self.image_size = int(
            image_size[0] if isinstance(image_size, (list, tuple)) else image_size
        )
        self.max_text_length = int(config.text_config.max_position_embeddings)
        self._read_preprocessing(CLIP_MEAN, CLIP_STD)
        self.settings.update(
            image_size=self.image_size,
            image_mean=list(self.image_mean),
            image_std=list(self.image_std),
            max_text_length=self.max_text_length,
            preprocessing=self.preprocessing,
        )

    # -- preprocessing -----------------------------------------------------------------

    def _extra_settings(self) -> dict[str, Any]:
        return {}

    def _pixel_array(self, image: np.ndarray) -> np.ndarray:
        return owlvit_pixels(image, self.image_size, self.image_mean, self.image_std)

    def _to_pixels(self, boxes: np.ndarray, width: int, height: int) -> np.ndarray:
        return relative_boxes_to_pixels(boxes, width, height)

    def _pixels(self, frames: Sequence[np.ndarray]) -> Any:
        return self._model_input(np.stack([self._pixel_array(f) for f in frames]))

    def _finish(
        self,
        frames: Sequence[np.ndarray],
        probs: np.ndarray,
        boxes: np.ndarray,
        labels: list[str],
        thr: float,
        nms_iou: float | None,
    ) -> list[list[Detection]]:
        """Per frame, :func:`query_detections` with this model's box convention."""
        return [
            query_detections(f, p, b, labels, thr, to_pixels=self._to_pixels, nms_iou=nms_iou)
            for f, p, b in zip(frames, probs, boxes, strict=True)
        ]

    # -- detection ---------------------------------------------------------------------

    def detect(
        self,
        images: Sequence[np.ndarray],
        *,
        text_queries: Sequence[str] | None = None,
        image_query: np.ndarray | None = None,
        threshold: float | None = None,
    ) -> list[list[Detection]]:
        """Detect text- or image-queried objects in each frame.

        Args:
            images: ``uint8 (H, W, 3)`` RGB frames, sizes may differ.
            text_queries: phrases; each detection's label is the best-matching phrase.
            image_query: ``uint8 (h, w, 3)`` crop of the object to find (one-shot).
            threshold: overrides the default threshold of the query kind used.

        Returns:
            Per frame, detections in frame pixels sorted by descending score.

        Raises:
            UserInputError: not exactly one query kind, bad images or threshold.
        """
        where = f"{self.name}.detect"
        frames = check_images(images, where=where)
        if (text_queries is None) == (image_query is None):
            found = "both" if text_queries is not None else "neither"
            raise UserInputError(
                f"{where}: give exactly one of text_queries= or image_query=, found {found}",
                hint="text_queries=['a red car'] for open-vocabulary search, image_query=crop for one-shot search",
            )
        if text_queries is not None:
            queries = check_text_queries(text_queries, where=where)
            thr = self.threshold if threshold is None else check_threshold(threshold, where=where)
            if not frames:
                return []
            return self._detect_text(frames, queries, thr)
        query = check_images([image_query], where=f"{where} (image_query)")[0]  # type: ignore[list-item]
        thr = self.image_threshold if threshold is None else check_threshold(threshold, where=where)
        if not frames:
            return []
        return self._detect_image(frames, query, thr)

    def _detect_text(
        self, frames: list[np.ndarray], queries: list[str], thr: float
    ) -> list[list[Detection]]:
        torch = self._torch
        enc = self.tokenizer(
            list(queries),
            padding="max_length",
            max_length=self.max_text_length,
            truncation=True,
            return_tensors="pt",
        )
        ids = enc["input_ids"].to(self._param.device)
        mask = enc["attention_mask"].to(self._param.device)
        results: list[list[Detection]] = []
        for batch in batched(frames, self.batch_size):
            n = len(batch)
            pixel_values = self._pixels(batch)
            with torch.inference_mode():
                out = self.model(
                    input_ids=ids.repeat(n, 1),
                    attention_mask=mask.repeat(n, 1),
                    pixel_values=pixel_values,
                )
                probs = torch.sigmoid(out.logits.float()).cpu().numpy()  # (n, patches, queries)
                boxes = out.pred_boxes.float().cpu().numpy()  # (n, patches, 4) cxcywh in [0, 1]
            results.extend(self._finish(batch, probs, boxes, queries, thr, self.text_nms_iou))
        return results

    def _detect_image(
        self, frames: list[np.ndarray], query: np.ndarray, thr: float
    ) -> list[list[Detection]]:
        torch = self._torch
        model = self.model
        with torch.inference_mode():
            query_map = model.image_embedder(pixel_values=self._pixels([query]))[0]
            b, h, w, d = query_map.shape
            query_embeds, _, _ = model.embed_image_query(query_map.reshape(b, h * w, d), query_map)
        if query_embeds is None:  # OWL-ViT found no box overlapping the query image at all
            return [[] for _ in frames]
        query_embeds = query_embeds.reshape(1, 1, -1)
        results: list[list[Detection]] = []
        for batch in batched(frames, self.batch_size):
            n = len(batch)
            pixel_values = self._pixels(batch)
            with torch.inference_mode():
                feature_map = model.image_embedder(pixel_values=pixel_values)[0]
                _, h, w, d = feature_map.shape
                feats = feature_map.reshape(n, h * w, d)
                logits, _ = model.class_predictor(feats, query_embeds.expand(n, -1, -1))
                boxes = model.box_predictor(feats, feature_map)
                probs = torch.sigmoid(logits.float()).cpu().numpy()  # (n, patches, 1)
                boxes_np = boxes.float().cpu().numpy()
            labels = [IMAGE_QUERY_LABEL]  # the one query column
            results.extend(self._finish(batch, probs, boxes_np, labels, thr, self.image_nms_iou))
        return results


class Owlv2Detector(OwlVitDetector):
    """OWLv2 detector (``Owlv2ForObjectDetection``); pads to a square before resizing.

    Args:
        pad_value: fill of the bottom/right padding in [0, 1] units (default 0.5 grey).
        (all other arguments as :class:`OwlVitDetector`)
    """

    name = "owlv2/custom"
    _model_class = "Owlv2ForObjectDetection"
    _model_types = ("owlv2",)
    default_image_threshold = 0.9
    preprocessing = "pad bottom/right to square, Gaussian-antialiased linear resize, CLIP mean/std"

    def __init__(self, *, pad_value: float = 0.5, **kwargs: Any) -> None:
        value = float(pad_value)
        if not math.isfinite(value) or not (0.0 <= value <= 1.0):
            raise UserInputError(f"{self.name}: pad_value must be in [0, 1], found {pad_value!r}")
        self.pad_value = value
        super().__init__(**kwargs)

    def _extra_settings(self) -> dict[str, Any]:
        return {"pad_value": self.pad_value}

    def _pixel_array(self, image: np.ndarray) -> np.ndarray:
        return owlv2_pixels(image, self.image_size, self.image_mean, self.image_std, self.pad_value)

    def _to_pixels(self, boxes: np.ndarray, width: int, height: int) -> np.ndarray:
        return padded_square_boxes_to_pixels(boxes, width, height)


class OwlVitBasePatch32(OwlVitDetector):
    """``owlvit/base-patch32``: the CMBench protocol's detector (official)."""

    name = "owlvit/base-patch32"
    default_weights = "google/owlvit-base-patch32"
    official = True


class OwlVitBasePatch16(OwlVitDetector):
    """``owlvit/base-patch16``."""

    name = "owlvit/base-patch16"
    default_weights = "google/owlvit-base-patch16"


class OwlVitLargePatch14(OwlVitDetector):
    """``owlvit/large-patch14``."""

    name = "owlvit/large-patch14"
    default_weights = "google/owlvit-large-patch14"


class Owlv2BasePatch16Ensemble(Owlv2Detector):
    """``owlv2/base-patch16-ensemble``."""

    name = "owlv2/base-patch16-ensemble"
    default_weights = "google/owlv2-base-patch16-ensemble"
