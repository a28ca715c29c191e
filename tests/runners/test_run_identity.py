"""A run's identity does not depend on how a path is spelled (issue 23 item 7).

The dataset root is where the inputs are, not what they are (the item keys hold the
files' SHA-256s): a run started with a relative ``--root`` resumes with the absolute
path, with ``a/../a``, through a symlink and after the dataset moved, and computes
nothing again; a different setting is still refused, naming it and how to go on.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from vidmem.cli import main
from vidmem.errors import StoreError
from vidmem.io.video import write_video
from vidmem.metrics.loop_paths import LOOPS
from vidmem.runners.manifest import InputLocation, RunManifest, identity_diff
from vidmem.runners.store import RunDir

FPS, N = 8, 16


def _dataset(base: Path) -> tuple[Path, Path]:
    ds, videos = base / "ds", base / "videos"
    (ds / "start_images").mkdir(parents=True)
    videos.mkdir()
    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 255, (32, 48, 3), dtype=np.uint8) for _ in range(N)]
    Image.fromarray(frames[0]).save(ds / "start_images" / "s.png")
    row = {"case_id": "c1", "start_image": "start_images/s.png", "loop_id": "yaw_loop_180",
           "prompt": LOOPS["yaw_loop_180"].prompt, "duration_seconds": N / FPS, "fps": FPS}
    (ds / "cases.jsonl").write_text(json.dumps(row) + "\n")
    write_video(videos / "c1.mp4", frames, FPS)
    return ds, videos


def _score(capsys, root: str, videos: str, out: str, *extra: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(["score", "memory_loop", "--root", root, "--videos", videos, "--out", out,
              "--json", *extra])
    got = capsys.readouterr()
    return exc.value.code or 0, got.out, got.err


def _mark_killed(run_dir: Path) -> None:
    """Leave run.json as a killed run leaves it: status 'running'."""
    data = json.loads((run_dir / "run.json").read_text())
    data.update(status="running", finished_at=None)
    (run_dir / "run.json").write_text(json.dumps(data))


def test_a_run_resumes_however_its_root_is_spelled_and_after_it_moved(tmp_path, capsys,
                                                                      monkeypatch):
    ds, videos = _dataset(tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    code, out, err = _score(capsys, "data/ds", "data/videos", "run")
    assert code == 0, err
    assert json.loads(out)["execution"]["computed"] == 1
    first = json.loads((tmp_path / "run" / "run.json").read_text())
    assert first["config"]["dataset_root"] == str(ds.resolve())
    assert "dataset_root" in first["location_keys"]

    (tmp_path / "link").symlink_to(tmp_path / "data")
    moved = tmp_path / "elsewhere" / "ds"
    shutil.copytree(ds, moved)
    for root in (str(ds.resolve()), "data/../data/ds", "link/ds", str(moved)):
        _mark_killed(tmp_path / "run")
        code, out, err = _score(capsys, root, "data/videos", "run", "--resume")
        assert code == 0, f"{root}: {err}"
        assert json.loads(out)["execution"] == {"total": 1, "cached": 1, "computed": 0,
                                                "errors": 0}, root
    # run.json says where the data is now, and the run's identity did not change
    last = json.loads((tmp_path / "run" / "run.json").read_text())
    assert last["config"]["dataset_root"] == str(moved.resolve())
    assert last["config_hash"] == first["config_hash"]


def test_a_different_setting_is_refused_naming_it_and_how_to_resume(tmp_path, capsys,
                                                                     monkeypatch):
    _dataset(tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    assert _score(capsys, "data/ds", "data/videos", "run")[0] == 0
    _mark_killed(tmp_path / "run")
    code, _, err = _score(capsys, "data/ds", "data/videos", "run", "--resume",
                          "--max-pairs", "12")
    assert code != 0
    flat = " ".join(err.split())
    assert "scorer.max_pairs (24 -> 12)" in flat
    assert "dataset_root" not in flat
    assert "rerun with its settings (scorer.max_pairs was 24, now 12)" in flat
    assert "--overwrite" in flat and "new --out" in flat


def test_run_json_from_before_location_keys_still_resumes(tmp_path):
    """A run.json written before ``location_keys`` existed hashed its root too."""
    old = RunManifest(benchmark="b", benchmark_version="1", command=[],
                      config={"gold_root": "rel/gold", "scorer": {"k": 8}})
    assert old.location_keys == []
    first = RunDir.create(tmp_path / "run", old)
    with first.items() as store:  # one finished item: a run with nothing done just restarts
        store.put("k", item_id="a", kind="k", request=1)
    first.set_status("failed")
    del first
    new = RunManifest(benchmark="b", benchmark_version="1", command=[],
                      config={"gold_root": InputLocation(tmp_path / "gold"), "scorer": {"k": 8}})
    run = RunDir.create(tmp_path / "run", new, resume=True)
    assert run.state == "resumed"
    assert run.manifest.config["gold_root"] == str((tmp_path / "gold").resolve())
    assert run.manifest.config_hash == new.config_hash
    # and a changed setting is refused, naming it
    run = None
    other = RunManifest(benchmark="b", benchmark_version="1", command=[],
                        config={"gold_root": InputLocation(tmp_path), "scorer": {"k": 9}})
    with pytest.raises(StoreError, match=r"scorer\.k \(8 -> 9\)") as exc:
        RunDir.create(tmp_path / "run", other, resume=True)
    assert "scorer.k was 8, now 9" in exc.value.hint


def test_location_keys_are_not_part_of_the_hash_but_other_paths_are():
    a = RunManifest(benchmark="b", benchmark_version="1", command=[],
                    config={"root": InputLocation("/x/a/../a"), "other": "/x"})
    b = RunManifest(benchmark="b", benchmark_version="1", command=[],
                    config={"root": InputLocation("/y"), "other": "/x"})
    assert a.config["root"] == "/x/a" and a.config_hash == b.config_hash
    c = RunManifest(benchmark="b", benchmark_version="1", command=[],
                    config={"root": InputLocation("/y"), "other": "/z"})
    assert identity_diff(b, c) == ['other ("/x" -> "/z")']
    # what a manifest reads back from run.json keeps its location keys
    assert RunManifest.model_validate_json(a.to_json()).config_hash == a.config_hash
