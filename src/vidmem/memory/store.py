"""The causal memory store: what a retrieval policy may see of a film so far.

A :class:`MemoryStore` holds the segments observed so far (index, span, text) and
their frames on the 1 fps and 2 fps grids (:mod:`vidmem.memory.frames`), and answers
embedding look-ups through the film's shared :class:`~vidmem.memory.embeddings.
EmbeddingCache`. It is built fresh for each replay, on a frame source
(:class:`~vidmem.memory.frames.FilmFrames` for a real film) whose cache outlives it.

Frame look-ups return a :class:`FramePool`: parallel arrays (store frame ids, source
seconds, segment index) in time order, which a policy scores in one matrix-vector
product with :meth:`MemoryStore.image_scores`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vidmem.errors import UserInputError
from vidmem.memory._arrays import GrowingArray
from vidmem.memory.embeddings import EmbeddingCache, scores_for_rows
from vidmem.memory.frames import (
    RATES,
    FilmFrames,
    Frame,
    FrameSource,
    Segment,
    frame_keys,
    sample_times,
)
from vidmem.models.protocols import ImageEmbedder, TextEmbedder

__all__ = [
    "PROTOCOL", "RATES", "FilmFrames", "Frame", "FramePool", "FrameSource", "MemoryStore",
    "Segment", "frame_keys", "sample_times",
]

#: The store's rules, for run.json (what a frame is, what counts as the past).
PROTOCOL: dict[str, str] = {
    "frame_times": "segment [s0,s1) at fps f: t_j = s0 + min(1/f, s1-s0)/2 + j/f while "
                   "t_j < s1 - 1e-6, rounded to ms; zero-length segment: s0 "
                   "(reference retrieval_baselines.py MemoryRetrievalStore._sample_times)",
    "frame_identity": "source time in whole ms; a time on both grids is one frame "
                      "(the reference keys references by round(seconds, 3), runner.py _item_identity)",
    "frame_pixels": "the frame on screen at t (vidmem.io.video.read_frames_at); frames at or "
                    "after the video's end are left out (the reference's ffmpeg cut would fail there)",
    "query_embedding": "an instruction is embedded with the backend's embed_queries when it has one, "
                       "else embed_texts; stored texts with embed_texts (reference _embed_query / "
                       "_embed_doc in retrieval_baselines.py)",
    "eligible_segments": "segments whose end <= the composing segment's start "
                         "(reference MemoryRetrievalStore.eligible_segments)",
    "eligible_frames": "frames of eligible segments with t < the composing segment's start "
                       "(reference eligible_frames + frames sampled only from eligible segments)",
}


@dataclass(frozen=True)
class FramePool:
    """Stored frames as parallel arrays, in observation (for gold segments: time) order.

    Attributes:
        ids: ``(n,)`` int64 ids into the store (:meth:`MemoryStore.frame`).
        seconds: ``(n,)`` float64 source times, seconds.
        segment_index: ``(n,)`` int64 index of each frame's segment.
    """

    ids: np.ndarray
    seconds: np.ndarray
    segment_index: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)

    def take(self, positions: np.ndarray) -> FramePool:
        """The frames at ``positions`` of this pool, in that order."""
        return FramePool(self.ids[positions], self.seconds[positions],
                         self.segment_index[positions])


class MemoryStore:
    """Observed segments and their frames, with cached embedding look-ups.

    Args:
        source: gives each observed segment's frames and holds the film's cache.

    Attributes:
        next_segment_index: the index of the segment being composed (set by the replay
            driver before each compose; layout, not content). Default: one past the
            last observed segment.
    """

    def __init__(self, source: FrameSource) -> None:
        # Private on purpose: a policy reaches frames and embeddings only through the
        # store's methods, which list observed frames only. (The film's shared cache may
        # already hold rows of later frames from an earlier replay.)
        self._source = source
        self._embeddings: EmbeddingCache = source.embeddings
        self.film_id = str(source.film_id)
        self._next: int | None = None
        self._segments: list[Segment] = []
        self._frames: list[Frame] = []
        self._seconds = GrowingArray(np.float64)
        self._seg = GrowingArray(np.int64)
        self._seg_end = GrowingArray(np.float64)  # end of each frame's segment (eligibility)
        self._by_rate: dict[float, GrowingArray] = {}
        self._by_segment: dict[int, list[int]] = {}
        self._rows: dict[str, GrowingArray] = {}  # backend key -> row per frame id (-1: none)

    # -- what was observed ------------------------------------------------------------

    @property
    def segments(self) -> tuple[Segment, ...]:
        """Observed segments, in replay order."""
        return tuple(self._segments)

    @property
    def frames(self) -> tuple[Frame, ...]:
        """Every stored frame in observation order (time order for segments that do not
        overlap); a frame's id is its position."""
        return tuple(self._frames)

    @property
    def next_segment_index(self) -> int:
        if self._next is not None:
            return self._next
        return self._segments[-1].index + 1 if self._segments else 0

    @next_segment_index.setter
    def next_segment_index(self, value: int) -> None:
        self._next = int(value)

    def frame(self, frame_id: int) -> Frame:
        """The stored frame with id ``frame_id``."""
        return self._frames[int(frame_id)]

    def observe(self, segment: Segment) -> list[Frame]:
        """Add ``segment`` and its frames (the replay driver calls this after compose).

        Raises:
            UserInputError: the segment is out of order, or the source lists frames
                outside its span or not in time order.
        """
        if not isinstance(segment, Segment):
            raise UserInputError(f"memory store: observe takes a Segment, found {type(segment).__name__}")
        last = self._segments[-1] if self._segments else None
        if last is not None and (segment.index <= last.index
                                 or segment.start_seconds < last.start_seconds):
            raise UserInputError(
                f"memory store ({self.film_id}): segment {segment.index} starting at "
                f"{segment.start_seconds} s observed after segment {last.index} starting at "
                f"{last.start_seconds} s", hint="observe segments in time order, indices increasing")
        frames = list(self._source.frames_of(segment))
        lo, hi = round(segment.start_seconds * 1000), round(segment.end_seconds * 1000)
        prev = -1
        for f in frames:
            if not isinstance(f, Frame) or f.segment_index != segment.index or not (
                    lo <= f.key <= hi) or f.key <= prev:
                raise UserInputError(
                    f"memory store ({self.film_id}): the frame source listed {f!r} for segment "
                    f"{segment.index} [{segment.start_seconds}, {segment.end_seconds}]",
                    hint="frames_of returns Frame objects of that segment, inside its span, by time")
            prev = f.key
        self._segments.append(segment)
        self._next = None
        start = len(self._frames)
        ids = list(range(start, start + len(frames)))
        self._frames.extend(frames)
        self._seconds.extend([f.seconds for f in frames])
        self._seg.extend([segment.index] * len(frames))
        self._seg_end.extend([float(segment.end_seconds)] * len(frames))
        self._by_segment[segment.index] = ids
        for f, i in zip(frames, ids, strict=True):
            for fps in f.rates:
                self._by_rate.setdefault(fps, GrowingArray(np.int64)).extend([i])
        return frames

    # -- what counts as the past --------------------------------------------------------

    def eligible_segments(self, before: float | None = None) -> list[Segment]:
        """Observed segments that end at or before ``before`` seconds (all when None)."""
        if before is None:
            return list(self._segments)
        return [s for s in self._segments if s.end_seconds <= before]

    def pool(self, fps: float, *, before: float | None = None,
             segment_index: int | None = None) -> FramePool:
        """Stored frames on the ``fps`` grid, in time order.

        Args:
            fps: the sampling rate, frames per second.
            before: keep frames with time ``< before`` whose segment ends ``<= before``
                (seconds); ``None`` keeps all.
            segment_index: keep only this segment's frames.
        """
        if segment_index is not None:
            ids = np.array([i for i in self._by_segment.get(int(segment_index), [])
                            if float(fps) in self._frames[i].rates], dtype=np.int64)
        else:
            grid = self._by_rate.get(float(fps))
            ids = grid.view().copy() if grid is not None else np.zeros(0, np.int64)
        if before is not None and len(ids):
            keep = (self._seconds.view()[ids] < before) & (self._seg_end.view()[ids] <= before)
            ids = ids[keep]
        return FramePool(ids, self._seconds.view()[ids], self._seg.view()[ids])

    # -- embeddings ---------------------------------------------------------------------

    def text_embeddings(self, embedder: TextEmbedder, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), D)`` float32 unit rows (cached per backend and text)."""
        return self._embeddings.texts(embedder, texts)

    def query_embeddings(self, embedder: TextEmbedder, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), D)`` float32 query rows (``embed_queries`` when the backend has it)."""
        return self._embeddings.queries(embedder, texts)

    def _image_rows(self, embedder: ImageEmbedder, ids: np.ndarray) -> np.ndarray:
        rows = self._rows.setdefault(self._embeddings.key_of(embedder), GrowingArray(np.int64, fill=-1))
        if len(rows) < len(self._frames):
            rows.extend(np.full(len(self._frames) - len(rows), -1, np.int64))
        have = rows.view()[ids]
        missing = ids[have < 0]
        if len(missing):
            found = self._embeddings.image_rows(embedder, [self._frames[i] for i in missing])
            rows.set(missing, found)
            have = rows.view()[ids]
        return have

    def image_embeddings(self, embedder: ImageEmbedder, pool: FramePool) -> np.ndarray:
        """``(len(pool), D)`` float32 unit rows of the pool's frames (a copy)."""
        rows = self._image_rows(embedder, pool.ids)
        return self._embeddings.image_matrix(embedder)[rows]

    def image_scores(self, embedder: ImageEmbedder, pool: FramePool,
                     query: np.ndarray) -> np.ndarray:
        """Dot products of the pool's frame embeddings with ``query`` (``(D,)``).

        Returns:
            ``(len(pool),)`` float32 cosine similarities (rows and query are unit norm).
        """
        rows = self._image_rows(embedder, pool.ids)
        return scores_for_rows(self._embeddings.image_matrix(embedder), rows, query)

    def ensure_image_embeddings(self, embedder: ImageEmbedder, pool: FramePool) -> None:
        """Embed the pool's frames now (policies call this in observe, while pixels are hot)."""
        self._image_rows(embedder, pool.ids)

    @property
    def nbytes(self) -> int:
        """Bytes of the store's own arrays (the shared embedding cache not included)."""
        arrays = [self._seconds, self._seg, self._seg_end, *self._by_rate.values(),
                  *self._rows.values()]
        return sum(a.nbytes for a in arrays)
