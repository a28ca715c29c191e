"""Exact frame decoding: seek to a keyframe, decode forward to the wanted frame.

:class:`FrameReader` keeps one container open and positioned in the stream; asked for
a frame index it seeks to the keyframe at or before it (by that keyframe's PTS) and
decodes forward until the frame with the wanted PTS, continuing without a new seek
when the next wanted frame lies in the same GOP. Packets of frames that are not wanted
are fed with ``skip_frame=NONREF``. Work is counted in :data:`decode_stats` and in an
optional per-call :class:`DecodeStats`.
"""

from __future__ import annotations

import bisect
import contextlib
from collections.abc import Container, Iterator
from dataclasses import dataclass
from typing import Any

import av
import numpy as np

from vidmem.errors import VideoError
from vidmem.io.video_container import open_input, video_stream
from vidmem.io.video_probe import VideoInfo

__all__ = ["DecodeStats", "FrameReader", "decode_stats", "open_reader"]


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


class FrameReader:
    """An open container positioned somewhere in the stream, decoding forward."""

    def __init__(self, info: VideoInfo, stats: DecodeStats | None) -> None:
        self.info = info
        self.stats = stats
        self._open()
        self.pts_to_index = {v: i for i, v in enumerate(info.frame_pts)}
        self.wanted_pts: Container[int] = frozenset()
        self._frames: Iterator[Any] | None = None
        self.last: int | None = None  # index of the last frame output since the seek

    def _open(self) -> None:
        self.container = open_input(self.info.path)
        self.stream = video_stream(self.container, self.info.path)
        self.cc = self.stream.codec_context
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
            self._open()
        self._frames = self._decode_forward()
        self.last = None

    def get(self, target: int) -> Any:
        """Return the decoded ``av.VideoFrame`` with presentation index ``target``."""
        keys = self.info.keyframe_indices
        pos = max(bisect.bisect_right(keys, target) - 1, 0)  # keyframe at or before target
        if (
            self._frames is not None
            and self.last is not None
            and self.last < target
            and keys[pos] <= self.last + 1
        ):
            # The running decoder is already in (or right before) target's GOP.
            result = self._advance_to(target)
            if result is not None:
                return result
        else:
            # Seek points, nearest first, in case the container lands too late.
            for seek_to in reversed(keys[max(pos - 2, 0) : pos + 1]):
                self._seek(seek_to)
                result = self._advance_to(target)
                if result is not None:
                    return result
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
def open_reader(info: VideoInfo, stats: DecodeStats | None) -> Iterator[FrameReader]:
    """A :class:`FrameReader` for ``info``, closed on exit."""
    r = FrameReader(info, stats)
    try:
        yield r
    finally:
        r.close()
