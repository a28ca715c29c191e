"""`vidmem analyze vmem_track_b RUN --only quality` on a tiny sim run (one 14-segment story,
none and last_seen, 6-frame clips; a copy of the session's shared run): the file and the
report section, per-clip numbers equal to calling metrics/clip_quality on the clip,
Spearman equal to scipy on the stored values, a resume that recomputes nothing, and a
frozen clip that reads as frozen."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from scipy import stats

from vidmem.benchmarks.vmem_track_b import analysis_quality
from vidmem.benchmarks.vmem_track_b.benchmark import TrackB
from vidmem.cli import main
from vidmem.io.video import probe, read_frames, write_video
from vidmem.metrics.clip_quality import METRICS, clip_quality
from vidmem.models.backends.classic_embed import HsvLbpEmbedder
from vidmem.models.backends.classic_flow import FarnebackFlow

pytestmark = pytest.mark.slow  # 28 sim clips generated, judged and measured (~1-2 min)

NAME = "vidmem.benchmarks.vmem_track_b.analysis_quality"


def cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    got = capsys.readouterr()
    code = exc.value.code if isinstance(exc.value.code, int) else (0 if exc.value.code is None else 1)
    return code, got.out, got.err


@pytest.fixture(autouse=True)
def declared(monkeypatch):
    monkeypatch.setattr(TrackB, "analyses", {"quality": NAME})


@pytest.fixture(scope="module")
def sim_run(track_b_world, track_b_short_run, tmp_path_factory):
    """A copy of the session's run of 1.5 s clips (conftest): the analysis writes into it."""
    base = track_b_world.workspace(tmp_path_factory.mktemp("track_b_quality"),
                                   run=track_b_short_run)
    return base / "run"


def _result(run):
    return json.loads((run / "analyses" / "quality.json").read_text("utf-8"))


def test_quality_per_clip_values_spearman_and_resume(sim_run, capsys, monkeypatch):
    run = sim_run
    code, _, err = cli(capsys, "analyze", "vmem_track_b", str(run), "--only", "quality", "--quiet")
    assert code in (0, None), err
    record = _result(run)
    data = record["result"]
    assert record["protocol"]["metrics.dynamic_degree_flow"]["rule"].startswith("DIFFERS")
    assert data["execution"] == {"stories": 1, "computed": 1, "cached": 0}
    assert data["n_clips"] == 28 and data["n_missing_clips"] == 0
    assert data["changed_since_scoring"] == []
    assert "Clip quality (not memory)" in (run / "report" / "report.md").read_text("utf-8")

    # per clip: the same numbers as metrics/clip_quality called on that clip directly
    clips = {(c["condition"], c["segment_id"]): c for c in data["clips"]}
    emb, flow = HsvLbpEmbedder(), FarnebackFlow()
    for cond, seg in (("none", 3), ("last_seen", 9)):
        path = run / "rollouts" / "0001_sim_s0" / cond / f"seg_{seg:03d}.mp4"
        info = probe(path)
        want = clip_quality(read_frames(path, range(info.n_frames)), info.fps, flow=flow,
                            subject_embed=emb.embed_images, background_embed=emb.embed_images)
        got = clips[(cond, seg)]
        for k, v in want.to_dict().items():
            assert got[k] == pytest.approx(v, rel=1e-12, abs=1e-12), (cond, seg, k)

    # Spearman per condition: scipy on the stored per-clip values (clips with recall)
    for cond, summary in data["conditions"].items():
        rows = [c for c in data["clips"] if c["condition"] == cond and c["recall"] is not None]
        assert summary["n_without_recall"] == 14 - len(rows)
        recall = [c["recall"] for c in rows]
        for m in METRICS:
            s = summary["spearman"][m]
            q = [float(c[m]) for c in rows]
            assert s["n"] == len(rows)
            if np.ptp(q) == 0 or np.ptp(recall) == 0:
                assert s["rho"] is None
            else:
                assert s["rho"] == pytest.approx(stats.spearmanr(q, recall).statistic)
            mean = summary["means"][m]
            assert mean["mean"] == pytest.approx(np.mean([float(c[m]) for c in data["clips"]
                                                           if c["condition"] == cond]))
    assert set(data["differences"]) == {"last_seen"}
    d = data["differences"]["last_seen"]["rates"]["temporal_flickering"]
    assert d["difference"] == pytest.approx(
        data["conditions"]["last_seen"]["means"]["temporal_flickering"]["mean"]
        - data["conditions"]["none"]["means"]["temporal_flickering"]["mean"])

    # resume: nothing is measured again
    def boom(*a, **k):
        raise AssertionError("clip_quality called on resume")

    monkeypatch.setattr(analysis_quality, "clip_quality", boom)
    code, _, err = cli(capsys, "analyze", "vmem_track_b", str(run), "--only", "quality", "--quiet")
    assert code in (0, None), err
    again = _result(run)["result"]
    assert again["execution"] == {"stories": 1, "computed": 0, "cached": 1}
    assert again["clips"] == data["clips"]


def test_a_frozen_clip_reads_frozen_and_is_flagged(sim_run, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(sim_run, run)
    seg = run / "rollouts" / "0001_sim_s0" / "none" / "seg_002.mp4"
    info = probe(seg)
    first = read_frames(seg, [0])[0]
    write_video(seg, [first] * info.n_frames, info.fps, crf=0)  # lossless: frames stay equal
    code, _, err = cli(capsys, "analyze", "vmem_track_b", str(run), "--only", "quality",
                       "--opt", "conditions=none", "--quiet")
    assert code in (0, None), err
    data = _result(run)["result"]
    assert data["n_clips"] == 14 and set(data["conditions"]) == {"none"}
    frozen = next(c for c in data["clips"] if c["segment_id"] == 2)
    assert frozen["dynamic_degree"] is False
    assert frozen["temporal_flickering"] == 1.0
    assert frozen["changed_since_scoring"] is True
    assert data["changed_since_scoring"] == ["0001_sim_s0/none/2"]


def test_bad_options_are_user_errors(sim_run, capsys):
    code, _, err = cli(capsys, "analyze", "vmem_track_b", str(sim_run), "--only", "quality",
                       "--opt", "embeder=dinov3/vitb16")
    assert code not in (0, None) and "unknown --opt" in err and "embedder" in err
    code, _, err = cli(capsys, "analyze", "vmem_track_b", str(sim_run), "--only", "quality",
                       "--opt", "flow=classic/hsv-lbp")
    assert code not in (0, None) and "flow" in err
