"""Shared plumbing for the transformers detectors and segmenters (OWL-ViT, OWLv2,
Grounding DINO, SAM, SAM 2).

* **Input checks**: frames (:func:`check_images`, which keeps the caller's array
  objects), score and IoU thresholds, text queries; mean/std normalisation to CHW.
* **Checkpoint loading** from a local directory (never the network):
  ``preprocessor_config.json`` and its mean/std, the model with a ``model_type``
  check, the tokenizer.
* **Box maths**: centre/size to corners, model-normalised boxes to frame pixels, greedy
  NMS, and the final clip / drop-empty / sort step that makes :class:`Detection` lists.

The embedders' counterpart is :mod:`vidmem.models.backends.hf_images`; torch and
transformers are imported lazily through :mod:`vidmem.models.backends.base`.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vidmem.errors import MissingDependencyError, UserInputError
from vidmem.models.backends import image_checks
from vidmem.models.backends.base import import_torch, import_transformers, torch_dtype
from vidmem.models.backends.hf_images import normalise
from vidmem.models.protocols import Detection

__all__ = [
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
    "read_preprocessor_config",
    "relative_boxes_to_pixels",
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


# --------------------------------------------------------------------------------------
# Checkpoint loading
# --------------------------------------------------------------------------------------


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
