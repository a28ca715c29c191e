"""execute(): caching, error rows, process pools, and surviving kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import runners_helpers as helpers

from vidmem.errors import StoreError, UserInputError
from vidmem.runners.execute import ExecutionSummary, WorkItem, execute
from vidmem.runners.store import ItemStore, RunDir

HELPERS_DIR = str(Path(helpers.__file__).resolve().parent)


def _results(store: ItemStore) -> dict[str, tuple]:
    return {
        it.key: (it.item_id, it.status, it.response, it.score, (it.error or "").splitlines()[:1])
        for it in store.iter_items()
    }


def _children(pid: int) -> set[int]:
    """Pids whose parent is ``pid`` (Linux /proc)."""
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.add(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited; only its parent's reaping is left


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads Linux /proc")
def test_pool_workers_and_resource_tracker_exit_when_the_driver_is_killed(tmp_path):
    pids = tmp_path / "pids.txt"
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); import runners_helpers as h; "
        "h.pool_run(sys.argv[2], sys.argv[3], 8, 60.0)"
    )
    # Output to a file, not a pipe: orphans would hold a pipe open and hang communicate().
    log = (tmp_path / "driver.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-c", script, HELPERS_DIR, str(tmp_path / "run"), str(pids)],
                            stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 60
    try:
        while not (pids.exists() and len(pids.read_text().split()) >= 2):
            assert proc.poll() is None, (tmp_path / "driver.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "the two workers never started an item"
            time.sleep(0.05)
        children = _children(proc.pid)  # the two workers and the resource tracker
        workers = {int(p) for p in pids.read_text().split()}
        assert workers <= children and len(children) >= 3
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
        log.close()
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = sorted(p for p in children if _alive(p))
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert not left, f"processes of the killed driver still alive 10 s later: {left}"


def test_kill_9_then_resume_computes_nothing_twice(tmp_path):
    run_dir, log, n, sleep = tmp_path / "run", tmp_path / "calls.log", 40, 0.05
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); import runners_helpers as h; "
        "h.killable_run(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script, HELPERS_DIR, str(run_dir), str(log), str(n), str(sleep)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    items_path = run_dir / "items.sqlite"
    deadline = time.monotonic() + 60
    try:
        while True:
            assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
            assert time.monotonic() < deadline, "the subprocess never got 5 items done"
            if items_path.exists() and (run_dir / "run.json").exists():
                with ItemStore(items_path) as store:
                    if store.counts()["done"] >= 5:
                        break
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL

    items = helpers.make_items(n, sleep=sleep, log=str(log))
    by_key = {it.key: it.item_id for it in items}
    with ItemStore(items_path) as store:
        done_before = {by_key[k] for k in store.done_keys()}
    assert 5 <= len(done_before) < n

    with pytest.raises(StoreError, match="--resume"):
        RunDir.create(run_dir, helpers.make_manifest(n_items=n))
    run = RunDir.create(run_dir, helpers.make_manifest(n_items=n), resume=True)
    assert run.state == "resumed"
    with run.items() as store:
        summary = execute(store, items, helpers.slow_fn, quiet=True)
        assert store.counts() == {"total": n, "done": n, "error": 0}
    assert summary.cached == len(done_before)
    assert summary.computed == n - len(done_before)
    assert summary.errors == 0

    calls = Counter(log.read_text().split())
    assert set(calls) == {it.item_id for it in items}
    assert {i: calls[i] for i in done_before} == dict.fromkeys(done_before, 1)
    # at most the one item in flight at the kill ran twice
    assert sum(c - 1 for c in calls.values()) <= 1


def test_rerun_of_complete_run_is_all_cached(tmp_path):
    items = helpers.make_items(12)
    run = RunDir.create(tmp_path / "run", helpers.make_manifest())
    with run.items() as store:
        first = execute(store, items, helpers.square_fn, quiet=True)
    run.set_counts(first.as_counts())
    run.set_status("complete")
    assert (first.computed, first.cached, first.errors) == (12, 0, 0)

    calls = []

    def must_not_run(item):
        calls.append(item.item_id)
        raise AssertionError("computed again")

    again = RunDir.create(tmp_path / "run", helpers.make_manifest())
    assert again.state == "complete"
    with again.items() as store:
        summary = execute(store, items, must_not_run, quiet=True)
    assert calls == []
    assert (summary.total, summary.cached, summary.computed, summary.errors) == (12, 12, 0, 0)


def test_errors_are_stored_and_retried(tmp_path, capsys):
    items = helpers.make_items(6, fail=[2, 4])
    store = ItemStore(tmp_path / "items.sqlite")
    summary = execute(store, items, helpers.square_fn, progress=False)
    assert (summary.computed, summary.errors, summary.cached) == (4, 2, 0)
    assert not summary.ok
    assert [s[0] for s in summary.error_samples] == ["item-002", "item-004"]
    assert "ValueError: cannot square 2" in summary.error_samples[0][1]
    assert "2 of 6 items failed" in capsys.readouterr().err
    bad = store.get(items[2].key)
    assert bad.status == "error"
    assert bad.error.startswith("ValueError: cannot square 2")
    assert "Traceback" in bad.error
    assert store.done_keys() == {it.key for i, it in enumerate(items) if i not in (2, 4)}

    calls = []

    def fixed(item):
        calls.append(item.item_id)
        return {"response": {"sq": item.request["i"] ** 2}, "score": None}

    again = execute(store, items, fixed, quiet=True)
    assert sorted(calls) == ["item-002", "item-004"]
    assert (again.cached, again.computed, again.errors) == (4, 2, 0)
    assert store.get(items[2].key).attempts == 2
    assert capsys.readouterr().err == ""
    store.close()


def test_nan_and_malformed_results_become_item_errors(tmp_path):
    items = [WorkItem.make(f"c{i}", "toy", {"i": i}) for i in range(3)]

    def fn(item):
        i = item.request["i"]
        if i == 0:
            return {"response": {}, "score": {"recall": float("nan")}}
        if i == 1:
            return {"response": {}}
        return {"response": {"ok": 1}, "score": 1.0}

    with ItemStore(tmp_path / "items.sqlite") as store:
        summary = execute(store, items, fn, quiet=True)
        assert (summary.computed, summary.errors) == (1, 2)
        assert "item 'c0'" in store.get(items[0].key).error
        assert "NaN" in store.get(items[0].key).error
        assert "exactly the keys 'response' and 'score'" in store.get(items[1].key).error


def test_duplicate_keys_are_computed_once(tmp_path):
    same = {"i": 1}
    items = [
        WorkItem.make("a", "toy", same),
        WorkItem.make("b", "toy", same),
        WorkItem.make("c", "toy", {"i": 2}),
    ]
    calls = []

    def fn(item):
        calls.append(item.item_id)
        return {"response": item.request, "score": None}

    with ItemStore(tmp_path / "items.sqlite") as store:
        summary = execute(store, items, fn, quiet=True)
    assert calls == ["a", "c"]
    assert (summary.total, summary.computed, summary.cached, summary.errors) == (3, 2, 1, 0)


def test_workers_2_matches_workers_1(tmp_path):
    items = helpers.make_items(16, fail=[5])
    one = ItemStore(tmp_path / "one.sqlite")
    two = ItemStore(tmp_path / "two.sqlite")
    s1 = execute(one, items, helpers.square_fn, quiet=True)
    s2 = execute(two, items, helpers.square_fn, workers=2, quiet=True)
    assert (s1.total, s1.computed, s1.errors) == (s2.total, s2.computed, s2.errors) == (16, 15, 1)
    assert _results(one) == _results(two)
    one.close()
    two.close()


def test_crashed_worker_is_recorded_and_the_run_goes_on(tmp_path):
    items = helpers.make_items(10, crash=3)
    with ItemStore(tmp_path / "items.sqlite") as store:
        summary = execute(store, items, helpers.crash_fn, workers=2, quiet=True)
        assert summary.total == 10
        assert summary.computed + summary.errors == 10
        assert summary.errors >= 1
        crashed = store.get(items[3].key)
        assert crashed.status == "error" and "BrokenProcessPool" in crashed.error
        assert store.counts()["done"] == summary.computed


def test_pool_that_keeps_dying_gives_up_with_a_clear_error(tmp_path, monkeypatch):
    from vidmem.errors import VidmemError
    from vidmem.runners import execute as execute_module

    monkeypatch.setattr(execute_module, "MAX_POOL_RESTARTS", 0)
    # The surviving items are slow, so the crash always lands before they could all finish.
    items = helpers.make_items(20, crash=0, sleep=0.5)
    with ItemStore(tmp_path / "items.sqlite") as store:
        with pytest.raises(
            VidmemError, match=r"(?s)broke the pool 1 time;.*were not run.*--workers 1"
        ):
            execute(store, items, helpers.crash_fn, workers=2, quiet=True)
        assert store.get(items[0].key).status == "error"
        assert store.counts()["total"] < 20


def test_bad_arguments(tmp_path):
    store = ItemStore(tmp_path / "items.sqlite")
    with pytest.raises(UserInputError, match="workers to be an integer >= 1, found 0"):
        execute(store, [], helpers.square_fn, workers=0)
    with pytest.raises(UserInputError, match="item 1: expected a non-empty string attribute 'key'"):
        execute(
            store, [WorkItem("k", "a", "toy", 1), WorkItem("", "b", "toy", 1)], helpers.square_fn
        )
    with pytest.raises(UserInputError, match="fn must be picklable"):
        execute(
            store,
            helpers.make_items(2),
            lambda it: {"response": 1, "score": 1},
            workers=2,
            quiet=True,
        )
    store.close()


def test_execute_accepts_a_path_and_empty_items(tmp_path):
    summary = execute(tmp_path / "items.sqlite", [], helpers.square_fn)
    assert summary == ExecutionSummary(0, 0, 0, 0, summary.seconds)
    assert "0 items: 0 computed" in str(summary)
