"""The one check of RGB frames handed to a backend: ``uint8`` arrays of shape ``(H, W, 3)``.

Embedders (:mod:`vidmem.models.backends.hf_images`), detectors and the segmenter
(:mod:`vidmem.models.backends.hf_detection`) and the judges
(:mod:`vidmem.models.backends.judge_frames`) all run the same checks; each family words
its errors for its own users, so the messages come from an :class:`ImageCheckWording`.
Needs numpy only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vidmem.errors import UserInputError

__all__ = [
    "DETECTOR_WORDING",
    "EMBEDDER_WORDING",
    "JUDGE_WORDING",
    "ImageCheckWording",
    "check_image",
    "check_images",
]


@dataclass(frozen=True)
class ImageCheckWording:
    """Error messages of :func:`check_image` / :func:`check_images`.

    Each message is a :meth:`str.format` template over ``where``, ``i`` (the image's
    position in the batch), ``found`` (the type name of a non-array), ``dtype`` and
    ``shape``; each ``(message, hint)`` pair gives the hint shown with it.
    ``single_array`` (one array where a batch was expected) is ``None`` for a wording
    used with :func:`check_image` only.
    """

    not_array: tuple[str, str]
    bad_array: tuple[str, str]
    empty: str
    single_array: tuple[str, str] | None = None


#: Embedders: ``embed_images([...])``.
EMBEDDER_WORDING = ImageCheckWording(
    single_array=(
        "{where}: expected a sequence of images, found a single array of shape {shape}",
        "wrap a single image in a list: embed_images([image])",
    ),
    not_array=(
        "{where}: image {i} must be a numpy array, found {found}",
        "convert with numpy.asarray(image)",
    ),
    bad_array=(
        "{where}: image {i} must be uint8 (H, W, 3) RGB, found {dtype} {shape}",
        "convert with numpy.clip(x, 0, 255).astype(numpy.uint8); drop any alpha channel",
    ),
    empty="{where}: image {i} is empty, shape {shape}",
)

#: Detectors and segmenters: ``detect([...])``, ``segment([...], boxes)``.
DETECTOR_WORDING = ImageCheckWording(
    single_array=(
        "{where}: expected a sequence of images, found one array of shape {shape}",
        "wrap a single frame in a list: [frame]",
    ),
    not_array=(
        "{where}: image {i} must be a numpy uint8 array (H, W, 3), found {found}",
        "decode frames with vidmem.io (uint8 RGB) or use np.asarray(pil_image.convert('RGB'))",
    ),
    bad_array=(
        "{where}: image {i} must be uint8 with shape (H, W, 3) RGB, found dtype "
        "{dtype} shape {shape}",
        "convert with np.asarray(pil_image.convert('RGB')) or drop the alpha channel",
    ),
    empty="{where}: image {i} is empty (shape {shape})",
)

#: Judges: one image at a time, ``where`` already names it.
JUDGE_WORDING = ImageCheckWording(
    not_array=(
        "{where}: expected a numpy uint8 array of shape (H, W, 3), found {found}",
        "convert the frame with numpy.asarray(frame, dtype=numpy.uint8)",
    ),
    bad_array=(
        "{where}: expected a uint8 RGB array of shape (H, W, 3), found dtype "
        "{dtype} and shape {shape}",
        "pass RGB frames as uint8 (H, W, 3); drop alpha with frame[..., :3]",
    ),
    empty="{where}: the image is empty (shape {shape})",
)


def check_image(
    image: Any, *, where: str, wording: ImageCheckWording, i: int = 0
) -> np.ndarray:
    """Return ``image`` itself if it is a non-empty ``uint8 (H, W, 3)`` array.

    Raises:
        UserInputError: it is not, worded by ``wording`` (``i`` is its batch position).
    """
    if not isinstance(image, np.ndarray):
        message, hint = wording.not_array
        raise UserInputError(
            message.format(where=where, i=i, found=type(image).__name__), hint=hint
        )
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        message, hint = wording.bad_array
        raise UserInputError(
            message.format(where=where, i=i, dtype=image.dtype, shape=image.shape), hint=hint
        )
    if image.shape[0] < 1 or image.shape[1] < 1:
        raise UserInputError(wording.empty.format(where=where, i=i, shape=image.shape))
    return image


def check_images(
    images: Sequence[np.ndarray],
    *,
    where: str,
    contiguous: bool = True,
    wording: ImageCheckWording = EMBEDDER_WORDING,
) -> list[np.ndarray]:
    """Validate a batch of images against the protocol convention.

    Args:
        images: ``uint8`` arrays of shape ``(H, W, 3)``, RGB; sizes may differ.
        where: who is asking (the backend name), used in the message.
        contiguous: return C-contiguous arrays (a non-contiguous view is copied). With
            ``False`` the very same array objects come back, which
            :mod:`vidmem.models.backends.sam` relies on to share image embeddings.
        wording: the error messages (the embedders' by default).

    Returns:
        The images as a list.

    Raises:
        UserInputError: an item is not a ``uint8`` ``(H, W, 3)`` array with ``H, W >= 1``.

    Example:
        >>> imgs = check_images([np.zeros((4, 5, 3), np.uint8)], where="demo")
        >>> imgs[0].shape
        (4, 5, 3)
    """
    if isinstance(images, np.ndarray) and images.ndim == 3 and wording.single_array:
        message, hint = wording.single_array
        raise UserInputError(message.format(where=where, shape=images.shape), hint=hint)
    out: list[np.ndarray] = []
    for i, image in enumerate(images):
        check_image(image, where=where, wording=wording, i=i)
        out.append(np.ascontiguousarray(image) if contiguous else image)
    return out
