"""Ids that name files are safe file names, and runs never write outside their folder.

Issue 23 item 4: a MIST ``case_id`` of ``../../etc/evil`` passed validation and ``vidmem
run`` wrote clips outside the run directory. One rule (:func:`vidmem.io.safe_paths.id_problem`)
is checked by every validator; :func:`vidmem.io.safe_paths.inside` guards every write.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from vidmem.benchmarks.cmbench.data import validate_cmbench
from vidmem.benchmarks.cmbench.sim_build import build_cmbench
from vidmem.benchmarks.memory_loop.data import validate_memory_loop
from vidmem.benchmarks.memory_loop.sim_build import build_memory_loop
from vidmem.benchmarks.mist.cards import validate_cards
from vidmem.benchmarks.mist.sim_build import build_mist
from vidmem.benchmarks.vmem_track_b.loop import make_rollouts
from vidmem.benchmarks.vmem_track_b.loop_config import RetrievalConfig
from vidmem.benchmarks.vmem_track_b.sim_build import build_track_b
from vidmem.benchmarks.vmem_track_b.stories import load_stories
from vidmem.benchmarks.vmem_track_b.validate import validate_stories
from vidmem.cli import main
from vidmem.errors import UserInputError
from vidmem.io.safe_paths import MAX_ID_LENGTH, id_problem, inside

EVIL = "../../etc/evil"


# --------------------------------------------------------------------------- the rule


@pytest.mark.parametrize("value", [
    EVIL, "/etc/passwd", "a/b", "a\\b", "", ".", "..", ".hidden", "a\x00b", "a\nb", "tab\t",
    "a b", "x" * (MAX_ID_LENGTH + 1), "C:evil",
])
def test_unsafe_ids_are_refused(value):
    assert id_problem(value) is not None


@pytest.mark.parametrize("value", [
    "syn_001_reappear_01", "0001_lighthouse_keeper", "mist_s0_003", "spring",
    "caminandes_2_gran_dillama", "a.b-c_d", "x" * MAX_ID_LENGTH,
])
def test_safe_ids_pass(value):
    assert id_problem(value) is None


def test_inside_refuses_a_symlinked_folder_out_of_the_root(tmp_path):
    root, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    (root / "case").symlink_to(elsewhere, target_is_directory=True)
    assert inside(root, root / "ok" / "x.mp4") == root / "ok" / "x.mp4"
    with pytest.raises(UserInputError, match="outside"):
        inside(root, root / "case" / "x.mp4")
    with pytest.raises(UserInputError, match="outside"):
        inside(root, root / ".." / "x.mp4")


# --------------------------------------------------------------------------- MIST


def _mist_with_case_id(root: Path, case_id: str) -> None:
    build_mist(root, seed=0, n_cases=1)
    cases = root / "cases.jsonl"
    card = json.loads(cases.read_text("utf-8").splitlines()[0])
    card["case_id"] = case_id
    cases.write_text(json.dumps(card) + "\n", "utf-8")


def test_mist_unsafe_case_id_fails_validate(tmp_path):
    _mist_with_case_id(tmp_path / "sim", EVIL)
    report = validate_cards(tmp_path / "sim")
    bad = [p for p in report.errors if p.field == "case_id"]
    assert bad and "not a safe file name" in bad[0].message and "path separator" in bad[0].message
    assert "letters, digits" in bad[0].message  # the fix


def test_mist_run_refuses_an_unsafe_case_id_before_writing_anything(tmp_path, capsys):
    root = tmp_path / "data" / "sim"
    _mist_with_case_id(root, EVIL)
    out = tmp_path / "data" / "run"
    with pytest.raises(SystemExit) as exc:
        main(["run", "mist", "--root", str(root), "--generator", "sim", "--out", str(out),
              "--judge-cache", "off", "--quiet"])
    assert exc.value.code == 2
    assert "not a safe file name" in capsys.readouterr().err
    assert not out.exists()
    # where ../../etc/evil under RUN/rollouts would have landed
    assert not (tmp_path / "data" / "etc").exists() and not (tmp_path / "etc").exists()


# --------------------------------------------------------------------------- Track-B


def test_track_b_unsafe_story_id_fails_validate(tmp_path):
    root = tmp_path / "gold"
    build_track_b(root, seed=0, n_cases=1, n_segments=14)
    stem = load_stories(root)[0].story_id
    bad = f"{stem[:4]}_evil story"
    for folder, suffix in (("gt", ""), ("gt_source", ""), ("sut_prompts", "_name_anchored")):
        path = root / folder / f"{stem}{suffix}.json"
        data = json.loads(path.read_text("utf-8"))
        data["story_id"] = bad
        (root / folder / f"{bad}{suffix}.json").write_text(json.dumps(data), "utf-8")
        path.unlink()
    report = validate_stories(root)
    msgs = [p.message for p in report.errors if p.field == "story_id"]
    assert msgs and "not a safe file name" in msgs[0] and "' '" in msgs[0]


def test_track_b_rollouts_never_leave_the_rollouts_folder(tmp_path):
    root = tmp_path / "gold"
    build_track_b(root, seed=0, n_cases=1, n_segments=14)
    story = replace(load_stories(root)[0], story_id=EVIL)
    out = tmp_path / "run" / "rollouts"
    with pytest.raises(UserInputError, match="not a safe file name|outside"):
        make_rollouts([story], ["none"], out, RetrievalConfig(), gold_root=root,
                      benchmark="vmem_track_b", version="x")
    assert not (tmp_path / "etc").exists()


# --------------------------------------------------------------------------- CMBench, loop


def _rewrite_first_row(path: Path, field: str, value: str) -> None:
    lines = path.read_text("utf-8").splitlines()
    row = json.loads(lines[0])
    row[field] = value
    path.write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n", "utf-8")


def test_cmbench_unsafe_task_id_fails_validate_and_run(tmp_path, capsys):
    root = tmp_path / "data" / "cm"
    root.mkdir(parents=True)
    build_cmbench(root, seed=0, n_cases=1)
    _rewrite_first_row(root / "metadata.jsonl", "task_id", EVIL)
    report = validate_cmbench(root)
    assert any(p.field == "task_id" and "not a safe file name" in p.message
               for p in report.errors)
    out = tmp_path / "data" / "run"
    with pytest.raises(SystemExit) as exc:
        main(["run", "cmbench", "--root", str(root), "--generator", "sim", "--out", str(out),
              "--quiet"])
    assert exc.value.code == 2
    assert "not a safe file name" in capsys.readouterr().err
    assert not out.exists() and not (tmp_path / "data" / "etc").exists()


def test_memory_loop_unsafe_case_id_fails_validate(tmp_path):
    root = tmp_path / "ml"
    root.mkdir()
    build_memory_loop(root, seed=0, n_cases=1)
    _rewrite_first_row(root / "cases.jsonl", "case_id", "..")
    report = validate_memory_loop(root)
    assert any(p.field == "case_id" and "starts with '.'" in p.message for p in report.errors)


@pytest.mark.skipif(os.name == "nt", reason="POSIX file names")
def test_requests_are_checked_to_stay_in_the_outputs_folder(tmp_path):
    """A dataset built in Python (never validated) still cannot write outside."""
    from vidmem.benchmarks.cmbench.data import load_cmbench
    from vidmem.benchmarks.cmbench.requests import continuation_requests

    root = tmp_path / "cm"
    root.mkdir()
    build_cmbench(root, seed=0, n_cases=1)
    ds = load_cmbench(root)
    evil = replace(ds, tasks=(ds.tasks[0].model_copy(update={"task_id": EVIL}),))
    with pytest.raises(UserInputError, match="outside"):
        continuation_requests(evil, tmp_path / "run" / "videos")
