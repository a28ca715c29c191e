"""`vidmem doctor`: what is installed, which backends can load, which weights are found.

With ``--executor ray`` it also joins the cluster (``--ray-address`` / ``RAY_ADDRESS``,
else a local instance) and reports its nodes, CPUs, GPUs and Ray version, and, from a
task pinned to each alive node, that node's vidmem version and the same backend table
as here (:func:`backends_here`), so a node that lacks a package or the weights shows.
"""

from __future__ import annotations

import importlib
import os
import platform
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from vidmem.errors import VidmemError
from vidmem.models.extras import install_line, missing_modules
from vidmem.registry import BACKENDS

CORE_PACKAGES = (
    "numpy", "scipy", "scikit-learn", "av", "pillow", "opencv-python-headless",
    "scikit-image", "pydantic", "typer", "rich", "jinja2", "matplotlib", "openai",
)
MODEL_PACKAGES = ("torch", "transformers", "safetensors")
RAY_PACKAGES = ("ray",)


def _version(dist: str) -> str | None:
    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def _h264_encoder() -> bool:
    try:
        import av

        av.codec.Codec("libx264", "w")
    except Exception:
        return False
    return True


def _backend_status(entry: Any, model_dir: str | None) -> dict[str, Any]:
    """Can the backend's module be imported, and are its default weights on disk?"""
    row: dict[str, Any] = {"name": entry.name, "role": entry.meta.get("role"), "extra": entry.extra}
    if entry.status == "planned":
        row.update(importable=False, weights="n/a", problem="planned, not implemented yet",
                   status="planned")
        return row
    module_name = entry.target.partition(":")[0]
    try:
        importlib.import_module(module_name)
        row["importable"] = True
    except ImportError as exc:
        row.update(importable=False, problem=f"missing package: {exc.name}")
    except Exception as exc:  # a broken install of an optional package must not crash doctor
        row.update(importable=False, problem=f"{type(exc).__name__}: {exc}")
    # an importable module proves little: most import torch only when a model is built
    missing = missing_modules(entry.extra)
    if missing:
        row.setdefault("problem", f"missing package: {', '.join(missing)}; {install_line(entry.extra)}")
    row["status"] = (f"needs the {entry.extra} extra" if missing else
                     "available" if row["importable"] else "broken")
    checkpoint = entry.meta.get("checkpoint")
    if checkpoint is None:
        row["weights"] = "none needed"
    else:
        from vidmem.models.weights import resolve_weights

        try:
            row["weights"] = str(resolve_weights(checkpoint, backend=entry.name, model_dir=model_dir))
        except VidmemError:
            row["weights"] = f"not found ({checkpoint})"
    return row


def _judge_status(judge_url: str | None, judge_model: str | None) -> dict[str, Any]:
    if not judge_url:
        return {"url": None, "answers": None,
                "detail": "no judge endpoint configured (--judge-url or VIDMEM_JUDGE_URL)"}
    try:
        judge = BACKENDS.load("judge/openai")(base_url=judge_url, model=judge_model or "(not set)")
        ping = judge.ping()
    except VidmemError as exc:
        return {"url": judge_url, "answers": False, "detail": exc.message}
    status = {"url": judge_url, "answers": ping.ok, "detail": ping.message,
              "models": list(ping.models), "json_schema": None,
              "json_schema_detail": "not checked: the server does not answer"}
    if ping.ok:
        status["json_schema"], status["json_schema_detail"] = judge.check_schema()
    return status


def backends_here(model_dir: str | None = None) -> dict[str, Any]:
    """This process's vidmem version and backend table (run on each Ray node)."""
    import vidmem

    return {"vidmem_version": vidmem.__version__, "python": sys.version.split()[0],
            "backends": [_backend_status(e, model_dir) for e in BACKENDS.entries()]}


def diagnose(
    *, model_dir: str | None = None, judge_url: str | None = None, judge_model: str | None = None,
    executor: str = "local", ray_address: str | None = None,
) -> dict[str, Any]:
    """Collect the environment report as plain data (the CLI renders it).

    ``executor="ray"`` adds ``ray``: :func:`vidmem.runners.ray_session.cluster_report`.
    """
    report = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "core_packages": {name: _version(name) for name in CORE_PACKAGES},
        "model_packages": {name: _version(name) for name in MODEL_PACKAGES},
        "h264_encoder": _h264_encoder(),
        "backends": [_backend_status(e, model_dir) for e in BACKENDS.entries()],
        "judge": _judge_status(judge_url, judge_model),
        "ray_packages": {name: _version(name) for name in RAY_PACKAGES},
    }
    if executor.strip().lower() == "ray":
        from vidmem.runners.execution_spec import ExecutorSpec
        from vidmem.runners.ray_session import cluster_report

        # a local instance started for the report gets the whole machine
        spec = ExecutorSpec(kind="ray", address=ray_address, workers=os.cpu_count() or 1)
        report["ray"] = cluster_report(spec,
                                       model_dir=model_dir)
    elif ray_address is not None:
        from vidmem.runners.execution_spec import ExecutorSpec

        ExecutorSpec(kind=executor.strip().lower(), address=ray_address)  # names the fix
    return report
