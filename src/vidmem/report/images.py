"""Small image helpers for reports: thumbnails, PNG bytes, data URLs, side-by-side panels.

Images are ``uint8`` arrays of shape ``(H, W, 3)`` in RGB order, as decoded by
``vidmem.io``; PIL images are accepted wherever an array is.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from vidmem.errors import UserInputError

__all__ = ["as_rgb", "data_url", "png_bytes", "side_by_side", "thumbnail"]

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def as_rgb(image: Any, *, where: str = "image") -> np.ndarray:
    """Return an image as a contiguous ``uint8`` array of shape ``(H, W, 3)``.

    Args:
        image: a ``uint8`` array of shape ``(H, W)``, ``(H, W, 1)``, ``(H, W, 3)`` or
            ``(H, W, 4)`` (alpha is dropped), or a PIL image of any mode.
        where: names the image in error messages.

    Returns:
        ``uint8`` array ``(H, W, 3)``; the input itself when it already has that form.

    Raises:
        UserInputError: wrong dtype, shape, or an empty image.

    Example:
        >>> as_rgb(np.zeros((2, 3), dtype=np.uint8)).shape
        (2, 3, 3)
    """
    if isinstance(image, Image.Image):
        image = np.asarray(image.convert("RGB"))
    if not isinstance(image, np.ndarray):
        raise UserInputError(
            f"{where}: expected a uint8 array (H, W, 3) or a PIL image, found "
            f"{type(image).__name__}"
        )
    if image.dtype != np.uint8:
        raise UserInputError(
            f"{where}: expected dtype uint8, found {image.dtype}",
            hint="for floats in [0, 1] use (np.clip(x, 0, 1) * 255).round().astype(np.uint8)",
        )
    if image.ndim == 2:
        image = np.repeat(image[:, :, None], 3, axis=2)
    elif image.ndim == 3 and image.shape[2] == 1:
        image = np.repeat(image, 3, axis=2)
    elif image.ndim == 3 and image.shape[2] == 4:
        image = image[:, :, :3]
    elif not (image.ndim == 3 and image.shape[2] == 3):
        raise UserInputError(
            f"{where}: expected shape (H, W, 3), found {image.shape}",
            hint="pass one frame, not a (T, H, W, 3) clip; index it with clip[t]",
        )
    if image.shape[0] == 0 or image.shape[1] == 0:
        raise UserInputError(f"{where}: the image is empty (shape {image.shape})")
    return np.ascontiguousarray(image)


def thumbnail(image: Any, max_side: int) -> np.ndarray:
    """Shrink an image so that its longest side is at most ``max_side`` pixels.

    The aspect ratio is kept (each side rounded, at least 1 pixel) and images that
    already fit are returned unchanged, never enlarged. Resampling is Lanczos.

    Args:
        image: ``uint8`` array ``(H, W, 3)`` or a PIL image (see :func:`as_rgb`).
        max_side: the largest allowed height or width, in pixels (>= 1).

    Returns:
        ``uint8`` array ``(h, w, 3)`` with ``max(h, w) <= max_side``.

    Raises:
        UserInputError: bad image or ``max_side < 1``.

    Example:
        >>> thumbnail(np.zeros((300, 400, 3), dtype=np.uint8), 200).shape
        (150, 200, 3)
        >>> thumbnail(np.zeros((30, 40, 3), dtype=np.uint8), 200).shape
        (30, 40, 3)
    """
    if int(max_side) < 1:
        raise UserInputError(f"thumbnail: max_side must be >= 1, found {max_side}")
    rgb = as_rgb(image, where="thumbnail")
    h, w = rgb.shape[:2]
    longest = max(h, w)
    if longest <= max_side:
        return rgb
    scale = max_side / longest
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    return np.asarray(Image.fromarray(rgb).resize(size, Image.Resampling.LANCZOS))


def png_bytes(image: Any) -> bytes:
    """Encode an image as PNG.

    Args:
        image: ``uint8`` array ``(H, W, 3)`` or a PIL image (see :func:`as_rgb`).

    Returns:
        The bytes of a PNG file (RGB, 8 bits per channel).

    Example:
        >>> png_bytes(np.zeros((4, 4, 3), dtype=np.uint8))[:4]
        b'\\x89PNG'
    """
    buf = io.BytesIO()
    Image.fromarray(as_rgb(image, where="png_bytes")).save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def data_url(png: bytes) -> str:
    """Wrap PNG bytes in a ``data:`` URL for embedding in HTML.

    Args:
        png: the bytes of a PNG file, e.g. from :func:`png_bytes`.

    Returns:
        ``"data:image/png;base64,..."``.

    Raises:
        UserInputError: the bytes are not a PNG file.

    Example:
        >>> data_url(png_bytes(np.zeros((1, 1, 3), dtype=np.uint8)))[:22]
        'data:image/png;base64,'
    """
    if not isinstance(png, bytes | bytearray) or not bytes(png).startswith(_PNG_SIGNATURE):
        raise UserInputError(
            "data_url: expected the bytes of a PNG file, found "
            + (
                f"bytes starting {bytes(png[:8])!r}"
                if isinstance(png, bytes | bytearray)
                else type(png).__name__
            ),
            hint="encode arrays first with png_bytes(image)",
        )
    return "data:image/png;base64," + base64.b64encode(bytes(png)).decode("ascii")


def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1 has only the fixed bitmap font
        return ImageFont.load_default()


def _fit_text(draw: ImageDraw.ImageDraw, text: str, font: Any, width: int) -> str:
    """Shorten ``text`` with an ellipsis until it fits in ``width`` pixels."""
    if draw.textlength(text, font=font) <= width:
        return text
    while text and draw.textlength(text + "…", font=font) > width:
        text = text[:-1]
    return text + "…" if text else ""


def side_by_side(
    images: Sequence[Any],
    captions: Sequence[str] | None = None,
    *,
    height: int = 160,
    gap: int = 8,
    font_size: int = 13,
) -> np.ndarray:
    """Put images next to each other at one height, with a caption under each.

    Made for "reference crop | best generated crop" panels: crops of different sizes
    are scaled (up or down, aspect kept) to ``height`` pixels and laid out left to
    right on white, separated by ``gap`` pixels, with captions drawn in dark grey and
    shortened with an ellipsis when wider than their image.

    Args:
        images: one or more ``uint8`` arrays ``(H, W, 3)`` or PIL images.
        captions: one caption per image, or ``None`` for no caption strip.
        height: height of every image in the panel, in pixels.
        gap: white space between and around the images, in pixels.
        font_size: caption size in pixels.

    Returns:
        ``uint8`` array ``(height + 2 * gap [+ caption strip], W, 3)``.

    Raises:
        UserInputError: no images, a bad image, or a caption count that does not match.

    Example:
        >>> a = np.zeros((20, 10, 3), dtype=np.uint8); b = np.zeros((40, 40, 3), dtype=np.uint8)
        >>> side_by_side([a, b], height=40, gap=4).shape
        (48, 72, 3)
    """
    if len(images) == 0:
        raise UserInputError("side_by_side: expected at least one image, found none")
    if captions is not None and len(captions) != len(images):
        raise UserInputError(
            f"side_by_side: expected one caption per image ({len(images)}), found {len(captions)}",
            hint="pass captions=None to leave them out",
        )
    if int(height) < 1 or int(gap) < 0:
        raise UserInputError(
            f"side_by_side: expected height >= 1 and gap >= 0, found height={height}, gap={gap}"
        )
    scaled = []
    for i, image in enumerate(images):
        rgb = as_rgb(image, where=f"side_by_side, image {i}")
        h, w = rgb.shape[:2]
        new_w = max(1, round(w * height / h))
        if (new_w, height) != (w, h):
            rgb = np.asarray(Image.fromarray(rgb).resize((new_w, height), Image.Resampling.LANCZOS))
        scaled.append(rgb)

    font = _font(font_size)
    strip = 0 if captions is None else font_size + gap + 4
    width = sum(im.shape[1] for im in scaled) + gap * (len(scaled) + 1)
    canvas = Image.new("RGB", (width, height + 2 * gap + strip), (255, 255, 255))
    draw = ImageDraw.Draw(canvas)
    x = gap
    for i, im in enumerate(scaled):
        canvas.paste(Image.fromarray(im), (x, gap))
        if captions is not None:
            text = _fit_text(draw, str(captions[i]), font, im.shape[1])
            draw.text((x, height + gap + 4), text, fill=(60, 60, 60), font=font)
        x += im.shape[1] + gap
    return np.asarray(canvas)
