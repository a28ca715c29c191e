"""Truth boxes match the pixels; poses, specs and media round-trip."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vidmem.errors import UserInputError
from vidmem.sim.media import read_png_spec, read_video_spec, write_sim_png, write_sim_video
from vidmem.sim.render import render_frames, view_window
from vidmem.sim.sprites import entity_sprite
from vidmem.sim.world import Background, CameraKey, EntityTrack, Pose, WorldSpec

MAGENTA = (255, 0, 255)


def plain_spec(tracks, *, pose=Pose(yaw=30.0), n_frames=1, width=320, height=180):
    return WorldSpec(seed=0, width=width, height=height, fps=8.0, n_frames=n_frames,
                     background=Background("plain", rgb=MAGENTA), camera=(CameraKey(0.0, pose),),
                     entities=tuple(tracks), kind="test")


def still(asset, u, v, *, tid=None, z=0, state="base"):
    return EntityTrack(tid or asset, asset, -1e6, 1e6, ((0.0, u, v),), ((0.0, state),), z=z)


def changed_pixels(frame: np.ndarray) -> np.ndarray:
    """Pixels that are not the plain magenta background (with codec-free tolerance)."""
    return np.abs(frame.astype(int) - np.array(MAGENTA)).sum(axis=2) > 30


@pytest.mark.parametrize(("asset", "u"), [
    ("cup", 200.0),          # centre of the view (yaw 30 -> column 200)
    ("cat", 30.0),           # cut by the left edge (view spans columns 0..400)
    ("motorcycle", 390.0),   # cut by the right edge
    ("horse", 2390.0),       # across the 360-degree seam, seen from yaw 30
])
def test_truth_box_matches_the_pixels(asset, u):
    frames, truth = render_frames(plain_spec([still(asset, u, 135.0)]))
    frame = frames[0]
    ents = truth[0]["entities"]
    assert len(ents) == 1
    x0, y0, x1, y1 = ents[0]["box_xyxy"]
    assert 0 <= x0 < x1 <= 320 and 0 <= y0 < y1 <= 180
    on = changed_pixels(frame)
    inside = np.zeros_like(on)
    inside[y0:y1, x0:x1] = True
    # Outside the box the background is untouched, but for the mask's soft edge (alpha
    # below 0.5, at most 3 pixels wide).
    grown = np.zeros_like(on)
    grown[max(0, y0 - 3):y1 + 3, max(0, x0 - 3):x1 + 3] = True
    assert not on[~grown].any()
    # The box is tight: every side of it touches the entity, which fills much of it.
    assert on[y0:y1, x0].any() and on[y0:y1, x1 - 1].any()
    assert on[y0, x0:x1].any() and on[y1 - 1, x0:x1].any()
    assert on[inside].mean() > 0.3  # a horse silhouette fills less than half its box
    full = u == 200.0
    frac = ents[0]["visible_fraction"]
    assert (frac > 0.99) if full else (0.05 < frac < 0.95)


def test_partial_fraction_matches_geometry():
    # The cat is 111 panorama px wide; its centre 30 px right of the left edge of the view.
    frames, truth = render_frames(plain_spec([still("cat", 30.0, 135.0)]))
    sprite = entity_sprite("cat")
    cols = sprite[..., 3].sum(axis=0)
    half = sprite.shape[1] / 2
    inside = cols[int(round(half - 30)):].sum() / cols.sum()
    assert truth[0]["entities"][0]["visible_fraction"] == pytest.approx(inside, abs=0.03)
    assert truth[0]["entities"][0]["box_xyxy"][0] == 0


def test_occlusion_hides_the_back_entity():
    front = still("patch", 200.0, 135.0, z=1)
    back = still("logo", 200.0, 135.0, tid="logo")
    frames, truth = render_frames(plain_spec([back, front]))
    ents = {e["id"]: e for e in truth[0]["entities"]}
    assert ents["patch"]["visible_fraction"] > 0.99
    assert ents["logo"]["visible_fraction"] < 0.5


def test_entity_outside_the_view_has_no_truth():
    _, truth = render_frames(plain_spec([still("cup", 1200.0, 135.0)]))
    assert truth[0]["entities"] == []


def test_c2w_is_a_rotation_and_follows_the_convention():
    for pose in (Pose(), Pose(yaw=123.0, pitch=2.5, zoom=1.4, tx=0.2, ty=-0.05),
                 Pose(yaw=-400.0, pitch=-3.0)):
        m = pose.c2w()
        r = m[:3, :3]
        assert np.allclose(r.T @ r, np.eye(3), atol=1e-12)
        assert math.isclose(np.linalg.det(r), 1.0, abs_tol=1e-12)
        assert np.allclose(m[3], [0, 0, 0, 1])
    forward = Pose(yaw=90.0).c2w()[:3, 2]
    assert np.allclose(forward, [1, 0, 0], atol=1e-12)  # positive yaw turns right (+x)
    up_look = Pose(pitch=10.0).c2w()[:3, 2]
    assert up_look[1] < 0  # positive pitch looks up (-y in OpenCV axes)
    assert np.allclose(Pose(zoom=2.0).c2w()[:3, 3], [0, 0, 0.5])


def test_view_window_maps_yaw_to_columns():
    assert view_window(Pose(yaw=0.0), 320, 180, 2400).cu == 0.0
    assert view_window(Pose(yaw=-90.0), 320, 180, 2400).cu == pytest.approx(1800.0)
    assert view_window(Pose(zoom=2.0), 320, 180, 2400).scale == pytest.approx(225 / 2 / 180)


def test_spec_json_round_trip_and_errors():
    spec = plain_spec([still("cup", 200.0, 135.0, state="recoloured:red")], n_frames=3)
    again = WorldSpec.from_json(spec.to_json())
    assert again.to_json() == spec.to_json()
    bad = spec.to_dict()
    bad["entities"][0]["states"] = [[0.0, "melted"]]
    with pytest.raises(UserInputError, match="has no state 'melted'"):
        WorldSpec.from_dict(bad, "test spec")
    bad = spec.to_dict()
    bad["sim_version"] = "0"
    with pytest.raises(UserInputError, match="sim_version"):
        WorldSpec.from_dict(bad, "test spec")


def test_media_carry_the_spec(tmp_path):
    spec = plain_spec([still("cup", 200.0, 135.0)], n_frames=4, width=64, height=36)
    frames, _ = render_frames(spec)
    write_sim_video(tmp_path / "v.mp4", frames, spec)
    write_sim_png(tmp_path / "i.png", frames[0], spec)
    assert read_video_spec(tmp_path / "v.mp4").to_json() == spec.to_json()
    assert read_png_spec(tmp_path / "i.png").to_json() == spec.to_json()
