"""Run a function over work items, skipping what is done and saving each result at once.

:func:`execute` is the resumable loop every runner uses. Items whose key is already
``done`` in the :class:`~vidmem.runners.store.ItemStore` are cached; the rest go
through ``fn`` and each result is written the moment it arrives, so a killed run loses
at most the items in flight. An exception for one item is stored as an ``error`` row
(with its message and traceback) and the run goes on; errors are retried next time.

With ``workers > 1`` the items run in a process pool (``spawn`` start method, so it
behaves the same on Linux, macOS and Windows and is safe with CUDA). Workers only
compute; **the parent process writes every result**: one writer, no lock contention,
and ``fn`` needs no access to the run directory. ``fn`` and the items must be
picklable (a module-level function, or a ``functools.partial`` of one).

With an :class:`~vidmem.runners.execution_spec.ExecutorSpec` of kind ``ray`` the items
run on Ray actors instead (:mod:`vidmem.runners.executor_ray`); the parent still writes
every result, so the store, and everything built from it, is the same either way.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable, Iterable, Mapping
from os import PathLike
from typing import Any

from vidmem.errors import UserInputError
from vidmem.runners.execution_loops import run_inline, run_pool
from vidmem.runners.execution_records import (
    ExecutionSummary,
    Recorder,
    WorkItem,
    check_items,
)
from vidmem.runners.execution_spec import ExecutorSpec
from vidmem.runners.store import ItemStore

__all__ = ["ExecutionSummary", "ExecutorSpec", "WorkItem", "execute"]

MAX_POOL_RESTARTS = 3
"""How many times a crashed worker pool is restarted before :func:`execute` gives up."""


def progress_bar(description: str, total: int, *, show: bool = True, note: str = "") -> Any:
    """The runner's progress bar on stderr (description, bar, n/N, a note, elapsed,
    remaining): ``(progress, task)``; every vidmem progress bar uses these columns."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[note]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=not show,
    )
    task = progress.add_task(description, total=total, note=note)
    return progress, task


def _make_progress(show: bool, total: int, cached: int) -> Any:
    return progress_bar("computing", total, show=show, note=f"({cached} cached)")


def execute(
    store: ItemStore | str | PathLike[str],
    items: Iterable[Any],
    fn: Callable[[Any], Mapping[str, Any]],
    *,
    workers: int = 1,
    progress: bool = True,
    quiet: bool = False,
    executor: ExecutorSpec | None = None,
    warmup: Callable[[], Any] | None = None,
) -> ExecutionSummary:
    """Compute ``fn`` for every item whose key is not yet done, saving each result.

    Args:
        store: the item store (or the path of an ``items.sqlite`` to open).
        items: :class:`WorkItem` objects (anything with ``key``, ``item_id``, ``kind``
            and ``request`` attributes).
        fn: ``fn(item) -> {"response": ..., "score": ...}`` with JSON data (numpy
            values are converted; NaN/inf are not allowed). With ``workers > 1`` it
            must be picklable.
        workers: ``1`` runs in this process; more runs a ``spawn`` process pool of that
            size. The parent writes every result either way.
        progress: show a progress bar (on stderr).
        quiet: print nothing at all (no bar, no error notice).
        executor: where to compute (``local`` or ``ray``, and how many workers); when
            given, its ``workers`` replaces ``workers``. On Ray every worker must see
            the store's folder (the run directory) at the same path.
        warmup: on Ray, every actor calls ``warmup()`` before its first item (e.g. to
            load the models, so the driver need not) and the first actor's return value
            becomes ``ExecutionSummary.prepared``; a worker whose warmup raises stops the
            run before any item, with its error. Not called by the local executor (the
            caller has everything in this process already).

    Returns:
        An :class:`ExecutionSummary`. ``total == cached + computed + errors``.

    Raises:
        UserInputError: bad items, ``workers < 1``, an unpicklable ``fn`` with
            ``workers > 1``, or (Ray) workers that cannot see the run directory.
        UnstorableValueError: an item's *request* cannot be stored (NaN or non-JSON).
        VidmemError: the worker pool crashed more than ``MAX_POOL_RESTARTS`` times, or
            (Ray) the cluster cannot be joined or its workers keep failing.

    An exception raised by ``fn``, a malformed return value, or a response/score with
    NaN is stored as that item's ``error`` and counted; it does not stop the run.
    """
    start = time.perf_counter()
    if executor is None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise UserInputError(
                f"execute: expected workers to be an integer >= 1, found {workers!r}",
                hint="pass --workers 1 (in-process) or more (process pool)",
            )
        executor = ExecutorSpec(workers=workers)
    workers = executor.workers
    own_store = not isinstance(store, ItemStore)
    db = ItemStore(store) if own_store else store
    try:
        work = check_items(items)
        done = db.done_keys()
        multiplicity: dict[str, int] = {}
        todo: list[Any] = []
        cached = 0
        for item in work:
            if item.key in done:
                cached += 1
            elif item.key in multiplicity:
                multiplicity[item.key] += 1
            else:
                multiplicity[item.key] = 1
                todo.append(item)
        if todo and workers > 1 and executor.kind == "local":
            try:
                pickle.dumps(fn)
            except Exception as exc:  # noqa: BLE001 - any pickling failure means the same
                raise UserInputError(
                    f"execute(workers={workers}): fn must be picklable to run in worker "
                    f"processes, found {fn!r} ({type(exc).__name__}: {exc})",
                    hint="define fn at module level (or a functools.partial of one), or "
                    "use --workers 1",
                ) from None

        rec = Recorder(db, multiplicity)
        bar, task = _make_progress(progress and not quiet and bool(todo), len(todo), cached)

        def tick() -> None:
            bar.update(task, advance=1, note=f"({cached} cached, {rec.errors} errors)")

        prepared = None
        with bar:
            if not todo:
                pass
            elif executor.kind == "ray":
                from vidmem.runners.executor_ray import run_ray

                prepared = run_ray(todo, fn, executor, rec, tick, probe_dir=db.path.parent,
                                   warmup=warmup)
            elif workers == 1:
                run_inline(todo, fn, rec, tick)
            else:
                run_pool(
                    todo, fn, min(workers, len(todo)), rec, tick, max_restarts=MAX_POOL_RESTARTS
                )

        summary = ExecutionSummary(
            total=len(work),
            cached=cached + rec.cached_dups,
            computed=rec.computed,
            errors=rec.errors,
            seconds=time.perf_counter() - start,
            error_samples=tuple(rec.samples),
            prepared=prepared,
        )
        if summary.errors and not quiet:
            from rich.console import Console
            from rich.markup import escape

            item_id, msg = summary.error_samples[0]
            Console(stderr=True).print(
                f"[yellow]warning:[/yellow] {summary.errors} of {summary.total} items failed "
                f"(first: item {escape(repr(item_id))}: {escape(msg)}); they are retried with "
                "--resume",
                highlight=False,
                markup=True,
                soft_wrap=True,
            )
        return summary
    finally:
        if own_store:
            db.close()
