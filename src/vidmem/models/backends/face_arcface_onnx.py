"""``face/arcface-onnx``: ArcFace identity vectors of the largest face in each frame.

The user supplies the ONNX files (InsightFace's ``buffalo_l`` pack; nothing is fetched):
``weights=DIR`` holding ``w600k_r50.onnx`` (the recognition model; any other single
``*.onnx`` that is not ``det_*`` works too) and, optionally, ``det_10g.onnx`` (SCRFD), or
``weights=FILE`` naming the recognition model alone.

Rules (those of ``insightface.app.FaceAnalysis`` + ``ArcFaceONNX`` unless said):

* The face: SCRFD's boxes when the pack has a detector, else OpenCV's frontal-face Haar
  cascade (:mod:`vidmem.models.backends.haar_cascade`); :meth:`info` says which. Of the
  faces found, the one with the largest box area is embedded (ties: leftmost, topmost).
* With SCRFD's five landmarks the face is aligned by the least-squares similarity
  transform onto ArcFace's 112x112 template (``norm_crop``, black border). The cascade
  has no landmarks, so (a vidmem rule) the crop is the box's centred square enlarged by
  ``HAAR_MARGIN`` (black outside the frame), resized to 112x112.
* The network sees RGB (InsightFace swaps its BGR frames to RGB) as
  ``(x - 127.5) / 127.5`` in NCHW float32; ``input_mean`` / ``input_std`` change it for
  packs whose graph normalises itself. The output row is L2-normalised.
* A frame without a face gets ``None`` (never a zero vector).

Example:
    >>> ARCFACE_TEMPLATE.shape
    (5, 2)
    >>> square_crop_box((10, 20, 30, 60), 1.0)
    (0.0, 20.0, 40.0, 60.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from vidmem.errors import MissingDependencyError, UserInputError
from vidmem.models.backends.base import BackendBase
from vidmem.models.backends.classic_embed import check_rgb_image
from vidmem.models.backends.face_scrfd import PROTOCOL as SCRFD_PROTOCOL
from vidmem.models.backends.face_scrfd import Scrfd
from vidmem.models.backends.haar_cascade import PROTOCOL as HAAR_PROTOCOL
from vidmem.models.backends.haar_cascade import load_cascade
from vidmem.models.protocols import BackendInfo, Box

ARCFACE_TEMPLATE = np.array(
    [[38.2946, 51.6963], [73.5318, 51.5014], [56.0252, 71.7366], [41.5493, 92.3655], [70.7299, 92.2041]],
    dtype=np.float32,
)
FACE_SIZE = 112
#: the Haar box covers brow to chin; ArcFace's template leaves forehead and jaw around it.
HAAR_MARGIN = 1.2
RECOGNITION_FILE = "w600k_r50.onnx"
DETECTOR_FILE = "det_10g.onnx"

#: every rule of the face path (detectors included), for a run.json protocol block.
PROTOCOL = {
    "face_choice": {
        "rule": "embed only the largest detected face of a frame (box area; ties leftmost, topmost)",
        "reason": "the card says 'the largest face'; ties need an order to stay deterministic",
        "source": "issue 15",
    },
    "face_no_landmarks": {
        "rule": f"without landmarks (Haar cascade) crop the centred square x{HAAR_MARGIN} of the box, "
                "resize to 112x112",
        "reason": "the 5-point alignment needs landmarks the cascade does not give",
        "source": "vidmem",
    },
    "face_normalisation": {
        "rule": "RGB, (x - 127.5) / 127.5, NCHW float32; output L2-normalised",
        "reason": "what InsightFace feeds w600k_r50 (its graph has no Sub/Mul preprocessing)",
        "source": "insightface/model_zoo/arcface_onnx.py",
    },
    **SCRFD_PROTOCOL,
    **HAAR_PROTOCOL,
}


def square_crop_box(box: Box, margin: float) -> Box:
    """The square centred on ``box`` with side ``max(w, h) * margin``."""
    x0, y0, x1, y1 = box
    cx, cy, side = (x0 + x1) / 2, (y0 + y1) / 2, max(x1 - x0, y1 - y0) * margin
    return (cx - side / 2, cy - side / 2, cx + side / 2, cy + side / 2)


def align_by_landmarks(rgb: np.ndarray, landmarks: np.ndarray) -> np.ndarray:
    """``norm_crop``: warp ``rgb`` so its 5 landmarks land on :data:`ARCFACE_TEMPLATE`."""
    from skimage.transform import SimilarityTransform

    tform = SimilarityTransform.from_estimate(landmarks, ARCFACE_TEMPLATE) if hasattr(
        SimilarityTransform, "from_estimate") else _estimated(SimilarityTransform, landmarks)
    return cv2.warpAffine(rgb, tform.params[:2], (FACE_SIZE, FACE_SIZE), borderValue=0.0)


def _estimated(cls: Any, landmarks: np.ndarray) -> Any:
    tform = cls()
    tform.estimate(landmarks, ARCFACE_TEMPLATE)
    return tform


def crop_square(rgb: np.ndarray, box: Box) -> np.ndarray:
    """The square around ``box`` (:data:`HAAR_MARGIN`), black outside the frame, at 112x112."""
    x0, y0, x1, y1 = square_crop_box(box, HAAR_MARGIN)
    scale = FACE_SIZE / (x1 - x0)
    m = np.array([[scale, 0, -x0 * scale], [0, scale, -y0 * scale]], np.float64)
    return cv2.warpAffine(rgb, m, (FACE_SIZE, FACE_SIZE), flags=cv2.INTER_AREA, borderValue=0.0)


def to_blob(faces: Sequence[np.ndarray], mean: float = 127.5, std: float = 127.5) -> np.ndarray:
    """``(N, 3, 112, 112)`` float32 network input from 112x112 RGB crops.

    Example:
        >>> to_blob([np.full((112, 112, 3), 255, np.uint8)])[0, :, 0, 0].tolist()
        [1.0, 1.0, 1.0]
    """
    arr = np.stack([np.asarray(f, np.float32) for f in faces])
    return ((arr - mean) / std).transpose(0, 3, 1, 2).astype(np.float32)


def import_onnxruntime() -> Any:
    try:
        import onnxruntime
    except ImportError as exc:
        raise MissingDependencyError(
            "face/arcface-onnx needs onnxruntime, which is not installed",
            hint="pip install 'vidmem[faces]' (or pip install onnxruntime)",
        ) from exc
    return onnxruntime


def _locate(weights: Any) -> tuple[Path, Path | None]:
    """(recognition model, detector or None) from ``weights=DIR`` or ``weights=FILE``."""
    fix = (f"pass weights=DIR holding InsightFace's buffalo_l {RECOGNITION_FILE} "
           f"(and {DETECTOR_FILE} for SCRFD), or weights=PATH/TO/{RECOGNITION_FILE}")
    if weights is None:
        raise UserInputError("face/arcface-onnx: weights are required (a user-supplied ArcFace ONNX model)",
                             hint=fix)
    path = Path(weights).expanduser()
    if not path.exists():
        raise UserInputError(f"face/arcface-onnx: weights '{weights}' do not exist", hint=fix)
    if path.is_file():
        if path.suffix != ".onnx":
            raise UserInputError(f"face/arcface-onnx: weights '{weights}' is not an .onnx file", hint=fix)
        det = path.parent / DETECTOR_FILE
        return path, det if det.is_file() else None
    rec = path / RECOGNITION_FILE
    if not rec.is_file():
        others = sorted(p for p in path.glob("*.onnx") if not p.name.startswith("det_"))
        if len(others) != 1:
            raise UserInputError(
                f"face/arcface-onnx: no {RECOGNITION_FILE} in '{path}' "
                f"(other recognition candidates: {[p.name for p in others] or 'none'})", hint=fix)
        rec = others[0]
    det = path / DETECTOR_FILE
    return rec, det if det.is_file() else None


class ArcFaceOnnx(BackendBase):
    """``face_embedder``: :meth:`embed_faces` and :meth:`embed_images` (crops given as faces).

    Args:
        weights: DIR or FILE, see the module docstring (required).
        device: ``cpu`` or ``cuda`` (onnxruntime's CUDA provider when installed).
        detector: ``auto`` (SCRFD when the pack has it, else Haar), ``scrfd`` or ``haar``.
        input_mean, input_std: the network's input normalisation (127.5 / 127.5).
        det_threshold: SCRFD's score threshold (0.5).
        min_face: smallest Haar window side in pixels (24).
        min_neighbors: Haar hits a face needs (3, OpenCV's default; raise it where
            face-like textures give false faces larger than the real one).
    """

    name = "face/arcface-onnx"
    official = False

    def __init__(self, *, weights: Any = None, device: str = "cpu", dtype: str = "float32",
                 batch_size: int = 32, detector: str = "auto", input_mean: float = 127.5,
                 input_std: float = 127.5, det_threshold: float = 0.5, min_face: int = 24,
                 min_neighbors: int = 3) -> None:
        rec, det = _locate(weights)
        if detector not in ("auto", "scrfd", "haar"):
            raise UserInputError(f"face/arcface-onnx: detector must be auto, scrfd or haar; found {detector!r}")
        if detector == "scrfd" and det is None:
            raise UserInputError(f"face/arcface-onnx: detector=scrfd but no {DETECTOR_FILE} next to {rec.name}",
                                 hint=f"put buffalo_l's {DETECTOR_FILE} there, or use detector=haar")
        super().__init__(weights=None, device=device, dtype=dtype, batch_size=batch_size)
        self.weights_path = rec.parent if det is not None else rec
        ort = import_onnxruntime()
        providers = ["CPUExecutionProvider"]
        if device.startswith("cuda") and "CUDAExecutionProvider" in ort.get_available_providers():
            providers.insert(0, "CUDAExecutionProvider")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1  # one thread: deterministic sums, fair share of shared cores
        self._rec = ort.InferenceSession(str(rec), opts, providers=providers)
        shape = self._rec.get_inputs()[0].shape
        if len(shape) != 4 or shape[1] != 3 or list(shape[2:]) != [FACE_SIZE, FACE_SIZE]:
            raise UserInputError(f"face/arcface-onnx: {rec.name} takes input {shape}, not Nx3x112x112",
                                 hint=f"use an ArcFace recognition model such as buffalo_l's {RECOGNITION_FILE}")
        self._fixed_batch = not isinstance(shape[0], str) and shape[0] is not None
        use_scrfd = det is not None and detector != "haar"
        self._scrfd = Scrfd(ort.InferenceSession(str(det), opts, providers=providers),
                            threshold=det_threshold) if use_scrfd else None
        self._haar = None if use_scrfd else load_cascade()
        self.mean, self.std, self.min_face = float(input_mean), float(input_std), int(min_face)
        self.min_neighbors = int(min_neighbors)
        self.face_detector = (f"scrfd ({DETECTOR_FILE})" if use_scrfd else
                              f"opencv haar cascade ({self._haar.source}, {self._haar.engine} engine)")
        self.settings.update({"recognition": rec.name, "face_detector": self.face_detector,
                              "input_mean": self.mean, "input_std": self.std,
                              "det_threshold": det_threshold, "min_face": self.min_face,
                              "min_neighbors": self.min_neighbors,
                              "providers": self._rec.get_providers()})

    def info(self) -> BackendInfo:
        from vidmem.io.hashing import tree_sha256

        return BackendInfo(name=self.name, weights=str(self.weights_path),
                           weights_sha256=tree_sha256(self.weights_path, patterns=("*.onnx",)),
                           device=self.device, dtype=self.dtype, official=self.official,
                           settings=dict(self.settings))

    def largest_face(self, rgb: np.ndarray) -> tuple[Box | None, np.ndarray | None]:
        """The largest face's box and, from SCRFD, its 5 landmarks."""
        if self._scrfd is not None:
            boxes, _, kps = self._scrfd.detect(rgb)
            if len(boxes) == 0:
                return None, None
            area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
            i = int(np.lexsort((boxes[:, 1], boxes[:, 0], -area))[0])
            return tuple(float(v) for v in boxes[i]), (kps[i] if kps is not None else None)
        found = self._haar.detect(cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY), min_size=self.min_face,
                                  min_neighbors=self.min_neighbors)
        return (found[0], None) if found else (None, None)

    def embed_faces(self, frames: Sequence[np.ndarray]) -> tuple[list[np.ndarray | None], list[Box | None]]:
        """Per frame: the largest face's unit ArcFace vector (``None`` without a face) and its box."""
        crops: list[np.ndarray] = []
        where: list[int] = []
        boxes: list[Box | None] = []
        for i, frame in enumerate(frames):
            rgb = check_rgb_image(frame, where=f"{self.name}: frames[{i}]")
            box, kps = self.largest_face(rgb)
            boxes.append(box)
            if box is not None:
                crops.append(align_by_landmarks(rgb, kps) if kps is not None else crop_square(rgb, box))
                where.append(i)
        vectors: list[np.ndarray | None] = [None] * len(boxes)
        if crops:
            for i, vec in zip(where, self.embed_crops(crops), strict=True):
                vectors[i] = vec
        return vectors, boxes

    def embed_crops(self, faces: Sequence[np.ndarray]) -> np.ndarray:
        """``(N, D)`` unit vectors of 112x112 RGB face crops (already aligned)."""
        for i, f in enumerate(faces):
            if check_rgb_image(f, where=f"{self.name}: faces[{i}]").shape[:2] != (FACE_SIZE, FACE_SIZE):
                raise UserInputError(f"{self.name}: faces[{i}] is {f.shape[:2]}, not 112x112",
                                     hint="pass whole frames to embed_faces, which finds and aligns faces")
        size = 1 if self._fixed_batch else self.batch_size
        name = self._rec.get_inputs()[0].name
        rows = [self._rec.run(None, {name: to_blob(faces[s:s + size], self.mean, self.std)})[0]
                for s in range(0, len(faces), size)]
        out = np.concatenate(rows).reshape(len(faces), -1).astype(np.float64)
        norm = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.where(norm > 0, norm, 1.0)).astype(np.float32)

    def embed_images(self, images: Sequence[np.ndarray]) -> np.ndarray:
        """Face vectors of whole images; an image without a face raises (use embed_faces)."""
        vectors, _ = self.embed_faces(images)
        missing = [i for i, v in enumerate(vectors) if v is None]
        if missing:
            raise UserInputError(f"{self.name}: no face found in images {missing}",
                                 hint="call embed_faces, which returns None for faceless frames")
        return np.stack(vectors) if vectors else np.zeros((0, 512), np.float32)
