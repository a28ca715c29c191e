"""Reading frames by index or time, and streaming them: the public decoding API.

:func:`read_frames` and :func:`read_frames_at` decode a chosen set of frames;
:func:`iter_frames` streams a strided range with bounded memory. All of them check
their arguments, then drive a :class:`~vidmem.io.video_decoder.FrameReader`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from vidmem.errors import UserInputError, VideoError
from vidmem.io.video_decoder import DecodeStats, open_reader
from vidmem.io.video_probe import VideoInfo, index_at_time, probe
from vidmem.values import is_int_like

__all__ = ["iter_frames", "read_frames", "read_frames_at"]


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
        if not is_int_like(v):
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
    with open_reader(info, stats) as r:
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
        if not is_int_like(value) or value < low:
            raise UserInputError(
                f"{info.path}: iter_frames {name} must be an int >= {low}, found {value!r}",
                hint=f"pass {name}={low} or larger",
            )
    if stop is not None and (not is_int_like(stop) or stop < 0):
        raise UserInputError(
            f"{info.path}: iter_frames stop must be None or an int >= 0, found {stop!r}",
            hint="pass stop=None for the whole video",
        )
    if batch_size is not None and (not is_int_like(batch_size) or batch_size < 1):
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
    with open_reader(info, stats) as r:
        r.wanted_pts = _RangePts(r.pts_to_index, wanted.start, wanted.step)
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

    def __init__(self, pts_to_index: Mapping[int, int], start: int, step: int) -> None:
        self._index = pts_to_index
        self._start = start
        self._step = step

    def __contains__(self, pts: object) -> bool:
        i = self._index.get(pts) if isinstance(pts, int) else None
        return i is not None and i >= self._start and (i - self._start) % self._step == 0
