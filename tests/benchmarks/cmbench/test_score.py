"""CMBench scoring end to end on a small hand-made dataset in the official layout.

The context shows a cat-face patch; the "perfect" continuation brings the same patch back,
the "none" continuation shows a different object in its place. Truth is known by
construction, so the scorer's answers can be checked without reading its own output.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from skimage import data, transform

from vidmem.benchmarks.cmbench import BENCHMARK as bench
from vidmem.benchmarks.cmbench.benchmark import is_official
from vidmem.benchmarks.cmbench.data import load_cmbench
from vidmem.benchmarks.cmbench.scorer import ScorerConfig
from vidmem.cli import main
from vidmem.errors import UserInputError
from vidmem.io.video import write_video
from vidmem.runners import benchmark_run as runner

W, H, FPS = 320, 180, 8
PATCH = (60, 75)  # h, w


def _resize(img, shape):
    return (transform.resize(img, shape, anti_aliasing=True) * 255).astype(np.uint8)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("cmb")
    ds = root / "ds"
    (ds / "videos" / "synthetic").mkdir(parents=True)
    bg = _resize(data.rocket(), (H, W))
    cat = _resize(data.chelsea()[40:200, 120:320], PATCH)
    cup = _resize(data.coffee()[30:330, 150:450], PATCH)

    def clip(patch, n, visible, x_of=lambda i: 40 + i % 50):
        out = []
        for i in range(n):
            f = bg.copy()
            if visible(i):
                x = x_of(i)
                f[60:120, x:x + PATCH[1]] = patch
            out.append(f)
        return np.stack(out)

    write_video(ds / "videos/synthetic/syn_001.mp4", clip(cat, 80, lambda i: 10 <= i < 30), FPS)
    for name, patch in (("perfect", cat), ("none", cup)):
        (root / name).mkdir()
        write_video(root / name / "syn_001_reappear_01.mp4", clip(patch, 32, lambda i: i >= 8), FPS)
    (root / "empty").mkdir()
    write_video(root / "empty" / "syn_001_reappear_01.mp4", clip(cat, 16, lambda i: False), FPS)
    x = 40 + 20 % 50
    task = {
        "type": "synthetic", "task_id": "syn_001_reappear_01", "scene": "rocket",
        "video": "videos/synthetic/syn_001.mp4",
        "context_clip_prompts": [{"clip_id": f"{i:02d}", "clip_prompt": "a cat"} for i in range(1, 7)],
        "continue_prompt": "The cat comes back.", "task_type": "reappear", "target_label": "cat",
        "target_aliases": ["kitten"],
        "references": [{"timestamp_seconds": 20 / FPS, "frame_index": 20,
                        "bbox_xyxy_normalized": [x / W, 60 / H, (x + 75) / W, 120 / H]}],
    }
    (ds / "metadata.jsonl").write_text(json.dumps(task) + "\n")
    return root


def _score(root, videos, out, cfg=None, allow_missing=False, **kw):
    ds = load_cmbench(root / "ds")
    cfg = cfg or ScorerConfig.from_preset("offline")
    run = runner.open_run(bench, ds, out, cfg, {"videos": str(videos)}, resume=False, overwrite=False, argv=None)
    return runner.score(bench, ds, run, videos, cfg, quiet=True, allow_missing=allow_missing, options=kw), run


def test_perfect_memory_scores_high_and_none_scores_zero(dataset, tmp_path):
    perfect, run = _score(dataset, dataset / "perfect", tmp_path / "p")
    none, _ = _score(dataset, dataset / "none", tmp_path / "n")
    assert perfect["score"]["mean"] > 0.9
    assert none["score"]["mean"] == 0.0  # the cup is never matched to the cat reference
    row = run.scores()[0]
    assert row["n_detected"] >= 20  # the cat is visible in 24 of 32 frames
    assert row["best_frame"] >= 8  # never before the patch appears
    assert not perfect["official"]


def test_task_score_is_the_max_over_frames(dataset, tmp_path):
    _, run = _score(dataset, dataset / "perfect", tmp_path / "p")
    with run.items() as store:
        (item,) = list(store.iter_items(kind="score"))
    sims = [f["similarity"][0] for f in item.response["frames"]]
    assert item.score["score"] == pytest.approx(max(s for s in sims if s is not None))
    assert all(s is None for s in sims[:8])  # no target, no detection, no similarity


def test_never_detected_scores_zero(dataset, tmp_path):
    res, run = _score(dataset, dataset / "empty", tmp_path / "e")
    assert res["score"]["mean"] == 0.0
    assert run.scores()[0]["n_detected"] == 0 and run.scores()[0]["best_frame"] is None


def test_direct_path_uses_the_annotated_box_on_every_frame(dataset, tmp_path):
    cfg = ScorerConfig.from_preset("direct", segmenter="classic/box", embedder="classic/hsv-lbp")
    res, run = _score(dataset, dataset / "perfect", tmp_path / "d", cfg)
    row = run.scores()[0]
    assert row["n_detected"] == row["n_frames_scored"] == 32
    none, _ = _score(dataset, dataset / "none", tmp_path / "dn", cfg)
    assert res["score"]["mean"] > none["score"]["mean"]


def test_rescoring_is_served_from_the_store_and_deterministic(dataset, tmp_path):
    first, _ = _score(dataset, dataset / "perfect", tmp_path / "p")
    ds = load_cmbench(dataset / "ds")
    cfg = ScorerConfig.from_preset("offline")
    run = runner.open_run(bench, ds, tmp_path / "p", cfg, {"videos": str(dataset / "perfect")},
                          resume=False, overwrite=False, argv=None)
    again = runner.score(bench, ds, run, dataset / "perfect", cfg, quiet=True)
    assert again["execution"]["computed"] == 0 and again["execution"]["cached"] == 1
    assert again["score"] == first["score"]
    other, _ = _score(dataset, dataset / "perfect", tmp_path / "p2")
    assert other["score"] == first["score"]


def test_missing_continuation_is_listed_or_scored_zero(dataset, tmp_path):
    empty_dir = tmp_path / "nothing"
    empty_dir.mkdir()
    with pytest.raises(UserInputError, match="syn_001_reappear_01"):
        _score(dataset, empty_dir, tmp_path / "m")
    res, _ = _score(dataset, empty_dir, tmp_path / "m2", allow_missing=True)
    assert res["n_missing_scored_zero"] == 1 and res["score"]["mean"] == 0.0


def test_kv_log_pruning_ratio_fps_and_speedup(dataset, tmp_path):
    def log(path: Path, visible: int, seconds: float) -> Path:
        rows = [
            {"task_id": "syn_001_reappear_01", "chunk": c, "layer": 0, "k_visible": visible, "k_full": 100,
             "current": False} for c in range(2)
        ] + [{"task_id": "syn_001_reappear_01", "chunk": 2, "layer": 0, "k_visible": 0, "k_full": 100,
              "current": True},
             {"task_id": "syn_001_reappear_01", "event": "timing", "continuation_seconds": seconds,
              "continuation_frames": 32}]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return path

    base, base_run = _score(dataset, dataset / "perfect", tmp_path / "full", kv_log=log(tmp_path / "full.jsonl", 100, 4.0))
    assert base["kv"]["pruning_ratio_mean"] == 0.0
    res, _ = _score(dataset, dataset / "perfect", tmp_path / "pruned",
                    kv_log=log(tmp_path / "pruned.jsonl", 25, 2.0), baseline=base_run.path)
    kv = res["kv"]
    assert kv["pruning_ratio_mean"] == pytest.approx(0.75)  # current chunk excluded
    assert kv["fps"] == pytest.approx(16.0) and kv["baseline_fps"] == pytest.approx(8.0)
    assert kv["speedup"] == pytest.approx(2.0)


def test_cli_score_writes_report(dataset, tmp_path, capsys):
    from vidmem.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["score", "cmbench", "--root", str(dataset / "ds"), "--videos", str(dataset / "perfect"),
              "--out", str(tmp_path / "cli"), "--json"])
    assert exc.value.code in (0, None)
    out = json.loads(capsys.readouterr().out)
    assert out["score"]["mean"] > 0.9
    html = Path(out["report"]["html"]).read_text()
    assert "syn_001_reappear_01" in html and "non-official" in html


@pytest.mark.models
def test_official_path_with_tiny_random_models(dataset, tmp_path):
    pytest.importorskip("transformers")
    from vidmem.models.tiny import tiny_official_cmbench

    weights = tiny_official_cmbench(tmp_path / "w")
    opts = {name: {"weights": path} for name, path in weights.items()}
    cfg = ScorerConfig.from_preset("official", detector_threshold=0.0, stride=4, batch_size=4)
    cfg = ScorerConfig(**{**cfg.__dict__, "backend_options": opts})
    res, run = _score(dataset, dataset / "perfect", tmp_path / "o", cfg)
    # the protocol's backends, but threshold 0 and stride 4 are not the protocol's settings
    assert res["official"] is False
    with run.items() as store:
        (item,) = list(store.iter_items(kind="score"))
    frames = item.response["frames"]
    assert [f["frame"] for f in frames] == list(range(0, 32, 4))
    sims = [f["similarity"][0] for f in frames]
    assert all(s is not None and -1.0 <= s <= 1.0 for s in sims)  # threshold 0: a box in every frame
    assert item.score["score"] == pytest.approx(max(sims))
    for f in frames:
        x0, y0, x1, y1 = f["box"]
        assert 0 <= x0 < x1 <= W and 0 <= y0 < y1 <= H
    again, _ = _score(dataset, dataset / "perfect", tmp_path / "o2", cfg)
    assert again["score"] == res["score"]  # deterministic across fresh runs


@pytest.mark.models
def test_official_path_scores_zero_when_nothing_passes_the_threshold(dataset, tmp_path):
    pytest.importorskip("transformers")
    from vidmem.models.tiny import tiny_official_cmbench

    weights = tiny_official_cmbench(tmp_path / "w")
    cfg = ScorerConfig.from_preset("official", detector_threshold=0.9999, stride=8)
    cfg = ScorerConfig(**{**cfg.__dict__, "backend_options": {n: {"weights": p} for n, p in weights.items()}})
    res, run = _score(dataset, dataset / "perfect", tmp_path / "z", cfg)
    assert res["score"]["mean"] == 0.0 and run.scores()[0]["n_detected"] == 0


def test_bad_backend_option_fails_before_any_task(dataset, tmp_path):
    cfg = ScorerConfig.from_preset("offline", detector_threshold=-3.0)
    with pytest.raises(UserInputError, match="threshold"):
        _score(dataset, dataset / "perfect", tmp_path / "bad", cfg)


def test_official_label_needs_the_protocol_backends_and_settings():
    assert is_official(ScorerConfig.from_preset("official"))
    assert not is_official(ScorerConfig.from_preset("official", stride=2))
    assert not is_official(ScorerConfig.from_preset("official", detector_threshold=0.2))
    assert not is_official(ScorerConfig.from_preset("official", embedder="dinov3/vits16"))
    assert not is_official(ScorerConfig.from_preset("offline"))


def test_a_continuation_far_shorter_than_requested_is_flagged(dataset, tmp_path):
    res, run = _score(dataset, dataset / "empty", tmp_path / "e")  # 16 frames; 64 requested
    row = run.scores()[0]
    assert row["short"] is True and row["video_frames"] == 16
    assert res["short_tasks"] == ["syn_001_reappear_01"]
    res, run = _score(dataset, dataset / "perfect", tmp_path / "p")  # 32 frames: half, not under it
    assert run.scores()[0]["short"] is False and res["short_tasks"] == []
    # the expectation follows what was requested
    ds = load_cmbench(dataset / "ds")
    cfg = ScorerConfig.from_preset("offline")
    run = runner.open_run(bench, ds, tmp_path / "e16", cfg, {}, resume=False, overwrite=False, argv=None)
    res = runner.score(bench, ds, run, dataset / "empty", cfg, quiet=True, requests={"frames": 16})
    assert res["short_tasks"] == []


def test_requests_carry_the_adapters_length_unless_told_otherwise(dataset, tmp_path, capsys):
    def manifest(*extra):
        out = tmp_path / f"m{len(extra)}.jsonl"
        with pytest.raises(SystemExit) as exc:
            main(["requests", "cmbench", "--root", str(dataset / "ds"), "--out", str(out), *extra])
        assert exc.value.code in (0, None)
        return [json.loads(line) for line in out.read_text().splitlines()]

    (req,) = manifest()
    assert (req["fps"], req["duration_seconds"]) == (16.0, 4.0)  # 64 frames at 16 fps
    (req,) = manifest("--frames", "40", "--fps", "8")
    assert (req["fps"], req["duration_seconds"]) == (8.0, 5.0)
