"""The store: frame times, what counts as the past, the embedding cache, FilmFrames."""

from __future__ import annotations

import numpy as np
import pytest
from memory_fakes import FakeImageEmbedder, FakeTextEmbedder, SyntheticFilm, unit

from vidmem.errors import UserInputError
from vidmem.io.framecode import decode_index, iter_indexed_frames
from vidmem.io.video import write_video
from vidmem.memory.embeddings import EmbeddingCache
from vidmem.memory.guard import prepare, replay
from vidmem.memory.policy import load_policy
from vidmem.memory.store import FilmFrames, Frame, MemoryStore, Segment, frame_keys, sample_times
from vidmem.models.protocols import BackendInfo


def test_frame_times_are_bin_centres_from_the_segment_start():
    assert sample_times(20, 30, 1) == [20.5 + j for j in range(10)]
    assert sample_times(20, 30, 2) == [20.25 + 0.5 * j for j in range(20)]
    assert sample_times(3.3, 5.0, 1) == [3.8, 4.8]
    assert sample_times(3.3, 5.0, 2) == [3.55, 4.05, 4.55]
    assert sample_times(7.0, 7.3, 1) == sample_times(7.0, 7.3, 2) == [7.15]  # shorter than a bin
    assert sample_times(2.0, 2.0, 1) == [2.0]
    with pytest.raises(UserInputError, match="> 0 fps"):
        sample_times(0, 1, 0)
    assert frame_keys(Segment(0, 0.0, 1.0)) == [
        (250, frozenset({2.0})), (500, frozenset({1.0})), (750, frozenset({2.0}))]
    assert frame_keys(Segment(0, 0.0, 0.5)) == [(250, frozenset({1.0, 2.0}))]


def test_segment_fields_are_checked():
    for bad in ({"index": -1}, {"start_seconds": float("nan")}, {"end_seconds": 0.5},
                {"text": 3}, {"index": 1.5}):
        kw = {"index": 0, "start_seconds": 1.0, "end_seconds": 2.0, "text": "", **bad}
        with pytest.raises(UserInputError):
            Segment(**kw)


def test_pool_holds_only_frames_of_segments_that_ended_before_the_time():
    store = MemoryStore(SyntheticFilm())
    store.observe(Segment(0, 0.0, 3.0))
    store.observe(Segment(1, 3.0, 5.0))
    p = store.pool(1.0, before=5.0)
    assert p.seconds.tolist() == [0.5, 1.5, 2.5, 3.5, 4.5]
    assert p.segment_index.tolist() == [0, 0, 0, 1, 1]
    assert store.pool(1.0, before=4.0).seconds.tolist() == [0.5, 1.5, 2.5]  # seg 1 not over
    assert store.pool(2.0, segment_index=1).seconds.tolist() == [3.25, 3.75, 4.25, 4.75]
    assert [s.index for s in store.eligible_segments(4.0)] == [0]
    # Overlapping spans (not in the gold data, but possible): a segment still running at
    # the start is not the past, so none of its frames is offered (the reference rule).
    over = MemoryStore(SyntheticFilm())
    over.observe(Segment(0, 0.0, 5.0))
    over.observe(Segment(1, 3.0, 8.0))
    assert len(over.pool(1.0, before=3.0)) == 0
    assert over.next_segment_index == 2


def test_observe_rejects_out_of_order_segments_and_bad_sources():
    store = MemoryStore(SyntheticFilm())
    store.observe(Segment(1, 2.0, 3.0))
    with pytest.raises(UserInputError, match="observed after segment 1"):
        store.observe(Segment(2, 1.0, 3.0))
    with pytest.raises(UserInputError, match="observed after segment 1"):
        store.observe(Segment(1, 3.0, 4.0))

    class Leaky(SyntheticFilm):
        def frames_of(self, segment):
            return [Frame(round(segment.end_seconds * 1000) + 500, segment.index, frozenset({1.0}))]

    with pytest.raises(UserInputError, match="inside its span"):
        MemoryStore(Leaky()).observe(Segment(0, 0.0, 1.0))


def test_image_scores_are_one_product_over_a_contiguous_growing_matrix():
    rng = np.random.default_rng(0)
    vecs = {f"t{i}": unit(*rng.normal(size=8)) for i in range(40)}
    film = SyntheticFilm(tag_at=lambda k: f"t{(k // 500) % 40}")
    emb = FakeImageEmbedder("img", vecs, default=unit(*np.ones(8)))
    store = MemoryStore(film)
    for i in range(60):  # 60 segments x 4 frames at 1 fps: the matrix doubles a few times
        store.observe(Segment(i, 4.0 * i, 4.0 * i + 4))
        store.ensure_image_embeddings(emb, store.pool(1.0, segment_index=i))
    pool = store.pool(1.0, before=240.0)
    matrix = film.embeddings.image_matrix(emb)
    assert matrix.flags.c_contiguous and matrix.dtype == np.float32 and matrix.shape == (240, 8)
    q = unit(*rng.normal(size=8))
    want = np.stack([vecs[f"t{(round(t * 1000) // 500) % 40}"] for t in pool.seconds]) @ q
    np.testing.assert_allclose(store.image_scores(emb, pool, q), want, rtol=1e-6)
    small = pool.take(np.array([5, 2]))
    np.testing.assert_allclose(store.image_scores(emb, small, q), want[[5, 2]], rtol=1e-6)
    assert emb.calls == 60 and sum(emb.embedded.values()) == 240


def test_embedding_cache_checks_backend_output():
    class Wrong(FakeImageEmbedder):
        def embed_images(self, images):
            return np.zeros((len(images) + 1, 3), np.float32)

    class NaN(FakeTextEmbedder):
        def embed_texts(self, texts):
            return np.full((len(texts), 3), np.nan, np.float32)

    frames = SyntheticFilm().frames_of(Segment(0, 0.0, 1.0))
    cache = EmbeddingCache()
    with pytest.raises(UserInputError, match=r"returned shape \(4, 3\) for 3 images"):
        cache.image_rows(Wrong("w", {}, default=unit(1, 0, 0)), frames)
    with pytest.raises(UserInputError, match="non-finite"):
        cache.text_rows(NaN("n", {}, default=unit(1, 0, 0)), ["a"])
    with pytest.raises(UserInputError, match="has no info"):
        cache.text_rows(object(), ["a"])  # type: ignore[arg-type]
    # Two instances with the same info share rows: the second never embeds.
    a = FakeTextEmbedder("same", {}, default=unit(1, 0))
    b = FakeTextEmbedder("same", {}, default=unit(1, 0))
    cache.texts(a, ["x", "y", "x"])
    cache.texts(b, ["y"])
    assert (a.calls, b.calls, cache.calls["fake/same", "text"]) == (1, 0, 1)


class CodeEmbedder:
    """Embeds a real decoded frame by the index code in its pixels."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.codes: list[int] = []

    def info(self) -> BackendInfo:
        return BackendInfo(name=f"code/{self.name}")

    def embed_images(self, images):
        self.codes += [decode_index(im) for im in images]
        return np.stack([unit(1.0, c % 7, c % 3) for c in self.codes[-len(images):]])


@pytest.fixture(scope="module")
def film_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("film") / "film.mp4"
    write_video(path, iter_indexed_frames(96, (64, 48), seed=2), 8, gop=8)  # 12 s at 8 fps
    return path


FILM_SEGMENTS = [Segment(0, 0.0, 3.0, "a"), Segment(1, 3.0, 7.0, "b"),
                 Segment(2, 7.0, 7.3, "c"), Segment(3, 10.0, 13.0, "d")]


def test_film_frames_lists_times_lazily_and_decodes_the_frame_on_screen(film_path):
    film = FilmFrames(film_path, film_id="f")
    frames = film.frames_of(FILM_SEGMENTS[0])
    assert [f.seconds for f in frames] == [0.25, 0.5, 0.75, 1.25, 1.5, 1.75, 2.25, 2.5, 2.75]
    assert film.segment_decodes == 0  # nothing decoded yet
    assert [decode_index(f.pixels()) for f in frames] == [int(f.seconds * 8) for f in frames]
    assert film.segment_decodes == 1 and film.decoded_frames == 9
    assert film.frames_of(FILM_SEGMENTS[2])[0].rates == frozenset({1.0, 2.0})
    late = film.frames_of(FILM_SEGMENTS[3])  # 12.25, 12.5 and 12.75 lie past the 12 s end
    assert [f.seconds for f in late] == [10.25, 10.5, 10.75, 11.25, 11.5, 11.75]
    assert film.past_end == 3


def _policies():
    image, keys = CodeEmbedder("image"), CodeEmbedder("keys")
    text = FakeTextEmbedder("text", {}, default=unit(1, 1, 1))
    return [load_policy("text_frame", {"frame_text_embedder": text, "frame_image_embedder": image}),
            load_policy("seg_dino_key", {"segment_text_embedder": text, "keyframe_embedder": keys}),
            load_policy("recency")], image, keys


def test_film_frames_decodes_each_segment_once_for_all_prepared_policies(film_path):
    film = FilmFrames(film_path, film_id="f")
    policies, image, keys = _policies()
    prepare(film, policies)
    for p in policies:
        replay(p, FILM_SEGMENTS, film, 16)
    assert film.segment_decodes == 4
    assert len(image.codes) == 3 + 4 + 1 + 2 and len(keys.codes) == 6 + 8 + 1 + 4
    # Unprepared, the second policy needs new embeddings of pixels already evicted.
    film2 = FilmFrames(film_path, film_id="f")
    policies, _, _ = _policies()
    for p in policies:
        replay(p, FILM_SEGMENTS, film2, 16)
    assert film2.segment_decodes == 8


def test_film_frames_keeps_a_small_copy_of_each_decoded_frame_up_to_a_size(film_path):
    from vidmem.io.video import read_frames_at

    def half(px):
        return px[::2, ::2]  # a view: the kept copy must not hold the decoded batch

    film = FilmFrames(film_path, film_id="f")
    film.keep_images(half, max_bytes=10**9)
    frames = film.frames_of(FILM_SEGMENTS[0])
    assert film.kept_image(frames[0].key) is None  # nothing decoded yet
    frames[0].pixels()
    fresh = read_frames_at(film_path, [f.seconds for f in frames])
    for f, px in zip(frames, fresh, strict=True):
        kept = film.kept_image(f.key)
        assert np.array_equal(kept, px[::2, ::2])  # the frame on screen at its time
        assert not np.shares_memory(kept, f.pixels())
    assert film.segment_decodes == 1 and film.kept_bytes == 9 * 24 * 32 * 3
    # past max_bytes no frame is kept: the caller reads those itself
    small = FilmFrames(film_path, film_id="f")
    small.keep_images(half, max_bytes=3 * 24 * 32 * 3)
    small.frames_of(FILM_SEGMENTS[0])[0].pixels()
    assert [small.kept_image(f.key) is not None for f in frames] == [True] * 3 + [False] * 6
    with pytest.raises(UserInputError, match="max_bytes"):
        small.keep_images(half, max_bytes=-1)
