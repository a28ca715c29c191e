"""Run directories, run.json and the SQLite item store."""

from __future__ import annotations

import json
import multiprocessing
import pickle
import sqlite3

import numpy as np
import pytest
import runners_helpers as helpers

from vidmem.errors import StoreError, UserInputError
from vidmem.io.hashing import content_hash
from vidmem.runners.store import (
    RUN_SCHEMA_VERSION,
    ItemStore,
    RunDir,
    RunManifest,
    UnstorableValueError,
    git_revision,
    read_manifest,
)

# ------------------------------------------------------------------------ item store


def test_put_get_roundtrip_and_upsert(tmp_path):
    with ItemStore(tmp_path / "items.sqlite") as store:
        store.put(
            "k1",
            item_id="case-1",
            kind="embed",
            request={"frame": 3, "box": (1, 2, 3, 4)},
            response={"vec": np.arange(3, dtype=np.float32), "n": np.int64(7)},
            score={"sim": np.float32(0.5), "hit": np.bool_(True)},
        )
        got = store.get("k1")
        assert got.request == {"frame": 3, "box": [1, 2, 3, 4]}
        assert got.response == {"vec": [0.0, 1.0, 2.0], "n": 7}
        assert got.score == {"sim": 0.5, "hit": True}
        assert (got.status, got.error, got.attempts) == ("done", None, 1)
        assert store.get("nope") is None

        store.put("k1", item_id="case-1", kind="embed", request={}, status="error", error="boom")
        again = store.get("k1")
        assert (again.status, again.error, again.attempts) == ("error", "boom", 2)
        assert store.done_keys() == set()
        assert store.counts() == {"total": 1, "done": 0, "error": 1}


def test_iter_items_filters_and_orders(tmp_path):
    with ItemStore(tmp_path / "items.sqlite") as store:
        store.put_many(
            [
                {"key": "a", "item_id": "z", "kind": "embed", "request": 1},
                {"key": "b", "item_id": "y", "kind": "detect", "request": 2},
                {
                    "key": "c",
                    "item_id": "x",
                    "kind": "embed",
                    "request": 3,
                    "status": "error",
                    "error": "bad",
                },
            ]
        )
        assert [it.item_id for it in store.iter_items()] == ["x", "y", "z"]
        assert [it.key for it in store.iter_items(kind="embed")] == ["c", "a"]
        assert [it.key for it in store.iter_items(status="done")] == ["b", "a"]
        assert [it.key for it in store.iter_items(kind="embed", status="error")] == ["c"]
        assert store.counts(kind="embed") == {"total": 2, "done": 1, "error": 1}
        assert len(store) == 3
        with pytest.raises(UserInputError, match="expected status 'done' or 'error'"):
            list(store.iter_items(status="finished"))


def test_put_many_writes_nothing_when_a_row_is_bad(tmp_path):
    with ItemStore(tmp_path / "items.sqlite") as store:
        rows = [
            {"key": "a", "item_id": "ok", "kind": "k", "request": 1, "score": 1.0},
            {"key": "b", "item_id": "bad", "kind": "k", "request": 2, "score": float("inf")},
        ]
        with pytest.raises(UnstorableValueError, match="item 'bad'"):
            store.put_many(rows)
        assert len(store) == 0
        with pytest.raises(UserInputError, match="unknown \\['colour'\\]"):
            store.put_many([{"key": "a", "item_id": "x", "kind": "k", "request": 1, "colour": 2}])


def test_nan_score_is_refused_naming_the_item(tmp_path):
    with ItemStore(tmp_path / "items.sqlite") as store:
        with pytest.raises(StoreError, match=r"item 'case-7'.*score\['recall'\]\[1\]") as info:
            store.put(
                "k7",
                item_id="case-7",
                kind="score",
                request={"case": 7},
                response={"ok": True},
                score={"recall": [0.5, float("nan")]},
            )
        assert "NaN" in str(info.value)
        assert "fix:" in str(info.value)
        with pytest.raises(StoreError, match=r"item 'case-8'.*response.*non-finite"):
            store.put(
                "k8",
                item_id="case-8",
                kind="s",
                request={},
                response={"emb": np.array([1.0, np.nan])},
            )
        with pytest.raises(StoreError, match=r"item 'case-9'.*not JSON"):
            store.put("k9", item_id="case-9", kind="s", request={"x": object()})
        assert len(store) == 0


def test_bad_put_arguments(tmp_path):
    with ItemStore(tmp_path / "items.sqlite") as store:
        with pytest.raises(UserInputError, match="'key' to be a non-empty string"):
            store.put("", item_id="a", kind="k", request=1)
        with pytest.raises(UserInputError, match="expected status 'done' or 'error'"):
            store.put("k", item_id="a", kind="k", request=1, status="ok")  # type: ignore[arg-type]


def test_store_is_wal_with_busy_timeout_and_schema_version(tmp_path):
    path = tmp_path / "items.sqlite"
    with ItemStore(path, timeout=12.5) as store:
        assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert store.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 12500
        meta = dict(store.conn.execute("SELECT name, value FROM meta").fetchall())
        assert meta["schema_version"] == "1"
        assert store.integrity_check() == []


def test_pickled_store_reopens_its_own_connection(tmp_path):
    with ItemStore(tmp_path / "items.sqlite") as store:
        store.put("k", item_id="a", kind="k", request=1)
        clone = pickle.loads(pickle.dumps(store))
        try:
            assert clone.conn is not store.conn
            assert clone.done_keys() == {"k"}
        finally:
            clone.close()
    with pytest.raises(StoreError, match="was closed"):
        store.get("k")


def test_corrupt_database_gives_clear_error(tmp_path):
    path = tmp_path / "items.sqlite"
    path.write_bytes(b"this is not sqlite at all\x00\x01\x02" * 200)
    with pytest.raises(
        StoreError, match=r"items\.sqlite.*not a SQLite database or is corrupt"
    ) as info:
        ItemStore(path)
    assert "delete items.sqlite" in str(info.value)


def test_corrupt_database_inside_run_dir(tmp_path):
    run = RunDir.create(tmp_path / "run", helpers.make_manifest())
    run.items_path.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(StoreError, match="not a SQLite database or is corrupt"):
        RunDir.create(tmp_path / "run", helpers.make_manifest(), resume=True)


def test_foreign_sqlite_database_is_refused(tmp_path):
    path = tmp_path / "items.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE items (id INTEGER)")
    conn.execute("CREATE TABLE meta (name TEXT, value TEXT)")
    conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="not a vidmem item store"):
        ItemStore(path)


def test_newer_store_schema_is_refused(tmp_path):
    path = tmp_path / "items.sqlite"
    ItemStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '7' WHERE name = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match=r"newer vidmem \(store schema 7\)"):
        ItemStore(path)


def test_missing_store_without_create(tmp_path):
    with pytest.raises(StoreError, match="does not exist"):
        ItemStore(tmp_path / "items.sqlite", create=False)
    with pytest.raises(StoreError, match="found a directory"):
        ItemStore(tmp_path)


def test_concurrent_writers_in_four_processes(tmp_path):
    path = tmp_path / "items.sqlite"
    ItemStore(path).close()
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(4)
    procs = [
        ctx.Process(target=helpers.write_rows, args=(str(path), w, 200, start)) for w in range(4)
    ]
    for p in procs:
        p.start()  # each opens its connection, waits for the others, then writes
    for p in procs:
        p.join(timeout=60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    with ItemStore(path) as store:
        assert store.counts() == {"total": 800, "done": 800, "error": 0}
        assert store.integrity_check() == []
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("SELECT count(DISTINCT key) FROM items").fetchone()[0] == 800
    conn.close()


# -------------------------------------------------------------------------- manifest


def test_manifest_fills_provenance_and_hashes_normalised_config():
    m = RunManifest(
        benchmark="cmbench",
        benchmark_version="1.0",
        config={"n": np.int64(3), "sizes": (1, 2)},
    )
    assert m.schema_version == RUN_SCHEMA_VERSION
    assert m.config == {"n": 3, "sizes": [1, 2]}
    assert m.config_hash == content_hash({"n": 3, "sizes": [1, 2]})
    assert m.created_at.endswith("+00:00")
    assert m.status == "running" and m.finished_at is None
    rev = git_revision()
    assert rev is None or len(rev) in (40, 64)
    assert m.git_revision == rev


def test_manifest_rejects_nan_config():
    with pytest.raises(UserInputError, match=r"run config\['alpha'\]"):
        RunManifest(benchmark="b", benchmark_version="1", config={"alpha": float("nan")})


def test_manifest_records_backend_info_objects():
    from vidmem.models.protocols import BackendInfo

    info = BackendInfo(name="classic/hsv-hist", settings={"bins": 8})
    m = RunManifest(benchmark="b", benchmark_version="1", backends={info.name: info})
    assert m.backends["classic/hsv-hist"].settings == {"bins": 8}


# --------------------------------------------------------------------------- run dir


def test_new_run_dir_layout_and_atomic_run_json(tmp_path):
    run = RunDir.create(tmp_path / "out" / "run1", helpers.make_manifest())
    assert run.state == "new"
    assert run.run_json.is_file() and run.items_path.is_file() and run.report_dir.is_dir()
    data = json.loads(run.run_json.read_text())
    assert data["schema_version"] == RUN_SCHEMA_VERSION
    assert data["status"] == "running"
    assert data["config_hash"] == content_hash(data["config"])
    run.set_counts({"total": 3, "done": np.int64(3)})
    run.set_status("complete")
    again = read_manifest(run.path)
    assert again.status == "complete" and again.finished_at is not None
    assert again.counts == {"total": 3, "done": 3}
    assert [p.name for p in run.path.iterdir() if p.name.endswith(".tmp")] == []


def test_complete_run_is_reopened(tmp_path):
    run = RunDir.create(tmp_path / "run", helpers.make_manifest())
    run.set_status("complete")
    again = RunDir.create(tmp_path / "run", helpers.make_manifest())
    assert again.state == "complete"
    assert again.manifest.status == "complete"
    assert again.manifest.created_at == run.manifest.created_at


def test_unfinished_run_needs_resume(tmp_path):
    run = RunDir.create(tmp_path / "run", helpers.make_manifest())  # status stays 'running'
    with run.items() as store:  # one finished item: a run with nothing done just restarts
        store.put("k", item_id="a", kind="k", request=1)
    del run
    with pytest.raises(StoreError, match="unfinished run.*status 'interrupted'") as info:
        RunDir.create(tmp_path / "run", helpers.make_manifest())
    assert "--resume" in str(info.value) and "--out" in str(info.value)
    run = RunDir.create(tmp_path / "run", helpers.make_manifest(), resume=True)
    assert run.state == "resumed"
    run.set_status("failed")
    with pytest.raises(StoreError, match="status 'failed'"):
        RunDir.create(tmp_path / "run", helpers.make_manifest())
    assert RunDir.create(tmp_path / "run", helpers.make_manifest(), resume=True).state == "resumed"
    assert read_manifest(tmp_path / "run").status == "running"


def test_different_config_lists_differing_keys(tmp_path):
    run = RunDir.create(tmp_path / "run", helpers.make_manifest(judge="a", thresh=0.5))
    with run.items() as store:  # one finished item: a run with nothing done just restarts
        store.put("k", item_id="a", kind="k", request=1)
    del run
    with pytest.raises(StoreError, match="different configuration") as info:
        RunDir.create(tmp_path / "run", helpers.make_manifest(judge="a", thresh=0.7), resume=True)
    msg = str(info.value)
    assert "thresh (0.5 -> 0.7)" in msg
    assert "judge" not in msg and "n_items" not in msg
    assert "--overwrite" in msg and "--out" in msg
    other = helpers.make_manifest(judge="a", thresh=0.5).model_copy(update={"seeds": {"toy": 1}})
    with pytest.raises(StoreError, match=r"seeds\.toy \(0 -> 1\)"):
        RunDir.create(tmp_path / "run", other, resume=True)


def test_overwrite_replaces_the_old_run(tmp_path):
    run = RunDir.create(tmp_path / "run", helpers.make_manifest(thresh=0.5))
    with run.items() as store:
        store.put("k", item_id="a", kind="k", request=1)
    (run.report_dir / "old.html").write_text("x")
    (run.path / "notes.txt").write_text("mine")
    new = RunDir.create(tmp_path / "run", helpers.make_manifest(thresh=0.9), overwrite=True)
    assert new.state == "new"
    assert new.manifest.config["thresh"] == 0.9
    with new.items() as store:
        assert len(store) == 0
    assert not (new.report_dir / "old.html").exists()
    assert (new.path / "notes.txt").read_text() == "mine"  # not ours: left alone


def test_non_run_directory_is_refused(tmp_path):
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "cat.jpg").write_bytes(b"x")
    with pytest.raises(StoreError, match=r"found files but no run\.json \(cat\.jpg\)"):
        RunDir.create(tmp_path / "photos", helpers.make_manifest())
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="found a file"):
        RunDir.create(tmp_path / "file", helpers.make_manifest())


def test_newer_schema_run_json_is_refused(tmp_path):
    run = RunDir.create(tmp_path / "run", helpers.make_manifest())
    data = json.loads(run.run_json.read_text())
    data["schema_version"] = RUN_SCHEMA_VERSION + 1
    run.run_json.write_text(json.dumps(data))
    expected = (
        rf"newer vidmem \(schema {RUN_SCHEMA_VERSION + 1}\).*reads up to {RUN_SCHEMA_VERSION}"
    )
    with pytest.raises(StoreError, match=expected) as info:
        RunDir.create(tmp_path / "run", helpers.make_manifest(), resume=True)
    assert "upgrade vidmem" in str(info.value)
    with pytest.raises(StoreError, match="newer"):
        RunDir.open(tmp_path / "run")
    # --overwrite discards it without reading it
    assert RunDir.create(tmp_path / "run", helpers.make_manifest(), overwrite=True).state == "new"


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('{"schema_version": 1, "benchm', "invalid JSON"),
        ("[1, 2]", "expected a JSON object, found list"),
        ('{"benchmark": "x"}', "integer 'schema_version', found None"),
        ('{"schema_version": 1, "benchmark": "x"}', "not a valid run manifest: benchmark_version"),
    ],
)
def test_invalid_run_json(tmp_path, text, match):
    run = RunDir.create(tmp_path / "run", helpers.make_manifest())
    run.run_json.write_text(text)
    with pytest.raises(StoreError, match=match):
        RunDir.create(tmp_path / "run", helpers.make_manifest(), resume=True)


def test_hand_edited_config_is_detected(tmp_path):
    run = RunDir.create(tmp_path / "run", helpers.make_manifest())
    data = json.loads(run.run_json.read_text())
    data["config"]["n_items"] = 41
    run.run_json.write_text(json.dumps(data))
    with pytest.raises(StoreError, match="does not match the config"):
        RunDir.open(tmp_path / "run")


def test_open_missing_run(tmp_path):
    with pytest.raises(StoreError, match="found nothing"):
        RunDir.open(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(StoreError, match="no run.json found"):
        RunDir.open(tmp_path / "empty")


def test_backends_must_not_change(tmp_path):
    run = RunDir.create(tmp_path / "run", helpers.make_manifest())
    run.set_backends(
        {"dinov2/small": {"name": "dinov2/small", "weights": "/w", "weights_sha256": "aa"}}
    )
    assert read_manifest(run.path).backends["dinov2/small"].weights_sha256 == "aa"
    with pytest.raises(StoreError, match=r"dinov2/small\.weights_sha256 \('aa' -> 'bb'\)"):
        run.set_backends({"dinov2/small": {"name": "dinov2/small", "weights_sha256": "bb"}})
    changed = helpers.make_manifest().model_copy(
        update={
            "backends": RunManifest(
                benchmark="b",
                benchmark_version="1",
                backends={"dinov2/small": {"name": "dinov2/small", "weights_sha256": "cc"}},
            ).backends
        }
    )
    with pytest.raises(StoreError, match="different backends"):
        RunDir.create(tmp_path / "run", changed, resume=True)


def test_scores_roundtrip_and_nan_refused(tmp_path):
    run = RunDir.create(tmp_path / "run", helpers.make_manifest())
    with pytest.raises(StoreError, match="no scores yet"):
        run.scores()
    rows = [{"item_id": "a", "recall": np.float32(0.25)}, {"item_id": "b", "recall": None}]
    assert run.write_scores(rows) == 2
    assert run.scores() == [{"item_id": "a", "recall": 0.25}, {"item_id": "b", "recall": None}]
    with pytest.raises(StoreError, match=r"row 1 \(item 'b'\).*NaN"):
        run.write_scores(
            [{"item_id": "a", "recall": 1.0}, {"item_id": "b", "recall": float("nan")}]
        )
    assert len(run.scores()) == 2  # the old file is untouched


def test_a_second_writer_is_refused_until_the_first_dies(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    run_dir, ready = tmp_path / "run", tmp_path / "ready"
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import runners_helpers as h; "
              "h.hold_run(sys.argv[2], sys.argv[3])")
    proc = subprocess.Popen([sys.executable, "-c", script, str(Path(helpers.__file__).parent),
                             str(run_dir), str(ready)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        with pytest.raises(StoreError, match=rf"another vidmem process \(pid {proc.pid}\) is writing"):
            RunDir.create(run_dir, helpers.make_manifest(n_items=1), resume=True)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        proc.kill()
        proc.wait()
    # the holder died: its lock went with it, and the run resumes here
    run = RunDir.create(run_dir, helpers.make_manifest(n_items=1), resume=True)
    assert run.state == "resumed"
    # the same process may open its own run again (the lock is counted, not refused)
    again = RunDir.create(run_dir, helpers.make_manifest(n_items=1), resume=True)
    assert again.state == "resumed"
