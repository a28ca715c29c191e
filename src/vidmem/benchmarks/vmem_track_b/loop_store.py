"""The frame source of a Track-B rollout's memory store: its own clips on rollout time.

Rules: segment n spans ``[sum of earlier durations, + its duration)`` seconds of rollout
time; its frames are the 1 fps / 2 fps grid times inside that span and before its
clip's end; each clip is decoded once, on first use, and every required embedder
embeds its frames right then. Moved out of :mod:`.loop` unchanged.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vidmem.errors import UserInputError
from vidmem.io.video import probe, read_frames_at
from vidmem.memory.embeddings import EmbeddingCache
from vidmem.memory.frames import RATES, Frame, frame_keys
from vidmem.memory.frames import Segment as MemorySegment

__all__ = ["ClipFrames"]


class ClipFrames:
    """The frames of one rollout's clips on the 1 fps / 2 fps grids of rollout time.

    A :class:`~vidmem.memory.frames.FrameSource`: segment ``index`` (0-based) is the clip
    added with :meth:`add`; its frames lie at rollout times inside the segment's span
    and before the clip's end. Pixels are decoded once per clip, on first use, and every
    embedder named with :meth:`require` embeds them right away.
    """

    def __init__(self, film_id: str, *, rates: Sequence[float] = RATES,
                 keep_segments: int = 2) -> None:
        self.film_id = film_id
        self.embeddings = EmbeddingCache()
        self.rates = tuple(float(r) for r in rates)
        self.keep_segments = keep_segments
        self.decodes = 0
        self._clips: dict[int, tuple[Path, float, float]] = {}  # index -> path, start, length
        self._frames: dict[int, list[Frame]] = {}
        self._pixels: OrderedDict[int, dict[int, np.ndarray]] = OrderedDict()
        self._required: list[tuple[Any, float]] = []

    def require(self, embedder: Any, fps: float) -> None:
        if all(e is not embedder or f != float(fps) for e, f in self._required):
            self._required.append((embedder, float(fps)))

    def add(self, index: int, clip: Path, start_seconds: float) -> None:
        """Clip ``clip`` is segment ``index``, starting at ``start_seconds`` of rollout time."""
        self._clips[int(index)] = (Path(clip), float(start_seconds),
                                   float(probe(clip).duration_seconds))

    def frames_of(self, segment: MemorySegment) -> list[Frame]:
        if segment.index in self._frames:
            return self._frames[segment.index]
        if segment.index not in self._clips:
            raise UserInputError(f"rollout {self.film_id}: segment {segment.index + 1} has no clip",
                                 hint="generate the segment before the store observes it")
        _, start, length = self._clips[segment.index]
        frames = []
        for key, rates in frame_keys(segment, self.rates):
            if key / 1000.0 - start >= length:
                continue  # past the clip's end
            frames.append(Frame(key, segment.index, rates,
                                lambda s=segment.index, k=key: self._pixel(s, k)))
        self._frames[segment.index] = frames
        return frames

    def _pixel(self, index: int, key: int) -> np.ndarray:
        if index not in self._pixels:
            self._decode(index)
        self._pixels.move_to_end(index)
        return self._pixels[index][key]

    def _decode(self, index: int) -> None:
        path, start, _ = self._clips[index]
        frames = self._frames[index]
        batch = read_frames_at(path, [f.seconds - start for f in frames])
        self.decodes += 1
        self._pixels[index] = {f.key: batch[i] for i, f in enumerate(frames)}
        while len(self._pixels) > self.keep_segments:
            self._pixels.popitem(last=False)
        for embedder, fps in self._required:
            self.embeddings.image_rows(embedder, [f for f in frames if fps in f.rates])

