"""Sim media on disk: MP4 and PNG files that carry their world spec.

Every video the sim writes has its :class:`~vidmem.sim.world.WorldSpec` (compact JSON,
no per-frame truth) in the container's ``comment`` tag, prefixed by
:data:`VIDEO_TAG_PREFIX`; every PNG start image has it in a compressed text chunk
(``zTXt``) under the key :data:`PNG_KEY`.

**What this metadata is for.** It stands in for a world model's own knowledge of the
world it is generating: the ``sim`` generator receives only what a real model
receives (a context video or start image, references and a prompt) and reads the spec
from those files to know which world it continues. Scorers never read it; they see
pixels only. Truth (boxes, gaps) lives in separate ``_truth`` files that only
validation tests open.

Videos are encoded with :func:`vidmem.io.video.write_video` (libx264, fixed CRF, a 2 s
keyframe interval) with the tag written as container metadata.

Byte-identical output: libx264's multi-threaded modes depend on thread timing, and its
macroblock-tree look-ahead gives different bytes from run to run even on one thread. Sim
videos are therefore encoded with one thread and ``mbtree=0``, which makes the bytes a
pure function of the frames (checked by the tests) for a given PyAV/x264 build.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable
from pathlib import Path

import av
import numpy as np
from PIL import Image, PngImagePlugin

from vidmem.errors import UserInputError, VideoError
from vidmem.io.video import write_video
from vidmem.sim.world import WorldSpec

__all__ = [
    "PNG_KEY",
    "VIDEO_CRF",
    "VIDEO_GOP",
    "VIDEO_TAG_PREFIX",
    "read_png",
    "read_png_spec",
    "read_video_spec",
    "write_sim_png",
    "write_sim_video",
]

#: marker in front of the JSON in an MP4 ``comment`` tag.
VIDEO_TAG_PREFIX = "vidmem-sim-world:"
#: PNG text-chunk key holding the spec JSON.
PNG_KEY = "vidmem-sim-world"
#: x264 constant rate factor of sim videos.
VIDEO_CRF = 20
#: keyframe interval of sim videos in frames (2 s at the default 8 fps).
VIDEO_GOP = 16
#: x264 settings that, with one encoder thread, make the output repeatable.
VIDEO_X264_PARAMS = "mbtree=0"


def _partial(path: Path, what: str) -> Path:
    return path.with_name(f".{path.stem}.{what}-{os.getpid()}-{threading.get_ident()}{path.suffix}")


def write_sim_video(path: str | os.PathLike[str], frames: Iterable[np.ndarray],
                    spec: WorldSpec) -> int:
    """Encode frames to an MP4 that carries ``spec`` in its ``comment`` tag.

    Args:
        path: output ``.mp4``; its folder must exist.
        frames: ``(H, W, 3)`` uint8 RGB frames (consumed lazily).
        spec: the world the frames show (its ``fps`` is the video's frame rate).

    Returns:
        Number of frames written.

    Raises:
        UserInputError, VideoError: as :func:`vidmem.io.video.write_video`.
    """
    return write_video(path, frames, spec.fps, crf=VIDEO_CRF, gop=VIDEO_GOP, threads=1,
                       x264_params=VIDEO_X264_PARAMS,
                       metadata={"comment": VIDEO_TAG_PREFIX + spec.to_json()})


def read_video_spec(path: str | os.PathLike[str]) -> WorldSpec | None:
    """The world spec in a video's ``comment`` tag, or ``None`` if it has none.

    Raises:
        UserInputError: the file is missing, or the tag is present but damaged.
        VideoError: the file is not a readable container.
    """
    p = Path(path)
    if not p.is_file():
        raise UserInputError(f"{p}: video file not found", hint="check the path")
    try:
        with av.open(str(p)) as c:
            comment = c.metadata.get("comment", "")
    except av.FFmpegError as exc:
        raise VideoError(f"{p}: cannot be opened as a video container: {exc}",
                         hint="pass an MP4 written by `vidmem sim build`") from exc
    if not comment.startswith(VIDEO_TAG_PREFIX):
        return None
    return WorldSpec.from_json(comment[len(VIDEO_TAG_PREFIX):], where=f"{p} (sim world spec)")


def write_sim_png(path: str | os.PathLike[str], image: np.ndarray, spec: WorldSpec) -> None:
    """Write an RGB image as PNG with ``spec`` in a compressed text chunk.

    Args:
        path: output ``.png``; its folder must exist.
        image: ``(H, W, 3)`` uint8 RGB.
        spec: the world the image shows.
    """
    out = Path(path)
    info = PngImagePlugin.PngInfo()
    info.add_text(PNG_KEY, spec.to_json(), zip=True)
    tmp = _partial(out, "partial")
    try:
        Image.fromarray(np.ascontiguousarray(image, dtype=np.uint8), "RGB").save(
            tmp, format="PNG", pnginfo=info, optimize=False, compress_level=6)
        os.replace(tmp, out)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def read_png(path: str | os.PathLike[str]) -> np.ndarray:
    """Read an image as ``(H, W, 3)`` uint8 RGB."""
    p = Path(path)
    if not p.is_file():
        raise UserInputError(f"{p}: image file not found", hint="check the path")
    with Image.open(p) as im:
        return np.asarray(im.convert("RGB"))


def read_png_spec(path: str | os.PathLike[str]) -> WorldSpec | None:
    """The world spec in a PNG's text chunk, or ``None`` if it has none."""
    p = Path(path)
    if not p.is_file():
        raise UserInputError(f"{p}: image file not found", hint="check the path")
    try:
        with Image.open(p) as im:
            im.load()
            text = getattr(im, "text", {}).get(PNG_KEY)
    except OSError as exc:
        raise UserInputError(f"{p}: cannot be read as an image: {exc}",
                             hint="pass a PNG written by `vidmem sim build`") from exc
    if not text:
        return None
    return WorldSpec.from_json(text, where=f"{p} (sim world spec)")
