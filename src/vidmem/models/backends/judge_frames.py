"""What a judge is shown: frame checks, images as ``data:`` URLs, frames picked from a clip.

Shared by ``judge/openai`` (:mod:`vidmem.models.backends.judge_openai`) and the local
Qwen-VL judges (:mod:`vidmem.models.backends.judge_qwen`); public names are re-exported
from :mod:`vidmem.models.backends.judge_openai`.
"""

from __future__ import annotations

import base64
import io
import math
import os
from collections.abc import Sequence

import numpy as np

from vidmem.errors import UserInputError
from vidmem.models.backends.image_checks import JUDGE_WORDING, check_image

__all__ = [
    "IMAGE_FORMATS",
    "clip_frame_indices",
    "encode_image_data_url",
    "sample_clip_frames",
    "shrunk_size",
]

#: ``image_format`` spellings -> the format sent.
IMAGE_FORMATS = {"jpeg": "jpeg", "jpg": "jpeg", "png": "png"}


# ---------------------------------------------------------------------------- images


def shrunk_size(height: int, width: int, max_side: float) -> tuple[int, int] | None:
    """``(height, width)`` with the longer side brought down to ``max_side`` (aspect kept,
    each side at least 1 px), or ``None`` when the image already fits."""
    longest = max(height, width)
    if longest > max_side:
        scale = max_side / longest
        return max(1, round(height * scale)), max(1, round(width * scale))
    return None


def encode_image_data_url(
    image: np.ndarray,
    *,
    image_format: str = "jpeg",
    max_image_side: int | None = None,
    jpeg_quality: int = 90,
) -> str:
    """Encode an RGB frame as a ``data:`` URL for a chat ``image_url`` part.

    Args:
        image: uint8 ``(H, W, 3)`` RGB.
        image_format: ``"jpeg"`` (lossy, small) or ``"png"`` (lossless).
        max_image_side: when set and the longer side is larger, the image is first
            resized (bicubic, aspect kept, each side at least 1 px) so that the longer
            side equals it, in pixels.
        jpeg_quality: JPEG quality 1-95.

    Returns:
        ``"data:image/<format>;base64,<payload>"``.

    Example:
        >>> url = encode_image_data_url(np.zeros((8, 4, 3), np.uint8), image_format="png")
        >>> url.startswith("data:image/png;base64,")
        True
    """
    from PIL import Image

    fmt = IMAGE_FORMATS.get(str(image_format).lower())
    if fmt is None:
        raise UserInputError(
            f"judge/openai: image_format must be one of jpeg, png; found {image_format!r}"
        )
    image = check_image(image, where="judge/openai image", wording=JUDGE_WORDING)
    pil = Image.fromarray(np.ascontiguousarray(image), mode="RGB")
    if max_image_side is not None:
        size = shrunk_size(image.shape[0], image.shape[1], max_image_side)
        if size is not None:
            pil = pil.resize((size[1], size[0]), Image.Resampling.BICUBIC)
    buf = io.BytesIO()
    if fmt == "jpeg":
        pil.save(buf, format="JPEG", quality=int(jpeg_quality))
    else:
        pil.save(buf, format="PNG")
    payload = base64.b64encode(buf.getvalue()).decode("ascii")
    return f"data:image/{fmt};base64,{payload}"


# ---------------------------------------------------------------------- clip frames


def clip_frame_indices(
    num_frames: int, n: int, positions: Sequence[float] | None = None
) -> list[int]:
    """Frame indices for ``n`` evenly spaced frames, or for fractional positions.

    A position ``p`` in ``[0, 1]`` maps to ``round(p * (num_frames - 1))``: 0 is the
    first frame, 1 the last. Without ``positions`` the clip is cut into ``n`` equal
    parts and the middle of each is taken, ``p_k = (k + 0.5) / n``; ``n`` is capped at
    ``num_frames`` so no frame is shown twice.

    Example:
        >>> clip_frame_indices(100, 4)
        [12, 37, 62, 87]
        >>> clip_frame_indices(101, 3, positions=[0.15, 0.5, 0.85])
        [15, 50, 85]
        >>> clip_frame_indices(3, 5)
        [0, 1, 2]
    """
    if num_frames < 1:
        raise UserInputError(f"clip frame sampling: the clip has no frames (found {num_frames})")
    if positions is None:
        if n < 1:
            raise UserInputError(f"clip frame sampling: n must be >= 1, found {n}")
        n = min(int(n), num_frames)
        positions = [(k + 0.5) / n for k in range(n)]
    out: list[int] = []
    for p in positions:
        p = float(p)
        if not (0.0 <= p <= 1.0) or math.isnan(p):
            raise UserInputError(
                f"clip frame sampling: positions must lie in [0, 1], found {p}",
                hint="give fractions of the clip length, e.g. [0.15, 0.5, 0.85]",
            )
        out.append(min(num_frames - 1, math.floor(p * (num_frames - 1) + 0.5)))
    return out


def sample_clip_frames(
    frames_or_path: np.ndarray | str | os.PathLike[str],
    n: int,
    positions: Sequence[float] | None = None,
) -> tuple[np.ndarray, ...]:
    """Pick frames of a clip to show a judge (see :func:`clip_frame_indices`).

    Args:
        frames_or_path: uint8 ``(T, H, W, 3)`` frames, or a video file; a file is
            probed and only the chosen frames are decoded (exact, by index, with
            :func:`vidmem.io.video.read_frames`).
        n: how many evenly spaced frames (ignored when ``positions`` is given).
        positions: fractions of the clip in ``[0, 1]``, e.g. ``(0.15, 0.5, 0.85)``.

    Returns:
        A tuple of ``(H, W, 3)`` uint8 frames, ready for ``JudgeRequest.images``.

    Raises:
        UserInputError: bad array, ``n`` or positions; a missing file.
        VideoError: a file that cannot be decoded.

    Example:
        >>> clip = np.arange(10, dtype=np.uint8)[:, None, None, None].repeat(3, axis=3)
        >>> [int(f[0, 0, 0]) for f in sample_clip_frames(clip, 3)]
        [2, 5, 8]
    """
    if isinstance(frames_or_path, (str, os.PathLike)):
        from vidmem.io.video import probe, read_frames

        info = probe(frames_or_path)
        idx = clip_frame_indices(info.n_frames, n, positions)
        decoded = read_frames(frames_or_path, idx)
        return tuple(decoded[k] for k in range(len(idx)))
    frames = frames_or_path
    if (
        not isinstance(frames, np.ndarray)
        or frames.dtype != np.uint8
        or frames.ndim != 4
        or frames.shape[3] != 3
    ):
        found = (
            f"dtype {frames.dtype}, shape {tuple(frames.shape)}"
            if isinstance(frames, np.ndarray)
            else type(frames).__name__
        )
        raise UserInputError(
            f"sample_clip_frames: expected uint8 frames of shape (T, H, W, 3) or a video "
            f"path, found {found}",
            hint="stack RGB frames with numpy.stack(frames).astype(numpy.uint8)",
        )
    idx = clip_frame_indices(frames.shape[0], n, positions)
    return tuple(frames[i] for i in idx)
