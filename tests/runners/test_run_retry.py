"""A first attempt that failed before its first item does not block the corrected retry,
and a run whose writer died reads as interrupted, not running (issue 26)."""

from __future__ import annotations

import fcntl
import gc
import os

import pytest
import runners_helpers as helpers

from vidmem.errors import StoreError
from vidmem.runners.store import NOTICE, RunDir, read_manifest


def _dead_first_attempt(root, **config):
    """What a run that failed loading its judge leaves: run.json 'running', an empty
    item store, and no process holding the lock."""
    run = RunDir.create(root, helpers.make_manifest(**config))
    del run  # releases the lock, as the process's exit does
    assert read_manifest(root).status == "running"


@pytest.fixture
def notices():
    said: list[str] = []
    token = NOTICE.set(said.append)
    yield said
    NOTICE.reset(token)


def test_corrected_retry_after_a_failure_before_the_first_item_starts(tmp_path, notices):
    _dead_first_attempt(tmp_path / "run", judge="bad-option")
    run = RunDir.create(tmp_path / "run", helpers.make_manifest(judge="fixed"))
    assert run.state == "new"
    assert read_manifest(run.path).config["judge"] == "fixed"
    assert len(notices) == 1
    assert "before its first item" in notices[0] and "judge: " in notices[0]
    assert "run.json replaced" in notices[0]


def test_same_settings_retry_needs_no_resume_when_nothing_was_done(tmp_path, notices):
    _dead_first_attempt(tmp_path / "run")
    run = RunDir.create(tmp_path / "run", helpers.make_manifest())
    assert run.state == "new" and "same settings" in notices[0]


def test_without_a_handler_the_notice_is_a_warning(tmp_path):
    _dead_first_attempt(tmp_path / "run", judge="a")
    with pytest.warns(UserWarning, match="stopped before its first item"):
        RunDir.create(tmp_path / "run", helpers.make_manifest(judge="b"))


def test_a_run_with_a_finished_item_is_still_protected(tmp_path, notices):
    run = RunDir.create(tmp_path / "run", helpers.make_manifest(judge="a"))
    with run.items() as store:
        store.put("k", item_id="x", kind="score", request=1)
    del run
    with pytest.raises(StoreError, match="different configuration"):
        RunDir.create(tmp_path / "run", helpers.make_manifest(judge="b"))
    with pytest.raises(StoreError, match="unfinished run.*status 'interrupted'"):
        RunDir.create(tmp_path / "run", helpers.make_manifest(judge="a"))
    assert notices == []


def test_a_run_that_wrote_a_clip_is_still_protected(tmp_path):
    _dead_first_attempt(tmp_path / "run", judge="a")
    clip = tmp_path / "run" / "rollouts" / "s1" / "clip_01.mp4"  # a partial rollout
    clip.parent.mkdir(parents=True)
    clip.write_bytes(b"x")
    with pytest.raises(StoreError, match="different configuration"):
        RunDir.create(tmp_path / "run", helpers.make_manifest(judge="b"))
    assert clip.exists()


def test_a_dead_running_run_reads_as_interrupted(tmp_path):
    _dead_first_attempt(tmp_path / "run")
    assert RunDir.open(tmp_path / "run").manifest.status == "interrupted"
    assert read_manifest(tmp_path / "run").status == "running"  # the file is not rewritten


def test_a_live_run_reads_as_running(tmp_path):
    _dead_first_attempt(tmp_path / "run")
    live = RunDir.create(tmp_path / "run", helpers.make_manifest(), resume=True)  # this process
    assert RunDir.open(tmp_path / "run").manifest.status == "running"
    del live
    # another process's lock: a descriptor of our own that RunDir does not know about
    fd = os.open(tmp_path / "run" / ".vidmem.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert RunDir.open(tmp_path / "run").manifest.status == "running"
    finally:
        os.close(fd)
    assert RunDir.open(tmp_path / "run").manifest.status == "interrupted"


def test_cli_retry_with_corrected_settings_proceeds_and_says_so(tmp_path, capsys, monkeypatch):
    """The issue's case: the official preset without its weights fails before the first
    item; the same command with the offline preset then just runs."""
    from test_run_identity import _dataset

    from vidmem.cli import main

    _dataset(tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VIDMEM_MODEL_DIR", str(tmp_path / "no-weights"))
    base = ["score", "memory_loop", "--root", "data/ds", "--videos", "data/videos",
            "--out", "run", "-q"]
    with pytest.raises(SystemExit) as exc:
        main([*base, "--preset", "official"])
    assert exc.value.code != 0 and "not found" in capsys.readouterr().err
    del exc  # its traceback holds the run (and its lock), as the dead process no longer does
    gc.collect()
    # the runner records the failure itself (a process killed outright reads as
    # 'interrupted' instead: test_a_dead_running_run_reads_as_interrupted)
    assert RunDir.open(tmp_path / "run").manifest.status == "failed"
    with pytest.raises(SystemExit) as exc:
        main([*base, "--preset", "offline"])
    err = capsys.readouterr().err
    assert exc.value.code in (0, None), err
    assert "stopped before its first item" in " ".join(err.split())
    assert read_manifest(tmp_path / "run").status == "complete"
