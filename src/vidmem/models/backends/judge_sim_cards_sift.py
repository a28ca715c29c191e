"""``classic/sift`` for ``judge/sim-cards``: many cards on a few frames, identical copies.

Part of ``judge/sim-cards`` (:mod:`vidmem.models.backends.judge_sim_cards`): its presence,
count and instance-match steps search frames for deck cards with :class:`CardSift`; the
Track-B identity analysis localises entities with it too.

Rules: detections are ``classic/sift``'s (SIFT + RANSAC homography, its plausibility
check and score); frame features are cached by content, so results never depend on the
cache; identical copies are found by the query-side ratio test and repeated fits
(:meth:`CardSift.detect_copies`).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any

import cv2
import numpy as np

from vidmem.models.backends.classic_sift import SiftDetector

__all__ = ["CardSift"]


class CardSift(SiftDetector):
    """``classic/sift`` with two additions for judging many cards on a few frames.

    * Frame keypoints are computed once per judge call (cached by content hash,
      cleared by :meth:`clear`); results are unchanged.
    * :meth:`detect_copies` finds *identical copies* of a card. Lowe's ratio test
      (nearest vs second-nearest frame descriptor) rejects every match when the frame
      holds two copies, so here it runs the other way: each frame keypoint's two
      nearest *card* keypoints. A RANSAC homography is fitted, checked exactly as in
      ``classic/sift`` (``_plausible``), its box reported, the matches inside the box
      removed, and the fit repeated. A copy's score is the ``classic/sift`` score with
      the inlier ratio taken over the matches inside its box.

    It relies on ``SiftDetector``'s feature and check helpers (same package).
    """

    #: frames whose features are kept: one question's frames, and the same reference
    #: image asked again with another roster (Track-A asks one frame per segment that
    #: retrieved it), without holding a whole run's frames
    FRAME_CACHE_SIZE = 64

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._frame_cache: OrderedDict[str, Any] = OrderedDict()

    def _features(self, image: np.ndarray) -> Any:
        key = hashlib.sha256(np.ascontiguousarray(image).tobytes()).hexdigest() + str(image.shape)
        if key in self._frame_cache:
            self._frame_cache.move_to_end(key)
        else:
            self._frame_cache[key] = super()._features(image)
            while len(self._frame_cache) > self.FRAME_CACHE_SIZE:
                self._frame_cache.popitem(last=False)
        return self._frame_cache[key]

    def detect_copies(self, frame: np.ndarray, query: np.ndarray,
                      max_copies: int) -> list[tuple[float, tuple[float, float, float, float]]]:
        """``(score, box)`` of each copy of ``query`` found in ``frame``, best first."""
        q, f = self._query_features(query), self._features(frame)
        k = self.min_inliers
        if len(q.points) < k or len(f.points) < 2:
            return []
        pairs = self._matcher.knnMatch(f.descriptors, q.descriptors, k=2)
        good = [p[0] for p in pairs if len(p) == 2 and p[0].distance < self.ratio * p[1].distance]
        if len(good) < k:
            return []
        src = np.float32([q.points[m.trainIdx] for m in good])
        dst = np.float32([f.points[m.queryIdx] for m in good])
        qh, qw = q.shape
        corners = np.float32([[-0.5, -0.5], [qw - 0.5, -0.5], [qw - 0.5, qh - 0.5],
                              [-0.5, qh - 0.5]])
        fh, fw = f.shape
        left = np.ones(len(good), bool)
        found: list[tuple[float, tuple[float, float, float, float]]] = []
        while len(found) < max_copies and left.sum() >= k:
            h_mat, mask = cv2.findHomography(src[left].reshape(-1, 1, 2),
                                             dst[left].reshape(-1, 1, 2), cv2.RANSAC,
                                             self.ransac_px, maxIters=2000, confidence=0.995)
            if h_mat is None or mask is None or not np.all(np.isfinite(h_mat)) or h_mat[2, 2] == 0:
                break
            n_in = int(mask.sum())
            homog = np.hstack([corners, np.ones((4, 1), np.float32)]) @ h_mat.T
            with np.errstate(divide="ignore", invalid="ignore"):
                proj = homog[:, :2] / homog[:, 2:3]
            if n_in < k or not self._plausible(corners, proj, homog[:, 2], h_mat):
                break
            x0, y0 = np.clip(proj.min(axis=0) + 0.5, 0, [fw, fh])
            x1, y1 = np.clip(proj.max(axis=0) + 0.5, 0, [fw, fh])
            inside = left & (dst[:, 0] >= x0) & (dst[:, 0] < x1) & (dst[:, 1] >= y0) & (
                dst[:, 1] < y1)
            score = n_in / max(int(inside.sum()), n_in) * min(1.0, (n_in - 4) / 16.0)
            if score < self.threshold or x1 - x0 < 1 or y1 - y0 < 1:
                break
            found.append((float(score), (float(x0), float(y0), float(x1), float(y1))))
            left &= ~inside
        return found
