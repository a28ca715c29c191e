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
"""

from __future__ import annotations

import multiprocessing
import pickle
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from os import PathLike
from typing import Any

from vidmem.errors import UserInputError, VidmemError
from vidmem.io.hashing import content_hash
from vidmem.runners.store import ItemStore, UnstorableValueError

__all__ = ["ExecutionSummary", "WorkItem", "execute"]

MAX_POOL_RESTARTS = 3
"""How many times a crashed worker pool is restarted before :func:`execute` gives up."""

_IN_FLIGHT_PER_WORKER = 4
_ERROR_SAMPLES = 5
_TRACEBACK_LINES = 30


@dataclass(frozen=True)
class WorkItem:
    """One unit of work.

    Attributes:
        key: content hash of the request; the item store's primary key. Items with the
            same key are computed once.
        item_id: the benchmark's id for the item (shown in errors and reports).
        kind: what the request asks for (``embed``, ``detect``, ``judge``, ``score``...).
        request: JSON data that ``fn`` needs to compute the item.

    Example:
        >>> a = WorkItem.make("case-1", "embed", {"frame": 3})
        >>> a.key == WorkItem.make("case-2", "embed", {"frame": 3}).key
        True
        >>> a.key == WorkItem.make("case-1", "detect", {"frame": 3}).key
        False
    """

    key: str
    item_id: str
    kind: str
    request: Any

    @classmethod
    def make(cls, item_id: str, kind: str, request: Any) -> WorkItem:
        """Build an item keyed by ``content_hash({"kind": kind, "request": request})``.

        Put everything that changes the result into ``request`` (backend name and
        weights hash, thresholds...), so that equal keys really mean equal results.
        """
        return cls(
            key=content_hash({"kind": kind, "request": request}),
            item_id=item_id,
            kind=kind,
            request=request,
        )


@dataclass(frozen=True)
class ExecutionSummary:
    """What one :func:`execute` call did; every item is counted once.

    Attributes:
        total: number of items given.
        cached: items not computed: already done in the store, or sharing their key
            with an item computed in this call.
        computed: items computed successfully in this call.
        errors: items whose computation raised (stored with status ``error``).
        seconds: wall-clock duration.
        error_samples: up to five ``(item_id, first line of the error)`` pairs.
    """

    total: int
    cached: int
    computed: int
    errors: int
    seconds: float
    error_samples: tuple[tuple[str, str], ...] = field(default=())

    @property
    def ok(self) -> bool:
        """True when no item failed."""
        return self.errors == 0

    def as_counts(self) -> dict[str, int]:
        """The integer counts, e.g. for ``RunDir.set_counts``."""
        return {
            "total": self.total,
            "cached": self.cached,
            "computed": self.computed,
            "errors": self.errors,
        }

    def __str__(self) -> str:
        text = (
            f"{self.total} items: {self.computed} computed, {self.cached} cached, "
            f"{self.errors} errors in {self.seconds:.1f} s"
        )
        if self.error_samples:
            item_id, msg = self.error_samples[0]
            text += f"; first error: item {item_id!r}: {msg}"
        return text


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


def _check_items(items: Iterable[Any]) -> list[Any]:
    out = list(items)
    for i, it in enumerate(out):
        for name in ("key", "item_id", "kind"):
            value = getattr(it, name, None)
            if not isinstance(value, str) or not value:
                raise UserInputError(
                    f"execute: item {i}: expected a non-empty string attribute '{name}', "
                    f"found {value!r} on {type(it).__name__}",
                    hint="pass WorkItem objects (WorkItem.make(item_id, kind, request))",
                )
        if not hasattr(it, "request"):
            raise UserInputError(
                f"execute: item {i} ({it.item_id!r}): expected a 'request' attribute, "
                f"found none on {type(it).__name__}",
                hint="pass WorkItem objects (WorkItem.make(item_id, kind, request))",
            )
    return out


class _Recorder:
    """Writes each outcome to the store and keeps the tallies."""

    def __init__(self, store: ItemStore, multiplicity: Mapping[str, int]) -> None:
        self.store = store
        self.multiplicity = multiplicity
        self.computed = 0
        self.cached_dups = 0
        self.errors = 0
        self.samples: list[tuple[str, str]] = []

    def _error(self, item: Any, message: str) -> None:
        self.store.put(
            item.key,
            item_id=item.item_id,
            kind=item.kind,
            request=item.request,
            status="error",
            error=message,
        )
        self.errors += self.multiplicity[item.key]
        if len(self.samples) < _ERROR_SAMPLES:
            self.samples.append((item.item_id, message.splitlines()[0] if message else ""))

    def record(self, item: Any, ok: bool, payload: Any) -> None:
        if not ok:
            self._error(item, str(payload))
            return
        if not isinstance(payload, Mapping) or set(payload) != {"response", "score"}:
            found = (
                f"a dict with keys {sorted(payload)}"
                if isinstance(payload, Mapping)
                else type(payload).__name__
            )
            self._error(
                item,
                f"fn returned {found} for item {item.item_id!r}; expected a dict with "
                "exactly the keys 'response' and 'score'",
            )
            return
        try:
            self.store.put(
                item.key,
                item_id=item.item_id,
                kind=item.kind,
                request=item.request,
                response=payload["response"],
                score=payload["score"],
                status="done",
            )
        except UnstorableValueError as exc:
            # The result is the culprit; keep the run going and record why. If the
            # request itself cannot be stored, this put raises and names the item.
            self._error(item, str(exc))
            return
        self.computed += 1
        self.cached_dups += self.multiplicity[item.key] - 1


def _make_progress(show: bool, total: int, cached: int) -> Any:
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
    task = progress.add_task("computing", total=total, note=f"({cached} cached)")
    return progress, task


def _run_inline(
    todo: list[Any], fn: Callable[[Any], Any], rec: _Recorder, tick: Callable[[], None]
) -> None:
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


def _run_pool(
    todo: list[Any],
    fn: Callable[[Any], Any],
    workers: int,
    rec: _Recorder,
    tick: Callable[[], None],
) -> None:
    """Run ``todo`` in a spawn process pool; the parent records every outcome.

    When a worker dies (the pool breaks), the items in flight are recorded as errors
    and a fresh pool takes the remaining items, at most ``MAX_POOL_RESTARTS`` times.
    """
    ctx = multiprocessing.get_context("spawn")
    queue = deque(todo)
    cap = workers * _IN_FLIGHT_PER_WORKER
    restarts = 0
    while True:
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx)
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
        if restarts > MAX_POOL_RESTARTS:
            names = ", ".join(repr(it.item_id) for it in broken[:5]) or "(none)"
            raise VidmemError(
                f"execute: a worker process died and broke the pool {restarts} "
                f"time{'s' if restarts != 1 else ''}; items in flight at the "
                f"last crash: {names}; {len(queue)} items were not run",
                hint="rerun with --workers 1 to see the failure in-process, or lower "
                "--workers if memory ran out; finished items are saved, rerun with --resume",
            )


def execute(
    store: ItemStore | str | PathLike[str],
    items: Iterable[Any],
    fn: Callable[[Any], Mapping[str, Any]],
    *,
    workers: int = 1,
    progress: bool = True,
    quiet: bool = False,
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

    Returns:
        An :class:`ExecutionSummary`. ``total == cached + computed + errors``.

    Raises:
        UserInputError: bad items, ``workers < 1``, or an unpicklable ``fn`` with
            ``workers > 1``.
        UnstorableValueError: an item's *request* cannot be stored (NaN or non-JSON).
        VidmemError: the worker pool crashed more than ``MAX_POOL_RESTARTS`` times.

    An exception raised by ``fn``, a malformed return value, or a response/score with
    NaN is stored as that item's ``error`` and counted; it does not stop the run.
    """
    start = time.perf_counter()
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise UserInputError(
            f"execute: expected workers to be an integer >= 1, found {workers!r}",
            hint="pass --workers 1 (in-process) or more (process pool)",
        )
    own_store = not isinstance(store, ItemStore)
    db = ItemStore(store) if own_store else store
    try:
        work = _check_items(items)
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
        if todo and workers > 1:
            try:
                pickle.dumps(fn)
            except Exception as exc:  # noqa: BLE001 - any pickling failure means the same
                raise UserInputError(
                    f"execute(workers={workers}): fn must be picklable to run in worker "
                    f"processes, found {fn!r} ({type(exc).__name__}: {exc})",
                    hint="define fn at module level (or a functools.partial of one), or "
                    "use --workers 1",
                ) from None

        rec = _Recorder(db, multiplicity)
        bar, task = _make_progress(progress and not quiet and bool(todo), len(todo), cached)

        def tick() -> None:
            bar.update(task, advance=1, note=f"({cached} cached, {rec.errors} errors)")

        with bar:
            if not todo:
                pass
            elif workers == 1:
                _run_inline(todo, fn, rec, tick)
            else:
                _run_pool(todo, fn, min(workers, len(todo)), rec, tick)

        summary = ExecutionSummary(
            total=len(work),
            cached=cached + rec.cached_dups,
            computed=rec.computed,
            errors=rec.errors,
            seconds=time.perf_counter() - start,
            error_samples=tuple(rec.samples),
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
