"""Offline image-guided detector: find a reference crop in frames with SIFT + RANSAC.

``classic/sift`` is the weight-free stand-in for image-guided detection (OWL-ViT's
``image_query`` mode) used by ``vidmem demo`` and the offline tests. It is a proxy,
not a protocol backend (``official = False``), and it only understands image queries.

For each frame:

1. SIFT keypoints and descriptors (``cv2.SIFT_create``) of the grey query and frame;
   images whose longer side exceeds ``max_side`` are downscaled first (boxes are mapped
   back). Descriptors are RootSIFT-mapped (L1-normalise, square root), which makes
   Euclidean matching equal to Hellinger-kernel matching and is more reliable.
2. Query -> frame 2-nearest-neighbour matching with Lowe's ratio test (``ratio``).
3. A homography by RANSAC (``cv2.findHomography``, reprojection threshold
   ``ransac_px`` pixels in the frame).
4. Sanity checks; a homography that fails any of them gives no detection: finite,
   non-degenerate (``|det| > 1e-6`` of its affine part), every projected query corner in
   front of the camera (positive homogeneous ``w``), the projected quadrilateral convex
   with the same orientation as the query, a plausible scale (square root of the area
   ratio in ``[min_scale, max_scale]``) and no extreme stretch (ratio of the longest to
   the shortest projected side, each relative to the query side it comes from, at most
   ``max_anisotropy``).
5. Box: the bounding box of the four projected query corners, clipped to the frame.
6. Score in [0, 1]::

       score = inlier_ratio * min(1, (n_inliers - 4) / 16)

   where ``n_inliers`` counts RANSAC inliers and ``inlier_ratio = n_inliers /
   n_ratio_test_matches``. Four inliers are always found by a homography (it is fitted
   to four points), so they earn nothing; 20 or more inliers earn the full ratio.
   Fewer than ``min_inliers`` inliers (default 8) give no detection at all.

Detections with ``score < threshold`` are dropped; the default threshold is
:data:`DEFAULT_THRESHOLD` = 0.25 (about 10 inliers at a 0.7 inlier ratio, or 12 at
0.5). On the offline test grid (photo crops pasted into other photos at scale
0.6-1.5, rotation up to 30 degrees, brightness x0.7-1.3), true placements score
0.5-1.0 and photos without the crop almost always give no detection or score < 0.1.
At most one detection (the best homography) is returned per frame, with label
``"image_query"``.

The query's keypoints are computed once per call and cached by the content hash of
the query array (the last :data:`QUERY_CACHE_SIZE` queries), so calling
:meth:`SiftDetector.detect` frame by frame with the same query does not recompute them.

Example:
    >>> import numpy as np
    >>> det = SiftDetector()
    >>> flat = np.full((64, 64, 3), 128, np.uint8)
    >>> det.detect([flat], image_query=flat)  # no keypoints: no detection, no error
    [[]]
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from vidmem.errors import UserInputError
from vidmem.models.backends.base import BackendBase
from vidmem.models.backends.classic_embed import check_rgb_image
from vidmem.models.protocols import Detection

#: default score threshold of :meth:`SiftDetector.detect`; see the module docstring.
DEFAULT_THRESHOLD = 0.25
#: how many query feature sets are cached per detector instance.
QUERY_CACHE_SIZE = 16
#: the label every classic/sift detection carries.
LABEL = "image_query"
#: backends that do understand text queries (named in the error message).
TEXT_CAPABLE = ("owlvit/*", "owlv2/*", "grounding-dino/*")


@dataclass(frozen=True)
class _Features:
    """Keypoint positions (original-image pixels) and RootSIFT descriptors of one image."""

    points: np.ndarray  # (K, 2) float32, x, y
    descriptors: np.ndarray  # (K, 128) float32
    shape: tuple[int, int]  # (H, W) of the original image


def _root_sift(desc: np.ndarray) -> np.ndarray:
    desc = desc.astype(np.float32)
    desc /= np.maximum(desc.sum(axis=1, keepdims=True), 1e-7)
    return np.sqrt(desc)


def _array_key(arr: np.ndarray) -> str:
    h = hashlib.sha256(np.ascontiguousarray(arr).tobytes())
    h.update(repr((arr.shape, arr.dtype.str)).encode())
    return h.hexdigest()


def _polygon_area(quad: np.ndarray) -> float:
    """Signed shoelace area of an ``(n, 2)`` polygon (positive = clockwise in image axes)."""
    x, y = quad[:, 0], quad[:, 1]
    return 0.5 * float(np.dot(x, np.roll(y, -1)) - np.dot(np.roll(x, -1), y))


class SiftDetector(BackendBase):
    """``classic/sift``: image-guided detection by SIFT matching and a RANSAC homography.

    Args:
        weights, device, dtype, batch_size: the common backend arguments (no weights;
            CPU only; ``batch_size`` is recorded but frames are matched one at a time).
        ratio: Lowe ratio-test threshold (nearest / second-nearest distance).
        ransac_px: RANSAC reprojection threshold in (processed) frame pixels.
        min_inliers: fewest RANSAC inliers for any detection (at least 5).
        min_scale, max_scale: plausible range of the query's scale in the frame.
        max_anisotropy: largest allowed ratio of per-side scales of the projected query.
        max_side: longer side (pixels) above which frames and queries are downscaled
            before SIFT; ``None`` for never.
        n_features: cap on SIFT keypoints per frame (0 keeps all of them).
        threshold: default score threshold when :meth:`detect` gets ``threshold=None``.
    """

    name = "classic/sift"
    default_weights = None
    official = False
    supports_text = False
    supports_image_query = True

    def __init__(
        self,
        *,
        weights: Any = None,
        device: str = "cpu",
        dtype: str = "float32",
        batch_size: int = 16,
        ratio: float = 0.75,
        ransac_px: float = 5.0,
        min_inliers: int = 8,
        min_scale: float = 0.1,
        max_scale: float = 10.0,
        max_anisotropy: float = 3.0,
        max_side: int | None = 1024,
        n_features: int = 0,
        threshold: float = DEFAULT_THRESHOLD,
    ) -> None:
        self._refuse_weights(
            weights, subject="classic/sift", instead="a model detector such as owlvit/base-patch32"
        )
        super().__init__(
            weights=None, device=device, dtype=dtype, batch_size=batch_size
        )
        checks = [
            ("ratio", ratio, 0.0 < ratio <= 1.0, "in (0, 1]"),
            ("ransac_px", ransac_px, ransac_px > 0, "> 0"),
            ("min_inliers", min_inliers, int(min_inliers) >= 5, "an integer >= 5"),
            ("min_scale", min_scale, 0 < min_scale < max_scale, "> 0 and < max_scale"),
            ("max_anisotropy", max_anisotropy, max_anisotropy >= 1.0, ">= 1"),
            ("max_side", max_side, max_side is None or int(max_side) >= 64, "None or >= 64"),
            ("n_features", n_features, int(n_features) >= 0, ">= 0"),
            ("threshold", threshold, 0.0 <= threshold <= 1.0, "in [0, 1]"),
        ]
        self._check_settings(checks)
        self.ratio = float(ratio)
        self.ransac_px = float(ransac_px)
        self.min_inliers = int(min_inliers)
        self.min_scale = float(min_scale)
        self.max_scale = float(max_scale)
        self.max_anisotropy = float(max_anisotropy)
        self.max_side = None if max_side is None else int(max_side)
        self.n_features = int(n_features)
        self.threshold = float(threshold)
        self.settings.update(
            {
                "ratio": self.ratio,
                "ransac_px": self.ransac_px,
                "min_inliers": self.min_inliers,
                "min_scale": self.min_scale,
                "max_scale": self.max_scale,
                "max_anisotropy": self.max_anisotropy,
                "max_side": self.max_side,
                "n_features": self.n_features,
                "threshold": self.threshold,
                "descriptor": "rootsift",
                "score": "inlier_ratio * min(1, (n_inliers - 4) / 16)",
            }
        )
        self._sift = cv2.SIFT_create(nfeatures=self.n_features)
        self._matcher = cv2.BFMatcher(cv2.NORM_L2)
        self._query_cache: OrderedDict[str, _Features] = OrderedDict()

    # -- features ---------------------------------------------------------------------

    def _features(self, image: np.ndarray) -> _Features:
        grey = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
        h, w = grey.shape
        factor = 1.0
        if self.max_side is not None and max(h, w) > self.max_side:
            factor = self.max_side / max(h, w)
            size = (max(1, round(w * factor)), max(1, round(h * factor)))
            grey = cv2.resize(grey, size, interpolation=cv2.INTER_AREA)
        keypoints, desc = self._sift.detectAndCompute(grey, None)
        if desc is None or not keypoints:
            return _Features(np.zeros((0, 2), np.float32), np.zeros((0, 128), np.float32), (h, w))
        pts = np.array([kp.pt for kp in keypoints], np.float32)
        if factor != 1.0:
            # Processed pixel centres (i + 0.5) map back to original pixel centres.
            pts = (pts + 0.5) / factor - 0.5
        return _Features(pts, _root_sift(desc), (h, w))

    def _query_features(self, query: np.ndarray) -> _Features:
        key = _array_key(query)
        cached = self._query_cache.get(key)
        if cached is not None:
            self._query_cache.move_to_end(key)
            return cached
        feats = self._features(query)
        self._query_cache[key] = feats
        while len(self._query_cache) > QUERY_CACHE_SIZE:
            self._query_cache.popitem(last=False)
        return feats

    # -- matching ---------------------------------------------------------------------

    def _plausible(
        self, corners: np.ndarray, projected: np.ndarray, w: np.ndarray, h_mat: np.ndarray
    ) -> bool:
        if not np.all(np.isfinite(projected)) or np.any(w <= 1e-8):
            return False
        if abs(float(np.linalg.det(h_mat[:2, :2] / h_mat[2, 2]))) < 1e-6:
            return False
        # Convex and same orientation: every turn of the quad has the query's sign.
        edges = np.roll(projected, -1, axis=0) - projected
        turns = (
            edges[:, 0] * np.roll(edges, -1, axis=0)[:, 1]
            - edges[:, 1] * np.roll(edges, -1, axis=0)[:, 0]
        )
        if not (np.all(turns > 0) or np.all(turns < 0)):
            return False
        area_q, area_p = _polygon_area(corners), _polygon_area(projected)
        if area_q * area_p <= 0:
            return False
        scale = float(np.sqrt(area_p / area_q))
        if not self.min_scale <= scale <= self.max_scale:
            return False
        side_q = np.linalg.norm(np.roll(corners, -1, axis=0) - corners, axis=1)
        side_p = np.linalg.norm(edges, axis=1)
        side_scale = side_p / side_q
        return float(side_scale.max() / side_scale.min()) <= self.max_anisotropy

    def _match_one(self, query: _Features, frame: _Features) -> Detection | None:
        k = self.min_inliers
        if len(query.points) < k or len(frame.points) < 2:
            return None
        pairs = self._matcher.knnMatch(query.descriptors, frame.descriptors, k=2)
        good = [p[0] for p in pairs if len(p) == 2 and p[0].distance < self.ratio * p[1].distance]
        if len(good) < k:
            return None
        src = np.float32([query.points[m.queryIdx] for m in good]).reshape(-1, 1, 2)
        dst = np.float32([frame.points[m.trainIdx] for m in good]).reshape(-1, 1, 2)
        h_mat, inlier_mask = cv2.findHomography(
            src, dst, cv2.RANSAC, self.ransac_px, maxIters=2000, confidence=0.995
        )
        if (
            h_mat is None
            or inlier_mask is None
            or not np.all(np.isfinite(h_mat))
            or h_mat[2, 2] == 0
        ):
            return None
        n_in = int(inlier_mask.sum())
        if n_in < k:
            return None
        qh, qw = query.shape
        # Query corners as pixel edges (not centres), so the box covers whole pixels.
        corners = np.float32(
            [[-0.5, -0.5], [qw - 0.5, -0.5], [qw - 0.5, qh - 0.5], [-0.5, qh - 0.5]]
        )
        homog = np.hstack([corners, np.ones((4, 1), np.float32)]) @ h_mat.T
        w = homog[:, 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            projected = homog[:, :2] / w[:, None]
        if not self._plausible(corners, projected, w, h_mat):
            return None
        fh, fw = frame.shape
        x0, y0 = np.clip(projected.min(axis=0) + 0.5, 0, [fw, fh])
        x1, y1 = np.clip(projected.max(axis=0) + 0.5, 0, [fw, fh])
        if x1 - x0 < 1 or y1 - y0 < 1:
            return None
        score = (n_in / len(good)) * min(1.0, (n_in - 4) / 16.0)
        return Detection(
            box=(float(x0), float(y0), float(x1), float(y1)), score=float(score), label=LABEL
        )

    def detect(
        self,
        images: Sequence[np.ndarray],
        *,
        text_queries: Sequence[str] | None = None,
        image_query: np.ndarray | None = None,
        threshold: float | None = None,
    ) -> list[list[Detection]]:
        """Find ``image_query`` in each image.

        Args:
            images: ``N`` RGB ``uint8`` frames of shape ``(H_i, W_i, 3)``.
            text_queries: not supported; passing any raises :class:`UserInputError`.
            image_query: the reference crop, RGB ``uint8`` ``(h, w, 3)``.
            threshold: minimum score in [0, 1]; ``None`` uses the instance default
                (:data:`DEFAULT_THRESHOLD` unless set in the constructor).

        Returns:
            Per image, a list of zero or one :class:`Detection` with ``box`` in that
            image's pixel coordinates (``(x0, y0, x1, y1)`` floats, clipped to the
            image), ``score`` in [0, 1] and label ``"image_query"``. Frames or queries
            with too few keypoints give an empty list, not an error.

        Raises:
            UserInputError: on text queries, a missing image query, a bad threshold or
                images that break the protocol conventions.
        """
        if text_queries is not None:
            raise UserInputError(
                f"{self.name}: cannot do text queries (it matches SIFT keypoints of a "
                f"reference image); found text_queries={list(text_queries)!r}",
                hint="pass image_query=<RGB crop of the target>, or use a text-capable "
                f"detector: {', '.join(TEXT_CAPABLE)}",
            )
        if image_query is None:
            raise UserInputError(
                f"{self.name}: detect() needs image_query (an RGB uint8 crop of the target); found None",
                hint="pass image_query=<crop>, e.g. the reference box cut from the reference frame",
            )
        thr = self.threshold if threshold is None else float(threshold)
        if not 0.0 <= thr <= 1.0:
            raise UserInputError(
                f"{self.name}: threshold must be in [0, 1]; found {threshold}",
                hint=f"use None for the default {self.threshold}",
            )
        query = self._query_features(
            check_rgb_image(image_query, where=f"{self.name}: image_query")
        )
        results: list[list[Detection]] = []
        for i, image in enumerate(images):
            frame = self._features(check_rgb_image(image, where=f"{self.name}: images[{i}]"))
            det = self._match_one(query, frame)
            results.append([det] if det is not None and det.score >= thr else [])
        return results


__all__ = ["DEFAULT_THRESHOLD", "SiftDetector"]
