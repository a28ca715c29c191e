"""The ``place_embedder`` role: any image embedder, used on whole frames.

Rules:

* The spec is a registered image embedder (``classic/hsv-lbp``, ``dinov2/base``, ...) or
  a ``package.module:Class`` plugin with ``embed_images(images) -> (N, D)`` (how MegaLoc
  plugs in); options are its constructor's keyword arguments.
* Frames go in whole (never masked or cropped); rows come back L2-normalised here,
  because plugins need not normalise their own.
* :meth:`PlaceEmbedder.info` is the inner backend's, with ``settings.used_as`` saying
  ``place_embedder (whole frame)``; a plugin without ``info()`` is named by its spec.

Example:
    >>> import numpy as np
    >>> emb = load_place_embedder("classic/hsv-hist")
    >>> emb.embed_images([np.zeros((8, 8, 3), np.uint8)]).shape
    (1, 128)
    >>> emb.info().settings["used_as"]
    'place_embedder (whole frame)'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from vidmem.errors import UserInputError
from vidmem.models.loading import load_backend
from vidmem.models.protocols import BackendInfo

PROTOCOL = {
    "place_embedding": {
        "rule": "locations are compared by an image embedder on whole frames, rows L2-normalised",
        "reason": "the card names a whole-frame place embedder (MegaLoc) and leaves the "
                  "embedder open",
        "source": "issue 15",
    },
}


class PlaceEmbedder:
    """Whole-frame adapter around an image embedder (registered or plugin)."""

    def __init__(self, inner: Any, spec: str) -> None:
        self.inner, self.spec = inner, spec

    def info(self) -> BackendInfo:
        base = self.inner.info() if callable(getattr(self.inner, "info", None)) else BackendInfo(name=self.spec)
        if not isinstance(base, BackendInfo):
            base = BackendInfo(name=self.spec, settings={"info": str(base)})
        return replace(base, settings={**base.settings, "used_as": "place_embedder (whole frame)"})

    def embed_images(self, images: Sequence[np.ndarray]) -> np.ndarray:
        """``(N, D)`` float32 unit rows, one per whole frame."""
        images = list(images)
        out = np.asarray(self.inner.embed_images(images), dtype=np.float64)
        if out.ndim != 2 or out.shape[0] != len(images):
            raise UserInputError(
                f"place embedder {self.spec!r} returned shape {out.shape} for {len(images)} images",
                hint="embed_images must return one row per image, shape (N, D)")
        if not np.isfinite(out).all():
            raise UserInputError(f"place embedder {self.spec!r} returned non-finite values")
        norm = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.where(norm > 0, norm, 1.0)).astype(np.float32)

    embed_places = embed_images


def load_place_embedder(spec: str, options: Mapping[str, Any] | None = None) -> PlaceEmbedder:
    """Load ``spec`` (registered image embedder or ``module:Class``) as a place embedder."""
    return PlaceEmbedder(load_backend(spec, options, role="place_embedder"), spec)
