"""The pure ranking rules, by hand: RRF sums, farthest-point picks, stable ties."""

from __future__ import annotations

import numpy as np
import pytest

from vidmem.errors import UserInputError
from vidmem.memory.ranking import farthest_point, rrf_fuse, segment_frame_score, stable_order


def test_rrf_adds_one_over_k_plus_rank_per_list():
    fused = dict(rrf_fuse([["a", "b", "c", "d"], ["c", "x", "a"]], k=60))
    assert fused == pytest.approx({
        "a": 1 / 61 + 1 / 63,
        "b": 1 / 62,
        "c": 1 / 63 + 1 / 61,
        "d": 1 / 64,
        "x": 1 / 62,
    })


def test_rrf_orders_by_fused_score_ties_in_first_seen_order():
    # a and c tie exactly (1/61 + 1/63): a was seen first. b and x tie (1/62): b first.
    keys = [k for k, _ in rrf_fuse([["a", "b", "c", "d"], ["c", "x", "a"]])]
    assert keys == ["a", "c", "b", "x", "d"]
    assert rrf_fuse([]) == []
    with pytest.raises(UserInputError, match="k must be an int >= 0"):
        rrf_fuse([["a"]], k=-1)


def test_farthest_point_on_2d_points_by_hand():
    deg = np.deg2rad([0, 30, 100, 170, 200, 265])
    pts = np.stack([np.cos(deg), np.sin(deg)], axis=1)
    # cos to 0 deg:   [1, .866, -.174, -.985, -.940, -.087] -> farthest is 170 (row 3).
    # cos to 170 deg: [-.985, -.766, .342, 1, .866, -.087]
    # nearest to {0, 170}: 30 -> .866, 100 -> .342, 200 -> .866, 265 -> -.087 => 265 (row 5).
    assert farthest_point(pts, 3) == [0, 3, 5]
    # cos to 265 deg: 30 -> -.574, 100 -> -.966, 200 -> .423: nearest stays .866, .342,
    # .866 => 100 (row 2).
    assert farthest_point(pts, 4) == [0, 3, 5, 2]
    assert farthest_point(pts, 6) == [0, 1, 2, 3, 4, 5]  # m >= n: all, in order
    assert farthest_point(pts, 0) == [] and farthest_point(pts[:0], 3) == []


def test_farthest_point_ties_go_to_the_earliest_row():
    pts = np.array([[1, 0], [0, 1], [0, 1], [0, -1]], dtype=float)
    # From row 0 every other row is at distance 1: the earliest (1) wins; then row 3
    # (cos -1 to row 1, nearest 0) beats row 2 (a copy of row 1, nearest 1).
    assert farthest_point(pts, 3) == [0, 1, 3]


def test_stable_order_and_segment_frame_score():
    assert stable_order(np.array([0.1, 0.5, 0.5, 0.3])).tolist() == [1, 2, 3, 0]
    assert segment_frame_score(0.75, 1, 1) == pytest.approx(0.75 - 2e-6)
    assert segment_frame_score(0.75, 3, 2) == pytest.approx(0.75 - 5e-6)
