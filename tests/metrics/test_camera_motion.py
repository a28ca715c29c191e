"""Camera motion and the camera-compliance gate on hand-made frames and plans."""

from __future__ import annotations

import numpy as np
import pytest
from skimage import data, transform

from vidmem.benchmarks.memory_loop.camera_flow import flow_motion
from vidmem.errors import UserInputError
from vidmem.metrics.camera_motion import (
    MIN_RATE,
    camera_gate,
    planned_step_motion,
    step_frames,
)
from vidmem.metrics.loop_paths import planned_c2w


def _texture(width: int = 240, height: int = 90) -> np.ndarray:
    """Three photographs side by side, ``height`` tall, cut to ``width``."""
    parts = [data.astronaut(), data.coffee(), data.chelsea()]
    side = round(height * 140 / 90)
    pano = np.concatenate([(transform.resize(p, (height, side), anti_aliasing=True) * 255)
                           .astype(np.uint8) for p in parts], axis=1)
    return pano[:, :width]


@pytest.mark.parametrize("shift", [2, 4, 8])
def test_flow_of_a_pan_is_the_shift_in_frame_widths(shift):
    # A 160 px window moved `shift` px across photographs: every pixel moves `shift` px,
    # so the mean flow is shift / 160 frame widths (measured exactly up to about 8 px
    # a step; faster pans are under-measured, which a gate on a small floor tolerates).
    tex = _texture()
    a, b = tex[:, 40:200], tex[:, 40 + shift:200 + shift]
    assert flow_motion(a, b) * 160 == pytest.approx(shift, abs=0.2)


def test_flow_is_measured_at_the_motion_width_whatever_the_frame_size():
    tex = _texture(420, 180)
    a, b = tex[:, 80:400], tex[:, 88:408]  # 320 px wide, 8 px = 1/40 of the width
    assert flow_motion(a, b) == pytest.approx(8 / 320, rel=0.1)
    assert flow_motion(a, a) < 1e-4  # identical frames: no motion (float noise only)


def test_flow_rejects_frames_of_different_sizes():
    with pytest.raises(UserInputError, match="differ in shape"):
        flow_motion(np.zeros((90, 160, 3), np.uint8), np.zeros((90, 150, 3), np.uint8))


def test_step_frames_are_about_a_quarter_second_apart():
    assert step_frames(9, 8.0).tolist() == [0, 2, 4, 6, 8]
    assert step_frames(5, 4.0).tolist() == [0, 1, 2, 3, 4]
    assert step_frames(25, 24.0).tolist() == [0, 6, 12, 18, 24]


def test_planned_step_motion_of_a_turn_is_degrees_over_180():
    # yaw_loop_180 on 5 frames: 0, 104.94, 180, 104.94, 0 degrees; no translation.
    d = planned_step_motion(planned_c2w("yaw_loop_180", 5), np.arange(5))
    expect = np.array([104.9382716, 75.0617284, 75.0617284, 104.9382716]) / 180.0
    np.testing.assert_allclose(d, expect, atol=1e-5)


def test_gate_counts_moving_steps_among_the_planned_moves():
    # Plan peak 0.2, so planned moves are steps with distance >= 0.05: steps 1-4.
    plan = [0.0, 0.1, 0.2, 0.2, 0.1, 0.0]
    step = 0.25
    fast = MIN_RATE * step * 2  # moves (twice the floor, in frame widths per step)
    slow = MIN_RATE * step / 2  # below the floor
    half = camera_gate([fast, fast, fast, slow, slow, fast], plan, step)
    assert (half.status, half.moving_share, half.n_planned_moves) == ("evaluable", 0.5, 4)
    quarter = camera_gate([fast, fast, slow, slow, slow, fast], plan, step)
    assert quarter.status == "not_evaluable" and quarter.moving_share == 0.25
    assert quarter.reason.startswith("near_static: the video moved") and "1 of 4" in quarter.reason
    # Motion outside the planned moves (steps 0 and 5) does not count.
    outside = camera_gate([fast, slow, slow, slow, slow, fast], plan, step)
    assert outside.status == "not_evaluable" and outside.moving_share == 0.0


def test_gate_refuses_plans_without_motion_and_bad_input():
    assert camera_gate([0.1, 0.1], [0.0, 0.0], 0.25).reason.startswith("no_planned_motion")
    assert camera_gate([], [], 0.25).reason.startswith("too_short")
    with pytest.raises(UserInputError, match="3 measured steps but 2 planned"):
        camera_gate([0.1, 0.1, 0.1], [0.1, 0.1], 0.25)
    with pytest.raises(UserInputError, match="NaN"):
        camera_gate([float("nan")], [0.1], 0.25)
    with pytest.raises(UserInputError, match="step_seconds"):
        camera_gate([0.1], [0.1], 0.0)
