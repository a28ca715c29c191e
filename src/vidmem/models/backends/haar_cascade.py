"""OpenCV's frontal-face Haar cascade, run by OpenCV when it can and by numpy when not.

Why a numpy port: OpenCV 5 dropped ``cv2.CascadeClassifier`` and the bundled
``cv2.data.haarcascades`` files from the main wheels, yet the face path needs an offline
detector. The cascade file (``haarcascade_frontalface_default.xml``, Intel License,
notice kept inside) is shipped gzipped next to this module; a copy in
``cv2.data.haarcascades`` wins when present.

Rules of the numpy evaluator (those of OpenCV's ``HaarEvaluator``, stump cascades only):

* The image pyramid scales the *image* by ``1 / scale_factor**k`` and slides the fixed
  24x24 window with a step of 2 pixels while the factor is <= 2, else 1.
* A window's variance norm is ``nf = sqrt(A * sum(x^2) - sum(x)^2)`` over the window less
  a 1-pixel border (``A = 22 * 22``); windows with ``A / nf >= 0.1`` (near-flat) are
  rejected, as OpenCV does.
* A stump adds ``leaf[0]`` when ``sum(w_r * rectsum_r) / nf < threshold`` else
  ``leaf[1]``; a window leaves at the first stage whose sum is below the stage threshold.
* Hits are grouped as ``cv2.groupRectangles`` does (eps 0.2: the same cluster when every
  side differs by at most ``0.2 * (min widths + min heights) / 2``); clusters with at most
  ``min_neighbors`` members are dropped, and a cluster lying inside a stronger one too.

Example:
    >>> c = load_cascade()
    >>> c.window, c.engine in ("opencv", "numpy")
    ((24, 24), True)
    >>> c.detect(np.full((60, 60), 128, np.uint8))
    []
"""

from __future__ import annotations

import gzip
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from vidmem.errors import UserInputError

CASCADE_NAME = "haarcascade_frontalface_default.xml"
_SHIPPED = Path(__file__).parent / "data" / (CASCADE_NAME + ".gz")

PROTOCOL = {
    "haar_engine": {
        "rule": "cv2.CascadeClassifier when the installed OpenCV has it, else a numpy port of "
                "its stump evaluator over the same cascade file",
        "reason": "OpenCV 5 wheels no longer ship the cascade classifier nor its files",
        "source": "OpenCV cascadedetect.cpp (HaarEvaluator, groupRectangles)",
    },
    "haar_settings": {
        "rule": "scale_factor 1.1, min_neighbors 3, min_size 24 px (OpenCV's defaults; "
                "face/arcface-onnx takes min_neighbors and min_face as options)",
        "reason": "the card names the cascade, not its settings",
        "source": "cv2.CascadeClassifier.detectMultiScale defaults",
    },
}


def cascade_path() -> tuple[Path, str]:
    """The cascade file to use and where it came from (``cv2.data`` or ``vidmem``)."""
    folder = getattr(getattr(cv2, "data", None), "haarcascades", None)
    if folder and (Path(folder) / CASCADE_NAME).is_file():
        return Path(folder) / CASCADE_NAME, "cv2.data.haarcascades"
    return _SHIPPED, "vidmem (copy of OpenCV's file)"


@dataclass
class _Stage:
    threshold: float
    feature: np.ndarray  # (K,) feature index per stump
    threshold_k: np.ndarray  # (K,)
    leaves: np.ndarray  # (K, 2)
    rects: np.ndarray | None = None
    weights: np.ndarray | None = None


class HaarCascade:
    """A loaded stump cascade; :meth:`detect` returns ``(x0, y0, x1, y1)`` boxes."""

    def __init__(self, path: Path, source: str, *, force_numpy: bool = False) -> None:
        self.path, self.source = Path(path), source
        raw = gzip.decompress(self.path.read_bytes()) if self.path.suffix == ".gz" else self.path.read_bytes()
        self._cv = None
        if not force_numpy and hasattr(cv2, "CascadeClassifier") and self.path.suffix != ".gz":
            self._cv = cv2.CascadeClassifier(str(self.path))
        self.engine = "opencv" if self._cv is not None else "numpy"
        self._parse(raw)

    def _parse(self, raw: bytes) -> None:
        root = ET.fromstring(raw).find("cascade")
        if root is None or root.findtext("featureType", "").strip() != "HAAR":
            raise UserInputError(f"{self.path}: not an OpenCV HAAR cascade file",
                                 hint="use haarcascade_frontalface_default.xml")
        self.window = (int(root.findtext("width")), int(root.findtext("height")))
        self.stages: list[_Stage] = []
        for st in root.find("stages"):
            nodes = [n.findtext("internalNodes").split() for n in st.find("weakClassifiers")]
            leaves = [n.findtext("leafValues").split() for n in st.find("weakClassifiers")]
            if any(len(n) != 4 for n in nodes):
                raise UserInputError(f"{self.path}: only stump cascades are supported",
                                     hint="use haarcascade_frontalface_default.xml")
            self.stages.append(_Stage(float(st.findtext("stageThreshold")),
                                      np.array([int(n[2]) for n in nodes]),
                                      np.array([float(n[3]) for n in nodes]),
                                      np.array(leaves, dtype=np.float64)))
        self.features: list[list[tuple[int, int, int, int, float]]] = []
        for f in root.find("features"):
            rects = []
            for r in f.find("rects"):
                x, y, w, h, wt = r.text.split()
                rects.append((int(x), int(y), int(w), int(h), float(wt)))
            self.features.append(rects)

    def detect(self, grey: np.ndarray, *, scale_factor: float = 1.1, min_neighbors: int = 3,
               min_size: int = 24) -> list[tuple[float, float, float, float]]:
        """Face boxes in a ``uint8 (H, W)`` grey image, largest first."""
        if self._cv is not None:
            found = self._cv.detectMultiScale(grey, scaleFactor=scale_factor,
                                              minNeighbors=min_neighbors, minSize=(min_size, min_size))
            rects = [tuple(map(float, r)) for r in (found if len(found) else [])]
        else:
            rects = _group([r for r in self._raw_hits(grey, scale_factor, min_size)], min_neighbors)
        boxes = [(x, y, x + w, y + h) for x, y, w, h in rects]
        return sorted(boxes, key=lambda b: (-(b[2] - b[0]) * (b[3] - b[1]), b[0], b[1]))

    def _raw_hits(self, grey: np.ndarray, scale_factor: float, min_size: int):
        ww, wh = self.window
        h0, w0 = grey.shape
        factor = 1.0
        while True:
            sw, sh = round(w0 / factor), round(h0 / factor)
            if sw < ww or sh < wh:
                break
            if ww * factor >= min_size:
                img = grey if factor == 1.0 else cv2.resize(grey, (sw, sh), interpolation=cv2.INTER_LINEAR)
                step = 2 if factor <= 2.0 else 1
                for x, y in self._scan(img, step):
                    yield (x * factor, y * factor, ww * factor, wh * factor)
            factor *= scale_factor

    def _stage_rects(self, stage: _Stage) -> tuple[np.ndarray, np.ndarray]:
        """``(K, 3, 4)`` rect x, y, w, h and ``(K, 3)`` weights of a stage (0 pads to 3 rects)."""
        if stage.rects is None:
            rects = np.zeros((len(stage.feature), 3, 4), np.int64)
            weights = np.zeros((len(stage.feature), 3))
            for k, fi in enumerate(stage.feature):
                for r, (x, y, w, h, wt) in enumerate(self.features[fi]):
                    rects[k, r], weights[k, r] = (x, y, w, h), wt
            stage.rects, stage.weights = rects, weights
        return stage.rects, stage.weights

    def _scan(self, img: np.ndarray, step: int) -> list[tuple[int, int]]:
        ww, wh = self.window
        row = img.shape[1] + 1
        ii = np.pad(img.astype(np.float64).cumsum(0).cumsum(1), ((1, 0), (1, 0))).ravel()
        sq = np.pad((img.astype(np.float64) ** 2).cumsum(0).cumsum(1), ((1, 0), (1, 0))).ravel()
        ys, xs = np.mgrid[0:img.shape[0] - wh + 1:step, 0:img.shape[1] - ww + 1:step]
        base = (ys * row + xs).ravel()

        def corners(x, y, w, h):  # flat offsets of a rect's 4 integral-image corners
            return y * row + x, y * row + x + w, (y + h) * row + x, (y + h) * row + x + w

        area = (ww - 2) * (wh - 2)
        c = corners(1, 1, ww - 2, wh - 2)
        s = ii[base + c[0]] - ii[base + c[1]] - ii[base + c[2]] + ii[base + c[3]]
        q = sq[base + c[0]] - sq[base + c[1]] - sq[base + c[2]] + sq[base + c[3]]
        nf = area * q - s * s
        keep = nf > 0
        nf = np.sqrt(np.where(keep, nf, 1.0))
        keep &= area / nf < 0.1
        base, nf = base[keep], nf[keep]
        for stage in self.stages:
            if base.size == 0:
                break
            rects, weights = self._stage_rects(stage)
            c = corners(rects[..., 0], rects[..., 1], rects[..., 2], rects[..., 3])  # 4 x (K, 3)
            sums = (ii[base + c[0][..., None]] - ii[base + c[1][..., None]]
                    - ii[base + c[2][..., None]] + ii[base + c[3][..., None]])  # (K, 3, P)
            value = np.einsum("kr,krp->kp", weights, sums) / nf
            leaf = np.where(value < stage.threshold_k[:, None], stage.leaves[:, :1], stage.leaves[:, 1:])
            ok = leaf.sum(axis=0) >= stage.threshold
            base, nf = base[ok], nf[ok]
        return [(int(b % row), int(b // row)) for b in base]


def _group(rects: list[tuple[float, float, float, float]], min_neighbors: int, eps: float = 0.2):
    """Cluster ``(x, y, w, h)`` hits as ``cv2.groupRectangles`` does (see module rules)."""
    n = len(rects)
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(n):
        for j in range(i + 1, n):
            a, b = rects[i], rects[j]
            delta = eps * (min(a[2], b[2]) + min(a[3], b[3])) * 0.5
            if all(abs(a[k] - b[k]) <= delta for k in (0, 1)) and \
               abs(a[0] + a[2] - b[0] - b[2]) <= delta and abs(a[1] + a[3] - b[1] - b[3]) <= delta:
                parent[find(i)] = find(j)
    clusters: dict[int, list[tuple[float, float, float, float]]] = {}
    for i in range(n):
        clusters.setdefault(find(i), []).append(rects[i])
    groups = [(len(m), tuple(float(np.mean([r[k] for r in m])) for k in range(4)))
              for m in clusters.values() if len(m) > min_neighbors]
    out = []
    for count, (x, y, w, h) in groups:
        inside = any(
            (c2 > max(3, count) or count < 3) and x >= x2 - w2 * eps and y >= y2 - h2 * eps
            and x + w <= x2 + w2 * (1 + eps) and y + h <= y2 + h2 * (1 + eps) and (x2, y2, w2, h2) != (x, y, w, h)
            for c2, (x2, y2, w2, h2) in groups)
        if not inside:
            out.append((x, y, w, h))
    return out


def load_cascade(*, force_numpy: bool = False) -> HaarCascade:
    """The frontal-face cascade (``cv2.data`` copy first, else the shipped one)."""
    path, source = cascade_path()
    return HaarCascade(path, source, force_numpy=force_numpy)
