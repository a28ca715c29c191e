"""Exact frame access, probing and encoding in vidmem.io.video.

Every clip carries its frame index in its pixels (vidmem.io.framecode), so each read is
checked for *exactly* the frame that was asked for, not just a plausible one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from vidmem.errors import UserInputError, VideoError
from vidmem.io import video as V
from vidmem.io.framecode import decode_index, iter_indexed_frames, make_indexed_clip

SIZE = (64, 48)  # (W, H): small frames keep the suite fast
N = 48
FPS = 24
GOP = 12


def codes(frames: np.ndarray) -> list[int]:
    return [decode_index(f) for f in frames]


def write_with_pts(
    path: Path,
    pts: list[int],
    time_base: Fraction,
    *,
    size: tuple[int, int] = SIZE,
    container_options: dict[str, str] | None = None,
    gop: int | None = None,
) -> None:
    """Write frame k (carrying code k) at PTS ``pts[k]`` in ``time_base`` units."""
    container = av.open(str(path), "w", options=container_options or {})
    stream = container.add_stream("libx264", rate=30)
    stream.width, stream.height = size
    stream.pix_fmt = "yuv420p"
    stream.codec_context.time_base = time_base
    options = {"crf": "20"}
    if gop:
        options["x264-params"] = f"keyint={gop}:min-keyint={gop}:scenecut=0"
    stream.options = options
    for p, frame in zip(pts, iter_indexed_frames(len(pts), size, seed=4), strict=True):
        vf = av.VideoFrame.from_ndarray(frame, format="rgb24")
        vf.pts = p
        vf.time_base = time_base
        for packet in stream.encode(vf):
            container.mux(packet)
    for packet in stream.encode(None):
        container.mux(packet)
    container.close()


@dataclass(frozen=True)
class Clips:
    gop: Path  # N frames at FPS, keyframe every GOP frames
    vfr: Path  # variable frame rate, PTS in milliseconds
    vfr_pts: list[int]
    offset: Path  # 30 frames at 30 fps whose first PTS is 0.5 s


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> Clips:
    d = tmp_path_factory.mktemp("clips")
    V.write_video(d / "gop12.mp4", iter_indexed_frames(N, SIZE, seed=1), FPS, crf=23, gop=GOP)
    gaps = [7, 33, 100, 20, 50, 33, 33, 7, 7, 66, 200, 13, 40, 33, 21, 90, 33, 33, 10, 60]
    vfr_pts = [0, *np.cumsum(gaps).tolist()]
    write_with_pts(d / "vfr.mp4", vfr_pts, Fraction(1, 1000), gop=8)
    write_with_pts(d / "offset.mp4", list(range(15, 15 + 30)), Fraction(1, 30), gop=10)
    return Clips(d / "gop12.mp4", d / "vfr.mp4", vfr_pts, d / "offset.mp4")


# --------------------------------------------------------------------------- probe


def test_probe_reports_the_frame_table(clips: Clips) -> None:
    info = V.probe(clips.gop)
    assert (info.n_frames, info.width, info.height, info.codec) == (N, 64, 48, "h264")
    assert info.fps == pytest.approx(FPS)
    assert info.duration_seconds == pytest.approx(N / FPS)
    assert info.keyframe_indices == (0, 12, 24, 36)
    assert info.first_pts_seconds == 0.0
    assert not info.is_vfr and not info.is_truncated
    assert np.allclose(info.frame_times, np.arange(N) / FPS, atol=1e-9)
    assert len(info.frame_pts) == N and list(info.frame_pts) == sorted(info.frame_pts)


def test_probe_is_cached_until_the_file_changes(tmp_path: Path) -> None:
    path = tmp_path / "c.mp4"
    V.write_video(path, make_indexed_clip(4, SIZE), 10)
    first = V.probe(path)
    assert V.probe(str(path)) is first
    V.write_video(path, make_indexed_clip(6, SIZE), 10)
    os.utime(path, ns=(1, 1))  # make sure the mtime differs even on coarse clocks
    assert V.probe(path).n_frames == 6


# --------------------------------------------------------------------------- exact reads


def test_read_every_frame_in_order(clips: Clips) -> None:
    frames = V.read_frames(clips.gop, range(N))
    assert frames.shape == (N, 48, 64, 3) and frames.dtype == np.uint8
    assert codes(frames) == list(range(N))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_read_random_indices_with_duplicates(clips: Clips, seed: int) -> None:
    rng = np.random.default_rng(seed)
    indices = rng.integers(0, N, size=15).tolist() + [3, 3, N - 1, 0]
    rng.shuffle(indices)
    assert codes(V.read_frames(clips.gop, indices)) == indices


def test_read_reversed_and_numpy_indices(clips: Clips) -> None:
    indices = np.arange(N)[::-3]
    assert codes(V.read_frames(clips.gop, indices)) == indices.tolist()
    assert V.read_frames(clips.gop, []).shape == (0, 48, 64, 3)


def test_read_frames_decodes_only_the_needed_gops(clips: Clips) -> None:
    stats = V.DecodeStats()
    frames = V.read_frames(clips.gop, [5, 30], stats=stats)
    assert codes(frames) == [5, 30]
    assert stats.seeks == 2
    # From keyframe 0 to 5 and from keyframe 24 to 30, plus the decoder's reorder delay.
    assert stats.frames_decoded <= 20 < N

    stats.reset()
    assert codes(V.read_frames(clips.gop, [13, 15, 22], stats=stats)) == [13, 15, 22]
    assert stats.seeks == 1  # one GOP: the running decoder is reused
    assert stats.frames_decoded <= 16


def test_read_frames_at_maps_time_to_the_frame_on_screen(clips: Clips) -> None:
    info = V.probe(clips.gop)
    k = np.arange(N)
    exact = (k / FPS).tolist()  # float error in k / fps must not fall back a frame
    between = ((k + 0.5) / FPS).tolist()
    just_before = ((k + 1) / FPS - 1e-4).tolist()
    times = [*exact, *between, *just_before, 0.0, info.frame_times[-1]]
    expected = [*k, *k, *k, 0, N - 1]
    assert codes(V.read_frames_at(clips.gop, times)) == expected
    assert [V.index_at_time(info, t) for t in times] == expected
    assert V.index_at_time(info, info.duration_seconds - 1e-9) == N - 1


@pytest.mark.parametrize("t", [-0.01, N / FPS, 100.0, float("nan"), float("inf")])
def test_read_frames_at_rejects_times_outside_the_video(clips: Clips, t: float) -> None:
    with pytest.raises(UserInputError, match=r"outside the video; valid times are 0 <= t < 2\.0"):
        V.read_frames_at(clips.gop, [0.5, t])


@pytest.mark.parametrize(
    ("indices", "message"),
    [
        ([0, N], rf"position 1 is {N}, expected 0 <= index < {N}"),
        ([-1], r"position 0 is -1, expected 0 <= index"),
        ([1.0], r"position 0 must be an int, found float"),
        ([True], r"position 0 must be an int, found bool"),
        (np.zeros((2, 2), int), r"1-D integer array"),
        (5, r"sequence of ints, found int"),
    ],
)
def test_read_frames_rejects_bad_indices(clips: Clips, indices: object, message: str) -> None:
    with pytest.raises(UserInputError, match=message):
        V.read_frames(clips.gop, indices)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- streaming


def test_iter_frames_streams_exact_frames(clips: Clips) -> None:
    got = [(i, decode_index(f)) for i, f in V.iter_frames(clips.gop)]
    assert got == [(i, i) for i in range(N)]
    got = [(i, decode_index(f)) for i, f in V.iter_frames(clips.gop, start=5, stop=40, stride=7)]
    assert got == [(i, i) for i in range(5, 40, 7)]
    assert list(V.iter_frames(clips.gop, start=N)) == []
    assert [i for i, _ in V.iter_frames(clips.gop, start=45, stop=10_000)] == [45, 46, 47]


def test_iter_frames_batches(clips: Clips) -> None:
    batches = list(V.iter_frames(clips.gop, start=2, stride=3, batch_size=4))
    flat = [i for idx, _ in batches for i in idx]
    assert flat == list(range(2, N, 3))
    assert [b.shape for _, b in batches] == [(4, 48, 64, 3)] * 4
    for idx, batch in batches:
        assert codes(batch) == idx


def test_iter_frames_seeks_over_long_strides(clips: Clips) -> None:
    stats = V.DecodeStats()
    got = [i for i, f in V.iter_frames(clips.gop, stride=24, stats=stats) if decode_index(f) == i]
    assert got == [0, 24]
    assert stats.frames_decoded < 10


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"start": -1}, "start must be an int >= 0"),
        ({"stride": 0}, "stride must be an int >= 1"),
        ({"stop": 2.5}, "stop must be None or an int"),
        ({"batch_size": 0}, "batch_size must be None or an int >= 1"),
        ({"start": N + 1}, rf"start is {N + 1}, expected"),
    ],
)
def test_iter_frames_rejects_bad_arguments(
    clips: Clips, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(UserInputError, match=message):
        V.iter_frames(clips.gop, **kwargs)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- timing quirks


def test_variable_frame_rate_index_and_time_lookup_are_exact(clips: Clips) -> None:
    pts_ms = clips.vfr_pts
    n = len(pts_ms)
    info = V.probe(clips.vfr)
    assert info.is_vfr and info.n_frames == n
    assert np.allclose(info.frame_times, np.asarray(pts_ms) / 1000, atol=1e-9)
    order = list(range(n))[::-1] + [7, 8, 7]
    assert codes(V.read_frames(clips.vfr, order)) == order
    times = [p / 1000 for p in pts_ms]
    mids = [(a + b) / 2000 for a, b in zip(pts_ms, pts_ms[1:], strict=False)]
    before = [p / 1000 - 1e-4 for p in pts_ms[1:]]
    expected = [*range(n), *range(n - 1), *range(n - 1)]
    assert codes(V.read_frames_at(clips.vfr, [*times, *mids, *before])) == expected


def test_first_pts_not_zero(clips: Clips) -> None:
    info = V.probe(clips.offset)
    assert info.first_pts_seconds == pytest.approx(0.5)
    assert info.frame_times[0] == 0.0
    assert info.frame_times[-1] == pytest.approx(29 / 30)
    assert codes(V.read_frames(clips.offset, [29, 0, 10, 9])) == [29, 0, 10, 9]
    assert codes(V.read_frames_at(clips.offset, [0.0, 0.5, 29 / 30])) == [0, 15, 29]


# --------------------------------------------------------------------------- broken inputs


def test_missing_file_and_folder(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match=r"nope\.mp4: video file not found"):
        V.probe(tmp_path / "nope.mp4")
    with pytest.raises(UserInputError, match="expected a video file, found a directory"):
        V.read_frames(tmp_path, [0])


def test_text_file_named_mp4(tmp_path: Path) -> None:
    path = tmp_path / "notes.mp4"
    path.write_text("these are not the frames you are looking for\n")
    with pytest.raises(VideoError, match=r"notes\.mp4: cannot be opened as a video container"):
        V.probe(path)


def test_audio_only_file(tmp_path: Path) -> None:
    path = tmp_path / "audio.mp4"
    container = av.open(str(path), "w")
    stream = container.add_stream("aac", rate=16000, layout="mono")
    for k in range(8):
        frame = av.AudioFrame.from_ndarray(
            np.zeros((1, 1024), np.float32), format="fltp", layout="mono"
        )
        frame.sample_rate = 16000
        frame.pts = k * 1024
        for packet in stream.encode(frame):
            container.mux(packet)
    for packet in stream.encode(None):
        container.mux(packet)
    container.close()
    with pytest.raises(VideoError, match=r"audio\.mp4: expected a video stream, found #0 audio"):
        V.read_frames(path, [0])


def test_truncated_file_with_index_at_the_end(clips: Clips, tmp_path: Path) -> None:
    data = clips.gop.read_bytes()
    path = tmp_path / "cut.mp4"
    path.write_bytes(data[: len(data) // 2])  # the 'moov' index is at the end: gone
    with pytest.raises(VideoError, match=r"cut\.mp4: cannot be opened") as err:
        V.probe(path)
    assert "moov" in str(err.value)


def test_truncated_file_with_index_at_the_start(tmp_path: Path) -> None:
    full = tmp_path / "fast.mp4"
    write_with_pts(
        full, list(range(N)), Fraction(1, FPS), container_options={"movflags": "faststart"}, gop=GOP
    )
    data = full.read_bytes()
    path = tmp_path / "cut.mp4"
    path.write_bytes(data[: int(len(data) * 0.6)])
    info = V.probe(path)
    assert info.is_truncated and info.declared_frames == N and 0 < info.n_frames < N
    assert codes(V.read_frames(path, [0, 5])) == [0, 5]
    with pytest.raises(
        VideoError, match=rf"frame index at position 0 is {N - 1}, but the file is truncated"
    ):
        V.read_frames(path, [N - 1])
    # The last packet present is cut mid-way: its frame cannot be decoded, and the
    # error names it.
    last = info.n_frames - 1
    with pytest.raises(VideoError, match=rf"cut\.mp4: frame {last} .*truncated"):
        V.read_frames(path, [last])


# --------------------------------------------------------------------------- writing


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float(10 * np.log10(255.0**2 / mse))


def test_write_video_round_trip(tmp_path: Path) -> None:
    clip = make_indexed_clip(24, size=(160, 96), seed=2)
    path = tmp_path / "rt.mp4"
    assert V.write_video(path, iter(clip), 24, crf=18) == 24
    back = V.read_frames(path, range(24))
    assert codes(back) == list(range(24))
    assert psnr(back, clip) > 35.0
    assert [p.name for p in tmp_path.iterdir()] == ["rt.mp4"]  # no partial file left


@pytest.mark.parametrize(
    ("fps", "expected"), [(Fraction(30000, 1001), 30000 / 1001), (12.5, 12.5), (29.97, 29.97)]
)
def test_write_video_fractional_fps(tmp_path: Path, fps: float, expected: float) -> None:
    path = tmp_path / "f.mp4"
    V.write_video(path, make_indexed_clip(6, SIZE), fps)
    info = V.probe(path)
    assert info.fps == pytest.approx(expected, rel=1e-6)
    assert info.frame_times[1] == pytest.approx(1 / expected, abs=1e-4)


def test_write_video_gop(tmp_path: Path) -> None:
    path = tmp_path / "g.mp4"
    V.write_video(path, make_indexed_clip(20, SIZE), 10, gop=5)
    assert V.probe(path).keyframe_indices == (0, 5, 10, 15)


def bad_frames(bad: np.ndarray, at: int = 3) -> list[np.ndarray]:
    frames = list(make_indexed_clip(5, SIZE))
    frames[at] = bad
    return frames


@pytest.mark.parametrize(
    ("frames", "message"),
    [
        (
            bad_frames(np.zeros((48, 64, 3), np.float32)),
            r"frame 3 has dtype float32, expected uint8",
        ),
        (bad_frames(np.zeros((48, 64, 4), np.uint8)), r"frame 3 has shape \(48, 64, 4\), expected"),
        (
            bad_frames(np.zeros((50, 64, 3), np.uint8)),
            r"frame 3 has shape \(50, 64, 3\), but frame 0",
        ),
        (bad_frames(np.zeros((48, 64, 3), np.uint8).tolist()), r"frame 3 must be a numpy array"),
        ([np.zeros((48, 63, 3), np.uint8)], r"frame size 63x48 \(WxH\) has an odd side"),
        ([], r"no frames to write"),
    ],
)
def test_write_video_rejects_bad_frames(tmp_path: Path, frames: list, message: str) -> None:
    path = tmp_path / "bad.mp4"
    with pytest.raises(UserInputError, match=message):
        V.write_video(path, frames, 10)
    assert list(tmp_path.iterdir()) == []  # nothing half-written is left behind


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fps": 0}, r"fps: expected a positive number"),
        ({"fps": float("nan")}, r"fps: expected a positive finite number"),
        ({"fps": "30"}, r"fps: expected a positive number, found str"),
        ({"crf": 99}, r"crf must be an int in \[0, 63\]"),
        ({"gop": 0}, r"gop must be None or an int >= 1"),
        ({"codec": "no-such-codec"}, r"unknown or unavailable encoder 'no-such-codec'"),
    ],
)
def test_write_video_rejects_bad_arguments(
    tmp_path: Path, kwargs: dict[str, object], message: str
) -> None:
    args: dict[str, object] = {"fps": 10, **kwargs}
    with pytest.raises(UserInputError, match=message):
        V.write_video(tmp_path / "x.mp4", make_indexed_clip(2, SIZE), **args)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_write_video_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="output folder .* does not exist"):
        V.write_video(tmp_path / "no" / "x.mp4", make_indexed_clip(2, SIZE), 10)


def test_single_thread_without_mbtree_is_byte_identical_and_keeps_tags(tmp_path):
    import hashlib

    from vidmem.io.framecode import make_indexed_clip

    frames = make_indexed_clip(24, size=(160, 96), seed=3)
    digests = set()
    for k in range(3):
        p = tmp_path / f"r{k}.mp4"
        V.write_video(p, frames, 8, gop=8, threads=1, x264_params="mbtree=0", metadata={"comment": "spec"})
        digests.add(hashlib.sha256(p.read_bytes()).hexdigest())
    assert len(digests) == 1
    with av.open(str(p)) as c:
        assert c.metadata["comment"] == "spec"
    assert V.probe(p).keyframe_indices[:3] == (0, 8, 16)
