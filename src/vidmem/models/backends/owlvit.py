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

Preprocessing is done here in numpy/PIL (no torchvision):

* OWL-ViT: the whole frame is resized (aspect ratio NOT kept) to the model's square input
  (``vision_config.image_size``: 768 for B/32 and B/16, 840 for L/14) with PIL bicubic on
  uint8, scaled to [0, 1] and normalised with the CLIP mean/std. A predicted box
  ``(cx, cy, w, h)`` normalised to the model input therefore maps back with x scaled by
  the frame width and y by the frame height (:func:`relative_boxes_to_pixels`).
* OWLv2: the frame is scaled to [0, 1], padded at the bottom/right to a square of side
  ``max(H, W)`` with ``pad_value`` (0.5 grey, as the original OWLv2 code and
  transformers 4.x; transformers 5 pads with 0.0), then resized to 960 x 960 with a
  Gaussian anti-aliasing filter and linear interpolation (the scikit-image resize that
  the original and transformers use, via scipy), and normalised with the CLIP mean/std.
  Boxes are normalised to the padded square, so both axes scale by ``max(H, W)``
  (:func:`padded_square_boxes_to_pixels`).

Boxes come back in pixels of the original frame, clipped to ``[0, W] x [0, H]``; boxes
that are empty after clipping (entirely in the padding) are dropped; detections are
sorted by descending score (ties keep the model's patch order).

The small helpers at the top of this module (image/threshold validation, model loading,
box maths, NMS) are shared by the other transformers detection and segmentation
backends (:mod:`vidmem.models.backends.grounding_dino`, :mod:`vidmem.models.backends.sam`).
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vidmem.errors import MissingDependencyError, UserInputError
from vidmem.models.backends.base import (
    BackendBase,
    batched,
    import_torch,
    import_transformers,
    torch_dtype,
)
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

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

IMAGE_QUERY_LABEL = "image_query"


# --------------------------------------------------------------------------------------
# Shared helpers (also used by grounding_dino.py and sam.py)
# --------------------------------------------------------------------------------------


def check_images(images: Sequence[np.ndarray], *, where: str) -> list[np.ndarray]:
    """Validate a batch of frames without copying them.

    Args:
        images: ``uint8`` arrays of shape ``(H, W, 3)``, RGB; sizes may differ.
        where: prefix for error messages (backend and method).

    Returns:
        The same array objects, in a list (identity is preserved, which
        :class:`vidmem.models.backends.sam` relies on to share image embeddings).

    Raises:
        UserInputError: an item is not a non-empty ``uint8 (H, W, 3)`` array.
    """
    if isinstance(images, np.ndarray) and images.ndim == 3:
        raise UserInputError(
            f"{where}: expected a sequence of images, found one array of shape {images.shape}",
            hint="wrap a single frame in a list: [frame]",
        )
    out: list[np.ndarray] = []
    for i, image in enumerate(images):
        if not isinstance(image, np.ndarray):
            raise UserInputError(
                f"{where}: image {i} must be a numpy uint8 array (H, W, 3), found {type(image).__name__}",
                hint="decode frames with vidmem.io (uint8 RGB) or use np.asarray(pil_image.convert('RGB'))",
            )
        if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
            raise UserInputError(
                f"{where}: image {i} must be uint8 with shape (H, W, 3) RGB, found dtype "
                f"{image.dtype} shape {image.shape}",
                hint="convert with np.asarray(pil_image.convert('RGB')) or drop the alpha channel",
            )
        if image.shape[0] < 1 or image.shape[1] < 1:
            raise UserInputError(f"{where}: image {i} is empty (shape {image.shape})")
        out.append(image)
    return out


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


def read_preprocessor_config(path: str | Path) -> dict[str, Any]:
    """Return ``preprocessor_config.json`` of a weights directory, or ``{}`` if absent."""
    file = Path(path) / "preprocessor_config.json"
    if not file.is_file():
        return {}
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UserInputError(
            f"{file}: not readable as JSON ({exc})",
            hint="re-fetch the weights with `vidmem models fetch`",
        ) from exc
    return data if isinstance(data, dict) else {}


def preprocessor_mean_std(
    pre: dict[str, Any], mean: tuple[float, ...], std: tuple[float, ...]
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """``image_mean`` / ``image_std`` from a preprocessor config, else the given defaults."""
    got_mean = pre.get("image_mean", mean)
    got_std = pre.get("image_std", std)
    if isinstance(got_mean, (int, float)):
        got_mean = [got_mean] * 3
    if isinstance(got_std, (int, float)):
        got_std = [got_std] * 3
    return tuple(float(v) for v in got_mean), tuple(float(v) for v in got_std)


def load_hf_model(
    class_name: str,
    path: Path,
    *,
    backend: str,
    device: str,
    dtype: str,
    model_types: Sequence[str],
) -> Any:
    """Load ``transformers.<class_name>`` from a local directory, in eval mode.

    Args:
        class_name: e.g. ``"OwlViTForObjectDetection"``.
        path: local weights directory (``config.json`` + safetensors).
        backend: registry name, for messages.
        device: torch device string (``"cpu"``, ``"cuda"``, ``"cuda:1"``...).
        dtype: ``"float32"``, ``"float16"`` or ``"bfloat16"``.
        model_types: accepted ``config.json`` ``model_type`` values.

    Raises:
        MissingDependencyError: transformers lacks the class, or the directory holds no
            loadable model.
        UserInputError: the directory holds a different model family, or the device or
            dtype is not valid.
    """
    transformers = import_transformers()
    torch = import_torch()
    cls = getattr(transformers, class_name, None)
    if cls is None:
        raise MissingDependencyError(
            f"backend '{backend}': the installed transformers {transformers.__version__} has no "
            f"{class_name}",
            hint="upgrade transformers: pip install -U 'transformers>=4.56'",
        )
    config_file = Path(path) / "config.json"
    if not config_file.is_file():
        raise MissingDependencyError(
            f"backend '{backend}': '{path}' has no config.json; expected a transformers model "
            "directory (config.json + model.safetensors)",
            hint=f"run `vidmem models fetch {backend} --to DIR` and pass weights=DIR/<org>--<name>",
        )
    try:
        model_type = json.loads(config_file.read_text(encoding="utf-8")).get("model_type")
    except (OSError, json.JSONDecodeError, AttributeError) as exc:
        raise UserInputError(f"{config_file}: not a readable JSON object ({exc})") from exc
    if model_type not in model_types:
        raise UserInputError(
            f"backend '{backend}': weights at '{path}' are a '{model_type}' model, expected "
            f"model_type {' or '.join(repr(t) for t in model_types)}",
            hint="pass weights of this model family, or choose the backend matching these weights",
        )
    dt = torch_dtype(dtype)
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise UserInputError(
            f"backend '{backend}': device '{device}' is not a torch device ({exc})",
            hint="use 'cpu', 'cuda', 'cuda:0' or 'mps'",
        ) from exc
    try:
        model, loading = cls.from_pretrained(
            str(path), local_files_only=True, output_loading_info=True
        )
    except (OSError, ValueError) as exc:
        raise MissingDependencyError(
            f"backend '{backend}': could not load {class_name} from '{path}': {exc}",
            hint=f"re-fetch with `vidmem models fetch {backend} --to DIR`",
        ) from exc
    missing = sorted(loading.get("missing_keys", ()) if isinstance(loading, dict) else ())
    if missing:
        warnings.warn(
            f"backend '{backend}': {len(missing)} weights missing from '{path}' were randomly "
            f"initialised (first: {', '.join(missing[:5])}); scores from this model are not "
            "meaningful",
            stacklevel=3,
        )
    model.to(device=dev, dtype=dt)
    model.eval()
    return model


def load_tokenizer(path: Path, *, backend: str) -> Any:
    """Load the tokenizer saved next to the weights (never downloads)."""
    transformers = import_transformers()
    try:
        return transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError, TypeError) as exc:
        raise MissingDependencyError(
            f"backend '{backend}': no usable tokenizer files in '{path}' ({exc})",
            hint=f"fetch the full checkpoint (tokenizer included) with `vidmem models fetch {backend} --to DIR`",
        ) from exc


def normalize_to_chw(
    image01: np.ndarray, mean: Sequence[float], std: Sequence[float]
) -> np.ndarray:
    """``(H, W, 3)`` floats in [0, 1] -> ``(3, H, W)`` float32, ``(x - mean) / std``."""
    m = np.asarray(mean, dtype=np.float32)
    s = np.asarray(std, dtype=np.float32)
    out = (np.asarray(image01, dtype=np.float32) - m) / s
    return np.ascontiguousarray(out.transpose(2, 0, 1), dtype=np.float32)


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


# --------------------------------------------------------------------------------------
# Preprocessing
# --------------------------------------------------------------------------------------


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
    from PIL import Image

    resized = Image.fromarray(image).resize((size, size), resample=Image.Resampling.BICUBIC)
    return normalize_to_chw(np.asarray(resized, dtype=np.float32) / 255.0, mean, std)


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


# --------------------------------------------------------------------------------------
# Backends
# --------------------------------------------------------------------------------------


class OwlVitDetector(BackendBase):
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
    default_weights: str | None = None
    official = False
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
        if weights is None and self.default_weights is None:
            raise UserInputError(f"{where}: weights= is required for this class")
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
        self._torch = import_torch()
        self.model = load_hf_model(
            self._model_class,
            self.weights_path,
            backend=self.name,
            device=device,
            dtype=dtype,
            model_types=self._model_types,
        )
        self.tokenizer = load_tokenizer(self.weights_path, backend=self.name)
        config = self.model.config
        image_size = config.vision_config.image_size
        self.image_size = int(
            image_size[0] if isinstance(image_size, (list, tuple)) else image_size
        )
        self.max_text_length = int(config.text_config.max_position_embeddings)
        pre = read_preprocessor_config(self.weights_path)
        self.image_mean, self.image_std = preprocessor_mean_std(pre, CLIP_MEAN, CLIP_STD)
        self._param = next(self.model.parameters())
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
        batch = np.stack([self._pixel_array(f) for f in frames])
        return self._torch.from_numpy(batch).to(device=self._param.device, dtype=self._param.dtype)

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

    def _finish(
        self,
        frame: np.ndarray,
        boxes: np.ndarray,
        scores: np.ndarray,
        labels: list[str],
        nms_iou: float | None,
    ) -> list[Detection]:
        height, width = frame.shape[:2]
        pixel_boxes = self._to_pixels(boxes, width, height)
        if nms_iou is not None and len(scores):
            keep = greedy_nms(pixel_boxes, scores, nms_iou)
            pixel_boxes, scores = pixel_boxes[keep], scores[keep]
            labels = [labels[i] for i in keep]
        return finalize_detections(pixel_boxes, scores, labels, width, height)

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
            for frame, p, b in zip(batch, probs, boxes, strict=True):
                best = p.argmax(axis=-1)
                score = p.max(axis=-1)
                keep = score > thr
                labels = [queries[int(q)] for q in best[keep]]
                results.append(self._finish(frame, b[keep], score[keep], labels, self.text_nms_iou))
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
                probs = torch.sigmoid(logits.float())[..., 0].cpu().numpy()  # (n, patches)
                boxes_np = boxes.float().cpu().numpy()
            for frame, p, bx in zip(batch, probs, boxes_np, strict=True):
                keep = p > thr
                labels = [IMAGE_QUERY_LABEL] * int(keep.sum())
                results.append(self._finish(frame, bx[keep], p[keep], labels, self.image_nms_iou))
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
