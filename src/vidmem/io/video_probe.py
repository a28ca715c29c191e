"""Probing a video without decoding it: the frame table and time -> frame lookup.

:func:`probe` demuxes the packets of the first video stream, sorts their PTS into
presentation order and records which ones are keyframes; the result is cached per
``(path, size, mtime)``. :func:`index_at_time` maps a time in seconds to the frame on
screen at that time. See :mod:`vidmem.io.video` for the conventions.
"""

from __future__ import annotations

import bisect
import functools
import math
import os
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from vidmem.errors import UserInputError, VideoError
from vidmem.io.video_container import check_path, open_input, video_stream

__all__ = ["TIME_EPSILON", "VideoInfo", "clear_probe_cache", "index_at_time", "probe"]

#: Slack (seconds) added to a query time before looking up the frame on screen.
TIME_EPSILON = 1e-6

_PROBE_CACHE_SIZE = 64


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
    p = check_path(path)
    st = p.stat()
    return _probe_cached(str(p.resolve()), str(p), st.st_size, st.st_mtime_ns)


def clear_probe_cache() -> None:
    """Forget every cached :func:`probe` result."""
    _probe_cached.cache_clear()


@functools.lru_cache(maxsize=_PROBE_CACHE_SIZE)
def _probe_cached(resolved: str, shown: str, size: int, mtime_ns: int) -> VideoInfo:
    del resolved, size, mtime_ns  # only part of the cache key
    p = Path(shown)
    container = open_input(p)
    try:
        stream = video_stream(container, p)
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
