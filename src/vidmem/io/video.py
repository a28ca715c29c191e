"""Video probing, exact frame access and encoding with PyAV.

Conventions used everywhere in vidmem:

* A **frame** is a ``numpy.ndarray`` of shape ``(H, W, 3)``, dtype ``uint8``, RGB.
  A **batch** is ``(T, H, W, 3)`` uint8.
* **Frame index** ``i`` is the ``i``-th frame in *presentation* order (sorted by PTS),
  counting from 0, whatever the decode order, B-frames or container quirks.
* **Frame time** is the presentation time in seconds *relative to the first frame*:
  frame 0 is always at ``0.0`` even when the file's first PTS is not zero (the absolute
  offset is kept in :attr:`VideoInfo.first_pts_seconds`).
* **Time -> frame** (:func:`index_at_time`, :func:`read_frames_at`): time ``t`` maps to
  the *last frame whose presentation time is <= t + 1e-6*, i.e. the frame that is on
  screen at ``t`` (the 1 microsecond slack absorbs float error in ``t`` computed as
  ``k / fps``). Valid times are ``0 <= t < duration_seconds``.

How frames are found. :func:`probe` demuxes the packets of the video stream (no
decoding), sorts their PTS into presentation order and records which ones are
keyframes; the table is cached per ``(path, size, mtime)``. :func:`read_frames` seeks
to the keyframe at or before each wanted frame (by that keyframe's PTS, so a B-frame
just before a keyframe is never skipped over), decodes forward until the frame whose
PTS equals the wanted one, and keeps decoding forward instead of seeking again when the
next wanted frame lies in the same GOP. Non-reference frames that are not wanted are
skipped by the decoder (``skip_frame=NONREF``), which is exact because no other frame
depends on them. Work done is counted in :data:`decode_stats` (and in an optional
per-call :class:`DecodeStats`).
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import math
import os
import threading
from collections.abc import Container, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np

from vidmem.errors import UserInputError, VideoError

__all__ = [
    "DecodeStats",
    "VideoInfo",
    "clear_probe_cache",
    "decode_stats",
    "index_at_time",
    "iter_frames",
    "probe",
    "read_frames",
    "read_frames_at",
    "write_video",
]

#: Slack (seconds) added to a query time before looking up the frame on screen.
TIME_EPSILON = 1e-6

_PROBE_CACHE_SIZE = 64

_FAST_START_HINT = (
    "check that this is a video file (MP4, MKV, MOV, WebM...) and that it was copied "
    "completely; an MP4 whose index ('moov' atom) is at the end cannot be opened when "
    "the file is cut short -- re-download it or re-encode it, e.g. "
    "`ffmpeg -i in.mp4 -movflags +faststart out.mp4`"
)


# --------------------------------------------------------------------------- records


@dataclass
class DecodeStats:
    """Counters of decoding work, for tests and benchmarks.

    Attributes:
        frames_decoded: frames output by the decoder (each one cost a full decode).
        packets_sent: packets fed to the decoder.
        packets_skipped: packets fed with ``skip_frame=NONREF`` because their frame was
            not wanted (a non-reference frame among them is not decoded at all).
        seeks: container seeks performed.
    """

    frames_decoded: int = 0
    packets_sent: int = 0
    packets_skipped: int = 0
    seeks: int = 0

    def reset(self) -> None:
        """Set every counter back to zero."""
        self.frames_decoded = 0
        self.packets_sent = 0
        self.packets_skipped = 0
        self.seeks = 0


#: Process-wide counters, summed over every call (not synchronised across threads; use
#: the ``stats=`` argument of :func:`read_frames` / :func:`iter_frames` for exact
#: per-call numbers).
decode_stats = DecodeStats()


@dataclass(frozen=True)
class VideoInfo:
    """What :func:`probe` learns about the video stream of a file.

    Attributes:
        path: the file.
        n_frames: number of frames that can be addressed by index (packets with a PTS
            found by demuxing; for a truncated file, only those present).
        fps: average frame rate (frames per second) as reported by the container, or
            computed from the frame table when the container does not say.
        duration_seconds: presentation span of the stream in seconds: time of the last
            frame plus its display duration.
        width: frame width in pixels.
        height: frame height in pixels.
        codec: decoder name, e.g. ``"h264"``.
        time_base: unit of the stream's PTS values, in seconds.
        first_pts_seconds: absolute presentation time of frame 0 in seconds (often 0).
        is_vfr: True when frame intervals vary by more than ``max(1 tick, 1 ms)``.
        frame_times: presentation time (seconds, relative to frame 0) of each frame in
            presentation order; ``frame_times[0] == 0.0``; length ``n_frames``.
        frame_pts: PTS of each frame in presentation order (``time_base`` units).
        keyframe_indices: sorted indices of frames that start a decodable GOP.
        declared_frames: frame count written in the container header (0 if unknown).
    """

    path: Path
    n_frames: int
    fps: float
    duration_seconds: float
    width: int
    height: int
    codec: str
    time_base: Fraction
    first_pts_seconds: float
    is_vfr: bool
    frame_times: tuple[float, ...] = field(repr=False)
    frame_pts: tuple[int, ...] = field(repr=False)
    keyframe_indices: tuple[int, ...] = field(repr=False)
    declared_frames: int = 0

    @property
    def is_truncated(self) -> bool:
        """True when the header promises more frames than the file holds."""
        return self.declared_frames > self.n_frames


# --------------------------------------------------------------------------- probing


def _check_path(path: str | os.PathLike[str]) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise UserInputError(
            f"video path: expected a str or pathlib.Path, found {type(path).__name__} {path!r}",
            hint="pass the path of a video file",
        )
    p = Path(path)
    if not p.exists():
        raise UserInputError(
            f"{p}: video file not found",
            hint="check the path (relative paths are resolved from the current directory "
            f"{Path.cwd()})",
        )
    if not p.is_file():
        raise UserInputError(
            f"{p}: expected a video file, found a directory or special file",
            hint="pass the path of a video file, not of a folder",
        )
    return p


def _open_input(p: Path) -> Any:
    """Open ``p`` with PyAV, translating its errors into :class:`VideoError`."""
    try:
        return av.open(str(p), mode="r")
    except av.FFmpegError as exc:
        size = p.stat().st_size
        raise VideoError(
            f"{p}: cannot be opened as a video container ({size} bytes): {exc}",
            hint=_FAST_START_HINT,
        ) from exc


def _video_stream(container: Any, p: Path) -> Any:
    streams = list(container.streams)
    video = [s for s in streams if s.type == "video"]
    if not video:
        found = ", ".join(f"#{s.index} {s.type}" for s in streams) or "no streams at all"
        raise VideoError(
            f"{p}: expected a video stream, found {found}",
            hint="this file has no pictures (e.g. an audio-only MP4); pass a file that "
            "contains video",
        )
    return video[0]


def probe(path: str | os.PathLike[str]) -> VideoInfo:
    """Read the frame table of the first video stream of ``path`` without decoding.

    Packets are demuxed, packets without a PTS (and empty flush packets) are skipped,
    the PTS values are sorted into presentation order, and the keyframe flags are kept.
    Results are cached per ``(absolute path, size, mtime)`` in a small LRU, so editing
    or replacing the file invalidates the entry.

    Args:
        path: video file.

    Returns:
        The :class:`VideoInfo` of the first video stream.

    Raises:
        UserInputError: ``path`` does not exist or is not a file.
        VideoError: the file cannot be opened as a container (not a video, or an MP4
            truncated before its index), has no video stream, or no frames.
    """
    p = _check_path(path)
    st = p.stat()
    return _probe_cached(str(p.resolve()), str(p), st.st_size, st.st_mtime_ns)


def clear_probe_cache() -> None:
    """Forget every cached :func:`probe` result."""
    _probe_cached.cache_clear()


@functools.lru_cache(maxsize=_PROBE_CACHE_SIZE)
def _probe_cached(resolved: str, shown: str, size: int, mtime_ns: int) -> VideoInfo:
    del resolved, size, mtime_ns  # only part of the cache key
    p = Path(shown)
    container = _open_input(p)
    try:
        stream = _video_stream(container, p)
        time_base = stream.time_base
        if time_base is None or time_base <= 0:
            raise VideoError(
                f"{p}: video stream #{stream.index} has no usable time base ({time_base})",
                hint="remux the file into MP4 or MKV, e.g. `ffmpeg -i in -c copy out.mkv`",
            )
        pts_list: list[int] = []
        key_pts: set[int] = set()
        durations: dict[int, int] = {}
        try:
            for packet in container.demux(stream):
                if packet.pts is None or packet.size == 0 or packet.is_discard:
                    continue
                pts_list.append(int(packet.pts))
                if packet.is_keyframe:
                    key_pts.add(int(packet.pts))
                if packet.duration:
                    durations[int(packet.pts)] = int(packet.duration)
        except av.FFmpegError:
            # A damaged tail: keep the packets read so far; the missing frames show up
            # as a truncated file (declared_frames > n_frames) or as decode errors.
            pass
        if not pts_list:
            raise VideoError(
                f"{p}: video stream #{stream.index} has no frames with timestamps",
                hint="the file is empty or damaged; re-encode it, e.g. "
                "`ffmpeg -i in.mp4 -c:v libx264 out.mp4`",
            )
        # Duplicate PTS (broken muxing) cannot be told apart in the decoder output;
        # each distinct PTS is one addressable frame.
        pts_sorted = sorted(set(pts_list))
        pts_arr = np.asarray(pts_sorted, dtype=np.int64)
        tb_num, tb_den = time_base.numerator, time_base.denominator
        rel = (pts_arr - pts_arr[0]).astype(np.float64) * tb_num / tb_den
        n = len(pts_sorted)
        keyframes = [i for i, v in enumerate(pts_sorted) if v in key_pts]
        if not keyframes or keyframes[0] != 0:
            # Frames before the first flagged keyframe can only be reached from the
            # start of the stream; treat frame 0 as the entry point.
            keyframes = [0, *keyframes]
        tick = float(time_base)
        if n >= 2:
            intervals = np.diff(rel)
            median = float(np.median(intervals))
            is_vfr = bool(intervals.max() - intervals.min() > max(tick, 1e-3) + 1e-12)
        else:
            median = 0.0
            is_vfr = False
        avg = stream.average_rate
        if avg is not None and avg > 0:
            fps = float(avg)
        elif n >= 2 and rel[-1] > 0:
            fps = (n - 1) / float(rel[-1])
        else:
            guessed = stream.guessed_rate
            fps = float(guessed) if guessed else 0.0
        last_dur = durations.get(pts_sorted[-1], 0) * tick
        if last_dur <= 0:
            last_dur = median if median > 0 else (1.0 / fps if fps > 0 else 0.0)
        cc = stream.codec_context
        return VideoInfo(
            path=p,
            n_frames=n,
            fps=fps,
            duration_seconds=float(rel[-1]) + last_dur,
            width=int(cc.width),
            height=int(cc.height),
            codec=str(cc.name),
            time_base=Fraction(time_base),
            first_pts_seconds=float(pts_arr[0]) * tb_num / tb_den,
            is_vfr=is_vfr,
            frame_times=tuple(float(t) for t in rel),
            frame_pts=tuple(int(v) for v in pts_sorted),
            keyframe_indices=tuple(keyframes),
            declared_frames=int(stream.frames or 0),
        )
    finally:
        container.close()


# --------------------------------------------------------------------------- lookup


def index_at_time(info: VideoInfo, t: float) -> int:
    """Return the index of the frame on screen at time ``t``.

    Rule: the last frame whose presentation time (relative to frame 0) is
    ``<= t + 1e-6`` seconds. Valid times are ``0 <= t < info.duration_seconds``.

    Args:
        info: result of :func:`probe`.
        t: time in seconds relative to the first frame.

    Returns:
        Frame index in ``[0, info.n_frames)``.

    Raises:
        UserInputError: ``t`` is not a finite number or lies outside the valid range.
    """
    if isinstance(t, bool) or not isinstance(t, (int, float, np.integer, np.floating)):
        raise UserInputError(
            f"{info.path}: time must be a number of seconds, found {type(t).__name__} {t!r}",
            hint="pass times as floats in seconds relative to the first frame",
        )
    tf = float(t)
    if not math.isfinite(tf) or tf < 0 or tf >= info.duration_seconds:
        raise UserInputError(
            f"{info.path}: time {tf!r} s is outside the video; valid times are "
            f"0 <= t < {info.duration_seconds:.6f} s ({info.n_frames} frames, last frame "
            f"at {info.frame_times[-1]:.6f} s)",
            hint="times are in seconds relative to the first frame (not absolute PTS); "
            "clip them to the valid range",
        )
    return bisect.bisect_right(info.frame_times, tf + TIME_EPSILON) - 1


def _as_index_list(indices: Any, info: VideoInfo) -> list[int]:
    if isinstance(indices, np.ndarray):
        if indices.ndim != 1 or not (
            np.issubdtype(indices.dtype, np.integer) and indices.dtype != np.bool_
        ):
            raise UserInputError(
                f"{info.path}: frame indices must be a 1-D integer array, found dtype "
                f"{indices.dtype} with shape {indices.shape}",
                hint="pass e.g. np.array([0, 10, 20]) or a list of ints",
            )
        values: Sequence[Any] = indices.tolist()
    elif isinstance(indices, (str, bytes)) or not isinstance(indices, Iterable):
        raise UserInputError(
            f"{info.path}: frame indices must be a sequence of ints, found "
            f"{type(indices).__name__}",
            hint="pass e.g. [0, 10, 20]",
        )
    else:
        values = list(indices)
    out: list[int] = []
    for pos, v in enumerate(values):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise UserInputError(
                f"{info.path}: frame index at position {pos} must be an int, found "
                f"{type(v).__name__} {v!r}",
                hint="convert indices with int(); use read_frames_at for times in seconds",
            )
        _check_index(info, int(v), f"frame index at position {pos}")
        out.append(int(v))
    return out


def _check_index(info: VideoInfo, i: int, what: str) -> None:
    if 0 <= i < info.n_frames:
        return
    if info.is_truncated and info.n_frames <= i < info.declared_frames:
        raise VideoError(
            f"{info.path}: {what} is {i}, but the file is truncated: its header declares "
            f"{info.declared_frames} frames and data for only {info.n_frames} "
            f"(0..{info.n_frames - 1}) is present",
            hint="the file was cut short; re-download or regenerate it",
        )
    raise UserInputError(
        f"{info.path}: {what} is {i}, expected 0 <= index < {info.n_frames}",
        hint="indices count frames in presentation order from 0; negative indices are not accepted",
    )


# --------------------------------------------------------------------------- decoding


class _Reader:
    """An open container positioned somewhere in the stream, decoding forward."""

    def __init__(self, info: VideoInfo, stats: DecodeStats | None) -> None:
        self.info = info
        self.stats = stats
        self.container = _open_input(info.path)
        self.stream = _video_stream(self.container, info.path)
        self.cc = self.stream.codec_context
        self.pts_to_index = {v: i for i, v in enumerate(info.frame_pts)}
        self.wanted_pts: Container[int] = frozenset()
        self._frames: Iterator[Any] | None = None
        self.last: int | None = None  # index of the last frame output since the seek
        self._skipping = False

    def close(self) -> None:
        self.container.close()

    def _count(self, name: str, k: int = 1) -> None:
        setattr(decode_stats, name, getattr(decode_stats, name) + k)
        if self.stats is not None:
            setattr(self.stats, name, getattr(self.stats, name) + k)

    def _set_skip(self, skip: bool) -> None:
        if skip != self._skipping:
            self.cc.skip_frame = "NONREF" if skip else "DEFAULT"
            self._skipping = skip

    def _decode_forward(self) -> Iterator[Any]:
        for packet in self.container.demux(self.stream):
            if packet.size == 0:
                self._set_skip(False)
            else:
                skip = packet.pts is not None and int(packet.pts) not in self.wanted_pts
                self._set_skip(skip)
                self._count("packets_sent")
                if skip:
                    self._count("packets_skipped")
            yield from packet.decode()

    def _seek(self, key_index: int) -> None:
        self._count("seeks")
        try:
            self.container.seek(
                self.info.frame_pts[key_index], stream=self.stream, backward=True, any_frame=False
            )
        except av.FFmpegError:
            # Unseekable input: reopen it and decode from the start (slow but exact).
            self.container.close()
            self.container = _open_input(self.info.path)
            self.stream = _video_stream(self.container, self.info.path)
            self.cc = self.stream.codec_context
            self._skipping = False
        self._frames = self._decode_forward()
        self.last = None

    def _keyframe_at_or_before(self, index: int) -> int:
        keys = self.info.keyframe_indices
        return keys[max(bisect.bisect_right(keys, index) - 1, 0)]

    def get(self, target: int) -> Any:
        """Return the decoded ``av.VideoFrame`` with presentation index ``target``."""
        key = self._keyframe_at_or_before(target)
        keys = self.info.keyframe_indices
        reuse = (
            self._frames is not None
            and self.last is not None
            and (self.last < target and key <= self.last + 1)
        )
        # Candidate seek points, nearest first, in case the container lands too late.
        candidates: list[int] = [] if reuse else [key]
        if not reuse:
            pos = bisect.bisect_left(keys, key)
            candidates += [keys[j] for j in range(pos - 1, max(pos - 3, -1), -1)]
        while True:
            if candidates:
                self._seek(candidates.pop(0))
            result = self._advance_to(target)
            if result is not None:
                return result
            if not candidates:
                break
        # Overshoot even from the earliest candidate: decode from the very start.
        self._seek(0)
        result = self._advance_to(target)
        if result is None:
            raise self._missing(target, "the stream does not land before it when seeking")
        return result

    def _advance_to(self, target: int) -> Any | None:
        """Decode forward to ``target``; None when the first frame after a seek is past it."""
        if self._frames is None:  # pragma: no cover - internal invariant
            raise RuntimeError("_advance_to called before a seek")
        target_pts = self.info.frame_pts[target]
        fresh = self.last is None
        try:
            for frame in self._frames:
                self._count("frames_decoded")
                fpts = frame.pts
                idx = self.pts_to_index.get(int(fpts)) if fpts is not None else None
                if idx is None:
                    continue
                if idx > target:
                    if fresh:
                        self.last = idx
                        return None
                    raise self._missing(target, f"the decoder went on to frame {idx}")
                fresh = False
                self.last = idx
                if int(fpts) == target_pts:
                    return frame
        except av.FFmpegError as exc:
            self._frames = None
            self.last = None
            raise VideoError(
                f"{self.info.path}: frame {target} (t={self.info.frame_times[target]:.6f} s) "
                f"could not be decoded: {exc}{self._truncation_note()}",
                hint="the file is damaged or truncated near this frame; re-download or "
                "re-encode it",
            ) from exc
        self._frames = None
        self.last = None
        raise self._missing(target, "the stream ended first")

    def _truncation_note(self) -> str:
        if not self.info.is_truncated:
            return ""
        return (
            f" (the file is truncated: its header declares {self.info.declared_frames} "
            f"frames and data for {self.info.n_frames} is present)"
        )

    def _missing(self, target: int, why: str) -> VideoError:
        return VideoError(
            f"{self.info.path}: frame {target} (pts {self.info.frame_pts[target]}, "
            f"t={self.info.frame_times[target]:.6f} s) was not produced by the decoder: "
            f"{why}{self._truncation_note()}",
            hint="the file is damaged or truncated; re-encode it, e.g. "
            "`ffmpeg -i in.mp4 -c:v libx264 out.mp4`",
        )

    def to_rgb(self, frame: Any, index: int) -> np.ndarray:
        arr = frame.to_ndarray(format="rgb24")
        if arr.shape != (self.info.height, self.info.width, 3):
            raise VideoError(
                f"{self.info.path}: frame {index} decoded to shape {arr.shape}, expected "
                f"({self.info.height}, {self.info.width}, 3) as probed",
                hint="the resolution changes inside the stream; re-encode to one size, e.g. "
                "`ffmpeg -i in.mp4 -vf scale=W:H out.mp4`",
            )
        return arr


@contextlib.contextmanager
def _reader(info: VideoInfo, stats: DecodeStats | None) -> Iterator[_Reader]:
    r = _Reader(info, stats)
    try:
        yield r
    finally:
        r.close()


def read_frames(
    path: str | os.PathLike[str],
    indices: Sequence[int] | np.ndarray,
    *,
    stats: DecodeStats | None = None,
) -> np.ndarray:
    """Decode the frames at ``indices`` exactly, decoding only what is needed.

    Each wanted frame is reached from the keyframe at or before it; when the next
    wanted frame is later in the same GOP the running decoder continues instead of
    seeking again. Never decodes the whole file for a few frames.

    Args:
        path: video file.
        indices: frame indices in presentation order (ints; any order; duplicates
            allowed), each in ``[0, n_frames)``.
        stats: optional counters that this call adds its work to.

    Returns:
        ``(len(indices), H, W, 3)`` uint8 RGB array; row ``k`` is frame ``indices[k]``.

    Raises:
        UserInputError: bad path, an index that is not an int or is out of range.
        VideoError: the file cannot be opened, or a frame cannot be decoded (the
            message names the frame).
    """
    info = probe(path)
    wanted = _as_index_list(indices, info)
    out = np.empty((len(wanted), info.height, info.width, 3), dtype=np.uint8)
    if not wanted:
        return out
    positions: dict[int, list[int]] = {}
    for pos, i in enumerate(wanted):
        positions.setdefault(i, []).append(pos)
    with _reader(info, stats) as r:
        r.wanted_pts = frozenset(info.frame_pts[i] for i in positions)
        for i in sorted(positions):
            arr = r.to_rgb(r.get(i), i)
            for pos in positions[i]:
                out[pos] = arr
    return out


def read_frames_at(
    path: str | os.PathLike[str],
    times_seconds: Sequence[float] | np.ndarray,
    *,
    stats: DecodeStats | None = None,
) -> np.ndarray:
    """Decode the frames on screen at the given times.

    Time ``t`` (seconds relative to the first frame) maps to the last frame whose
    presentation time is ``<= t + 1e-6`` (see :func:`index_at_time`).

    Args:
        path: video file.
        times_seconds: times in seconds, each in ``[0, duration_seconds)``.
        stats: optional counters that this call adds its work to.

    Returns:
        ``(len(times_seconds), H, W, 3)`` uint8 RGB array, in the order of the times.

    Raises:
        UserInputError: a time is negative, beyond the end, or not a number.
        VideoError: the file cannot be opened or a frame cannot be decoded.
    """
    info = probe(path)
    if isinstance(times_seconds, (str, bytes)) or not isinstance(
        times_seconds, (Iterable, np.ndarray)
    ):
        raise UserInputError(
            f"{info.path}: times must be a sequence of seconds, found "
            f"{type(times_seconds).__name__}",
            hint="pass e.g. [0.0, 1.5, 3.0]",
        )
    if isinstance(times_seconds, np.ndarray):
        values = np.asarray(times_seconds, dtype=np.float64).ravel().tolist()
    else:
        values = list(times_seconds)
    indices = [index_at_time(info, t) for t in values]
    return read_frames(path, indices, stats=stats)


def iter_frames(
    path: str | os.PathLike[str],
    *,
    start: int = 0,
    stop: int | None = None,
    stride: int = 1,
    batch_size: int | None = None,
    stats: DecodeStats | None = None,
) -> Iterator[tuple[int, np.ndarray]] | Iterator[tuple[list[int], np.ndarray]]:
    """Stream frames ``start, start+stride, ... < stop`` with bounded memory.

    Only one decoded frame (or one batch) is held at a time. With a stride longer
    than a GOP, the reader seeks instead of decoding the frames in between.

    Args:
        path: video file.
        start: first frame index, ``0 <= start <= n_frames``.
        stop: end index (exclusive); ``None`` means ``n_frames``; larger values are
            clipped to ``n_frames`` like a Python slice.
        stride: step between yielded frames, ``>= 1``.
        batch_size: ``None`` yields ``(index, frame)`` with frame ``(H, W, 3)`` uint8;
            an int ``>= 1`` yields ``(indices, batch)`` with batch ``(len(indices), H,
            W, 3)`` uint8 (the last batch may be shorter).
        stats: optional counters that this iteration adds its work to.

    Yields:
        ``(index, frame)`` or ``(indices, batch)``.

    Raises:
        UserInputError: bad path or arguments.
        VideoError: the file cannot be opened or a frame cannot be decoded.
    """
    info = probe(path)
    for name, value, low in (("start", start, 0), ("stride", stride, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise UserInputError(
                f"{info.path}: iter_frames {name} must be an int >= {low}, found {value!r}",
                hint=f"pass {name}={low} or larger",
            )
    if stop is not None and (
        isinstance(stop, bool) or not isinstance(stop, (int, np.integer)) or stop < 0
    ):
        raise UserInputError(
            f"{info.path}: iter_frames stop must be None or an int >= 0, found {stop!r}",
            hint="pass stop=None for the whole video",
        )
    if batch_size is not None and (
        isinstance(batch_size, bool)
        or not isinstance(batch_size, (int, np.integer))
        or batch_size < 1
    ):
        raise UserInputError(
            f"{info.path}: iter_frames batch_size must be None or an int >= 1, found "
            f"{batch_size!r}",
            hint="pass batch_size=None to get single frames",
        )
    if start > info.n_frames:
        _check_index(info, int(start), "iter_frames start")
    end = info.n_frames if stop is None else min(int(stop), info.n_frames)
    if stop is not None and stop > info.n_frames and info.is_truncated:
        _check_index(info, min(int(stop), info.declared_frames) - 1, "iter_frames stop - 1")
    wanted = range(int(start), end, int(stride))
    if batch_size is None:
        return _iter_single(info, wanted, stats)
    return _iter_batches(info, wanted, int(batch_size), stats)


def _iter_single(
    info: VideoInfo, wanted: range, stats: DecodeStats | None
) -> Iterator[tuple[int, np.ndarray]]:
    if len(wanted) == 0:
        return
    with _reader(info, stats) as r:
        step = wanted.step
        first = wanted.start
        r.wanted_pts = _RangePts(info.frame_pts, first, step)
        for i in wanted:
            yield i, r.to_rgb(r.get(i), i)


def _iter_batches(
    info: VideoInfo, wanted: range, batch_size: int, stats: DecodeStats | None
) -> Iterator[tuple[list[int], np.ndarray]]:
    # Each batch is a fresh array handed to the caller (no copy); at most this batch and
    # the one the caller still holds are alive at a time.
    shape = (info.height, info.width, 3)
    idx: list[int] = []
    batch = np.empty((min(batch_size, len(wanted)), *shape), dtype=np.uint8)
    for i, frame in _iter_single(info, wanted, stats):
        batch[len(idx)] = frame
        idx.append(i)
        if len(idx) == batch_size:
            yield idx, batch
            idx = []
            batch = np.empty((batch_size, *shape), dtype=np.uint8)
    if idx:
        yield idx, batch[: len(idx)]


class _RangePts:
    """Membership test 'is this PTS one of the frames start, start+step, ...'."""

    def __init__(self, frame_pts: tuple[int, ...], start: int, step: int) -> None:
        self._index = {v: i for i, v in enumerate(frame_pts)}
        self._start = start
        self._step = step

    def __contains__(self, pts: object) -> bool:
        i = self._index.get(pts) if isinstance(pts, int) else None
        return i is not None and i >= self._start and (i - self._start) % self._step == 0


# --------------------------------------------------------------------------- encoding

_CRF_CODECS = {"libx264", "libx265", "libvpx-vp9", "libaom-av1", "libsvtav1"}


def _as_fps(fps: Any) -> Fraction:
    if isinstance(fps, bool) or not isinstance(
        fps, (int, float, Fraction, np.integer, np.floating)
    ):
        raise UserInputError(
            f"write_video fps: expected a positive number, found {type(fps).__name__} {fps!r}",
            hint="pass e.g. fps=30, fps=29.97 or fps=Fraction(30000, 1001)",
        )
    if isinstance(fps, (float, np.floating)):
        if not math.isfinite(float(fps)) or fps <= 0:
            raise UserInputError(
                f"write_video fps: expected a positive finite number, found {fps!r}",
                hint="pass e.g. fps=30",
            )
        rate = Fraction(float(fps)).limit_denominator(10_000)
    else:
        rate = Fraction(fps)
    if rate <= 0:
        raise UserInputError(
            f"write_video fps: expected a positive number, found {fps!r}", hint="pass e.g. fps=30"
        )
    return rate


def _check_frame(frame: Any, number: int, path: Path, shape: tuple[int, ...] | None) -> np.ndarray:
    if not isinstance(frame, np.ndarray):
        raise UserInputError(
            f"{path}: frame {number} must be a numpy array of shape (H, W, 3) uint8, found "
            f"{type(frame).__name__}",
            hint="convert frames with np.asarray(frame, dtype=np.uint8)",
        )
    if frame.dtype != np.uint8:
        raise UserInputError(
            f"{path}: frame {number} has dtype {frame.dtype}, expected uint8",
            hint="scale floats in [0, 1] with (x * 255).round().clip(0, 255).astype(np.uint8)",
        )
    if frame.ndim != 3 or frame.shape[2] != 3:
        raise UserInputError(
            f"{path}: frame {number} has shape {frame.shape}, expected (H, W, 3) RGB",
            hint="drop alpha with frame[..., :3]; stack grey frames with np.repeat(g[..., None], 3, -1)",
        )
    if shape is not None and frame.shape != shape:
        raise UserInputError(
            f"{path}: frame {number} has shape {frame.shape}, but frame 0 had {shape}; all "
            "frames of a video must have the same size",
            hint="resize every frame to one size before writing",
        )
    return np.ascontiguousarray(frame)


def write_video(
    path: str | os.PathLike[str],
    frames: Iterable[np.ndarray],
    fps: float | Fraction,
    *,
    crf: int = 18,
    codec: str = "libx264",
    pix_fmt: str = "yuv420p",
    gop: int | None = None,
) -> int:
    """Encode RGB frames into a video file (H.264 in MP4 by default).

    Frame ``k`` gets presentation time ``k / fps`` (constant frame rate). The file is
    written to a temporary name beside ``path`` and renamed at the end, so a failed
    write never leaves a half-written video under ``path``.

    Odd sizes are **rejected, not padded**: chroma-subsampled formats (``yuv420p``,
    ``nv12``: both sides even; ``yuv422p``: even width) cannot represent them, and
    silent padding would shift every pixel box computed on the source frames.

    Args:
        path: output file; the container is chosen from the extension (``.mp4``).
        frames: iterable of ``(H, W, 3)`` uint8 RGB arrays, all the same shape. It is
            consumed lazily, so a generator keeps memory bounded.
        fps: frames per second, int, float (e.g. ``29.97``) or ``Fraction``.
        crf: constant rate factor (lower is better quality; 18 is visually lossless
            for x264); used by libx264/libx265/libvpx-vp9/AV1 encoders, ignored by others.
        codec: FFmpeg encoder name.
        pix_fmt: encoder pixel format.
        gop: keyframe interval in frames. ``None`` keeps the encoder default (250 for
            libx264). With libx264 an int gives exactly one keyframe every ``gop``
            frames (scene-cut keyframes are disabled).

    Returns:
        The number of frames written.

    Raises:
        UserInputError: bad arguments, no frames, a frame of the wrong dtype, shape or
            size (the message names the frame number), odd size for ``pix_fmt``, or an
            output folder that does not exist.
        VideoError: the encoder or muxer fails.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise UserInputError(
            f"write_video path: expected a str or Path, found {type(path).__name__}",
            hint="pass the output file name, e.g. 'clip.mp4'",
        )
    out = Path(path)
    rate = _as_fps(fps)
    if isinstance(crf, bool) or not isinstance(crf, (int, np.integer)) or not 0 <= crf <= 63:
        raise UserInputError(
            f"{out}: crf must be an int in [0, 63] (x264 uses 0..51), found {crf!r}",
            hint="pass crf=18 for near-lossless, 23 for the x264 default",
        )
    if gop is not None and (
        isinstance(gop, bool) or not isinstance(gop, (int, np.integer)) or gop < 1
    ):
        raise UserInputError(
            f"{out}: gop must be None or an int >= 1 (frames between keyframes), found {gop!r}",
            hint="pass gop=None for the encoder default",
        )
    if not out.parent.is_dir():
        raise UserInputError(
            f"{out}: output folder {out.parent} does not exist",
            hint="create it first, e.g. Path(...).parent.mkdir(parents=True, exist_ok=True)",
        )
    if out.is_dir():
        raise UserInputError(f"{out}: is a folder, expected a file name", hint="add e.g. /clip.mp4")

    iterator = iter(frames)
    try:
        first = next(iterator)
    except StopIteration:
        raise UserInputError(
            f"{out}: no frames to write", hint="pass at least one (H, W, 3) uint8 frame"
        ) from None
    first = _check_frame(first, 0, out, None)
    height, width = first.shape[:2]
    pf = pix_fmt.lower()
    need_even_w = "420" in pf or "422" in pf or "411" in pf or pf in {"nv12", "nv21"}
    need_even_h = "420" in pf or pf in {"nv12", "nv21"}
    if (need_even_w and width % 2) or (need_even_h and height % 2):
        raise UserInputError(
            f"{out}: frame size {width}x{height} (WxH) has an odd side, which pix_fmt "
            f"{pix_fmt!r} cannot store",
            hint="crop or pad frames to even width and height (e.g. frame[: H // 2 * 2, : W // 2 * 2]) "
            "or use pix_fmt='yuv444p'",
        )

    tmp = out.with_name(f".{out.stem}.partial-{os.getpid()}-{threading.get_ident()}{out.suffix}")
    count = 0
    try:
        try:
            container = av.open(str(tmp), mode="w")
        except (av.FFmpegError, ValueError) as exc:
            raise UserInputError(
                f"{out}: cannot create a video file with extension {out.suffix!r}: {exc}",
                hint="use a .mp4 (or .mkv / .mov) file name",
            ) from exc
        try:
            try:
                stream = container.add_stream(codec, rate=rate)
            except (av.FFmpegError, ValueError, KeyError) as exc:
                raise UserInputError(
                    f"{out}: unknown or unavailable encoder {codec!r}: {exc}",
                    hint="use codec='libx264' (always available in PyAV wheels)",
                ) from exc
            stream.width = width
            stream.height = height
            stream.pix_fmt = pix_fmt
            stream.codec_context.time_base = 1 / rate
            options: dict[str, str] = {}
            if codec in _CRF_CODECS:
                options["crf"] = str(int(crf))
            if gop is not None:
                stream.codec_context.gop_size = int(gop)
                if codec == "libx264":
                    options["x264-params"] = f"keyint={gop}:min-keyint={gop}:scenecut=0"
            stream.options = options
            frame_tb = 1 / rate

            def encode(arr: np.ndarray, k: int) -> None:
                vf = av.VideoFrame.from_ndarray(arr, format="rgb24")
                vf = vf.reformat(format=pix_fmt)
                vf.pts = k
                vf.time_base = frame_tb
                for packet in stream.encode(vf):
                    container.mux(packet)

            try:
                encode(first, 0)
                count = 1
                for frame in iterator:
                    arr = _check_frame(frame, count, out, first.shape)
                    encode(arr, count)
                    count += 1
                for packet in stream.encode(None):
                    container.mux(packet)
            except av.FFmpegError as exc:
                raise VideoError(
                    f"{out}: encoding failed at frame {count} with codec {codec!r}, pix_fmt "
                    f"{pix_fmt!r}: {exc}",
                    hint="try the defaults codec='libx264', pix_fmt='yuv420p'",
                ) from exc
        finally:
            container.close()
        os.replace(tmp, out)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return count
