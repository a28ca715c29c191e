"""`vidmem sim build BENCHMARK`: write a synthetic dataset in a benchmark's own format.

:func:`build` dispatches by benchmark name to a builder module. Adding a builder is one
line in :data:`BUILDERS` (``name -> "module:function"``, imported only when used);
each builder has the signature ``(out: Path, *, seed: int, n_cases: int | None) ->
BuildSummary``.

Every builder writes the benchmark's official layout under ``out`` and, outside it,
``out/_truth/``: what really happened in each video (per-frame entity boxes, camera
poses, gaps). Scorers never read ``_truth``; validation tests do.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from vidmem.errors import UnknownNameError, UserInputError
from vidmem.registry import unknown_name_message

__all__ = ["BUILDERS", "TRUTH_DIR", "BuildSummary", "build", "check_n_cases"]

#: benchmark name -> "module:function" of its builder.
BUILDERS: dict[str, str] = {
    "cmbench": "vidmem.benchmarks.cmbench.sim_build:build_cmbench",
    "memory_loop": "vidmem.benchmarks.memory_loop.sim_build:build_memory_loop",
    "vmem_track_b": "vidmem.benchmarks.vmem_track_b.sim_build:build_track_b",
    "mist": "vidmem.benchmarks.mist.sim_build:build_mist",
}
#: folder (under the build root) that holds the truth files.
TRUTH_DIR = "_truth"


@dataclass(frozen=True)
class BuildSummary:
    """What a build wrote.

    Attributes:
        benchmark: the benchmark name.
        root: the output folder.
        seed: the build seed.
        n_cases: videos (CMBench) or start images (memory loop) built.
        n_items: rows of the manifest (tasks or cases).
        manifest: the manifest file, relative to ``root``.
        files: every file written, relative to ``root``, sorted.
        seconds: wall-clock time of the build.
        extras: builder-specific facts.
    """

    benchmark: str
    root: Path
    seed: int
    n_cases: int
    n_items: int
    manifest: str
    files: tuple[str, ...]
    seconds: float
    extras: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "root": str(self.root), "seed": self.seed,
                "n_cases": self.n_cases, "n_items": self.n_items, "manifest": self.manifest,
                "files": list(self.files), "seconds": round(self.seconds, 3),
                "extras": dict(self.extras)}


def check_n_cases(n_cases: object, default: int, benchmark: str) -> int:
    """Validate ``n_cases`` (``None`` gives ``default``)."""
    if n_cases is None:
        return default
    if isinstance(n_cases, bool) or not isinstance(n_cases, int) or n_cases < 1:
        raise UserInputError(
            f"sim build {benchmark}: n_cases must be an int >= 1, found {n_cases!r}",
            hint=f"pass e.g. --n-cases {default}")
    return n_cases


def build(benchmark: str, out: Path | str, *, seed: int = 0,
          n_cases: int | None = None) -> BuildSummary:
    """Write a synthetic ``benchmark`` dataset under ``out``.

    Args:
        benchmark: one of :data:`BUILDERS` (``cmbench``, ``memory_loop``,
            ``vmem_track_b``, ``mist``).
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
    if benchmark not in BUILDERS:
        raise UnknownNameError(
            unknown_name_message("sim benchmark", str(benchmark), sorted(BUILDERS)))
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise UserInputError(f"sim build {benchmark}: seed must be an int >= 0, found {seed!r}",
                             hint="pass e.g. --seed 0")
    root = Path(out)
    if root.exists() and not root.is_dir():
        raise UserInputError(f"sim build {benchmark}: output {root} exists and is not a folder",
                             hint="pass a folder path with --out")
    root.mkdir(parents=True, exist_ok=True)
    module_name, _, func = BUILDERS[benchmark].partition(":")
    builder = getattr(importlib.import_module(module_name), func)
    start = time.perf_counter()
    summary: BuildSummary = builder(root, seed=seed, n_cases=n_cases)
    return replace(summary, seconds=time.perf_counter() - start)
