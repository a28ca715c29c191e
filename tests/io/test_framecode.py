"""Frame codes in vidmem.io.framecode: exact without compression, robust with H.264."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vidmem.errors import UserInputError, VideoError
from vidmem.io.framecode import (
    FrameCodeError,
    code_cell_size,
    decode_index,
    encode_index,
    iter_indexed_frames,
    make_indexed_clip,
)
from vidmem.io.video import read_frames, write_video


@pytest.mark.parametrize("value", [0, 1, 2, 255, 256, 4660, 32768, 43981, 65534, 65535])
@pytest.mark.parametrize("size", [(64, 32), (64, 48), (160, 96), (331, 200)])
def test_round_trip_without_compression(value: int, size: tuple[int, int]) -> None:
    rng = np.random.default_rng(value)
    frame = rng.integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8)
    coded = encode_index(frame, value)
    assert decode_index(coded) == value
    cell = code_cell_size(*size)
    # Only the code area changed, and the input was not modified.
    assert np.array_equal(coded[3 * cell :], frame[3 * cell :])
    assert np.array_equal(coded[:, 16 * cell :], frame[:, 16 * cell :])
    assert not np.array_equal(coded, frame)


def test_inplace() -> None:
    frame = np.zeros((48, 64, 3), np.uint8)
    out = encode_index(frame, 77, inplace=True)
    assert out is frame and decode_index(frame) == 77


def test_cell_size() -> None:
    assert [code_cell_size(w, h) for w, h in [(64, 32), (64, 48), (160, 96), (1920, 1080)]] == [
        4,
        4,
        10,
        16,
    ]
    with pytest.raises(UserInputError, match=r"frame of 63x48 \(WxH\) pixels is too small"):
        code_cell_size(63, 48)
    with pytest.raises(UserInputError, match=r"too small, expected at least 64x32"):
        encode_index(np.zeros((31, 64, 3), np.uint8), 1)


def test_unreadable_frames_raise() -> None:
    grey = np.full((48, 64, 3), 128, np.uint8)
    with pytest.raises(FrameCodeError, match=r"clip\.mp4 frame 3: frame code unreadable"):
        decode_index(grey, where="clip.mp4 frame 3")
    # A valid code with one data cell flipped is caught by its inverse cell.
    coded = encode_index(np.zeros((48, 64, 3), np.uint8), 5)
    coded[0:4, 60:64] = 255 - coded[0:4, 60:64]
    with pytest.raises(FrameCodeError, match=r"bit columns \[15\]"):
        decode_index(coded)
    # Flipping a bit *and* its inverse is caught by the CRC.
    coded[4:8, 60:64] = 255 - coded[4:8, 60:64]
    with pytest.raises(FrameCodeError, match=r"expected sync .* and CRC"):
        decode_index(coded)
    assert issubclass(FrameCodeError, VideoError)


@pytest.mark.parametrize(
    ("frame", "value", "message"),
    [
        (np.zeros((48, 64, 3), np.float32), 1, r"uint8 RGB array, found dtype float32"),
        (np.zeros((48, 64), np.uint8), 1, r"found dtype uint8 shape \(48, 64\)"),
        (np.zeros((48, 64, 3), np.uint8), 65536, r"value must be an int in \[0, 65535\]"),
        (np.zeros((48, 64, 3), np.uint8), -1, r"value must be an int"),
        (np.zeros((48, 64, 3), np.uint8), 2.0, r"value must be an int"),
    ],
)
def test_encode_rejects(frame: np.ndarray, value: object, message: str) -> None:
    with pytest.raises(UserInputError, match=message):
        encode_index(frame, value)  # type: ignore[arg-type]


def test_indexed_clip_is_deterministic_and_moving() -> None:
    a = make_indexed_clip(6, size=(96, 64), seed=5, start=100)
    b = make_indexed_clip(6, size=(96, 64), seed=5, start=100)
    assert a.shape == (6, 64, 96, 3) and a.dtype == np.uint8
    assert np.array_equal(a, b)
    assert [decode_index(f) for f in a] == list(range(100, 106))
    assert not np.array_equal(a[0, 30:], a[1, 30:])  # the background moves
    assert a[0, 30:].std() > 20  # and is textured, not flat
    assert make_indexed_clip(0, size=(64, 48)).shape == (0, 48, 64, 3)
    assert not np.array_equal(
        make_indexed_clip(1, (64, 48), seed=1), make_indexed_clip(1, (64, 48), seed=2)
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_frames": -1}, r"n_frames must be an int >= 0"),
        ({"n_frames": 2, "size": (64,)}, r"size must be \(width, height\) ints"),
        ({"n_frames": 2, "size": (32, 32)}, r"too small"),
        ({"n_frames": 10, "start": 65530}, r"values 65530\.\.65539 do not fit"),
    ],
)
def test_indexed_clip_rejects(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(UserInputError, match=message):
        list(iter_indexed_frames(**kwargs))  # type: ignore[arg-type]


@pytest.mark.parametrize("crf", [18, 23, 28])
@pytest.mark.parametrize("size", [(64, 48), (160, 96)])
def test_codes_survive_h264(tmp_path: Path, crf: int, size: tuple[int, int]) -> None:
    path = tmp_path / "c.mp4"
    write_video(path, iter_indexed_frames(24, size, seed=crf), 24, crf=crf, gop=8)
    frames = read_frames(path, range(24))
    assert [decode_index(f, where=f"{path} frame {i}") for i, f in enumerate(frames)] == list(
        range(24)
    )
