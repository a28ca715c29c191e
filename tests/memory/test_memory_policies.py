"""Each built-in policy on a synthetic film whose embeddings are chosen by hand.

The film (segment: span, text; 1 fps frames and their tags):

* 0: [0, 4) "a cat": 0.5 bg, 1.5 cat, 2.5 mix, 3.5 cat
* 1: [4, 6) "a dog": 4.5 dog, 5.5 cat
* 2: [6, 9) "a car": 6.5 mix, 7.5 bg, 8.5 cat
* 3: [9, 10) "cat please": composed last, so segments 0-2 are its past.

Frame space (3-D): cat = e0, mix = (0.8, 0.6, 0), dog = e1, everything else e2; the
instruction "cat please" is e0, so a frame's cosine is 1 (cat), 0.8 (mix) or 0.
Segment-text space (4-D): "a cat" = e0, "a dog" = (0.6, 0.8, 0, 0), "a car" = e2,
"cat please" = e0: segment cosines 1, 0.6, 0.
Keyframe space (2-D, angles): segment 0's 2 fps frames at 0, 10, 20, 90, 95, 180, 170
and 45 degrees; segment 1's at 0, 0, 90, 0; the rest at 0.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from memory_fakes import FakeImageEmbedder, FakeTextEmbedder, SyntheticFilm, angle, unit

from vidmem.memory.guard import replay
from vidmem.memory.policies.random_frames import draw_seed
from vidmem.memory.policy import load_policy
from vidmem.memory.store import Segment

SEGMENTS = [Segment(0, 0.0, 4.0, "a cat"), Segment(1, 4.0, 6.0, "a dog"),
            Segment(2, 6.0, 9.0, "a car"), Segment(3, 9.0, 10.0, "cat please")]
ONE_FPS_TAGS = {500: "bg", 1500: "cat", 2500: "mix", 3500: "cat", 4500: "dog", 5500: "cat",
                6500: "mix", 7500: "bg", 8500: "cat"}
SEG0_ANGLES = [0, 10, 20, 90, 95, 180, 170, 45]  # 2 fps frames 0.25, 0.75, ..., 3.75
SEG1_ANGLES = [0, 0, 90, 0]                      # 2 fps frames 4.25, 4.75, 5.25, 5.75


def tag_at(key: int) -> str:
    if key in ONE_FPS_TAGS:
        return ONE_FPS_TAGS[key]
    if key < 4000:
        return f"k{(key - 250) // 500}"
    if key < 6000:
        return f"j{(key - 4250) // 500}"
    return "bg"


class Backends:
    def __init__(self) -> None:
        e = np.eye(4, dtype=np.float32)
        self.frame_image = FakeImageEmbedder(
            "frame-image", {"cat": unit(1, 0, 0), "mix": unit(0.8, 0.6, 0), "dog": unit(0, 1, 0)},
            default=unit(0, 0, 1))
        self.frame_text = FakeTextEmbedder("frame-text", {"cat please": unit(1, 0, 0)},
                                           default=unit(0, 0, 1))
        self.segment_text = FakeTextEmbedder(
            "segment-text", {"a cat": e[0], "cat please": e[0], "a dog": unit(0.6, 0.8, 0, 0),
                             "a car": e[2]}, default=e[3])
        keys = {f"k{i}": angle(a) for i, a in enumerate(SEG0_ANGLES)}
        keys |= {f"j{i}": angle(a) for i, a in enumerate(SEG1_ANGLES)}
        self.keyframe = FakeImageEmbedder("keyframe", keys, default=angle(0))

    def options(self, name: str) -> dict:
        return {
            "text_frame": {"frame_text_embedder": self.frame_text,
                           "frame_image_embedder": self.frame_image},
            "seg_uniform": {"segment_text_embedder": self.segment_text},
            "seg_dino_key": {"segment_text_embedder": self.segment_text,
                             "keyframe_embedder": self.keyframe},
            "seg_frame": {"segment_text_embedder": self.segment_text,
                          "frame_text_embedder": self.frame_text,
                          "frame_image_embedder": self.frame_image},
            "recency": {}, "random": {"seed": 7},
        }[name]


def last(name: str, budget: int = 16, film: SyntheticFilm | None = None, **extra):
    b = Backends()
    policy = load_policy(name, {**b.options(name), **extra})
    results = replay(policy, SEGMENTS, film or SyntheticFilm("film", tag_at), budget)
    assert results[0].references == ()  # nothing is past at the first segment
    assert all(r.dropped == 0 for r in results)  # built-ins never return the future
    return results[3].references


def seconds(refs) -> list[float]:
    return [r.source_seconds for r in refs]


def test_text_frame_ranks_every_past_1fps_frame_by_cosine_ties_in_time_order():
    refs = last("text_frame")
    assert seconds(refs) == [1.5, 3.5, 5.5, 8.5, 2.5, 6.5, 0.5, 4.5, 7.5]
    assert [round(r.score, 6) for r in refs] == [1, 1, 1, 1, 0.8, 0.8, 0, 0, 0]
    assert [r.segment_index for r in refs] == [0, 0, 1, 2, 0, 2, 0, 1, 2]
    assert seconds(last("text_frame", budget=3)) == [1.5, 3.5, 5.5]


def test_seg_uniform_returns_the_top_segments_1fps_frames_segment_by_segment():
    assert seconds(last("seg_uniform", top_segments=2)) == [0.5, 1.5, 2.5, 3.5, 4.5, 5.5]
    refs = last("seg_uniform")  # top 5 of 3 eligible: all, car (cosine 0) last
    assert seconds(refs) == [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5]
    assert refs[0].score == pytest.approx(1 - 2e-6) and refs[4].score == pytest.approx(0.6 - 3e-6)
    assert refs[4].info == {"segment_rank": 2, "frame_rank": 1, "segment_score": pytest.approx(0.6)}


def test_seg_uniform_interleaves_tied_segments_as_the_reference_score_does():
    film_segments = [Segment(0, 0.0, 4.0, "a cat"), Segment(1, 4.0, 6.0, "a cat"),
                     Segment(2, 6.0, 7.0, "cat please")]
    b = Backends()
    res = replay(load_policy("seg_uniform", b.options("seg_uniform")), film_segments,
                 SyntheticFilm("film", tag_at), 16)
    # Both segments score 1: frame f of segment r scores 1 - 1e-6 (r + f).
    assert seconds(res[2].references) == [0.5, 1.5, 4.5, 2.5, 5.5, 3.5]


def test_seg_dino_key_picks_farthest_point_keyframes_per_segment():
    refs = last("seg_dino_key", top_segments=2)
    # seg 0: start 0 deg, then 180 (farthest), then 90; seg 1: 0, then 90, then the tie
    # between the two remaining 0-degree frames goes to the earlier (4.75).
    assert seconds(refs) == [0.25, 1.75, 2.75, 4.25, 4.75, 5.25]
    assert [r.info["keyframe_rank"] for r in refs] == [1, 2, 3, 1, 2, 3]
    assert seconds(last("seg_dino_key"))[6:] == [6.25, 6.75, 7.25]  # all tied: the earliest


def rrf(*ranks: int) -> float:
    return sum(1.0 / (60 + r) for r in ranks)


def test_seg_frame_fuses_segment_order_and_frame_rerank_by_hand():
    # Candidates (top 2 segments), coarse ranks 1..6: 0.5 1.5 2.5 3.5 4.5 5.5.
    # Fine (cosine, ties in coarse order): 1.5 3.5 5.5 2.5 0.5 4.5.
    refs = last("seg_frame", top_segments=2)
    want = {1.5: rrf(2, 1), 0.5: rrf(1, 5), 3.5: rrf(4, 2), 2.5: rrf(3, 4), 5.5: rrf(6, 3),
            4.5: rrf(5, 6)}
    assert seconds(refs) == [1.5, 0.5, 3.5, 2.5, 5.5, 4.5]
    assert [r.score for r in refs] == [pytest.approx(want[t]) for t in seconds(refs)]
    assert refs[1].info == {"coarse_rank": 1, "fine_rank": 5, "cosine": pytest.approx(0.0, abs=1e-6)}
    # A fine list cut after 1 x 3 frames (1.5 3.5 5.5) leaves 0.5 with its coarse share only.
    assert seconds(last("seg_frame", budget=3, top_segments=2, fine_depth=1)) == [1.5, 3.5, 5.5]


def test_recency_returns_the_latest_past_frames_first():
    refs = last("recency")
    assert seconds(refs) == [8.5, 7.5, 6.5, 5.5, 4.5, 3.5, 2.5, 1.5, 0.5]
    assert [r.score for r in refs[:3]] == [1.0, 0.5, pytest.approx(1 / 3)]


def test_random_is_the_seeded_shuffle_of_the_past_pool_and_reproducible():
    pool = [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5]
    order = list(range(9))
    random.Random(draw_seed(7, "film", 3)).shuffle(order)
    assert seconds(last("random")) == [pool[i] for i in order]
    assert seconds(last("random", budget=4)) == [pool[i] for i in order[:4]]
    assert seconds(last("random")) != seconds(last("random", seed=8))
    assert seconds(last("random")) != seconds(last("random", film=SyntheticFilm("other", tag_at)))


def test_random_draw_does_not_depend_on_what_ran_before():
    b = Backends()
    policy = load_policy("random", b.options("random"))
    a, other = SyntheticFilm("a", tag_at), SyntheticFilm("b", tag_at)
    first = replay(policy, SEGMENTS, a, 16)
    replay(policy, SEGMENTS[:2], other, 16)
    again = replay(policy, SEGMENTS, a, 16)
    assert [r.references for r in first] == [r.references for r in again]


def test_segment_ranking_uses_embed_queries_when_the_backend_has_one():
    class Instructed(FakeTextEmbedder):
        queries: list[str] = []

        def embed_queries(self, texts):
            self.queries.extend(texts)
            return np.stack([unit(0, 0, 1, 0) for _ in texts])  # every query points at "a car"

    b = Backends()
    emb = Instructed("instructed", b.segment_text.vectors, default=b.segment_text.default)
    res = replay(load_policy("seg_uniform", {"segment_text_embedder": emb, "top_segments": 1}),
                 SEGMENTS, SyntheticFilm("film", tag_at), 16)
    assert seconds(res[3].references) == [6.5, 7.5, 8.5]
    assert emb.queries == ["a dog", "a car", "cat please"]  # each instruction, as a query
    assert emb.embedded == {"a cat": 1, "a dog": 1, "a car": 1, "cat please": 1}  # as documents


def test_each_frame_is_embedded_once_per_embedder_across_six_policies():
    b = Backends()
    film = SyntheticFilm("film", tag_at)
    names = ["text_frame", "seg_uniform", "seg_dino_key", "seg_frame", "recency", "random"]
    for _ in range(2):  # a second round adds no embed call at all
        for name in names:
            replay(load_policy(name, b.options(name)), SEGMENTS, film, 16)
        calls = (b.frame_image.calls, b.keyframe.calls, b.frame_text.calls, b.segment_text.calls)
    one_fps = set(ONE_FPS_TAGS) | {9500}
    assert set(b.frame_image.embedded) == one_fps and set(b.frame_image.embedded.values()) == {1}
    assert len(b.keyframe.embedded) == 8 + 4 + 6 + 2 and set(b.keyframe.embedded.values()) == {1}
    assert not set(b.keyframe.embedded) & one_fps
    assert set(b.segment_text.embedded.values()) == {1} and len(b.segment_text.embedded) == 4
    # Instructions as frame-text queries (segment 0 has no past, so nothing is asked).
    assert dict(b.frame_text.embedded) == {"a dog": 1, "a car": 1, "cat please": 1}
    assert (b.frame_image.calls, b.keyframe.calls, b.frame_text.calls, b.segment_text.calls) == calls


def test_protocol_blocks_name_rules_params_and_backends():
    b = Backends()
    for name in ("text_frame", "seg_uniform", "seg_dino_key", "seg_frame", "recency", "random"):
        block = load_policy(name, b.options(name)).protocol()
        assert block["policy"] == name and block["rules"]["frame_times"]
        assert any(k.startswith(name + ".") for k in block["rules"])
    block = load_policy("seg_frame", b.options("seg_frame")).protocol()
    assert block["params"] == {"top_segments": 5, "fps": 1.0, "rrf_k": 60, "fine_depth": 4}
    assert block["backends"]["frame_image_embedder"]["name"] == "fake/frame-image"
    assert load_policy("seg_dino_key", b.options("seg_dino_key")).protocol()["params"] == {
        "top_segments": 5, "keyframes_per_segment": 3, "fps": 2.0}
