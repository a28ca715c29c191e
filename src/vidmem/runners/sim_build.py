"""`vidmem sim build BENCHMARK`: write a synthetic dataset in a benchmark's own format.

:func:`build` looks the benchmark up in the registry and calls its ``sim_build`` (a
benchmark still planned may name its builder in its catalog line, ``sim_build=
"module:function"``). Every builder writes the benchmark's official layout under ``out``
and, outside it, ``out/_truth/``: what really happened in each video. Scorers never read
``_truth``; validation tests do.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vidmem.errors import UnknownNameError, UserInputError
from vidmem.registry import BENCHMARKS, unknown_name_message

if TYPE_CHECKING:
    from vidmem.sim.build import BuildSummary

__all__ = ["build", "builders"]


def builders() -> dict[str, Any]:
    """Benchmark name -> a function returning its builder, for every benchmark that has one."""
    out: dict[str, Any] = {}
    for entry in BENCHMARKS.entries():
        target = entry.meta.get("sim_build")
        if target:
            module_name, _, func = str(target).partition(":")
            out[entry.name] = lambda m=module_name, f=func: getattr(importlib.import_module(m), f)
        elif entry.status == "available":
            bench = entry.load
            out[entry.name] = lambda b=bench: b().sim_build
    return out


def build(benchmark: str, out: Path | str, *, seed: int = 0,
          n_cases: int | None = None) -> BuildSummary:
    """Write a synthetic ``benchmark`` dataset under ``out``.

    Args:
        benchmark: a benchmark with a sim builder (see :func:`builders`).
        out: output folder (created if missing; files of the same names are replaced).
        seed: every byte written is a pure function of ``(seed, n_cases)``.
        n_cases: how many context videos / start images / stories / MIST cases;
            ``None`` for the builder's default.

    Returns:
        A :class:`BuildSummary`.

    Raises:
        UnknownNameError: unknown benchmark (the message lists the available ones).
        UserInputError: bad ``seed`` or ``n_cases``, or an unusable output folder.
    """
    known = builders()
    if benchmark not in known:
        raise UnknownNameError(
            unknown_name_message("sim benchmark", str(benchmark), sorted(known)))
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise UserInputError(f"sim build {benchmark}: seed must be an int >= 0, found {seed!r}",
                             hint="pass e.g. --seed 0")
    root = Path(out)
    if root.exists() and not root.is_dir():
        raise UserInputError(f"sim build {benchmark}: output {root} exists and is not a folder",
                             hint="pass a folder path with --out")
    root.mkdir(parents=True, exist_ok=True)
    builder = known[benchmark]()
    start = time.perf_counter()
    summary: BuildSummary = builder(root, seed=seed, n_cases=n_cases)
    return replace(summary, seconds=time.perf_counter() - start)
