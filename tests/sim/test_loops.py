"""Every planned loop closes, its matrices are rotations, its prompt is recognised."""

from __future__ import annotations

import numpy as np
import pytest

from vidmem.errors import UnknownNameError
from vidmem.sim.loops import (
    LOOP_IDS,
    LOOPS,
    loop_c2w,
    loop_for_prompt,
    loop_poses,
    pose_distance_matrix,
    revisit_schedule,
)
from vidmem.sim.world import Pose

START = Pose(yaw=210.0, pitch=1.0)


def test_the_six_loops_and_the_published_prompt():
    assert LOOP_IDS == ("yaw_loop_360", "yaw_loop_180", "dolly_loop", "palindrome_loop",
                        "square_loop", "double_yaw_loop")
    assert LOOPS["double_yaw_loop"].prompt == "Turn away and back to the start twice in a row."
    assert len({d.prompt for d in LOOPS.values()}) == 6


@pytest.mark.parametrize("loop_id", LOOP_IDS)
def test_loop_closes_and_is_made_of_rotations(loop_id):
    m = loop_c2w(loop_id, START, 481)
    assert m.shape == (481, 4, 4)
    assert np.allclose(m[0], START.c2w(), atol=1e-9)
    assert np.allclose(m[-1], m[0], atol=1e-9)
    r = m[:, :3, :3]
    assert np.allclose(np.einsum("nij,nik->njk", r, r), np.eye(3), atol=1e-9)
    assert np.allclose(np.linalg.det(r), 1.0, atol=1e-9)
    # The camera really goes somewhere and comes back.
    d = pose_distance_matrix(m)[0]
    assert d.max() > 0.45 and d[-1] < 1e-6
    assert loop_for_prompt(LOOPS[loop_id].prompt) == loop_id


def test_loop_paths():
    yaw = [p.yaw - START.yaw for p in loop_poses("yaw_loop_360", START, 101)]
    assert yaw[-1] == pytest.approx(360.0) and np.all(np.diff(yaw) >= 0)
    assert max(p.yaw - START.yaw for p in loop_poses("yaw_loop_180", START, 101)) == pytest.approx(180.0)
    assert max(p.zoom for p in loop_poses("dolly_loop", START, 101)) == pytest.approx(1.9)
    pal = loop_poses("palindrome_loop", START, 101)
    assert all(np.allclose(a.to_tuple(), b.to_tuple()) for a, b in zip(pal, pal[::-1], strict=True))
    sq = loop_poses("square_loop", START, 101)
    assert max(p.tx for p in sq) == pytest.approx(0.3) and max(p.zoom for p in sq) > 1.5
    turns = [p.yaw - START.yaw for p in loop_poses("double_yaw_loop", START, 201)]
    peaks = sum(1 for a, b, c in zip(turns, turns[1:], turns[2:], strict=False) if b >= a and b > c)
    assert peaks == 2


def test_revisit_schedule_pairs_the_return_leg():
    m = loop_c2w("yaw_loop_180", START, 161)
    match, dist = revisit_schedule(m, 8.0, radius=0.02)
    js = np.flatnonzero(match >= 0)
    assert len(js) > 10 and js.min() > 80  # only on the way back
    gaps = (js - match[js]) / 8.0
    assert gaps.min() >= 1.0 and np.all(dist[js] <= 0.02)
    assert np.all(np.diff(gaps) > 0)  # later on the way back = older first visit


def test_unknown_loop_lists_the_loops():
    with pytest.raises(UnknownNameError, match="yaw_loop_360"):
        loop_poses("yaw_loop_90", START, 10)
