"""The identity analysis freezes its cuts in run.json before it calls a unit: the entry is
there after the analysis, a rerun and a resume keep it, more control pairs are refused,
``--opt recalibrate=true`` replaces it, and ``vidmem calibrate`` prints it from run.json.

The measurements are hand-made (the measuring step is replaced), so the cuts are known:
props 0.785 = (0.95 + 0.62) / 2, the midpoint between the controls."""

from __future__ import annotations

import json

import pytest

from vidmem.benchmarks.vmem_track_b import analysis_identity as identity
from vidmem.cli import main
from vidmem.errors import UserInputError
from vidmem.registry import BENCHMARKS
from vidmem.runners.analysis_run import AnalysisOptions, run_analyses
from vidmem.runners.manifest import RunManifest, read_manifest
from vidmem.runners.store import RunDir


def _row(score, found=True, family="return_after_absence"):
    return {"key": f"u{score}", "family": family, "kind": "prop", "eid": "e1", "gap": 3,
            "segment_id": 5, "previous_segment_id": 2, "found_current": found,
            "found_previous": True, "why": None, "score": score if found else None}


def _story(extra_negative=()):
    """One story: a perfect-memory return at 0.96 (below the 0.999 positives), a none
    return at 0.4; controls separated between 0.95 and 0.62."""
    return {"units": {"none": [_row(0.4), _row(None, found=False)],
                      "perfect": [_row(0.96), _row(0.999)]},
            "controls": {"positive": [{"kind": "prop", "score": s} for s in (0.999, 0.998, 0.95)],
                         "negative": [{"kind": "prop", "score": s}
                                      for s in (0.62, 0.3, *extra_negative)]}}


@pytest.fixture()
def run_path(tmp_path, monkeypatch):
    bench = BENCHMARKS.load("vmem_track_b")
    m = RunManifest(benchmark=bench.name, benchmark_version=bench.version,
                    config={"scorer": {"conditions": ["none", "perfect"],
                                       "judge": "judge/sim-cards", "n_resamples": 50}})
    run = RunDir.create(tmp_path / "run", m)
    run.set_status("complete")
    monkeypatch.setattr(identity, "_measure", lambda *a: {"s1": _story()})
    return run.path


def _analyse(path, **opts):
    bench = BENCHMARKS.load("vmem_track_b")
    return run_analyses(bench, RunDir.open(path), ["identity"],
                        AnalysisOptions(opts=opts, quiet=True))["identity"]["result"]


def _cli(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    got = capsys.readouterr()
    return exc.value.code, got.out, got.err


def test_run_json_holds_the_cut_the_conditions_were_scored_with(run_path):
    res = _analyse(run_path)
    (key,) = read_manifest(run_path).calibration["identity"]
    entry = read_manifest(run_path).calibration["identity"][key]
    assert key == res["calibration_key"] and key.startswith("classic/hsv-lbp crops / ")
    assert entry["kinds"] == res["calibration"] and entry["frozen_at"] == res[
        "calibration_frozen_at"]
    assert entry["kinds"]["prop"]["cut"] == pytest.approx(0.785)
    assert entry["kinds"]["character"]["cut"] is None
    assert entry["settings"]["detector"] == "sim-cards" and entry["n_controls"] == {
        "positive": 3, "negative": 2}
    # the 0.96 return is the same entity under the midpoint (the old cut, 0.95, sat on
    # the lowest positive control)
    assert res["table"]["perfect"]["return_after_absence"]["same_all"] == 1.0
    assert res["table"]["none"]["return_after_absence"]["same_all"] == 0.0
    assert not (run_path / "analyses" / "identity.calibration.json").exists()
    assert identity.read_calibration(run_path) == {key: entry}


def test_rerun_and_resume_keep_the_frozen_entry(run_path):
    _analyse(run_path)
    frozen = read_manifest(run_path).calibration
    RunDir.create(run_path, RunDir.open(run_path).manifest.model_copy(
        update={"calibration": {}}), resume=True)
    assert read_manifest(run_path).calibration == frozen
    again = _analyse(run_path)
    assert read_manifest(run_path).calibration == frozen
    assert again["calibration_frozen_at"] == next(iter(frozen["identity"].values()))[
        "frozen_at"]


def test_changed_controls_are_refused_and_recalibrate_replaces(run_path, monkeypatch):
    first = _analyse(run_path)
    monkeypatch.setattr(identity, "_measure", lambda *a: {"s1": _story(extra_negative=(0.97,))})
    with pytest.raises(UserInputError) as exc:
        _analyse(run_path)
    text = " ".join(f"{exc.value.message} {exc.value.hint}".split())
    assert str(run_path) in text and first["calibration_key"] in text
    assert "--opt recalibrate=true" in text
    assert read_manifest(run_path).calibration["identity"][first["calibration_key"]][
        "kinds"] == first["calibration"]
    res = _analyse(run_path, recalibrate="true")
    # negative 0.97 sits between the positives: J = 1 - 1/3 at 0.998 (the run {0.998}),
    # halfway down to 0.97
    assert res["calibration"]["prop"]["cut"] == pytest.approx((0.998 + 0.97) / 2)
    assert read_manifest(run_path).calibration["identity"][res["calibration_key"]][
        "kinds"] == res["calibration"]
    with pytest.raises(UserInputError, match="recalibrate='maybe' is not a yes/no value"):
        _analyse(run_path, recalibrate="maybe")


def test_another_crop_embedder_gets_its_own_entry(run_path):
    a = _analyse(run_path)["calibration_key"]
    b = _analyse(run_path, crop_embedder="classic/hsv-hist")["calibration_key"]
    assert a != b and set(read_manifest(run_path).calibration["identity"]) == {a, b}


def test_calibrate_prints_from_run_json(run_path, capsys):
    res = _analyse(run_path)
    code, out, err = _cli(capsys, "calibrate", "vmem_track_b", str(run_path), "--json")
    assert code in (0, None), err
    assert json.loads(out) == {"identity": read_manifest(run_path).calibration["identity"]}
    code, out, err = _cli(capsys, "calibrate", "vmem_track_b", str(run_path))
    assert code in (0, None), err
    flat = " ".join(out.split())
    assert f"identity: {res['calibration_key']} (frozen in run.json at" in flat
    assert "identity / character: no cut (no positive or negative control pairs)" in flat
    assert "cut 0.7850 (same iff score >= cut)" in flat and "<- cut 0.7850" in flat
    # without the entry in run.json there is nothing to print, whatever analyses/ holds
    run = RunDir.open(run_path)
    run.manifest = run.manifest.model_copy(update={"calibration": {}})
    run.save()
    code, _, err = _cli(capsys, "calibrate", "vmem_track_b", str(run_path))
    assert code == 2 and "no calibration written yet" in err
