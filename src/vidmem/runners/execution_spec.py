"""How :func:`~vidmem.runners.execute.execute` computes its items: locally or on Ray.

:class:`ExecutorSpec` is what the shared CLI flags (``--executor``, ``--workers``,
``--ray-address``, ``--gpus-per-worker``) become. The rules every executor follows:

- the executor only decides *where* an item is computed, never *what*: results, rows,
  ``scores.jsonl`` and ``summary.json`` are the same whatever the executor, the worker
  count or the completion order (rows are built from the store, in dataset order);
- only the driver writes the run store; workers return results;
- so the executor is not part of a run's identity: a run started on Ray may be resumed
  locally and the other way round (``run.json``'s ``command`` says what was used).

:data:`PROTOCOL` holds the rules the issue left open, with their reasons; it reaches
``run.json``'s ``protocol`` block under ``execution`` (the same for every executor, so
it never stops a resume).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from typing import Any, Literal

from vidmem.errors import UserInputError

__all__ = ["EXECUTORS", "PROTOCOL", "ExecutorSpec", "auto_batch_size"]

EXECUTORS = ("local", "ray")

#: Ray: restarts of one actor after its process or node died (Ray's ``max_restarts``).
MAX_ACTOR_RESTARTS = 3
#: Ray: re-runs of one batch on its restarted actor (Ray's ``max_task_retries``).
MAX_TASK_RETRIES = 2
#: Ray: the most items one actor call carries.
MAX_BATCH = 8
#: Ray: seconds the workers have to start and answer the run-directory check.
START_TIMEOUT_SECONDS = 600.0

PROTOCOL: dict[str, dict[str, str]] = {
    "work_units": {
        "rule": "scoring and generation items go to long-lived workers (one Ray actor per "
        "worker, holding its loaded backends or generator across items) in batches of "
        f"ceil(items / (4 x workers)), at most {MAX_BATCH}; closed-loop rollouts go one "
        "(story, condition) per call, its segments in order inside it",
        "reason": "a batch amortises the per-call overhead; four batches per worker keep "
        "every worker busy to the end; a rollout depends on its own earlier clips, so it "
        "cannot be split",
        "source": "issue 17 (work units); vidmem choice for the batch size",
    },
    "retries": {
        "rule": f"a worker lost with its process or node is restarted up to "
        f"{MAX_ACTOR_RESTARTS} times and its batch re-run up to {MAX_TASK_RETRIES} times "
        "(Ray max_restarts / max_task_retries); a batch that still fails is split into "
        "single items, each run alone on its worker with the same retries; an item that "
        "still fails is stored as an error for that item only and is retried by --resume",
        "reason": "a lost node must not lose the run, and one item that crashes its worker "
        "every time must not take its batch-mates, or the calls queued beside it, down "
        "with it",
        "source": "issue 17 (a lost worker's task is retried, bounded)",
    },
    "files": {
        "rule": "videos, crops and references travel as paths: the run directory (and the "
        "dataset and videos folders) must be visible at the same path on every node; each "
        "worker checks it at start by reading a token the driver wrote into the run "
        "directory, and the run stops with an error naming the node otherwise",
        "reason": "the run directory is where generators write and scorers read; shared "
        "paths keep the local and the Ray path the same code and keep multi-GB videos out "
        "of the object store",
        "source": "issue 17 (object refs or the run dir when the cluster shares it: say "
        "which, and check it at start); vidmem chose paths",
    },
    "store": {
        "rule": "only the driver writes items.sqlite; rows, scores.jsonl and summary.json "
        "are built from the store after execution, in dataset order",
        "reason": "no shared database is needed, and the output is byte-identical "
        "whatever the executor, the worker count or the completion order",
        "source": "issue 17",
    },
    "environment": {
        "rule": "a Ray instance vidmem starts or joins gets the driver's VIDMEM_* , "
        "HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE, OPENAI_API_KEY and OPENAI_BASE_URL "
        "variables (Ray runtime_env); nothing else of the driver's environment",
        "reason": "model folders, caches, offline mode and the judge's endpoint must be "
        "the same on every worker for the results to be the same",
        "source": "vidmem choice",
    },
}

#: environment variables a Ray job started by vidmem hands to its workers
FORWARDED_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "OPENAI_API_KEY", "OPENAI_BASE_URL")


def forwarded_env(environ: Any = None) -> dict[str, str]:
    """The driver's variables that the workers get (see ``PROTOCOL['environment']``).

    Example:
        >>> forwarded_env({"VIDMEM_MODEL_DIR": "/m", "HOME": "/root", "HF_HUB_OFFLINE": "1"})
        {'HF_HUB_OFFLINE': '1', 'VIDMEM_MODEL_DIR': '/m'}
    """
    env = os.environ if environ is None else environ
    return {k: env[k] for k in sorted(env) if k.startswith("VIDMEM_") or k in FORWARDED_ENV}


def auto_batch_size(n_items: int, workers: int) -> int:
    """Items per actor call: four calls per worker, at most :data:`MAX_BATCH` items each.

    Example:
        >>> auto_batch_size(116, 2), auto_batch_size(6, 2), auto_batch_size(0, 3)
        (8, 1, 1)
    """
    return max(1, min(MAX_BATCH, math.ceil(n_items / (4 * max(1, workers)))))


@dataclass(frozen=True)
class ExecutorSpec:
    """Where the items of a run are computed.

    Attributes:
        kind: ``local`` (this process with ``workers == 1``, else a spawn process pool)
            or ``ray`` (one actor per worker on a Ray cluster).
        workers: processes (local) or actors (Ray).
        address: the Ray cluster to join (``auto``, ``HOST:PORT``, ``ray://...``);
            ``None``: ``RAY_ADDRESS`` if set, else a local Ray instance of ``workers``
            CPUs started for this run.
        gpus_per_worker: GPUs each Ray actor reserves (fractional: 0.5 puts two on one
            GPU); ``0`` reserves none.
        batch_size: items per actor call; ``None``: :func:`auto_batch_size`.
        shared: folders the Ray workers must see at the same path (the dataset root,
            the videos); the run directory is always checked.

    Example:
        >>> ExecutorSpec().kind, ExecutorSpec(kind="ray", workers=2).describe()
        ('local', 'ray (2 workers)')
        >>> ExecutorSpec(kind="local", gpus_per_worker=0.5)
        Traceback (most recent call last):
        ...
        vidmem.errors.UserInputError: --gpus-per-worker 0.5 needs --executor ray (found --executor local)
          fix: add --executor ray, or drop --gpus-per-worker (local workers see every GPU)
    """

    kind: Literal["local", "ray"] = "local"
    workers: int = 1
    address: str | None = None
    gpus_per_worker: float = 0.0
    batch_size: int | None = None
    shared: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in EXECUTORS:
            raise UserInputError(
                f"--executor: expected one of {', '.join(EXECUTORS)}, found {self.kind!r}",
                hint="pass --executor local (default) or --executor ray")
        if isinstance(self.workers, bool) or not isinstance(self.workers, int) \
                or self.workers < 1:
            raise UserInputError(
                f"--workers: expected an integer >= 1, found {self.workers!r}",
                hint="pass --workers 1 (in-process) or more")
        g = self.gpus_per_worker
        if isinstance(g, bool) or not isinstance(g, int | float) or not math.isfinite(g) \
                or g < 0:
            raise UserInputError(
                f"--gpus-per-worker: expected a number >= 0, found {g!r}",
                hint="pass e.g. --gpus-per-worker 1, or 0.5 to put two workers on one GPU")
        if g > 0 and self.kind != "ray":
            raise UserInputError(
                f"--gpus-per-worker {g:g} needs --executor ray (found --executor {self.kind})",
                hint="add --executor ray, or drop --gpus-per-worker (local workers see "
                "every GPU)")
        if self.address is not None and self.kind != "ray":
            raise UserInputError(
                f"--ray-address {self.address} needs --executor ray (found --executor "
                f"{self.kind})", hint="add --executor ray, or drop --ray-address")
        if self.batch_size is not None and (isinstance(self.batch_size, bool)
                                            or not isinstance(self.batch_size, int)
                                            or self.batch_size < 1):
            raise UserInputError(f"executor batch_size: expected an integer >= 1, found "
                                 f"{self.batch_size!r}")

    def sharing(self, *paths: Any) -> ExecutorSpec:
        """A copy that also checks ``paths`` (``None`` skipped) on every Ray worker."""
        more = tuple(str(p) for p in paths if p is not None)
        return replace(self, shared=tuple(dict.fromkeys((*self.shared, *more))))

    def one_per_call(self) -> ExecutorSpec:
        """A copy that sends one item per actor call (closed-loop rollouts)."""
        return replace(self, batch_size=1)

    def describe(self) -> str:
        """A short human description, e.g. ``ray (2 workers, 0.5 GPU each)``."""
        parts = [f"{self.workers} worker{'s' if self.workers != 1 else ''}"]
        if self.gpus_per_worker:
            parts.append(f"{self.gpus_per_worker:g} GPU each")
        if self.address:
            parts.append(f"at {self.address}")
        return f"{self.kind} ({', '.join(parts)})"
