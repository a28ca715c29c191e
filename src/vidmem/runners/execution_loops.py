"""The two ways :func:`~vidmem.runners.execute.execute` computes its items.

:func:`run_inline` calls ``fn`` item by item in this process; :func:`run_pool`
hands the items to a ``spawn`` process pool (each worker capped at its share of the CPUs,
see :mod:`vidmem.runners.worker_threads`) and restarts the pool when a worker dies.
Either way the workers only compute: every outcome goes back to the parent, which
records it through the recorder of :mod:`vidmem.runners.execution_records`.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from vidmem.errors import VidmemError
from vidmem.runners.execution_records import Recorder, WorkItem
from vidmem.runners.worker_threads import share_of_cpus

__all__: list[str] = []

_IN_FLIGHT_PER_WORKER = 4
#: how often a worker checks that the process that started it is still alive, seconds
PARENT_POLL_SECONDS = 0.5


def _init_worker(parent_pid: int, threads: int) -> None:
    """Pool initializer: this worker's share of the CPUs, and its end with the driver."""
    from vidmem.runners.worker_threads import limit_threads

    limit_threads(threads)
    _exit_with_parent(parent_pid)


def _exit_with_parent(parent_pid: int) -> None:
    """End this worker when the driver dies, however it dies.

    A killed driver (SIGKILL) cannot shut its pool down, and spawn workers would live on
    under init holding their models (and GPU memory). On Linux the kernel sends SIGTERM
    at the parent's death (PR_SET_PDEATHSIG); everywhere a daemon thread also polls the
    parent pid and exits. The multiprocessing resource tracker exits by itself once the
    driver and every worker have closed their end of its pipe.
    """
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG = 1
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # the parent died before the prctl call
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(PARENT_POLL_SECONDS)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, name="vidmem-parent-watch", daemon=True).start()
_TRACEBACK_LINES = 30


def _format_exception(exc: BaseException) -> str:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    tail = "".join(lines).rstrip().splitlines()[-_TRACEBACK_LINES:]
    head = f"{type(exc).__name__}: {exc}"
    return head + "\n" + "\n".join(tail)


def _call(fn: Callable[[WorkItem], Any], item: WorkItem) -> tuple[bool, Any]:
    """Run ``fn(item)``; return ``(True, result)`` or ``(False, error text)``.

    Module-level so that a worker process can unpickle it; catching here keeps
    unpicklable exceptions from breaking the pool.
    """
    try:
        return True, fn(item)
    except Exception as exc:  # noqa: BLE001 - one item's failure must not stop the run
        return False, _format_exception(exc)


def run_inline(
    todo: list[Any], fn: Callable[[Any], Any], rec: Recorder, tick: Callable[[], None]
) -> None:
    """Run ``todo`` one item at a time in this process, recording each outcome."""
    for item in todo:
        ok, payload = _call(fn, item)
        rec.record(item, ok, payload)
        tick()


def _fill(
    pool: ProcessPoolExecutor,
    fn: Callable[[Any], Any],
    queue: deque[Any],
    in_flight: dict[Future[Any], Any],
    cap: int,
) -> bool:
    """Submit queued items until ``cap`` are in flight; False if the pool is broken."""
    while queue and len(in_flight) < cap:
        item = queue.popleft()
        try:
            in_flight[pool.submit(_call, fn, item)] = item
        except BrokenProcessPool:
            queue.appendleft(item)
            return False
    return True


def run_pool(
    todo: list[Any],
    fn: Callable[[Any], Any],
    workers: int,
    rec: Recorder,
    tick: Callable[[], None],
    *,
    max_restarts: int,
) -> None:
    """Run ``todo`` in a spawn process pool; the parent records every outcome.

    When a worker dies (the pool breaks), the items in flight are recorded as errors
    and a fresh pool takes the remaining items, at most ``max_restarts`` times
    (:func:`~vidmem.runners.execute.execute` passes its ``MAX_POOL_RESTARTS``, read
    when it is called).
    """
    ctx = multiprocessing.get_context("spawn")
    queue = deque(todo)
    cap = workers * _IN_FLIGHT_PER_WORKER
    restarts = 0
    while True:
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_init_worker,
                                   initargs=(os.getpid(), share_of_cpus(workers)))
        in_flight: dict[Future[Any], Any] = {}
        broken: list[Any] = []
        try:
            alive = _fill(pool, fn, queue, in_flight, cap)
            while in_flight:
                finished, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for fut in finished:
                    item = in_flight.pop(fut)
                    try:
                        ok, payload = fut.result()
                    except BrokenProcessPool:
                        broken.append(item)
                        continue
                    except Exception as exc:  # noqa: BLE001 - e.g. an unpicklable result
                        ok, payload = False, _format_exception(exc)
                    rec.record(item, ok, payload)
                    tick()
                if broken:
                    broken.extend(in_flight.values())  # the pool is gone; so are these
                    in_flight.clear()
                    alive = False
                    break
                if alive:
                    alive = _fill(pool, fn, queue, in_flight, cap)
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=alive, cancel_futures=True)
        if alive:
            return
        for item in broken:
            rec.record(
                item,
                False,
                "BrokenProcessPool: a worker process died while this item was in flight "
                "(this item or another in-flight one crashed it, e.g. out of memory or a "
                "segfault); it is retried on the next run",
            )
            tick()
        if not queue:
            return
        restarts += 1
        if restarts > max_restarts:
            names = ", ".join(repr(it.item_id) for it in broken[:5]) or "(none)"
            raise VidmemError(
                f"execute: a worker process died and broke the pool {restarts} "
                f"time{'s' if restarts != 1 else ''}; items in flight at the "
                f"last crash: {names}; {len(queue)} items were not run",
                hint="rerun with --workers 1 to see the failure in-process, or lower "
                "--workers if memory ran out; finished items are saved, rerun with --resume",
            )
