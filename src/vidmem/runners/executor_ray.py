"""The Ray path of :func:`~vidmem.runners.execute.execute`: long-lived actors, batched items.

Rules (reasons in :data:`vidmem.runners.execution_spec.PROTOCOL`):

- one actor per worker, made with ``fn``; ``fn``'s module caches (the loaded backends of
  :mod:`vidmem.runners.benchmark_run`, the generators of :mod:`vidmem.runners.generation`)
  live in the actor's process, so a backend is loaded once per actor and reused across
  every batch it computes;
- an actor reserves 1 CPU (and ``gpus_per_worker`` GPUs) and caps its native threads
  at 1 (:mod:`vidmem.runners.worker_threads`);
- items go in batches (two calls queued per actor, so it never waits for the driver);
  each item runs through the same ``_call`` as the local loops, so an exception in
  ``fn`` is that item's error text, word for word the local one;
- before any item, every actor proves it sees the run directory (a token file the
  driver wrote) and the ``shared`` folders; otherwise the run stops naming the node;
- a dead actor is restarted by Ray and its batch re-run (``max_restarts`` /
  ``max_task_retries``); a batch that still fails makes its items suspects, and the
  actor is replaced by a fresh one (its in-flight calls finish first); each suspect
  then runs alone on an idle actor, nothing queued beside it (a crash takes every call
  queued on its actor down), and one that still fails is stored as an error for that
  item only; after too many failures in a row with no success between them the run
  stops (:class:`~vidmem.errors.VidmemError`);
- only the driver records results, through the same recorder as the local loops.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vidmem.errors import UserInputError, VidmemError
from vidmem.runners import execution_spec as es
from vidmem.runners.execution_loops import _call
from vidmem.runners.execution_records import Recorder
from vidmem.runners.execution_spec import ExecutorSpec

__all__ = ["run_ray"]

#: calls queued on one actor at a time
QUEUED_PER_ACTOR = 2


class ItemWorker:
    """The actor's class: holds ``fn`` (and, through its module caches, the backends)."""

    def __init__(self, fn: Callable[[Any], Any], threads: int = 1) -> None:
        from vidmem.runners.worker_threads import limit_threads

        limit_threads(threads)  # the actor reserved one CPU
        self.fn = fn

    def check(self, probe: str | None, token: str | None, shared: tuple[str, ...],
              warmup: Callable[[], Any] | None = None) -> dict[str, Any]:
        from vidmem.runners.execution_loops import _format_exception
        from vidmem.runners.ray_session import check_paths, node_of_this_worker

        answer = {**node_of_this_worker(), "problems": check_paths(probe, token, shared)}
        if warmup is not None and not answer["problems"]:
            try:  # e.g. the models load here, once per actor, and not on the driver
                answer["prepared"] = warmup()
            except Exception as exc:  # noqa: BLE001 - reported to the driver, by node
                answer["warmup_error"] = _format_exception(exc)
        return answer

    def run(self, items: list[Any]) -> list[tuple[bool, Any]]:
        return [_call(self.fn, item) for item in items]


@dataclass
class _Pool:
    """The actors of one run: who takes new work, who is retiring, what is in flight."""

    ray: Any
    make: Callable[[], Any]
    live: list[Any] = field(default_factory=list)
    retiring: list[Any] = field(default_factory=list)
    load: dict[int, int] = field(default_factory=dict)  # id(actor) -> calls in flight
    #: ref -> (actor, batch, whether the batch is a suspect running alone on its actor)
    in_flight: dict[Any, tuple[Any, list[Any], bool]] = field(default_factory=dict)

    def _send(self, actor: Any, batch: list[Any], alone: bool) -> None:
        self.in_flight[actor.run.remote(batch)] = (actor, batch, alone)
        self.load[id(actor)] += 1

    def submit(self, queue: deque[list[Any]], suspects: deque[Any]) -> None:
        """Fill the actors; while items are suspected, each runs alone on an idle actor.

        A crash takes every call queued on the actor down with it, so a suspect's own
        failure is only its own when nothing else was on its actor; and nothing is
        queued behind it either.
        """
        if suspects or any(alone for _, _, alone in self.in_flight.values()):
            for actor in self.live:
                if suspects and not self.load[id(actor)]:
                    self._send(actor, [suspects.popleft()], alone=True)
            return
        for actor in self.live:
            while queue and self.load[id(actor)] < QUEUED_PER_ACTOR:
                self._send(actor, queue.popleft(), alone=False)

    def finished(self, ref: Any) -> tuple[Any, list[Any], bool]:
        actor, batch, alone = self.in_flight.pop(ref)
        self.load[id(actor)] -= 1
        if actor in self.retiring and not self.load[id(actor)]:
            self.retiring.remove(actor)
            self.ray.kill(actor, no_restart=True)
        return actor, batch, alone

    def replace(self, actor: Any) -> None:
        """Stop giving ``actor`` work and put a fresh one in its place."""
        if actor not in self.live:
            return
        self.live[self.live.index(actor)] = fresh = self.make()
        self.load[id(fresh)] = 0
        if self.load[id(actor)]:
            self.retiring.append(actor)
        else:
            self.ray.kill(actor, no_restart=True)

    def close(self) -> None:
        for actor in (*self.live, *self.retiring):
            with contextlib.suppress(Exception):  # an actor already gone is fine
                self.ray.kill(actor, no_restart=True)


def _batches(todo: list[Any], size: int) -> deque[list[Any]]:
    return deque(todo[i:i + size] for i in range(0, len(todo), size))


def _start(ray: Any, pool: _Pool, spec: ExecutorSpec, n: int, probe_dir: Path | None,
           warmup: Callable[[], Any] | None = None) -> Any:
    """Make ``n`` actors, check that each sees the run directory and shared folders and
    has run ``warmup``; return the first actor's warmup result."""
    from vidmem.runners.ray_session import write_probe

    probe, token = write_probe(probe_dir) if probe_dir is not None else (None, None)
    try:
        for _ in range(n):
            actor = pool.make()
            pool.live.append(actor)
            pool.load[id(actor)] = 0
        refs = [a.check.remote(None if probe is None else str(probe), token, spec.shared,
                               warmup) for a in pool.live]
        ready, waiting = ray.wait(refs, num_returns=len(refs), timeout=es.START_TIMEOUT_SECONDS)
        if waiting:
            raise VidmemError(
                f"--executor ray: {len(waiting)} of {n} workers did not start within "
                f"{es.START_TIMEOUT_SECONDS:g} s (each needs 1 CPU and "
                f"{spec.gpus_per_worker:g} GPU; the cluster has {ray.cluster_resources()})",
                hint="lower --workers or --gpus-per-worker, or add nodes to the cluster")
        try:
            answers = ray.get(ready)
        except Exception as exc:  # a worker that cannot even start: e.g. fn does not unpickle
            raise VidmemError(
                f"--executor ray: a worker failed to start: {type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''}",
                hint="run `vidmem doctor --executor ray` to see what each node has; the "
                "workers need the same vidmem version as the driver") from None
    finally:
        if probe is not None:
            probe.unlink(missing_ok=True)
    blind = [a for a in answers if a["problems"]]
    if blind:
        shown = "; ".join(f"node {a['node_ip']} ({a['host']}): {', '.join(a['problems'])}"
                          for a in blind[:3])
        raise UserInputError(
            f"--executor ray: {len(blind)} of {n} workers cannot see the run's files: {shown}",
            hint="vidmem passes videos between the driver and the workers as paths: mount "
            "the run directory (--out), the dataset and the videos at the same path on "
            "every node (e.g. NFS), or run with --executor local")
    failed = [a for a in answers if a.get("warmup_error")]
    if failed:
        a = failed[0]
        first = a["warmup_error"].splitlines()[0]
        raise UserInputError(
            f"--executor ray: {len(failed)} of {n} workers could not prepare (node "
            f"{a['node_ip']}, {a['host']}): {first}",
            hint="on Ray the workers load the models, not the driver: the weights and "
            "options must be valid on every node (`vidmem doctor --executor ray` checks "
            "them); nothing was computed")
    return answers[0].get("prepared") if answers else None


def _ray_failure(exc: BaseException, tries: int) -> str:
    first = str(exc).splitlines()[0] if str(exc) else ""
    return (f"{type(exc).__name__}: the Ray worker computing this item died {tries} times "
            f"with this item alone on it (1 try + {es.MAX_TASK_RETRIES} retries, after its "
            f"batch failed; process or node lost, e.g. out of memory or a segfault): "
            f"{first}; it is retried on the next run")


def run_ray(todo: list[Any], fn: Callable[[Any], Any], spec: ExecutorSpec, rec: Recorder,
            tick: Callable[[], None], *, probe_dir: Path | None,
            warmup: Callable[[], Any] | None = None) -> Any:
    """Compute ``todo`` on Ray actors; the driver records every outcome through ``rec``.

    Args:
        probe_dir: the run directory, which every worker must see (``None``: only
            ``spec.shared`` is checked).
        warmup: run by every actor before its first item (see
            :func:`~vidmem.runners.execute.execute`).

    Returns:
        The first actor's ``warmup()`` result (``None`` without a warmup).

    Raises:
        MissingDependencyError: ``ray`` is not installed.
        UserInputError: the cluster has no room for a worker, or a worker cannot see
            the run's files.
        VidmemError: workers failed to start, or failed too often in a row.
    """
    from vidmem.runners.ray_session import connect, require_room

    ray = connect(spec)
    require_room(ray, spec)
    from ray.exceptions import RayActorError, RayError

    actor_class = ray.remote(ItemWorker).options(
        num_cpus=1, num_gpus=spec.gpus_per_worker, max_concurrency=1,
        max_restarts=es.MAX_ACTOR_RESTARTS, max_task_retries=es.MAX_TASK_RETRIES)

    def make() -> Any:
        try:
            return actor_class.remote(fn)
        except Exception as exc:  # noqa: BLE001 - ray raises several types for this
            raise UserInputError(
                f"--executor ray: the work function {fn!r} cannot be sent to the workers "
                f"({type(exc).__name__}: {exc})",
                hint="define it at module level (or a functools.partial of one), or use "
                "--executor local --workers 1") from None

    size = spec.batch_size or es.auto_batch_size(len(todo), spec.workers)
    queue = _batches(todo, size)
    suspects: deque[Any] = deque()  # items of failed batches, to run alone
    pool = _Pool(ray, make)
    max_in_a_row = es.MAX_ACTOR_RESTARTS + spec.workers
    in_a_row = 0
    try:
        prepared = _start(ray, pool, spec, min(spec.workers, len(queue)), probe_dir, warmup)
        pool.submit(queue, suspects)
        while pool.in_flight:
            ready, _ = ray.wait(list(pool.in_flight), num_returns=1)
            actor, batch, alone = pool.finished(ready[0])
            try:
                outcomes = ray.get(ready[0])
            except RayError as exc:
                in_a_row += 1
                if isinstance(exc, RayActorError):
                    pool.replace(actor)
                if not alone:  # the culprit is in it, or on the same actor: each goes alone
                    suspects.extend(batch)
                else:
                    text = (_ray_failure(exc, es.MAX_TASK_RETRIES + 1)
                            if isinstance(exc, RayActorError)
                            else f"{type(exc).__name__}: {exc}")
                    rec.record(batch[0], False, text)
                    tick()
                if in_a_row > max_in_a_row:
                    names = ", ".join(repr(it.item_id) for it in batch[:5])
                    raise VidmemError(
                        f"execute (ray): {in_a_row} worker calls failed in a row (last: "
                        f"{names}: {type(exc).__name__}); {len(queue)} batches and "
                        f"{len(suspects)} single items were not run",
                        hint="run `vidmem doctor --executor ray`, or rerun with --executor "
                        "local --workers 1 to see the failure in-process; finished items "
                        "are saved, rerun with --resume") from None
            else:
                in_a_row = 0
                for item, (ok, payload) in zip(batch, outcomes, strict=True):
                    rec.record(item, ok, payload)
                    tick()
            pool.submit(queue, suspects)
    finally:
        pool.close()
    return prepared

