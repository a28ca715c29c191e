"""Joining (or starting) a Ray cluster, and what the driver asks of it before a run.

Rules:

- ``ray`` is an optional extra: importing this module never imports it; every entry
  point does, and says ``pip install "vidmem[ray]"`` when it is missing;
- an already-connected Ray (a test's ``ray.init(num_cpus=2)``, a notebook) is used as
  it is; otherwise ``--ray-address`` / ``RAY_ADDRESS`` is joined, or a local instance of
  ``workers`` CPUs is started (no dashboard: nothing here needs it) and lives as long as
  this process: :func:`start_local` stops it on exit, on SIGTERM / SIGHUP (exit code
  128 + the signal) and Ctrl-C, and a reaper process (:mod:`~vidmem.runners.ray_reaper`)
  stops the Ray agents a driver killed outright would leave behind;
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

__all__ = ["cluster_report", "connect", "import_ray", "require_room", "start_local",
           "stop_local", "write_probe"]

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
            start_local(ray, spec.workers, runtime_env)
    except (ConnectionError, TimeoutError, RuntimeError, ValueError) as exc:
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        raise VidmemError(
            f"--executor ray: could not connect to {where}: {type(exc).__name__}: {exc}",
            hint="start the head with `ray start --head` (workers: `ray start --address "
            "HEAD:6379`) and pass --ray-address HEAD:6379 or set RAY_ADDRESS; the driver's "
            "ray and Python versions must match the cluster's; or use --executor local",
        ) from None
    return ray


_LOCAL: dict[str, Any] = {}  # the local instance this process started: its reaper


def _exit_on_signal(signum: int, frame: Any) -> None:
    # Unwind like an exception (finally blocks run, the atexit hook stops Ray), with the
    # shell's exit code for a signal.
    raise SystemExit(128 + signum)


def start_local(ray: Any, num_cpus: int, runtime_env: dict[str, Any]) -> None:
    """Start a local Ray instance that ends with this process, however it ends.

    Ray's agents are started by the raylet even without the dashboard; ``ray.shutdown``
    stops them, so it runs on exit and on SIGTERM / SIGHUP; a SIGKILL (or a signal during
    ``ray.init``) is covered by the reaper process started first.
    """
    import atexit
    import signal
    import threading

    from vidmem.runners import ray_reaper

    if "reaper" not in _LOCAL:
        _LOCAL["reaper"] = ray_reaper.start(Path(ray.__file__).parent)
    try:
        ray.init(num_cpus=num_cpus, include_dashboard=False, runtime_env=runtime_env)
    except BaseException:  # a signal during init too: stop what already started
        stop_local(ray)
        raise
    atexit.register(stop_local, ray)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _exit_on_signal)


def stop_local(ray: Any) -> None:
    """Stop the local Ray instance :func:`start_local` started (no-op when there is none)."""
    import contextlib

    with contextlib.suppress(Exception):  # exiting: a half-started Ray must not mask why
        ray.shutdown()


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
