"""Module-level (picklable) functions used by the runner tests and their subprocesses.

vidmem modules are imported inside the functions so that a spawned child imports only
what its task needs.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np


def make_manifest(**config: Any) -> Any:
    """The manifest every resumable test run uses (same config -> same run)."""
    from vidmem.runners.store import RunManifest

    return RunManifest(
        benchmark="toy",
        benchmark_version="1",
        config={"n_items": 40, **config},
        seeds={"toy": 0},
        command=["pytest"],
    )


def make_items(n: int, **extra: Any) -> list[Any]:
    from vidmem.runners.execute import WorkItem

    return [WorkItem.make(f"item-{i:03d}", "toy", {"i": i, **extra}) for i in range(n)]


def slow_fn(item: Any) -> dict:
    """Sleep, log the item id (one line per call), and return a result."""
    req = item.request
    time.sleep(req.get("sleep", 0.0))
    if "log" in req:
        with open(req["log"], "a", encoding="utf-8") as fh:
            fh.write(item.item_id + "\n")
            fh.flush()
    return {"response": {"double": req["i"] * 2}, "score": {"v": req["i"] / 10}}


def square_fn(item: Any) -> dict:
    """Square ``i``; raise for ids listed in ``fail``."""
    i = item.request["i"]
    if i in item.request.get("fail", []):
        raise ValueError(f"cannot square {i}")
    return {"response": {"sq": i * i}, "score": {"even": i % 2 == 0}}


def crash_fn(item: Any) -> dict:
    """Kill the worker process on the item whose ``i`` equals ``crash``."""
    if item.request["i"] == item.request.get("crash"):
        os._exit(3)
    time.sleep(item.request.get("sleep", 0.01))
    return {"response": {"i": item.request["i"]}, "score": None}


def write_rows(path: str, worker: int, n: int, start: Any = None) -> None:
    """One process writing ``n`` rows, one transaction each (after the ``start`` barrier)."""
    from vidmem.runners.store import ItemStore

    with ItemStore(path) as store:
        if start is not None:
            start.wait(30)
        for j in range(n):
            store.put(
                f"w{worker}-k{j}",
                item_id=f"w{worker}-{j:04d}",
                kind="toy",
                request={"worker": worker, "j": j},
                response={"r": j},
                score={"s": j / n},
            )


def fill_cache(root: str, worker: int, n: int) -> None:
    """One process filling an ArrayCache; workers overlap on the same keys."""
    from vidmem.runners.cache import ArrayCache

    cache = ArrayCache(root)
    keys = [f"key{i:03d}" for i in range(n)]
    if worker % 2:
        keys.reverse()
    for key in keys:
        cache.put(key, np.full(8, int(key[3:]), dtype=np.float32))
        cache.get(key)


def killable_run(run_dir: str, log: str, n: int, sleep: float) -> None:
    """Body of the subprocess in the kill -9 test."""
    from vidmem.runners.execute import execute
    from vidmem.runners.store import RunDir

    run = RunDir.create(Path(run_dir), make_manifest(n_items=n))
    store = run.items()
    execute(store, make_items(n, sleep=sleep, log=log), slow_fn, quiet=True)
    run.set_status("complete")


def pid_fn(item: Any) -> dict:
    """Record this worker's pid, then sleep (the driver is killed meanwhile)."""
    with open(item.request["pids"], "a", encoding="utf-8") as fh:
        fh.write(f"{os.getpid()}\n")
    time.sleep(item.request["sleep"])
    return {"response": {"pid": os.getpid()}, "score": None}


def pool_run(run_dir: str, pids: str, n: int, sleep: float) -> None:
    """Body of the subprocess in the orphaned-workers test: a 2-worker pool of slow items."""
    from vidmem.runners.execute import execute
    from vidmem.runners.store import RunDir

    run = RunDir.create(Path(run_dir), make_manifest(n_items=n))
    execute(run.items(), make_items(n, sleep=sleep, pids=pids), pid_fn, workers=2, quiet=True)


def hold_run(run_dir: str, ready: str) -> None:
    """Body of the lock test's first writer: open the run, say so, then wait to be killed."""
    from vidmem.runners.store import RunDir

    run = RunDir.create(Path(run_dir), make_manifest(n_items=1), resume=True)
    Path(ready).write_text(str(os.getpid()))
    time.sleep(120)
    run.set_status("complete")
