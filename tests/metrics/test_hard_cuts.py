"""Hard-cut detector on synthetic clips written to disk and read back."""

from __future__ import annotations

import numpy as np
import pytest

from vidmem.io.video import read_frames, write_video
from vidmem.metrics.hard_cuts import frame_pair_mad, grey, hard_cuts


def _gradient(n, h=48, w=64, shift=1, base=60):
    x = np.arange(w)[None, :, None]
    y = np.arange(h)[:, None, None]
    frames = []
    for k in range(n):
        img = (base + 0.8 * ((x + shift * k) % w) + 0.3 * y) * np.ones((1, 1, 3))
        frames.append(np.clip(img, 0, 255).astype(np.uint8))
    return np.stack(frames)


def _roundtrip(tmp_path, frames, name):
    path = tmp_path / name
    write_video(path, list(frames), 24)
    return read_frames(path, list(range(len(frames))))


def test_clip_without_cut(tmp_path):
    frames = _roundtrip(tmp_path, _gradient(24), "smooth.mp4")
    mad = frame_pair_mad(frames)
    assert mad.shape == (23,) and mad.max() < 22
    assert hard_cuts(frames) == []


def test_clip_with_one_cut(tmp_path):
    a = _gradient(12, base=20)
    b = 255 - _gradient(12, base=20)
    frames = _roundtrip(tmp_path, np.concatenate([a, b]), "cut.mp4")
    assert hard_cuts(frames) == [12]
    assert hard_cuts(iter(frames)) == [12]          # streamed frames give the same answer
    mad = frame_pair_mad(frames)
    assert mad[11] >= 22 and np.delete(mad, 11).max() < 22


def test_threshold_is_inclusive_and_bt601():
    f = np.zeros((2, 4, 4), np.float64)
    f[1] = 22.0
    assert hard_cuts(f) == [1]
    g = np.zeros((2, 4, 4), np.float64)
    g[1] = 21.999
    assert hard_cuts(g) == []
    rgb = np.zeros((1, 1, 3))
    rgb[0, 0] = (10, 20, 30)
    assert grey(rgb)[0, 0] == pytest.approx(0.299 * 10 + 0.587 * 20 + 0.114 * 30)


def test_bad_shapes():
    with pytest.raises(ValueError):
        frame_pair_mad([np.zeros((4, 4, 3)), np.zeros((4, 5, 3))])
    with pytest.raises(ValueError):
        grey(np.zeros((4, 4, 4)))
    assert hard_cuts([np.zeros((4, 4, 3))]) == []
