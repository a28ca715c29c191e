"""Segments, timestamped frames, and a film's frames decoded lazily once per segment.

Which frames a segment has (the rule of the VMem-Bench reference store,
``src/vmem_bench/baseline_adapters/external/retrieval/retrieval_baselines.py``,
``MemoryRetrievalStore._sample_times``): at ``fps`` frames per second, a segment
``[s0, s1)`` of length ``d = s1 - s0 > 0`` has the frames at

    t_j = s0 + min(1/fps, d) / 2 + j / fps,   j = 0, 1, ...   while t_j < s1 - 1e-6,

each rounded to the millisecond: the centres of the ``1/fps`` bins from the segment
start (a segment shorter than one bin gets its midpoint); a zero-length segment gets
``s0``. So a 10 s segment starting at 20 s has 1 fps frames at 20.5, 21.5, ..., 29.5
and 2 fps frames at 20.25, 20.75, ..., 29.75: the two grids share no frame, except
in segments shorter than one 2 fps bin where both are the midpoint (such a frame is
stored once and belongs to both rates). A frame is identified by its source time in
whole milliseconds (:attr:`Frame.key`).
"""

from __future__ import annotations

import functools
import math
import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from vidmem.errors import UserInputError
from vidmem.io.video import probe, read_frames_at
from vidmem.memory.embeddings import EmbeddingCache
from vidmem.models.protocols import ImageEmbedder
from vidmem.values import is_int_like, is_number_like

__all__ = ["RATES", "FilmFrames", "Frame", "FrameSource", "Segment", "frame_keys", "sample_times"]

#: The sampling rates (frames per second) the Track-A policies use.
RATES = (1.0, 2.0)
#: Slack (s) of the ``t < s1`` test, as in the reference store.
END_SLACK = 1e-6


@dataclass(frozen=True)
class Segment:
    """One observed segment of a film: where it lies and the text it is represented by.

    Attributes:
        index: position in the replay order, from 0.
        start_seconds: source time of its first instant, seconds.
        end_seconds: source time where it ends (exclusive), seconds, ``>= start``.
        text: its instruction text (the prompt); segment-text similarity reads it.
    """

    index: int
    start_seconds: float
    end_seconds: float
    text: str = ""

    def __post_init__(self) -> None:
        where = f"segment {self.index!r}"
        if not is_int_like(self.index) or self.index < 0:
            raise UserInputError(f"{where}: index must be an int >= 0",
                                 hint="number segments 0, 1, ... in replay order")
        for name in ("start_seconds", "end_seconds"):
            v = getattr(self, name)
            if not is_number_like(v) or not math.isfinite(float(v)) or float(v) < 0:
                raise UserInputError(f"{where}: {name} must be a finite number >= 0, found {v!r}",
                                     hint="take seconds_span from the gold chunk annotations")
        if float(self.end_seconds) < float(self.start_seconds):
            raise UserInputError(
                f"{where}: end_seconds {self.end_seconds} is before start_seconds "
                f"{self.start_seconds}", hint="seconds_span is [start, end]")
        if not isinstance(self.text, str):
            raise UserInputError(f"{where}: text must be a str, found {type(self.text).__name__}")


ImageHandle = np.ndarray | Callable[[], np.ndarray]


@dataclass(frozen=True, eq=False)
class Frame:
    """One stored frame.

    Attributes:
        key: source time in whole milliseconds (the frame's identity in a film).
        segment_index: the segment it was sampled from.
        rates: the sampling rates (fps) whose grid holds it, e.g. ``{1.0}``.
        image: ``(H, W, 3)`` uint8 RGB, or a callable that decodes it on demand.
    """

    key: int
    segment_index: int
    rates: frozenset[float]
    image: ImageHandle | None = field(default=None, repr=False)

    @property
    def seconds(self) -> float:
        """Source time, seconds."""
        return self.key / 1000.0

    def pixels(self) -> np.ndarray:
        """The frame, ``(H, W, 3)`` uint8 RGB (decoded now when the handle is lazy)."""
        if self.image is None:
            raise UserInputError(f"frame at {self.seconds:.3f} s has no image",
                                 hint="give the frame source images or a lazy handle")
        return self.image() if callable(self.image) else self.image


def sample_times(start: float, end: float, fps: float) -> list[float]:
    """The frame times of segment ``[start, end)`` at ``fps`` (see the module docstring).

    Example:
        >>> sample_times(20.0, 23.0, 1.0), sample_times(20.0, 21.2, 2.0)
        ([20.5, 21.5, 22.5], [20.25, 20.75])
        >>> sample_times(5.0, 5.3, 1.0), sample_times(5.0, 5.0, 2.0)
        ([5.15], [5.0])
    """
    return [k / 1000.0 for k in _keys_at(float(start), float(end), float(fps))]


def _keys_at(start: float, end: float, fps: float) -> list[int]:
    if not fps > 0:
        raise UserInputError(f"sampling rate must be > 0 fps, found {fps!r}", hint="use 1 or 2")
    dur = max(0.0, end - start)
    if dur <= 0.0:
        return [round(start * 1000)]
    step = 1.0 / fps
    first = start + min(step, dur) / 2.0
    n = max(1, math.ceil((end - END_SLACK - first) / step))
    times = [first + j * step for j in range(n + 1)]
    return [round(t * 1000) for t in times if t < end - END_SLACK] or [round((start + dur / 2) * 1000)]


def frame_keys(segment: Segment, rates: Sequence[float] = RATES) -> list[tuple[int, frozenset[float]]]:
    """``(key_ms, rates)`` of every frame of ``segment`` on any grid of ``rates``, by time.

    Example:
        >>> frame_keys(Segment(0, 4.0, 4.5))
        [(4250, frozenset({1.0, 2.0}))]
    """
    found: dict[int, set[float]] = {}
    for fps in rates:
        for k in _keys_at(float(segment.start_seconds), float(segment.end_seconds), float(fps)):
            found.setdefault(k, set()).add(float(fps))
    return [(k, frozenset(found[k])) for k in sorted(found)]


@runtime_checkable
class FrameSource(Protocol):
    """Where a memory store gets a segment's frames from, and the film's embedding cache.

    ``frames_of`` must list only frames inside the segment's span, sorted by time.
    """

    film_id: str
    embeddings: EmbeddingCache

    def frames_of(self, segment: Segment) -> Sequence[Frame]: ...


class FilmFrames:
    """A film's frames at 1 fps and 2 fps, decoded from its video once per segment.

    Nothing is decoded until a frame's pixels are asked for; then every frame of that
    segment (both grids) is decoded in one :func:`vidmem.io.video.read_frames_at`
    call, i.e. the frame on screen at each time. The last ``keep_segments`` segments'
    pixels are kept; embedders named with :meth:`require` embed a segment's frames
    right after it is decoded, so that replaying several policies decodes the film
    once. A caller that needs frames again after the replay (a judge's images) asks
    :meth:`keep_images` for a small copy of each decoded frame, so that it reads the
    video only for frames no replay decoded. Frames at or after the end of the video
    are left out (counted in ``past_end``).

    Args:
        path: the film's video file.
        film_id: its id (default: the file stem).
        rates: sampling rates, fps.
        keep_segments: how many segments' decoded pixels to keep.
        embeddings: the film's cache (default: a new one).
    """

    def __init__(self, path: str | os.PathLike[str], *, film_id: str | None = None,
                 rates: Sequence[float] = RATES, keep_segments: int = 1,
                 embeddings: EmbeddingCache | None = None) -> None:
        self.path = Path(path)
        self.video = probe(self.path)
        self.film_id = film_id if film_id is not None else self.path.stem
        self.rates = tuple(float(r) for r in rates)
        self.keep_segments = max(1, int(keep_segments))
        self.embeddings = embeddings if embeddings is not None else EmbeddingCache()
        self.segment_decodes = 0
        self.decoded_frames = 0
        self.past_end = 0
        self._frames: dict[int, tuple[Segment, list[Frame]]] = {}
        self._pixels: OrderedDict[int, dict[int, np.ndarray]] = OrderedDict()
        self._required: list[tuple[ImageEmbedder, float]] = []
        self._keep: tuple[Callable[[np.ndarray], np.ndarray], int] | None = None
        self._kept: dict[int, np.ndarray] = {}
        self.kept_bytes = 0

    def require(self, embedder: ImageEmbedder, fps: float) -> None:
        """Embed the frames on the ``fps`` grid with ``embedder`` whenever a segment is decoded."""
        if all(e is not embedder or f != float(fps) for e, f in self._required):
            self._required.append((embedder, float(fps)))

    def keep_images(self, transform: Callable[[np.ndarray], np.ndarray], max_bytes: int) -> None:
        """Keep ``transform(pixels)`` of every frame decoded from now on, until the kept
        images hold ``max_bytes``; :meth:`kept_image` hands them out.

        The full pixels are evicted after ``keep_segments`` segments; a small copy (a
        judge's thumbnail) lets a later stage use every decoded frame without decoding
        the film again. Past ``max_bytes`` frames are not kept (the caller reads them).
        """
        if not max_bytes >= 0:
            raise UserInputError(f"keep_images: max_bytes must be >= 0, found {max_bytes!r}")
        self._keep = (transform, int(max_bytes))

    def kept_image(self, key: int) -> np.ndarray | None:
        """The kept image of the frame with source time ``key`` (ms), or ``None``."""
        return self._kept.get(key)

    def frames_of(self, segment: Segment) -> list[Frame]:
        """The segment's frames (lazy pixels), by time."""
        known = self._frames.get(segment.index)
        if known is not None and known[0] == segment:
            return known[1]
        frames = []
        for key, rates in frame_keys(segment, self.rates):
            if key / 1000.0 >= self.video.duration_seconds:
                self.past_end += 1
                continue
            handle = functools.partial(self._pixel, segment, key)
            frames.append(Frame(key, segment.index, rates, handle))
        self._frames[segment.index] = (segment, frames)
        return frames

    def _pixel(self, segment: Segment, key: int) -> np.ndarray:
        cached = self._pixels.get(segment.index)
        if cached is None:
            cached = self._decode(segment)
        self._pixels.move_to_end(segment.index)
        return cached[key]

    def _decode(self, segment: Segment) -> dict[int, np.ndarray]:
        frames = self.frames_of(segment)
        batch = read_frames_at(self.path, [f.seconds for f in frames])
        self.segment_decodes += 1
        self.decoded_frames += len(frames)
        pixels = {f.key: batch[i] for i, f in enumerate(frames)}
        self._pixels[segment.index] = pixels
        if self._keep is not None:
            transform, limit = self._keep
            for f in frames:
                if f.key not in self._kept and self.kept_bytes < limit:
                    image = np.array(transform(pixels[f.key]))  # never a view of the batch
                    self._kept[f.key] = image
                    self.kept_bytes += image.nbytes
        while len(self._pixels) > self.keep_segments:
            self._pixels.popitem(last=False)
        for embedder, fps in self._required:
            # While the pixels are in memory: later replays then never decode again.
            self.embeddings.image_rows(embedder, [f for f in frames if fps in f.rates])
        return pixels
