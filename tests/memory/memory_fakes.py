"""Hand-steered embedders and a synthetic film for the memory tests.

A synthetic frame is a 2x2x3 uint8 image that carries its tag (pixel [0, 0, 0], an
index into :data:`TAGS`) and its source time in ms (pixel [0, 1], three bytes), so the
fake image embedder can map each frame to a vector chosen by hand for its tag and
record exactly which frames it embedded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from vidmem.memory.embeddings import EmbeddingCache
from vidmem.memory.frames import RATES, Frame, Segment, frame_keys
from vidmem.models.protocols import BackendInfo

TAGS: list[str] = []


def tag_id(tag: str) -> int:
    if tag not in TAGS:
        TAGS.append(tag)
    return TAGS.index(tag)


def image_of(tag: str, key_ms: int) -> np.ndarray:
    img = np.zeros((2, 2, 3), np.uint8)
    img[0, 0, 0] = tag_id(tag)
    img[0, 1] = [(key_ms >> 16) & 255, (key_ms >> 8) & 255, key_ms & 255]
    return img


def read_image(img: np.ndarray) -> tuple[str, int]:
    key = (int(img[0, 1, 0]) << 16) | (int(img[0, 1, 1]) << 8) | int(img[0, 1, 2])
    return TAGS[int(img[0, 0, 0])], key


def unit(*v: float) -> np.ndarray:
    a = np.asarray(v, np.float32)
    return a / np.linalg.norm(a)


def angle(deg: float) -> np.ndarray:
    r = np.deg2rad(deg)
    return np.array([np.cos(r), np.sin(r)], np.float32)


class FakeImageEmbedder:
    """Tag -> hand-chosen vector; records every frame key it embedded."""

    def __init__(self, name: str, vectors: Mapping[str, np.ndarray], default: np.ndarray) -> None:
        self.name = name
        self.vectors = {k: np.asarray(v, np.float32) for k, v in vectors.items()}
        self.default = np.asarray(default, np.float32)
        self.embedded: Counter[int] = Counter()
        self.calls = 0

    def info(self) -> BackendInfo:
        return BackendInfo(name=f"fake/{self.name}")

    def embed_images(self, images: Sequence[np.ndarray]) -> np.ndarray:
        self.calls += 1
        rows = []
        for img in images:
            tag, key = read_image(img)
            self.embedded[key] += 1
            rows.append(self.vectors.get(tag, self.default))
        return np.stack(rows).astype(np.float32)


class FakeTextEmbedder:
    """Text -> hand-chosen vector; records every text it embedded."""

    def __init__(self, name: str, vectors: Mapping[str, np.ndarray], default: np.ndarray) -> None:
        self.name = name
        self.vectors = {k: np.asarray(v, np.float32) for k, v in vectors.items()}
        self.default = np.asarray(default, np.float32)
        self.embedded: Counter[str] = Counter()
        self.calls = 0

    def info(self) -> BackendInfo:
        return BackendInfo(name=f"fake/{self.name}")

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.embedded.update(texts)
        return np.stack([self.vectors.get(t, self.default) for t in texts]).astype(np.float32)


class SyntheticFilm:
    """A FrameSource whose frames are tagged by ``tag_at(key_ms)``; logs frames_of calls."""

    def __init__(self, film_id: str = "film", tag_at: Callable[[int], str] | Mapping[int, str] = (),
                 rates: Sequence[float] = RATES, log: list | None = None) -> None:
        self.film_id = film_id
        self.embeddings = EmbeddingCache()
        self.rates = tuple(rates)
        self._tag_at = tag_at if callable(tag_at) else (lambda k, m=dict(tag_at): m.get(k, "bg"))
        self.log = log if log is not None else []

    def frames_of(self, segment: Segment) -> list[Frame]:
        self.log.append(("source", segment.index))
        return [Frame(k, segment.index, r, image_of(self._tag_at(k), k))
                for k, r in frame_keys(segment, self.rates)]
