"""Calibrations frozen in run.json: not part of the run's identity, read from older files
that lack them, reused when the controls are the same, refused when they changed,
replaced only on request, and kept across --resume."""

from __future__ import annotations

import json

import pytest

from vidmem.errors import StoreError, UserInputError
from vidmem.runners.frozen_calibration import controls_sha256
from vidmem.runners.manifest import RunManifest, identity_diff, read_manifest
from vidmem.runners.store import RunDir

CUTS = {"prop": {"cut": 0.785, "tpr": 1.0, "fpr": 0.0}}


def _manifest(**calibration):
    return RunManifest(benchmark="toy", benchmark_version="1", config={"n": 3},
                       seeds={"s": 0}, calibration=calibration)


def _freeze(run, controls, cuts=CUTS, **kw):
    return run.freeze_calibration("identity", "crops #abc", {"kinds": cuts},
                                  controls_sha256=controls_sha256(controls), **kw)


def test_older_run_json_without_the_field_reads_as_empty(tmp_path):
    data = json.loads(_manifest().to_json())
    del data["calibration"]
    (tmp_path / "run.json").write_text(json.dumps(data))
    m = read_manifest(tmp_path)
    assert m.calibration == {} and m.config_hash == _manifest().config_hash


def test_calibration_is_not_part_of_the_identity():
    a, b = _manifest(), _manifest(identity={"k": {"cut": 0.5}})
    assert identity_diff(a, b) == [] and a.config_hash == b.config_hash


def test_freeze_writes_run_json_then_reuses_the_same_controls(tmp_path):
    run = RunDir.create(tmp_path / "r", _manifest())
    first = _freeze(run, [0.9, 0.2])
    stored = read_manifest(run.path).calibration["identity"]["crops #abc"]
    assert stored == first and stored["kinds"] == CUTS
    assert stored["controls_sha256"] == controls_sha256([0.9, 0.2])
    # same controls, other fitting code: the frozen entry comes back, run.json untouched
    before = run.run_json.read_bytes()
    again = _freeze(RunDir.open(run.path), [0.9, 0.2], cuts={"prop": {"cut": 0.9}})
    assert again == first and run.run_json.read_bytes() == before


def test_changed_controls_are_refused_and_replace_refits(tmp_path):
    run = RunDir.create(tmp_path / "r", _manifest())
    first = _freeze(run, [0.9, 0.2])
    with pytest.raises(UserInputError) as exc:
        _freeze(run, [0.9, 0.2, 0.3], fix="pass --opt recalibrate=true")
    text = f"{exc.value.message} {exc.value.hint}"
    assert str(run.path) in text and "'crops #abc'" in text and "recalibrate=true" in text
    assert read_manifest(run.path).calibration["identity"]["crops #abc"] == first
    new = _freeze(run, [0.9, 0.2, 0.3], cuts={"prop": {"cut": 0.6}}, replace=True)
    assert new["kinds"] == {"prop": {"cut": 0.6}}
    assert read_manifest(run.path).calibration["identity"]["crops #abc"] == new


def test_a_second_key_gets_its_own_entry(tmp_path):
    run = RunDir.create(tmp_path / "r", _manifest())
    _freeze(run, [0.9])
    run.freeze_calibration("identity", "dinov3 #def", {"kinds": {}},
                           controls_sha256=controls_sha256([0.1]))
    assert set(read_manifest(run.path).calibration["identity"]) == {"crops #abc", "dinov3 #def"}


def test_freeze_does_not_undo_another_writer(tmp_path):
    stale = RunDir.create(tmp_path / "r", _manifest())
    other = RunDir.open(stale.path)
    other.set_counts({"done": 7})
    _freeze(stale, [0.9])  # stale's manifest has no counts; run.json is read again
    assert read_manifest(stale.path).counts == {"done": 7}


def test_unstorable_calibrations_are_refused(tmp_path):
    run = RunDir.create(tmp_path / "r", _manifest())
    with pytest.raises(StoreError, match="calibration identity/crops #abc"):
        _freeze(run, [0.9], cuts={"prop": {"cut": float("nan")}})
    assert read_manifest(run.path).calibration == {}


@pytest.mark.parametrize("status", ["running", "failed", "complete"])
def test_resume_and_reopen_keep_the_frozen_entry(tmp_path, status):
    run = RunDir.create(tmp_path / "r", _manifest())
    entry = _freeze(run, [0.9])
    if status != "running":
        run.set_status(status)
    del run  # releases the run lock
    # the new command's manifest carries a different entry under the same key: the
    # frozen one wins, an unseen one is added
    again = RunDir.create(tmp_path / "r", _manifest(identity={"crops #abc": {"cut": 0.1},
                                                              "other #1": {"cut": 0.2}}),
                          resume=True)
    assert again.state == ("complete" if status == "complete" else "resumed")
    kept = read_manifest(again.path).calibration["identity"]
    assert kept["crops #abc"] == entry and kept["other #1"] == {"cut": 0.2}
    assert again.manifest.calibration["identity"]["crops #abc"] == entry


def test_overwrite_drops_it(tmp_path):
    run = RunDir.create(tmp_path / "r", _manifest())
    _freeze(run, [0.9])
    del run
    fresh = RunDir.create(tmp_path / "r", _manifest(), overwrite=True)
    assert read_manifest(fresh.path).calibration == {}
