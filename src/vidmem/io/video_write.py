"""Encoding RGB frames into a video file (H.264 in MP4 by default) with PyAV."""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Iterable, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np

from vidmem.errors import UserInputError, VideoError

__all__ = ["write_video"]

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
    threads: int | None = None,
    x264_params: str | None = None,
    metadata: Mapping[str, str] | None = None,
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
        threads: encoder threads; ``None`` lets the encoder choose. ``threads=1`` plus
            an x264 setting without look-ahead state (e.g. ``x264_params="mbtree=0"``)
            makes libx264 output byte-identical from run to run.
        x264_params: extra ``key=value:key=value`` libx264 settings, appended to the
            ones ``gop`` sets.
        metadata: container tags to write (e.g. ``{"comment": "..."}``).

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
            x264 = []
            if gop is not None:
                stream.codec_context.gop_size = int(gop)
                x264.append(f"keyint={gop}:min-keyint={gop}:scenecut=0")
            if x264_params:
                x264.append(x264_params)
            if x264 and codec == "libx264":
                options["x264-params"] = ":".join(x264)
            stream.options = options
            if threads is not None:
                stream.codec_context.thread_count = int(threads)
            for key, value in (metadata or {}).items():
                container.metadata[str(key)] = str(value)
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
