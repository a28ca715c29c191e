"""CMBench scoring of one continuation: detect -> segment -> crop -> embed -> cosine.

The published evaluator is not public; this follows the dataset card as resolved in the
protocol notes:

1. Reference crop: the annotated box on the reference frame, segmented with the box as
   prompt; pixels outside the mask are filled with a constant colour (``FILL_RGB``, the
   ImageNet mean, so the filled area is "neutral" for ImageNet-normalised embedders).
2. Every ``stride``-th continuation frame: detect the target (text queries
   ``target_label`` + ``target_aliases`` with a text detector such as OWL-ViT; or, with
   an image-guided detector such as ``classic/sift``, the reference crop as query), keep
   the best box above the detector's threshold, segment it with the box prompt and crop
   it the same way.
3. Embed both crops, cosine; task score = max over frames (0 when never detected).

Scorer presets: ``official`` (OWL-ViT + SAM 2 + DINOv2), ``direct`` (the diagnostic of the
published code: the annotated box re-scaled onto every frame, no detector), ``offline``
(classic SIFT + GrabCut + colour/texture embedder; a proxy for machines without weights,
never the official protocol). Backends can be overridden one by one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from vidmem.benchmarks.cmbench.data import CMBenchTask, ResolvedReference
from vidmem.errors import UserInputError
from vidmem.io.boxes import SNAP_TOLERANCE, normalized_to_pixel
from vidmem.io.video import iter_frames as _iter_frames
from vidmem.io.video import probe, read_frames
from vidmem.metrics.crop_recall import cosine_rows, task_score

Preset = Literal["official", "direct", "offline"]
FILL_RGB = (124, 116, 104)
#: default :attr:`ScorerConfig.image_query_min_side` (pixels) and the largest upscale
IMAGE_QUERY_MIN_SIDE = 128
MAX_QUERY_UPSCALE = 4

PRESETS: dict[str, dict[str, str | None]] = {
    "official": {"detector": "owlvit/base-patch32", "segmenter": "sam2/base-plus", "embedder": "dinov2/base"},
    "direct": {"detector": None, "segmenter": "sam2/base-plus", "embedder": "dinov2/base"},
    "offline": {"detector": "classic/sift", "segmenter": "classic/grabcut", "embedder": "classic/hsv-lbp"},
}


@dataclass(frozen=True)
class ScorerConfig:
    """Everything that changes a CMBench score (recorded in run.json and item keys).

    Attributes:
        preset: ``official`` | ``direct`` | ``offline`` (see module docstring).
        detector, segmenter, embedder: backend names; ``detector`` is ``None`` for direct.
        detector_threshold: overrides the detector's own default threshold when set
            (passed to the detector's constructor, so a bad value fails at load).
        stride: score every ``stride``-th continuation frame (1 = every frame).
        batch_size: frames per detection/segmentation/embedding batch.
        image_query_min_side: image-guided detection only: an image query whose longer
            side is shorter is searched, with the frames, upscaled by
            :func:`query_upscale` (0 turns it off).
        backend_options: per backend name, constructor options (weights, device...).
    """

    preset: Preset = "offline"
    detector: str | None = "classic/sift"
    segmenter: str = "classic/grabcut"
    embedder: str = "classic/hsv-lbp"
    detector_threshold: float | None = None
    stride: int = 1
    batch_size: int = 16
    image_query_min_side: int = IMAGE_QUERY_MIN_SIDE
    backend_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_preset(cls, preset: str, **overrides: Any) -> ScorerConfig:
        if preset not in PRESETS:
            raise UserInputError(f"unknown CMBench scorer preset '{preset}'", hint=f"use one of {sorted(PRESETS)}")
        values: dict[str, Any] = {**PRESETS[preset], "preset": preset}
        values.update({k: v for k, v in overrides.items() if v is not None})
        if preset == "direct":
            values["detector"] = None
        if int(values.get("stride", 1)) < 1 or int(values.get("batch_size", 1)) < 1:
            raise UserInputError("CMBench scorer: stride and batch_size must be >= 1")
        if int(values.get("image_query_min_side", 0)) < 0:
            raise UserInputError("CMBench scorer: image_query_min_side must be >= 0",
                                 hint="0 turns query upscaling off")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return {
            "preset": self.preset, "detector": self.detector, "segmenter": self.segmenter,
            "embedder": self.embedder, "detector_threshold": self.detector_threshold,
            "stride": self.stride, "batch_size": self.batch_size, "fill_rgb": list(FILL_RGB),
            "image_query_min_side": self.image_query_min_side,
            "backend_options": {k: dict(v) for k, v in self.backend_options.items()},
        }


def masked_crop(image: np.ndarray, box: Sequence[int], mask: np.ndarray | None) -> np.ndarray:
    """Crop ``box`` from ``image``, filling pixels outside ``mask`` with ``FILL_RGB``.

    Example:
        >>> img = np.full((4, 4, 3), 200, np.uint8)
        >>> m = np.zeros((4, 4), bool); m[1, 1] = True
        >>> c = masked_crop(img, (1, 1, 3, 3), m)
        >>> c.shape, c[0, 0].tolist(), c[1, 1].tolist()
        ((2, 2, 3), [200, 200, 200], [124, 116, 104])
    """
    x0, y0, x1, y1 = (int(v) for v in box)
    out = image[y0:y1, x0:x1].copy()
    if mask is not None:
        out[~mask[y0:y1, x0:x1]] = FILL_RGB
    return out


def query_upscale(query_shape: Sequence[int], min_side: int) -> int:
    """The integer factor an image query (and the frames searched with it) is upscaled by:
    the smallest that brings the query's longer side to ``min_side``, at most
    :data:`MAX_QUERY_UPSCALE`; 1 when it is long enough or ``min_side`` is 0.

    Example:
        >>> query_upscale((76, 62, 3), 128), query_upscale((130, 20, 3), 128)
        (2, 1)
        >>> query_upscale((10, 10, 3), 128), query_upscale((76, 62, 3), 0)
        (4, 1)
    """
    longer = max(int(query_shape[0]), int(query_shape[1]))
    if min_side <= 0 or longer >= min_side:
        return 1
    return int(min(MAX_QUERY_UPSCALE, -(-min_side // longer)))


def _upscaled(image: np.ndarray, factor: int) -> np.ndarray:
    import cv2

    return image if factor == 1 else cv2.resize(image, None, fx=factor, fy=factor,
                                                interpolation=cv2.INTER_CUBIC)


def _pixel_box(box: Sequence[float], width: int, height: int) -> tuple[int, int, int, int] | None:
    # Outward rounding as for reference boxes, with float noise within SNAP_TOLERANCE snapped.
    x0 = max(0, int(np.floor(box[0] + SNAP_TOLERANCE)))
    y0 = max(0, int(np.floor(box[1] + SNAP_TOLERANCE)))
    x1 = min(width, int(np.ceil(box[2] - SNAP_TOLERANCE)))
    y1 = min(height, int(np.ceil(box[3] - SNAP_TOLERANCE)))
    return (x0, y0, x1, y1) if x1 > x0 and y1 > y0 else None


@dataclass
class ReferenceCrop:
    reference: int
    frame_index: int
    box: tuple[int, int, int, int]
    box_normalized: tuple[float, float, float, float]
    box_crop: np.ndarray  # unmasked, used as an image query
    crop: np.ndarray  # masked, what is embedded
    embedding: np.ndarray


class CMBenchScorer:
    """Scores continuations of CMBench tasks with loaded backends."""

    def __init__(self, config: ScorerConfig, *, detector: Any, segmenter: Any, embedder: Any) -> None:
        self.config = config
        self.detector = detector
        self.segmenter = segmenter
        self.embedder = embedder
        if config.preset != "direct" and detector is None:
            raise UserInputError("CMBench scorer: a detector is required unless the preset is 'direct'")

    # -- references -------------------------------------------------------------------

    def reference_crops(self, task: CMBenchTask, context: str, resolved: Sequence[ResolvedReference]) -> list[ReferenceCrop]:
        frames = read_frames(context, [r.frame_index for r in resolved])
        boxes = [tuple(int(v) for v in r.box_px) for r in resolved]
        masks = self.segmenter.segment(list(frames), boxes)
        crops = [masked_crop(f, b, m) for f, b, m in zip(frames, boxes, masks, strict=True)]
        emb = self.embedder.embed_images(crops)
        return [
            ReferenceCrop(
                reference=r.reference, frame_index=r.frame_index, box=b,
                box_normalized=tuple(task.references[r.reference].bbox_xyxy_normalized),
                box_crop=f[b[1]:b[3], b[0]:b[2]].copy(), crop=c, embedding=e,
            )
            for r, f, b, c, e in zip(resolved, frames, boxes, crops, emb, strict=True)
        ]

    # -- continuation -----------------------------------------------------------------

    def _detect(self, task: CMBenchTask, batch: np.ndarray, refs: list[ReferenceCrop]) -> list[tuple[tuple[float, ...], float] | None]:
        """Best detection per frame (box, score), or None."""
        if getattr(self.detector, "supports_text", False):
            queries = [task.target_label, *task.target_aliases]
            per_frame = self.detector.detect(list(batch), text_queries=queries)
        elif getattr(self.detector, "supports_image_query", False):
            best: list[list[Any]] = [[] for _ in range(len(batch))]
            for ref in refs:  # one query per reference; the best box over references wins
                k = query_upscale(ref.box_crop.shape, self.config.image_query_min_side)
                found = self.detector.detect([_upscaled(f, k) for f in batch],
                                             image_query=_upscaled(ref.box_crop, k))
                for i, dets in enumerate(found):
                    best[i].extend((tuple(float(v) / k for v in d.box), float(d.score))
                                   for d in dets)
            ranked = [sorted(d, key=lambda x: -x[1]) for d in best]
            return [d[0] if d else None for d in ranked]
        else:
            raise UserInputError(f"detector {self.config.detector} supports neither text nor image queries")
        return [(tuple(d[0].box), float(d[0].score)) if d else None for d in per_frame]

    def score_video(self, task: CMBenchTask, video: str, refs: list[ReferenceCrop]) -> dict[str, Any]:
        """Per-frame similarities and the task score for one continuation video."""
        info = probe(video)
        w, h = info.width, info.height
        frames_out: list[dict[str, Any]] = []
        sims_all: list[list[float]] = []
        for indices, batch in _iter_frames(video, stride=self.config.stride, batch_size=self.config.batch_size):
            if self.config.preset == "direct":
                dets = self._direct_boxes(refs, w, h, len(indices))
            else:
                dets = self._detect(task, batch, refs)
            keep = [(k, _pixel_box(d[0], w, h), d[1]) for k, d in enumerate(dets) if d is not None]
            keep = [(k, b, s) for k, b, s in keep if b is not None]
            sims = np.full((len(refs), len(indices)), np.nan)
            boxes: dict[int, tuple[tuple[int, int, int, int], float]] = {}
            if keep:
                masks = self.segmenter.segment([batch[k] for k, _, _ in keep], [b for _, b, _ in keep])
                crops = [masked_crop(batch[k], b, m) for (k, b, _), m in zip(keep, masks, strict=True)]
                emb = self.embedder.embed_images(crops)
                cos = cosine_rows(np.stack([r.embedding for r in refs]), emb)
                for col, (k, b, s) in enumerate(keep):
                    sims[:, k] = cos[:, col]
                    boxes[k] = (b, s)
            for k, idx in enumerate(indices):
                det = boxes.get(k)
                frames_out.append({
                    "frame": int(idx),
                    "box": list(det[0]) if det else None,
                    "det_score": round(det[1], 6) if det else None,
                    "similarity": [None if not np.isfinite(v) else round(float(v), 6) for v in sims[:, k]],
                })
            sims_all.append(sims)
        table = np.concatenate(sims_all, axis=1) if sims_all else np.zeros((len(refs), 0))
        ts = task_score(table)
        best = frames_out[ts.best_frame] if ts.best_frame is not None else None
        return {
            "frames": frames_out,
            "score": ts.score,
            "best_frame": best["frame"] if best else None,
            "best_box": best["box"] if best else None,
            "best_reference": ts.best_reference,
            "n_frames_scored": ts.n_frames,
            "n_detected": ts.n_detected,
            "video_frames": info.n_frames,
        }

    @staticmethod
    def _direct_boxes(refs: list[ReferenceCrop], w: int, h: int, n: int) -> list[tuple[tuple[float, ...], float] | None]:
        # The first reference's normalised box, rescaled to this video's frame size.
        box = normalized_to_pixel(refs[0].box_normalized, w, h)
        return [(tuple(float(v) for v in box), 1.0)] * n
