"""InsightFace's SCRFD face detector (``det_10g.onnx`` of ``buffalo_l``) run with onnxruntime.

Rules (those of ``insightface.model_zoo.scrfd.SCRFD``):

* The RGB frame is resized, aspect kept, to fit ``640 x 640`` and pasted top-left on
  black; the network sees ``(rgb - 127.5) / 128`` in NCHW.
* Outputs are 3 score maps, then 3 box-distance maps, then (when there are 9 outputs)
  3 five-point landmark maps, for strides 8, 16 and 32 with 2 anchors per cell; distances
  are in stride units from the cell's top-left corner.
* Anchors scoring >= ``threshold`` (0.5) are kept, then greedy NMS at IoU 0.4.

Example:
    >>> centers = anchor_centers(2, 3, 8, 2)
    >>> centers.shape, centers[:3].tolist()
    ((12, 2), [[0.0, 0.0], [0.0, 0.0], [8.0, 0.0]])
    >>> nms(np.array([[0, 0, 10, 10], [1, 1, 10, 10], [20, 20, 30, 30.]]), np.array([0.9, 0.8, 0.7]), 0.4)
    [0, 2]
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

STRIDES = (8, 16, 32)
ANCHORS = 2
INPUT_SIZE = 640
MEAN, STD = 127.5, 128.0

PROTOCOL = {
    "scrfd_settings": {
        "rule": "det_size 640x640, score threshold 0.5, NMS IoU 0.4",
        "reason": "InsightFace FaceAnalysis defaults for buffalo_l",
        "source": "insightface/model_zoo/scrfd.py",
    },
}


def anchor_centers(height: int, width: int, stride: int, anchors: int) -> np.ndarray:
    """Top-left corners of each cell, in input pixels, repeated per anchor (row-major)."""
    grid = np.stack(np.mgrid[:height, :width][::-1], axis=-1).astype(np.float32) * stride
    return np.repeat(grid.reshape(-1, 2), anchors, axis=0)


def nms(boxes: np.ndarray, scores: np.ndarray, iou: float) -> list[int]:
    """Greedy non-maximum suppression; indices kept, best first."""
    order = np.argsort(-scores, kind="stable")
    keep: list[int] = []
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    while order.size:
        i = int(order[0])
        keep.append(i)
        rest = order[1:]
        xx0 = np.maximum(boxes[i, 0], boxes[rest, 0])
        yy0 = np.maximum(boxes[i, 1], boxes[rest, 1])
        xx1 = np.minimum(boxes[i, 2], boxes[rest, 2])
        yy1 = np.minimum(boxes[i, 3], boxes[rest, 3])
        inter = np.clip(xx1 - xx0, 0, None) * np.clip(yy1 - yy0, 0, None)
        overlap = inter / np.maximum(area[i] + area[rest] - inter, 1e-12)
        order = rest[overlap <= iou]
    return keep


class Scrfd:
    """``detect(rgb) -> (boxes (N, 4), scores (N,), landmarks (N, 5, 2) or None)``."""

    def __init__(self, session: Any, *, threshold: float = 0.5, nms_iou: float = 0.4) -> None:
        self.session = session
        self.input_name = session.get_inputs()[0].name
        self.outputs = [o.name for o in session.get_outputs()]
        if len(self.outputs) not in (6, 9):
            raise ValueError(f"SCRFD expects 6 or 9 outputs, the model has {len(self.outputs)}")
        self.use_kps = len(self.outputs) == 9
        self.threshold, self.nms_iou = threshold, nms_iou

    def blob(self, rgb: np.ndarray) -> tuple[np.ndarray, float]:
        h, w = rgb.shape[:2]
        if h / w > 1.0:
            nh, nw = INPUT_SIZE, int(INPUT_SIZE * w / h)
        else:
            nw, nh = INPUT_SIZE, int(INPUT_SIZE * h / w)
        canvas = np.zeros((INPUT_SIZE, INPUT_SIZE, 3), np.float32)
        canvas[:nh, :nw] = cv2.resize(rgb, (nw, nh))
        blob = ((canvas - MEAN) / STD).transpose(2, 0, 1)[None].astype(np.float32)
        return blob, nh / h

    def detect(self, rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        blob, scale = self.blob(rgb)
        outs = self.session.run(self.outputs, {self.input_name: blob})
        outs = [o[0] if o.ndim == 3 else o for o in outs]  # batched exports carry N first
        boxes, scores, kps = [], [], []
        for i, stride in enumerate(STRIDES):
            side = INPUT_SIZE // stride
            centers = anchor_centers(side, side, stride, ANCHORS)
            sc = outs[i].reshape(-1)
            d = outs[i + 3].reshape(-1, 4) * stride
            pos = np.flatnonzero(sc >= self.threshold)
            c = centers[pos]
            boxes.append(np.concatenate([c - d[pos, :2], c + d[pos, 2:]], axis=1))
            scores.append(sc[pos])
            if self.use_kps:
                k = outs[i + 6].reshape(-1, 10)[pos] * stride
                kps.append(k.reshape(-1, 5, 2) + c[:, None, :])
        b = np.concatenate(boxes) / scale
        s = np.concatenate(scores)
        keep = nms(b, s, self.nms_iou)
        lm = np.concatenate(kps)[keep] / scale if self.use_kps else None
        return b[keep], s[keep], lm
