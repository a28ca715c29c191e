"""What a killed or failed run leaves behind does not block the next one (issue 23 item 9):
stale temp files go on --resume, a half-made run directory (vidmem's own skeleton and
nothing else) can be created again, user files are never taken for it, and a truncated
summary.json is a clear error."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

import pytest

from vidmem.errors import StoreError
from vidmem.runners import store as store_mod
from vidmem.runners.store import ItemStore, RunDir, RunManifest


def _manifest(**config) -> RunManifest:
    return RunManifest(benchmark="b", benchmark_version="1", command=[],
                       config={"k": 1, **config})


def test_stale_temp_files_are_removed_on_resume(tmp_path):
    run = RunDir.create(tmp_path / "r", _manifest())
    run.set_status("failed")
    stale = [tmp_path / "r" / ".run.json.4242.tmp", tmp_path / "r" / "scores.jsonl.tmp",
             tmp_path / "r" / ".summary.json.4242.tmp"]
    for path in stale:
        path.write_text('{"half')
    user = tmp_path / "r" / "run.json.tmp.bak"
    user.write_text("mine")
    run = RunDir.create(tmp_path / "r", _manifest(), resume=True)
    assert run.state == "resumed"
    assert [p for p in stale if p.exists()] == []
    assert user.read_text() == "mine"


def _full_disk(monkeypatch):
    def refuse(path, text):
        raise StoreError(f"{path}: cannot write ([Errno {errno.ENOSPC}] No space left on device)")
    monkeypatch.setattr(store_mod, "_write_atomic", refuse)


def test_a_creation_that_failed_on_a_full_disk_leaves_nothing_and_can_be_retried(
        tmp_path, monkeypatch):
    with monkeypatch.context() as m:
        _full_disk(m)
        with pytest.raises(StoreError, match="No space left"):
            RunDir.create(tmp_path / "r", _manifest())
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == [".vidmem.lock"]
    run = RunDir.create(tmp_path / "r", _manifest())
    assert run.state == "new" and run.run_json.is_file()


@pytest.mark.parametrize("skeleton", [
    ["report/"],
    ["report/", ".run.json.999.tmp"],
    ["report/", "items.sqlite(empty)"],
    ["report/", "items.sqlite(0 bytes)", "items.sqlite-journal"],
])
def test_a_half_made_run_directory_of_a_killed_creation_is_created_again(tmp_path, skeleton):
    root = tmp_path / "r"
    root.mkdir()
    for name in skeleton:
        if name == "report/":
            (root / "report").mkdir()
        elif name == "items.sqlite(empty)":
            ItemStore(root / "items.sqlite").close()
        elif name == "items.sqlite(0 bytes)":
            (root / "items.sqlite").write_bytes(b"")
        else:
            (root / name).write_text('{"half')
    run = RunDir.create(root, _manifest())
    assert run.state == "new" and run.run_json.is_file()
    with run.items() as items:
        assert items.counts()["total"] == 0


@pytest.mark.parametrize("user_file", ["notes.txt", "report/index.html", "items.sqlite(rows)",
                                       "items.sqlite(foreign)"])
def test_anything_else_is_never_taken_for_a_skeleton(tmp_path, user_file):
    root = tmp_path / "r"
    (root / "report").mkdir(parents=True)
    if user_file == "items.sqlite(rows)":
        with ItemStore(root / "items.sqlite") as items:
            items.put("k", item_id="i", kind="score", request={})
        name = "items.sqlite"
    elif user_file == "items.sqlite(foreign)":
        with sqlite3.connect(root / "items.sqlite") as db:
            db.execute("CREATE TABLE photos (x)")
        name = "items.sqlite"
    else:
        (root / user_file).write_text("mine")
        name = Path(user_file).parts[0]
    with pytest.raises(StoreError, match=f"found files but no run.json \\({name}"):
        RunDir.create(root, _manifest())
    assert (root / name).exists()


def test_a_truncated_summary_is_a_clear_error(tmp_path):
    run = RunDir.create(tmp_path / "r", _manifest())
    (run.path / "summary.json").write_text('{"benchmark": "b", "mean": 0.')
    with pytest.raises(StoreError, match="summary.json: cannot read the summary") as exc:
        run.summary()
    assert "--resume" in exc.value.hint
