"""Grounding DINO phrase-grounding detector (transformers), family ``grounding-dino``.

Registered variants:

=========================  =====================================
name                       default weights
=========================  =====================================
``grounding-dino/tiny``    ``IDEA-Research/grounding-dino-tiny``
``grounding-dino/base``    ``IDEA-Research/grounding-dino-base``
=========================  =====================================

Text only (``supports_image_query = False``; an ``image_query`` raises
:class:`~vidmem.errors.UserInputError` pointing to the OWL backends).

Caption. The queries are lower-cased, whitespace-collapsed, stripped of trailing
periods, and joined as ``"red car . person ."`` (phrases separated by ``" . "``, ending
with ``" ."``; the tokenizer splits the period either way, so this is the token sequence
of the original ``"red car. person."``). A query containing an inner ``"."`` is refused
because the period is Grounding DINO's phrase separator. The tokenised caption must fit
``config.max_text_len`` (256) tokens.

Scores and labels. For each of the model's query boxes, each phrase's probability is the
highest ``sigmoid(logit)`` over that phrase's tokens (special tokens and separators are
ignored); ``score`` is the best phrase's probability and ``label`` that phrase's query,
exactly as given. A box is kept when ``score > threshold`` (box threshold, default 0.35)
and ``score > text_threshold`` (default 0.25) -- the two defaults of the original
Grounding DINO demo; with ``threshold >= text_threshold`` the second test never bites,
as in the original, where a box above the box threshold always has at least one token
above the text threshold. No NMS (as the original and transformers' post-processing).

Preprocessing (numpy/PIL, as the transformers image processor): resize with kept aspect
ratio so that the shorter side is 800 and the longer at most 1333
(``size`` of ``preprocessor_config.json`` when present), PIL bilinear on uint8, scale to
[0, 1], ImageNet mean/std. Frames are batched only with frames of the same resized size,
so no padding is ever needed and results do not depend on the batch composition.
Predicted boxes are normalised to the (unpadded) frame and map back by scaling x by W and
y by H; they are clipped to the frame and sorted by descending score.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from vidmem.errors import MissingDependencyError, UserInputError
from vidmem.models.backends.base import batched
from vidmem.models.backends.hf_detection import (
    HFDetectionBase,
    check_images,
    check_text_queries,
    check_threshold,
    load_tokenizer,
    query_detections,
    resize_to_chw,
)
from vidmem.models.backends.hf_images import IMAGENET_MEAN, IMAGENET_STD
from vidmem.models.protocols import Detection

__all__ = [
    "GroundingDinoBase",
    "GroundingDinoDetector",
    "GroundingDinoTiny",
    "build_caption",
    "grounding_dino_pixels",
    "resized_size",
    "token_phrase_map",
]

IMAGE_QUERY_ALTERNATIVES = (
    "owlvit/base-patch32, owlvit/base-patch16, owlvit/large-patch14, owlv2/base-patch16-ensemble"
)


def build_caption(
    queries: Sequence[str], *, where: str = "grounding-dino"
) -> tuple[str, list[tuple[int, int]]]:
    """Join queries into a Grounding DINO caption and return each phrase's char span.

    Returns:
        ``(caption, spans)``; ``caption[s:e]`` is phrase ``i`` for ``(s, e) = spans[i]``.

    Raises:
        UserInputError: a query is empty after cleaning or contains an inner period.

    Example:
        >>> build_caption(["Red  Car", "person."])
        ('red car . person .', [(0, 7), (10, 16)])
    """
    phrases: list[str] = []
    for i, query in enumerate(queries):
        phrase = " ".join(str(query).lower().split()).rstrip(". ").strip()
        if not phrase:
            raise UserInputError(f"{where}: text query {i} ({query!r}) is empty after cleaning")
        if "." in phrase:
            raise UserInputError(
                f"{where}: text query {i} ({query!r}) contains '.', Grounding DINO's phrase separator",
                hint="remove the period or pass the parts as separate queries",
            )
        phrases.append(phrase)
    spans: list[tuple[int, int]] = []
    pos = 0
    for phrase in phrases:
        spans.append((pos, pos + len(phrase)))
        pos += len(phrase) + len(" . ")
    return " . ".join(phrases) + " .", spans


def token_phrase_map(
    offsets: Sequence[tuple[int, int]],
    special: Sequence[int],
    spans: Sequence[tuple[int, int]],
) -> np.ndarray:
    """Phrase index of each token (``-1`` for special tokens and separators).

    Args:
        offsets: per-token ``(start, end)`` character offsets into the caption.
        special: per-token 1 for special tokens (``[CLS]``, ``[SEP]``), else 0.
        spans: per-phrase ``(start, end)`` character spans (from :func:`build_caption`).

    Example:
        >>> token_phrase_map([(0, 0), (0, 3), (4, 7), (8, 9), (10, 16), (17, 18), (0, 0)],
        ...                  [1, 0, 0, 0, 0, 0, 1], [(0, 7), (10, 16)]).tolist()
        [-1, 0, 0, -1, 1, -1, -1]
    """
    out = np.full(len(offsets), -1, dtype=np.int64)
    for t, ((start, end), is_special) in enumerate(zip(offsets, special, strict=True)):
        if is_special or end <= start:
            continue
        for p, (s, e) in enumerate(spans):
            if start >= s and end <= e:
                out[t] = p
                break
    return out


def resized_size(
    height: int, width: int, shortest_edge: int, longest_edge: int | None
) -> tuple[int, int]:
    """Output ``(h, w)`` of a DETR-style resize: shorter side to ``shortest_edge``, longer at most ``longest_edge``.

    Same arithmetic as transformers' ``get_size_with_aspect_ratio``.

    Example:
        >>> resized_size(480, 640, 800, 1333)
        (800, 1066)
        >>> resized_size(400, 1600, 800, 1333)
        (333, 1333)
    """
    size = shortest_edge
    raw_size = None
    if longest_edge is not None:
        min_side = float(min(height, width))
        max_side = float(max(height, width))
        if max_side / min_side * size > longest_edge:
            raw_size = longest_edge * min_side / max_side
            size = int(round(raw_size))
    if (height <= width and height == size) or (width <= height and width == size):
        return height, width
    if width < height:
        new_w = size
        new_h = (
            int(raw_size * height / width) if raw_size is not None else int(size * height / width)
        )
    else:
        new_h = size
        new_w = (
            int(raw_size * width / height) if raw_size is not None else int(size * width / height)
        )
    return new_h, new_w


def grounding_dino_pixels(
    image: np.ndarray,
    out_size: tuple[int, int],
    mean: Sequence[float] = IMAGENET_MEAN,
    std: Sequence[float] = IMAGENET_STD,
) -> np.ndarray:
    """Resize one frame to ``out_size = (h, w)`` (PIL bilinear), normalise -> ``float32 (3, h, w)``."""
    return resize_to_chw(image, out_size, Image.Resampling.BILINEAR, mean, std)


class GroundingDinoDetector(HFDetectionBase):
    """Grounding DINO (``GroundingDinoForObjectDetection``); see the module docstring.

    Args:
        weights: local directory or hub id (default: the variant's checkpoint).
        device: torch device string.
        dtype: ``"float32"`` (default), ``"float16"`` or ``"bfloat16"``.
        batch_size: frames per forward pass.
        model_dir: extra directory searched for hub ids.
        threshold: box threshold (default 0.35).
        text_threshold: text threshold (default 0.25).
    """

    name = "grounding-dino/custom"
    supports_text = True
    supports_image_query = False

    _model_class = "GroundingDinoForObjectDetection"
    _model_types = ("grounding-dino",)

    default_threshold = 0.35
    default_text_threshold = 0.25

    def __init__(
        self,
        *,
        weights: str | Path | None = None,
        device: str = "cpu",
        dtype: str = "float32",
        batch_size: int = 4,
        model_dir: str | Path | None = None,
        threshold: float | None = None,
        text_threshold: float | None = None,
    ) -> None:
        where = self.name
        thr = check_threshold(
            self.default_threshold if threshold is None else threshold, where=where
        )
        text_thr = check_threshold(
            self.default_text_threshold if text_threshold is None else text_threshold,
            where=where,
            name="text_threshold",
        )
        super().__init__(
            weights=weights,
            device=device,
            dtype=dtype,
            batch_size=batch_size,
            model_dir=model_dir,
            threshold=thr,
            text_threshold=text_thr,
        )
        self.threshold = thr
        self.text_threshold = text_thr
        assert self.weights_path is not None
        self.tokenizer = load_tokenizer(self.weights_path, backend=self.name)
        if not getattr(self.tokenizer, "is_fast", False):
            raise MissingDependencyError(
                f"backend '{self.name}': the tokenizer in '{self.weights_path}' is not a fast "
                "(tokenizers-backed) tokenizer; character offsets are needed to map tokens to phrases",
                hint="make sure tokenizer.json is present, or pip install -U tokenizers transformers",
            )
        self.max_text_len = int(self.model.config.max_text_len)
        pre = self._read_preprocessing(IMAGENET_MEAN, IMAGENET_STD)
        size = pre.get("size") or {}
        shortest = size.get("shortest_edge", 800) if isinstance(size, dict) else 800
        longest = size.get("longest_edge", 1333) if isinstance(size, dict) else 1333
        self.shortest_edge = int(shortest)
        self.longest_edge = None if longest is None else int(longest)
        self.settings.update(
            shortest_edge=self.shortest_edge,
            longest_edge=self.longest_edge,
            image_mean=list(self.image_mean),
            image_std=list(self.image_std),
            max_text_len=self.max_text_len,
            caption="lower-case phrases joined by ' . ', ending ' .'",
            preprocessing="aspect-kept resize (shortest/longest edge), PIL bilinear, ImageNet mean/std",
        )

    def _encode(self, queries: list[str], where: str) -> tuple[dict[str, Any], np.ndarray]:
        caption, spans = build_caption(queries, where=where)
        enc = self.tokenizer(
            caption,
            return_offsets_mapping=True,
            return_special_tokens_mask=True,
            return_token_type_ids=True,
            return_attention_mask=True,
        )
        n_tokens = len(enc["input_ids"])
        if n_tokens > self.max_text_len:
            raise UserInputError(
                f"{where}: the caption of {len(queries)} queries is {n_tokens} tokens, the model "
                f"reads at most {self.max_text_len}",
                hint="split the queries over several detect() calls",
            )
        phrase_of = token_phrase_map(enc["offset_mapping"], enc["special_tokens_mask"], spans)
        torch = self._torch
        device = self._param.device
        tensors = {
            key: torch.tensor([enc[key]], dtype=torch.long, device=device)
            for key in ("input_ids", "attention_mask", "token_type_ids")
        }
        return tensors, phrase_of

    def detect(
        self,
        images: Sequence[np.ndarray],
        *,
        text_queries: Sequence[str] | None = None,
        image_query: np.ndarray | None = None,
        threshold: float | None = None,
    ) -> list[list[Detection]]:
        """Ground each text query in each frame.

        Args:
            images: ``uint8 (H, W, 3)`` RGB frames, sizes may differ.
            text_queries: phrases; each detection's label is the best-matching phrase.
            image_query: not supported (raises).
            threshold: overrides the box threshold for this call.

        Returns:
            Per frame, detections in frame pixels sorted by descending score.

        Raises:
            UserInputError: an image query, no text queries, bad images or threshold.
        """
        where = f"{self.name}.detect"
        if image_query is not None:
            raise UserInputError(
                f"{where}: Grounding DINO does not support image queries (image-guided detection)",
                hint=f"use text_queries=, or an image-query detector: {IMAGE_QUERY_ALTERNATIVES}",
            )
        if text_queries is None:
            raise UserInputError(
                f"{where}: text_queries= is required",
                hint="e.g. text_queries=['a red car', 'person']",
            )
        frames = check_images(images, where=where)
        queries = check_text_queries(text_queries, where=where)
        thr = self.threshold if threshold is None else check_threshold(threshold, where=where)
        min_score = max(thr, self.text_threshold)  # a box must beat both thresholds
        tensors, phrase_of = self._encode(queries, where)
        if not frames:
            return []
        phrase_tokens = [np.flatnonzero(phrase_of == p) for p in range(len(queries))]

        groups: dict[tuple[int, int], list[int]] = {}
        for i, frame in enumerate(frames):
            size = resized_size(
                frame.shape[0], frame.shape[1], self.shortest_edge, self.longest_edge
            )
            groups.setdefault(size, []).append(i)

        torch = self._torch
        results: list[list[Detection] | None] = [None] * len(frames)
        for size, indices in groups.items():
            for chunk in batched(indices, self.batch_size):
                n = len(chunk)
                arr = np.stack(
                    [
                        grounding_dino_pixels(frames[i], size, self.image_mean, self.image_std)
                        for i in chunk
                    ]
                )
                pixel_values = self._model_input(arr)
                pixel_mask = torch.ones(
                    (n, size[0], size[1]), dtype=torch.long, device=self._param.device
                )
                with torch.inference_mode():
                    out = self.model(
                        pixel_values=pixel_values,
                        pixel_mask=pixel_mask,
                        input_ids=tensors["input_ids"].repeat(n, 1),
                        attention_mask=tensors["attention_mask"].repeat(n, 1),
                        token_type_ids=tensors["token_type_ids"].repeat(n, 1),
                    )
                    probs = torch.sigmoid(out.logits.float()[..., : len(phrase_of)]).cpu().numpy()
                    boxes = out.pred_boxes.float().cpu().numpy()
                # (n, boxes, phrases): the best token probability inside each phrase
                phrase_probs = np.zeros(probs.shape[:2] + (len(queries),), dtype=np.float32)
                for p, tokens in enumerate(phrase_tokens):
                    if len(tokens):
                        phrase_probs[..., p] = probs[..., tokens].max(axis=-1)
                for k, i in enumerate(chunk):
                    results[i] = query_detections(
                        frames[i], phrase_probs[k], boxes[k], queries, min_score
                    )
        return [r if r is not None else [] for r in results]


class GroundingDinoTiny(GroundingDinoDetector):
    """``grounding-dino/tiny`` (Swin-T backbone)."""

    name = "grounding-dino/tiny"
    default_weights = "IDEA-Research/grounding-dino-tiny"


class GroundingDinoBase(GroundingDinoDetector):
    """``grounding-dino/base`` (Swin-B backbone)."""

    name = "grounding-dino/base"
    default_weights = "IDEA-Research/grounding-dino-base"
