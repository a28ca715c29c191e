"""Images in and frames out: what a diffusers pipeline receives and what the clip holds."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from vidmem.errors import UserInputError

__all__ = ["frames_to_uint8", "last_frame", "load_rgb", "pixel_hash", "resize_frames",
           "write_clip"]


def load_rgb(path: str, *, where: str) -> Image.Image:
    """An image file as an RGB PIL image, with a clear error naming the request."""
    try:
        with Image.open(path) as im:
            return im.convert("RGB")
    except (OSError, ValueError) as exc:
        raise UserInputError(f"{where}: cannot read image {path} ({exc})",
                             hint="give a readable PNG or JPEG") from None


def last_frame(video: str, *, where: str) -> Image.Image:
    """The last frame of a context video (CMBench: the frame a continuation starts from)."""
    from vidmem.errors import VidmemError
    from vidmem.io.video import probe, read_frames

    try:
        info = probe(video)
        frame = read_frames(video, [info.n_frames - 1])[0]
    except VidmemError as exc:
        raise UserInputError(f"{where}: cannot read the context video's last frame "
                             f"({exc.message})", hint="give a readable MP4") from None
    return Image.fromarray(frame)


def pixel_hash(image: Image.Image) -> str:
    """SHA-256 of an image's RGB pixels and size (not of its file: a re-encoded PNG with
    the same pixels is the same input).

    Example:
        >>> a = Image.new("RGB", (4, 2), (1, 2, 3))
        >>> pixel_hash(a) == pixel_hash(a.copy()), pixel_hash(a) == pixel_hash(Image.new("RGB", (2, 4), (1, 2, 3)))
        (True, False)
    """
    arr = np.asarray(image.convert("RGB"), dtype=np.uint8)
    h = hashlib.sha256(f"{arr.shape}".encode())
    h.update(arr.tobytes())
    return h.hexdigest()


def frames_to_uint8(frames: Any) -> np.ndarray:
    """A pipeline's ``output_type="np"`` video (floats in [0, 1], ``(T, H, W, 3)``) as uint8.

    Example:
        >>> frames_to_uint8(np.array([[[[0.0, 0.5, 1.0]]]])).tolist()
        [[[[0, 128, 255]]]]
    """
    arr = np.asarray(frames, dtype=np.float32)
    if arr.ndim == 3:  # one image
        arr = arr[None]
    return (np.clip(arr, 0.0, 1.0) * 255.0).round().astype(np.uint8)


def resize_frames(frames: np.ndarray, height: int, width: int) -> np.ndarray:
    """Resize every frame (Lanczos) when the delivered size differs from the render."""
    if frames.shape[1:3] == (height, width):
        return frames
    return np.stack([np.asarray(Image.fromarray(f).resize((width, height), Image.LANCZOS))
                     for f in frames])


def write_clip(path: str | Path, frames: np.ndarray, fps: float) -> int:
    """Write the MP4 byte-reproducibly (one encoder thread, no x264 look-ahead state)."""
    from vidmem.io.video import write_video

    return write_video(path, iter(frames), fps, threads=1, x264_params="mbtree=0")
