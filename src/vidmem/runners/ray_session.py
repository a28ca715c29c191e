"""Joining (or starting) a Ray cluster, and what the driver asks of it before a run.

Rules:

- ``ray`` is an optional extra: importing this module never imports it; every entry
  point does, and says ``pip install "vidmem[ray]"`` when it is missing;
- an already-connected Ray (a test's ``ray.init(num_cpus=2)``, a notebook) is used as
  it is; otherwise ``--ray-address`` / ``RAY_ADDRESS`` is joined, or a local instance of
  ``workers`` CPUs is started (no dashboard: nothing here needs it) and lives as long as
  this process;
- a job vidmem starts gets the driver's forwarded variables
  (:func:`~vidmem.runners.execution_spec.forwarded_env`) as its runtime environment;
- the cluster must have room for every worker (1 CPU and ``gpus_per_worker`` GPUs each,
  counted over all nodes) before any actor is made: an impossible request is an error
  now, not a run that waits forever (an actor that still cannot be placed, e.g. GPUs
  split over nodes, times out after ``START_TIMEOUT_SECONDS``).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from vidmem.errors import MissingDependencyError, UserInputError, VidmemError
from vidmem.runners.execution_spec import ExecutorSpec, forwarded_env

__all__ = ["cluster_report", "connect", "import_ray", "require_room", "write_probe"]

PROBE_PREFIX = ".vidmem-ray-probe-"


def import_ray() -> Any:
    """The ``ray`` module, or a clear error naming the extra."""
    try:
        import ray
    except ImportError:
        raise MissingDependencyError(
            "--executor ray needs the 'ray' package, which is not installed",
            hint='pip install "vidmem[ray]" (or pip install ray), or use --executor local'
        ) from None
    return ray


def connect(spec: ExecutorSpec) -> Any:
    """A connected ``ray`` module for ``spec`` (see the module rules)."""
    ray = import_ray()
    if ray.is_initialized():
        return ray
    address = spec.address or os.environ.get("RAY_ADDRESS") or None
    runtime_env = {"env_vars": forwarded_env()}
    try:
        if address:
            ray.init(address=address, runtime_env=runtime_env, log_to_driver=True)
        else:
            ray.init(num_cpus=spec.workers, include_dashboard=False, runtime_env=runtime_env)
    except (ConnectionError, TimeoutError, RuntimeError, ValueError) as exc:
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        raise VidmemError(
            f"--executor ray: could not connect to {where}: {type(exc).__name__}: {exc}",
            hint="start the head with `ray start --head` (workers: `ray start --address "
            "HEAD:6379`) and pass --ray-address HEAD:6379 or set RAY_ADDRESS; the driver's "
            "ray and Python versions must match the cluster's; or use --executor local",
        ) from None
    return ray


def require_room(ray: Any, spec: ExecutorSpec) -> dict[str, float]:
    """The cluster's CPUs and GPUs, after checking that ``spec.workers`` workers fit on it.

    Raises:
        UserInputError: the cluster has fewer than ``workers`` CPUs, or fewer than
            ``workers x gpus_per_worker`` GPUs, in all (the run would wait forever).
    """
    total = ray.cluster_resources()
    cpus, gpus = float(total.get("CPU", 0.0)), float(total.get("GPU", 0.0))
    need_gpus = spec.workers * spec.gpus_per_worker
    if cpus < spec.workers or gpus < need_gpus:
        fits = int(min(cpus, gpus / spec.gpus_per_worker if spec.gpus_per_worker else cpus))
        raise UserInputError(
            f"--executor ray: --workers {spec.workers} need {spec.workers} CPU and "
            f"{need_gpus:g} GPU (1 CPU and {spec.gpus_per_worker:g} GPU each), the cluster "
            f"has {cpus:g} CPU and {gpus:g} GPU in all",
            hint=(f"lower --workers to {fits}, " if fits >= 1 else "")
            + "lower --gpus-per-worker (0 runs on CPU), or add nodes (`ray start --address "
            "HEAD:6379 --num-gpus N`)")
    return {"CPU": cpus, "GPU": gpus}


def write_probe(folder: Path) -> tuple[Path, str]:
    """Write a fresh token file into ``folder`` (the run directory) for the workers to read.

    Stale probe files a killed driver left are removed first.
    """
    for old in folder.glob(PROBE_PREFIX + "*"):
        old.unlink(missing_ok=True)
    token = secrets.token_hex(16)
    path = folder / f"{PROBE_PREFIX}{token[:8]}"
    path.write_text(token, encoding="utf-8")
    return path, token


def check_paths(probe: str | None, token: str | None, shared: tuple[str, ...]) -> list[str]:
    """Run on a worker: what it cannot see of the driver's files (empty: all visible).

    Example:
        >>> check_paths(None, None, ("/nonexistent-vidmem-folder",))
        ['/nonexistent-vidmem-folder does not exist']
    """
    problems = []
    if probe is not None:
        try:
            found = Path(probe).read_text(encoding="utf-8")
        except OSError:
            found = None
        if found != token:
            problems.append(f"the run directory {Path(probe).parent} is not visible "
                            f"({Path(probe).name} {'differs' if found else 'is missing'})")
    problems += [f"{p} does not exist" for p in shared if not Path(p).exists()]
    return problems


def node_of_this_worker() -> dict[str, Any]:
    """Run on a worker: which node and process it is."""
    import socket

    import ray

    return {"node_ip": ray.util.get_node_ip_address(), "host": socket.gethostname(),
            "pid": os.getpid()}


def cluster_report(spec: ExecutorSpec, model_dir: str | None = None) -> dict[str, Any]:
    """For ``vidmem doctor --executor ray``: the nodes, and what each can load.

    On every alive node one task (pinned to the node) reports its vidmem and Ray
    versions and, for every registered backend, whether its module imports and its
    weights are found there, exactly as the local doctor does.
    """
    ray = connect(spec)
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from vidmem.runners.doctor import backends_here

    probe = ray.remote(num_cpus=0)(backends_here)
    nodes, refs = [], []
    for node in sorted(ray.nodes(), key=lambda n: n.get("NodeManagerAddress", "")):
        res = node.get("Resources", {})
        row = {"node_ip": node.get("NodeManagerAddress"), "alive": bool(node.get("Alive")),
               "cpus": res.get("CPU", 0.0), "gpus": res.get("GPU", 0.0)}
        nodes.append(row)
        if row["alive"]:
            strategy = NodeAffinitySchedulingStrategy(node_id=node["NodeID"], soft=False)
            refs.append((row, probe.options(scheduling_strategy=strategy).remote(model_dir)))
    for row, ref in refs:
        try:
            row.update(ray.get(ref, timeout=120))
        except Exception as exc:  # noqa: BLE001 - a node that cannot answer is reported, not fatal
            row["problem"] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    total = ray.cluster_resources()
    return {"ray_version": ray.__version__, "address": spec.address or
            os.environ.get("RAY_ADDRESS") or "local instance", "nodes": nodes,
            "cpus": total.get("CPU", 0.0), "gpus": total.get("GPU", 0.0)}
