"""The worked `command` generator of docs/generators.md runs the closed loops (issue 26):
MIST through ``vidmem run`` as a user would, Track-B's first segments through its loop,
each clip what its request asked (the defaults of the script where a field is null)."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vidmem.generators.command import CommandGenerator
from vidmem.io.video import probe, read_frames
from vidmem.runners.sim_build import build

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "docs" / "examples" / "request_to_video.py"
TEMPLATE = f"{sys.executable} {SCRIPT} {{request}}"
SCRIPT_FPS, SCRIPT_SECONDS = 8.0, 5.0  # the script's choice for a null fps / duration


def _asked(clip: Path) -> tuple[int, float]:
    """(frames, fps) the clip's request asked for, with the script's defaults."""
    request = json.loads(Path(f"{clip}.request.json").read_text())
    fps = request["fps"] or SCRIPT_FPS
    return max(2, round((request["duration_seconds"] or SCRIPT_SECONDS) * fps)), fps


@pytest.mark.slow
def test_mist_runs_with_the_example_script(tmp_path):
    build("mist", tmp_path / "SIM-mist", seed=0, n_cases=1)
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIDMEM_")}
    env.update(HF_HUB_OFFLINE="1", VIDMEM_CACHE_DIR=str(tmp_path / "cache"),
               PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]))
    done = subprocess.run(
        ["vidmem", "run", "mist", "--root", "SIM-mist", "--out", "runs/mist-example",
         "--arms", "baseline", "--generator", "command", "--generator-opt",
         f"template={TEMPLATE}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    clips = sorted((tmp_path / "runs/mist-example/rollouts").rglob("*.mp4"))
    assert {c.name for c in clips} == {"setup.mp4", "gap.mp4", "try_0.mp4"}
    for clip in clips:
        info, (n, fps) = probe(clip), _asked(clip)
        assert (info.n_frames, info.fps) == (n, fps), clip


@pytest.mark.slow
def test_track_b_loop_with_the_example_script(tmp_path):
    """Three segments through the loop; segment 1 has no reference: a grey clip."""
    from vidmem.benchmarks.vmem_track_b.config import ScorerConfig
    from vidmem.registry import BENCHMARKS

    bench = BENCHMARKS.load("vmem_track_b")
    build("vmem_track_b", tmp_path / "SIM", seed=0, n_cases=1)
    rollout = bench.rollouts(bench.load(tmp_path / "SIM"), tmp_path / "rollouts",
                             ScorerConfig(preset="offline", conditions=("seg_uniform",)))[0]

    class ThreeSegments(CommandGenerator):
        def generate(self, request):
            if request.request_id.endswith("seg_004"):
                raise StopIteration  # enough: segments 1-3 are what this test reads
            return super().generate(request)

    with contextlib.suppress(StopIteration):
        bench.run_rollout(rollout, ThreeSegments(TEMPLATE), {"generator_key": "example"})
    folder = Path(rollout.request.out_path).parent
    clips = [folder / f"seg_00{n}.mp4" for n in (1, 2, 3)]
    for clip in clips:
        info, (n, fps) = probe(clip), _asked(clip)
        assert (info.n_frames, info.fps) == (n, fps), clip
    first = next(iter(read_frames(clips[0], [0])))
    assert np.abs(first.astype(int) - 128).max() <= 3  # no image: the grey canvas
    request = json.loads(Path(f"{clips[1]}.request.json").read_text())
    assert request["references"], "segment 2 of seg_uniform has references"


def test_example_script_picks_the_image_the_request_shows(tmp_path):
    """start_image first, else reference 1 (an object with a path), else none."""
    from PIL import Image

    spec = importlib.util.spec_from_file_location("request_to_video", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    red, blue = tmp_path / "red.png", tmp_path / "blue.png"
    Image.new("RGB", (8, 8), (255, 0, 0)).save(red)
    Image.new("RGB", (8, 8), (0, 0, 255)).save(blue)
    base = {"start_image": None, "references": [], "context_video": None}
    ref = {"path": str(blue), "source": "seg_001", "source_time_seconds": 0.5}
    assert script.picture(base) is None
    assert script.picture({**base, "references": [ref]}).getpixel((0, 0)) == (0, 0, 255)
    both = {**base, "start_image": str(red), "references": [ref]}
    assert script.picture(both).getpixel((0, 0)) == (255, 0, 0)
