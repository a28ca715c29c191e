"""Module-level work functions for the Ray executor tests (importable on Ray workers).

The test module puts this folder on the ``PYTHONPATH`` of the Ray instance it starts,
so the workers import these functions by name, as they would a benchmark's.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any


def _log(item: Any) -> None:
    if "log" in item.request:
        with open(item.request["log"], "a", encoding="utf-8") as fh:
            fh.write(item.item_id + "\n")


def crash_once_fn(item: Any) -> dict:
    """Kill this worker process the first time the ``crash`` item runs (marker file)."""
    req = item.request
    if req["i"] == req.get("crash"):
        marker = Path(req["marker"])
        if not marker.exists():
            marker.write_text(f"{os.getpid()}\n", encoding="utf-8")
            os._exit(1)
    time.sleep(req.get("sleep", 0.0))
    _log(item)
    return {"response": {"i": req["i"], "pid": None}, "score": {"v": req["i"] / 10}}


def crash_always_fn(item: Any) -> dict:
    """Kill this worker process every time the ``crash`` item runs."""
    if item.request["i"] == item.request.get("crash"):
        os._exit(1)
    _log(item)
    return {"response": {"i": item.request["i"]}, "score": None}


def killable_ray_run(run_dir: str, log: str, n: int, sleep: float, address: str) -> None:
    """Body of the driver subprocess that the resume test kills with SIGKILL."""
    from vidmem.runners.execute import ExecutorSpec, WorkItem, execute
    from vidmem.runners.store import RunDir, RunManifest

    manifest = RunManifest(benchmark="toy", benchmark_version="1", config={"n_items": n},
                           seeds={}, command=["pytest"])
    run = RunDir.create(Path(run_dir), manifest)
    items = [WorkItem.make(f"item-{i:03d}", "toy", {"i": i, "sleep": sleep, "log": log})
             for i in range(n)]
    spec = ExecutorSpec(kind="ray", workers=2, address=address, batch_size=1)
    execute(run.items(), items, crash_once_fn, executor=spec, quiet=True)
    run.set_status("complete")


def pid_warmup() -> dict:
    """A warmup that says which process ran it (the actor's, not the driver's)."""
    return {"pid": os.getpid()}


def failing_warmup() -> dict:
    """A warmup that fails the way a missing weights file would."""
    raise FileNotFoundError("weights not found: /nowhere/model.safetensors")
