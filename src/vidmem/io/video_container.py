"""Opening video files with PyAV: path checks, the container and its video stream.

Shared by :mod:`vidmem.io.video_probe` and :mod:`vidmem.io.video_decoder`; errors
from PyAV become :class:`~vidmem.errors.VideoError` with a hint on how to fix the file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import av

from vidmem.errors import UserInputError, VideoError

__all__ = ["check_path", "open_input", "video_stream"]

_FAST_START_HINT = (
    "check that this is a video file (MP4, MKV, MOV, WebM...) and that it was copied "
    "completely; an MP4 whose index ('moov' atom) is at the end cannot be opened when "
    "the file is cut short -- re-download it or re-encode it, e.g. "
    "`ffmpeg -i in.mp4 -movflags +faststart out.mp4`"
)


def check_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as a ``Path``, checked to be an existing file (else :class:`UserInputError`)."""
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


def open_input(p: Path) -> Any:
    """Open ``p`` with PyAV, translating its errors into :class:`VideoError`."""
    try:
        return av.open(str(p), mode="r")
    except av.FFmpegError as exc:
        size = p.stat().st_size
        raise VideoError(
            f"{p}: cannot be opened as a video container ({size} bytes): {exc}",
            hint=_FAST_START_HINT,
        ) from exc


def video_stream(container: Any, p: Path) -> Any:
    """The first video stream of ``container`` (else :class:`VideoError`)."""
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
