"""Shared plumbing for the transformers detectors and segmenters (OWL-ViT, OWLv2,
Grounding DINO, SAM, SAM 2).

* **Input checks**: frames (:func:`check_images`, which keeps the caller's array
  objects), score and IoU thresholds, text queries; resize + mean/std normalisation to CHW.
* **The common base** :class:`HFDetectionBase`: weights required, the model loaded from
  a local directory (never the network) with a ``model_type`` check, the preprocessor's
  mean/std, numpy batches moved to the model's device. The checkpoint readers
  (:func:`load_hf_model`, :func:`load_tokenizer`, :func:`read_preprocessor_config`,
  :func:`preprocessor_mean_std`) live in :mod:`vidmem.models.backends.hf_checkpoint`
  and are re-exported here.
* **Box maths**: centre/size to corners, model-normalised boxes to frame pixels, greedy
  NMS, the final clip / drop-empty / sort step that makes :class:`Detection` lists, and
  :func:`query_detections`, which does it all for one frame's per-query probabilities.

The embedders' counterpart is :mod:`vidmem.models.backends.hf_images`; torch and
transformers are imported lazily through :mod:`vidmem.models.backends.base`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from vidmem.errors import UserInputError
from vidmem.models.backends import image_checks
from vidmem.models.backends.base import BackendBase, import_torch
from vidmem.models.backends.hf_checkpoint import (
    load_hf_model,
    load_tokenizer,
    preprocessor_mean_std,
    read_preprocessor_config,
)
from vidmem.models.backends.hf_images import normalise, resize
from vidmem.models.protocols import Detection

__all__ = [
    "HFDetectionBase",
    "check_images",
    "check_text_queries",
    "check_threshold",
    "cxcywh_to_xyxy",
    "finalize_detections",
    "greedy_nms",
    "load_hf_model",
    "load_tokenizer",
    "normalize_to_chw",
    "padded_square_boxes_to_pixels",
    "preprocessor_mean_std",
    "query_detections",
    "read_preprocessor_config",
    "relative_boxes_to_pixels",
    "resize_to_chw",
]


# --------------------------------------------------------------------------------------
# Input checks and normalisation
# --------------------------------------------------------------------------------------


def check_images(images: Sequence[np.ndarray], *, where: str) -> list[np.ndarray]:
    """Validate a batch of frames without copying them.

    :func:`vidmem.models.backends.image_checks.check_images` with ``contiguous=False``
    and the detectors' wording.

    Args:
        images: ``uint8`` arrays of shape ``(H, W, 3)``, RGB; sizes may differ.
        where: prefix for error messages (backend and method).

    Returns:
        The same array objects, in a list (identity is preserved, which
        :class:`vidmem.models.backends.sam` relies on to share image embeddings).

    Raises:
        UserInputError: an item is not a non-empty ``uint8 (H, W, 3)`` array.
    """
    return image_checks.check_images(
        images, where=where, contiguous=False, wording=image_checks.DETECTOR_WORDING
    )


def check_threshold(value: Any, *, where: str, name: str = "threshold") -> float:
    """Return ``value`` as a float in ``[0, 1]`` or raise :class:`UserInputError`.

    Example:
        >>> check_threshold(0.25, where="x")
        0.25
    """
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise UserInputError(
            f"{where}: {name} must be a number in [0, 1], found {value!r}"
        ) from None
    if not (0.0 <= number <= 1.0):
        raise UserInputError(
            f"{where}: {name} must be in [0, 1] (it is compared with sigmoid scores), found {number}"
        )
    return number


def check_text_queries(text_queries: Sequence[str] | str, *, where: str) -> list[str]:
    """Validate text queries; a bare string counts as one query."""
    queries = [text_queries] if isinstance(text_queries, str) else list(text_queries)
    if not queries:
        raise UserInputError(
            f"{where}: text_queries is empty", hint="pass at least one phrase, e.g. ['a red car']"
        )
    for i, query in enumerate(queries):
        if not isinstance(query, str) or not query.strip():
            raise UserInputError(
                f"{where}: text query {i} must be a non-empty string, found {query!r}"
            )
    return queries


def normalize_to_chw(
    image01: np.ndarray, mean: Sequence[float], std: Sequence[float]
) -> np.ndarray:
    """``(H, W, 3)`` floats in [0, 1] -> ``(3, H, W)`` float32, ``(x - mean) / std``."""
    # cast first: hf_images.normalise would also rescale a uint8 input by 1/255
    out = normalise(np.asarray(image01, dtype=np.float32), mean, std)
    return np.ascontiguousarray(out.transpose(2, 0, 1), dtype=np.float32)


def resize_to_chw(
    image: np.ndarray,
    size: tuple[int, int],
    resample: Image.Resampling,
    mean: Sequence[float],
    std: Sequence[float],
) -> np.ndarray:
    """Resize a ``uint8 (H, W, 3)`` frame to ``size = (h, w)`` with PIL (on uint8), scale to
    [0, 1] and normalise: ``float32 (3, h, w)``, the transformers PIL processors' arithmetic."""
    resized = resize(image, size, resample)
    return normalize_to_chw(resized.astype(np.float32) / 255.0, mean, std)


# --------------------------------------------------------------------------------------
# The detectors' and segmenters' common base
# --------------------------------------------------------------------------------------


class HFDetectionBase(BackendBase):
    """A transformers detector or segmenter: weights required, model loaded in ``__init__``.

    Subclasses set ``_model_class`` (the ``transformers`` attribute to load) and
    ``_model_types`` (accepted ``config.json`` ``model_type`` values), pass their settings
    for the run log to ``super().__init__``, then call :meth:`_read_preprocessing`.
    """

    default_weights: str | None = None
    official = False

    _model_class = ""
    _model_types: tuple[str, ...] = ()

    image_mean: tuple[float, ...]
    image_std: tuple[float, ...]

    def __init__(self, *, weights: str | Path | None = None, **kwargs: Any) -> None:
        """``kwargs``: :class:`BackendBase`'s (device, dtype, ...) and the run-log settings."""
        if weights is None and self.default_weights is None:
            raise UserInputError(f"{self.name}: weights= is required for this class")
        super().__init__(weights=weights, **kwargs)
        assert self.weights_path is not None
        self._torch = import_torch()
        self.model = load_hf_model(
            self._model_class,
            self.weights_path,
            backend=self.name,
            device=self.device,
            dtype=self.dtype,
            model_types=self._model_types,
            stacklevel=4,  # the caller of the subclass's __init__, as before this base existed
        )
        self._param = next(self.model.parameters())

    def _read_preprocessing(
        self, mean: tuple[float, ...], std: tuple[float, ...]
    ) -> dict[str, Any]:
        """Set ``image_mean``/``image_std`` from ``preprocessor_config.json`` (else ``mean``,
        ``std``); return that config (``{}`` if absent)."""
        assert self.weights_path is not None
        pre = read_preprocessor_config(self.weights_path)
        self.image_mean, self.image_std = preprocessor_mean_std(pre, mean, std)
        return pre

    def _model_input(self, batch: np.ndarray) -> Any:
        """A float32 ``(N, 3, H, W)`` numpy batch as a tensor on the model's device and dtype."""
        return self._torch.from_numpy(batch).to(device=self._param.device, dtype=self._param.dtype)


# --------------------------------------------------------------------------------------
# Box maths
# --------------------------------------------------------------------------------------


def cxcywh_to_xyxy(boxes: np.ndarray) -> np.ndarray:
    """Convert ``(N, 4)`` centre/size boxes to corners (same units).

    Example:
        >>> cxcywh_to_xyxy(np.array([[0.5, 0.5, 0.2, 0.4]])).round(6).tolist()
        [[0.4, 0.3, 0.6, 0.7]]
    """
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    cx, cy, w, h = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    return np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)


def relative_boxes_to_pixels(boxes: np.ndarray, width: int, height: int) -> np.ndarray:
    """Boxes ``(cx, cy, w, h)`` normalised to the frame -> pixel ``(x0, y0, x1, y1)``.

    Used for OWL-ViT (the frame is stretched to the square input, so the normalised
    coordinates are relative to the frame itself) and Grounding DINO (boxes are relative
    to the unpadded image). Not clipped.

    Args:
        boxes: ``(N, 4)`` floats in model-normalised units.
        width: frame width W in pixels.
        height: frame height H in pixels.

    Returns:
        ``(N, 4)`` float64 pixel corners.

    Example:
        >>> relative_boxes_to_pixels(np.array([[0.5, 0.5, 0.2, 0.4]]), 200, 100).round(6).tolist()
        [[80.0, 30.0, 120.0, 70.0]]
    """
    xyxy = cxcywh_to_xyxy(boxes)
    return xyxy * np.array([width, height, width, height], dtype=np.float64)


def padded_square_boxes_to_pixels(boxes: np.ndarray, width: int, height: int) -> np.ndarray:
    """OWLv2 boxes (normalised to the bottom/right-padded square) -> pixel corners.

    The frame occupies the top-left ``W x H`` of a ``S x S`` square, ``S = max(W, H)``, so
    both axes scale by ``S``. Not clipped (boxes may reach into the padding).

    Example:
        >>> padded_square_boxes_to_pixels(np.array([[0.25, 0.25, 0.1, 0.2]]), 200, 100).round(6).tolist()
        [[40.0, 30.0, 60.0, 70.0]]
    """
    side = float(max(width, height))
    return cxcywh_to_xyxy(boxes) * side


def _pairwise_iou(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    x0 = np.maximum(box[0], boxes[:, 0])
    y0 = np.maximum(box[1], boxes[:, 1])
    x1 = np.minimum(box[2], boxes[:, 2])
    y1 = np.minimum(box[3], boxes[:, 3])
    inter = np.clip(x1 - x0, 0, None) * np.clip(y1 - y0, 0, None)
    area = np.clip(box[2] - box[0], 0, None) * np.clip(box[3] - box[1], 0, None)
    areas = np.clip(boxes[:, 2] - boxes[:, 0], 0, None) * np.clip(
        boxes[:, 3] - boxes[:, 1], 0, None
    )
    union = area + areas - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)


def greedy_nms(boxes: np.ndarray, scores: np.ndarray, iou_threshold: float) -> np.ndarray:
    """Indices kept by greedy non-maximum suppression, highest score first.

    A box is suppressed when its IoU with an already kept, higher-scoring box exceeds
    ``iou_threshold``.

    Example:
        >>> b = np.array([[0, 0, 10, 10], [1, 1, 10, 10], [20, 20, 30, 30]], float)
        >>> greedy_nms(b, np.array([0.9, 0.8, 0.7]), 0.5).tolist()
        [0, 2]
    """
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    order = np.argsort(-s, kind="stable")
    suppressed = np.zeros(len(b), dtype=bool)
    keep: list[int] = []
    for i in order:
        if suppressed[i]:
            continue
        keep.append(int(i))
        suppressed |= _pairwise_iou(b[i], b) > iou_threshold
    return np.asarray(keep, dtype=np.int64)


def finalize_detections(
    boxes: np.ndarray,
    scores: np.ndarray,
    labels: Sequence[str],
    width: int,
    height: int,
) -> list[Detection]:
    """Clip pixel boxes to the frame, drop empty ones, sort by descending score.

    Args:
        boxes: ``(N, 4)`` pixel ``(x0, y0, x1, y1)``.
        scores: ``(N,)`` in [0, 1].
        labels: ``N`` strings.
        width: frame width W; x is clipped to ``[0, W]``.
        height: frame height H; y is clipped to ``[0, H]``.

    Example:
        >>> dets = finalize_detections(np.array([[-5, 2, 50, 30], [10, 10, 20, 20]], float),
        ...                            np.array([0.2, 0.7]), ["a", "b"], 40, 25)
        >>> [(d.box, round(d.score, 2), d.label) for d in dets]
        [((10.0, 10.0, 20.0, 20.0), 0.7, 'b'), ((0.0, 2.0, 40.0, 25.0), 0.2, 'a')]
    """
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4).copy()
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    if len(b) != len(s) or len(s) != len(labels):
        raise ValueError("finalize_detections: boxes, scores and labels differ in length")
    b[:, [0, 2]] = np.clip(b[:, [0, 2]], 0.0, float(width))
    b[:, [1, 3]] = np.clip(b[:, [1, 3]], 0.0, float(height))
    valid = np.isfinite(b).all(axis=1) & np.isfinite(s) & (b[:, 2] > b[:, 0]) & (b[:, 3] > b[:, 1])
    out: list[Detection] = []
    for i in np.argsort(-s, kind="stable"):
        if valid[i]:
            box = (float(b[i, 0]), float(b[i, 1]), float(b[i, 2]), float(b[i, 3]))
            out.append(Detection(box=box, score=float(s[i]), label=str(labels[i])))
    return out


def query_detections(
    frame: np.ndarray,
    probs: np.ndarray,
    boxes: np.ndarray,
    queries: Sequence[str],
    threshold: float,
    *,
    to_pixels: Callable[[np.ndarray, int, int], np.ndarray] = relative_boxes_to_pixels,
    nms_iou: float | None = None,
) -> list[Detection]:
    """One frame's detections from the model's per-box, per-query probabilities.

    Each box takes its best query: ``score`` is that query's probability and ``label`` the
    query; boxes with ``score > threshold`` are kept, mapped to frame pixels by
    ``to_pixels``, thinned by greedy NMS when ``nms_iou`` is given, then clipped, filtered
    and sorted by :func:`finalize_detections`.

    Args:
        frame: the ``(H, W, 3)`` frame the boxes belong to.
        probs: ``(boxes, queries)`` probabilities.
        boxes: ``(boxes, 4)`` model-normalised ``(cx, cy, w, h)``.
        queries: the label of each query column.
        threshold: a box is kept when its score is strictly above it.
        to_pixels: ``(boxes, W, H) -> pixel corners``.
        nms_iou: greedy-NMS IoU threshold, or ``None`` for no NMS.
    """
    score = probs.max(axis=-1)
    best = probs.argmax(axis=-1)
    keep = score > threshold
    labels = [queries[int(q)] for q in best[keep]]
    height, width = frame.shape[:2]
    pixel_boxes = to_pixels(boxes[keep], width, height)
    scores = score[keep]
    if nms_iou is not None and len(scores):
        kept = greedy_nms(pixel_boxes, scores, nms_iou)
        pixel_boxes, scores = pixel_boxes[kept], scores[kept]
        labels = [labels[i] for i in kept]
    return finalize_detections(pixel_boxes, scores, labels, width, height)
