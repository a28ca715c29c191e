"""Write an integer into a frame's pixels and read it back after lossy compression.

Used to check that a decoder returned *exactly* the frame that was asked for: frame
``k`` of a test clip carries ``k`` in its pixels, so ``decode_index(read_frames(p,
[k])[0]) == k`` proves the seek was exact.

Layout. A grid of 16 x 3 square cells in the top-left corner; each cell is pure black
(bit 0) or pure white (bit 1). Cell side ``c = min(16, W // 16, H // 8)`` pixels (at
least 4), so the code covers ``16c x 3c`` pixels:

* row 0: the 16 bits of the value, most significant first;
* row 1: the same bits inverted (every bit is read as a black/white *pair*, so a cell
  that compression pushed towards grey is detected, not guessed);
* row 2: the 8-bit sync pattern ``10110010`` then a CRC-8 (polynomial 0x07) of the
  value's two bytes.

Reading averages the inner half of each cell (ignoring edges, where compression rings)
and thresholds at mid-grey. Big flat blocks survive H.264 at crf 18-28 even at 4-pixel
cells; a frame without a code, or a damaged one, fails the pair, sync or CRC checks
and raises :class:`FrameCodeError` instead of returning a wrong number.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from PIL import Image

from vidmem.errors import UserInputError, VideoError

__all__ = [
    "FrameCodeError",
    "code_cell_size",
    "decode_index",
    "encode_index",
    "iter_indexed_frames",
    "make_indexed_clip",
]

COLS = 16
ROWS = 3
MAX_VALUE = (1 << 16) - 1
SYNC_BITS = (1, 0, 1, 1, 0, 0, 1, 0)
_MIN_CELL = 4
_MAX_CELL = 16
_PAIR_MARGIN = 64.0  # minimum grey-level gap between a bit and its inverse


class FrameCodeError(VideoError):
    """A frame whose embedded index cannot be read with confidence."""


def _crc8(value: int) -> int:
    """CRC-8 (poly 0x07, init 0) of the big-endian bytes of a 16-bit value.

    Example:
        >>> _crc8(0), _crc8(1), _crc8(0x0102)
        (0, 7, 27)
    """
    crc = 0
    for byte in ((value >> 8) & 0xFF, value & 0xFF):
        crc ^= byte
        for _ in range(8):
            crc = ((crc << 1) ^ 0x07) & 0xFF if crc & 0x80 else (crc << 1) & 0xFF
    return crc


def code_cell_size(width: int, height: int) -> int:
    """Side in pixels of one code cell for a ``width x height`` frame.

    Args:
        width: frame width in pixels.
        height: frame height in pixels.

    Returns:
        ``min(16, width // 16, height // 8)``.

    Raises:
        UserInputError: the frame is smaller than 64 x 32 pixels (cells under 4 px).

    Example:
        >>> code_cell_size(64, 48), code_cell_size(160, 96), code_cell_size(854, 480)
        (4, 10, 16)
    """
    cell = min(_MAX_CELL, width // COLS, height // 8)
    if cell < _MIN_CELL:
        raise UserInputError(
            f"frame code: frame of {width}x{height} (WxH) pixels is too small, expected at "
            f"least {COLS * _MIN_CELL}x{8 * _MIN_CELL}",
            hint="use frames of at least 64x32 pixels for indexed clips",
        )
    return cell


def _bits(value: int) -> np.ndarray:
    """The 3 x 16 grid of bits for ``value`` (uint8 0/1)."""
    data = np.array([(value >> (15 - k)) & 1 for k in range(16)], dtype=np.uint8)
    crc = _crc8(value)
    tail = np.array([*SYNC_BITS, *((crc >> (7 - k)) & 1 for k in range(8))], dtype=np.uint8)
    return np.stack([data, 1 - data, tail])


def _check_frame(frame: object, what: str) -> np.ndarray:
    if (
        not isinstance(frame, np.ndarray)
        or frame.dtype != np.uint8
        or frame.ndim != 3
        or frame.shape[2] != 3
    ):
        found = (
            f"dtype {frame.dtype} shape {frame.shape}"
            if isinstance(frame, np.ndarray)
            else type(frame).__name__
        )
        raise UserInputError(
            f"frame code: {what} must be an (H, W, 3) uint8 RGB array, found {found}",
            hint="pass a decoded frame, e.g. read_frames(path, [i])[0]",
        )
    return frame


def encode_index(frame: np.ndarray, value: int, *, inplace: bool = False) -> np.ndarray:
    """Paint ``value`` into the top-left corner of ``frame``.

    Args:
        frame: ``(H, W, 3)`` uint8 RGB, at least 64 x 32 pixels.
        value: integer in ``[0, 65535]``.
        inplace: write into ``frame`` instead of a copy.

    Returns:
        The frame with the code, ``(H, W, 3)`` uint8.

    Raises:
        UserInputError: bad frame or value out of range.

    Example:
        >>> f = encode_index(np.zeros((48, 64, 3), np.uint8), 1234)
        >>> decode_index(f)
        1234
    """
    frame = _check_frame(frame, "frame to encode")
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer))
        or not (0 <= value <= MAX_VALUE)
    ):
        raise UserInputError(
            f"frame code: value must be an int in [0, {MAX_VALUE}], found {value!r}",
            hint="the code holds 16 bits; take the index modulo 65536 for longer clips",
        )
    h, w = frame.shape[:2]
    cell = code_cell_size(w, h)
    out = frame if inplace else frame.copy()
    grid = _bits(int(value)) * np.uint8(255)
    block = np.repeat(np.repeat(grid, cell, axis=0), cell, axis=1)
    out[: ROWS * cell, : COLS * cell, :] = block[:, :, None]
    return out


def decode_index(frame: np.ndarray, *, where: str = "frame") -> int:
    """Read back the integer written by :func:`encode_index`.

    Args:
        frame: ``(H, W, 3)`` uint8 RGB, e.g. a decoded video frame.
        where: how to name the frame in error messages (e.g. ``"clip.mp4 frame 12"``).

    Returns:
        The value in ``[0, 65535]``.

    Raises:
        UserInputError: ``frame`` is not an ``(H, W, 3)`` uint8 array or is too small.
        FrameCodeError: no readable code (a cell too grey, wrong sync or CRC).

    Example:
        >>> decode_index(np.zeros((48, 64, 3), np.uint8))
        Traceback (most recent call last):
        ...
        vidmem.io.framecode.FrameCodeError: frame: ...
    """
    frame = _check_frame(frame, where)
    h, w = frame.shape[:2]
    cell = code_cell_size(w, h)
    m = max(1, cell // 4)
    region = frame[: ROWS * cell, : COLS * cell, :].astype(np.float32).mean(axis=2)
    cells = region.reshape(ROWS, cell, COLS, cell)[:, m : cell - m, :, m : cell - m]
    means = cells.mean(axis=(1, 3))  # (ROWS, COLS) grey levels
    bits = (means > 127.5).astype(np.uint8)
    gaps = np.abs(means[0] - means[1])
    weak = [int(k) for k in np.flatnonzero((bits[0] == bits[1]) | (gaps < _PAIR_MARGIN))]
    if weak:
        raise FrameCodeError(
            f"{where}: frame code unreadable: expected each data cell and its inverse to "
            f"differ by >= {_PAIR_MARGIN:.0f} grey levels, found bit columns {weak} with "
            f"levels {[(round(float(means[0, k])), round(float(means[1, k]))) for k in weak]}",
            hint="the frame carries no code (it was not made by encode_index) or it was "
            "compressed too hard; use crf <= 28 and frames of at least 64x32",
        )
    value = int("".join(str(int(b)) for b in bits[0]), 2)
    sync = tuple(int(b) for b in bits[2, :8])
    crc = int("".join(str(int(b)) for b in bits[2, 8:]), 2)
    if sync != SYNC_BITS or crc != _crc8(value):
        raise FrameCodeError(
            f"{where}: frame code unreadable: expected sync {SYNC_BITS} and CRC "
            f"{_crc8(value)} for value {value}, found sync {sync} and CRC {crc}",
            hint="the frame carries no code or the code area was damaged",
        )
    return value


def _texture(width: int, height: int, rng: np.random.Generator) -> np.ndarray:
    """A textured background, ``(H, W, 3)`` uint8.

    Like natural footage, colour varies slowly (a coarse random colour field) while
    brightness carries the detail (a finer grey pattern plus per-pixel grain).
    """

    def smooth(cells_w: int, cells_h: int, channels: int) -> np.ndarray:
        low = rng.integers(0, 256, size=(max(2, cells_h), max(2, cells_w), channels))
        img = Image.fromarray(low.astype(np.uint8).squeeze(), "RGB" if channels == 3 else "L")
        big = np.asarray(img.resize((width, height), Image.Resampling.BICUBIC), np.float32)
        return big.reshape(height, width, channels)

    colour = smooth(width // 40 + 2, height // 40 + 2, 3)
    detail = smooth(width // 8 + 2, height // 8 + 2, 1)
    grain = rng.integers(-6, 7, size=(height, width, 1)).astype(np.float32)
    return np.clip(0.55 * colour + 0.45 * detail + grain, 0, 255).astype(np.uint8)


def iter_indexed_frames(
    n_frames: int, size: tuple[int, int] = (160, 96), seed: int = 0, *, start: int = 0
) -> Iterator[np.ndarray]:
    """Yield frames with a moving textured background and their index in a frame code.

    Frame ``k`` (``0 <= k < n_frames``) carries the value ``start + k``. The background
    is a random smooth texture with grain that scrolls by (1.5, 0.75) px per frame,
    plus a bright square bouncing across the frame, so that an encoder has real motion
    and detail to compress. Memory stays bounded: one frame at a time.

    Args:
        n_frames: number of frames, ``>= 0``.
        size: ``(width, height)`` in pixels, at least ``(64, 32)``.
        seed: random seed of the texture (same seed, same frames).
        start: value carried by the first frame; ``start + n_frames - 1 <= 65535``.

    Yields:
        ``(H, W, 3)`` uint8 RGB frames.

    Raises:
        UserInputError: bad sizes or counts.
    """
    if isinstance(n_frames, bool) or not isinstance(n_frames, (int, np.integer)) or n_frames < 0:
        raise UserInputError(
            f"indexed clip: n_frames must be an int >= 0, found {n_frames!r}",
            hint="pass e.g. n_frames=30",
        )
    if (
        not isinstance(size, (tuple, list))
        or len(size) != 2
        or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in size)
    ):
        raise UserInputError(
            f"indexed clip: size must be (width, height) ints, found {size!r}",
            hint="pass e.g. size=(160, 96)",
        )
    width, height = int(size[0]), int(size[1])
    code_cell_size(width, height)
    if (
        isinstance(start, bool)
        or not isinstance(start, (int, np.integer))
        or start < 0
        or (start + n_frames - 1 > MAX_VALUE)
    ):
        raise UserInputError(
            f"indexed clip: values {start}..{start + n_frames - 1} do not fit the 16-bit "
            f"code (max {MAX_VALUE})",
            hint="use fewer frames or a smaller start",
        )
    rng = np.random.default_rng(seed)
    texture = _texture(width, height, rng)
    colour = rng.integers(150, 256, size=3).astype(np.uint8)
    side = max(4, min(width, height) // 4)
    for k in range(int(n_frames)):
        frame = np.roll(texture, (int(k * 0.75), int(k * 1.5)), axis=(0, 1))
        # Square bouncing between the walls (triangle wave in x and y).
        span_x, span_y = max(1, width - side), max(1, height - side)
        px = abs((3 * k) % (2 * span_x) - span_x)
        py = abs((2 * k) % (2 * span_y) - span_y)
        frame[py : py + side, px : px + side] = colour
        encode_index(frame, int(start) + k, inplace=True)
        yield frame


def make_indexed_clip(
    n_frames: int, size: tuple[int, int] = (160, 96), seed: int = 0, *, start: int = 0
) -> np.ndarray:
    """All frames of :func:`iter_indexed_frames` stacked into one array.

    Holds the whole clip in memory (``n_frames * H * W * 3`` bytes); for long clips
    pass :func:`iter_indexed_frames` straight to ``write_video`` instead.

    Args:
        n_frames: number of frames, ``>= 0``.
        size: ``(width, height)`` in pixels, at least ``(64, 32)``.
        seed: random seed of the texture.
        start: value carried by the first frame.

    Returns:
        ``(n_frames, H, W, 3)`` uint8 RGB; frame ``k`` decodes to ``start + k``.

    Example:
        >>> clip = make_indexed_clip(3, size=(64, 48), seed=1)
        >>> clip.shape, clip.dtype
        ((3, 48, 64, 3), dtype('uint8'))
        >>> [decode_index(f) for f in clip]
        [0, 1, 2]
    """
    frames = list(iter_indexed_frames(n_frames, size, seed, start=start))
    width, height = int(size[0]), int(size[1])
    if not frames:
        return np.empty((0, height, width, 3), dtype=np.uint8)
    return np.stack(frames)
