"""What a sim dataset builder writes and returns (the builders live in the benchmark folders).

:func:`vidmem.runners.sim_build.build` finds a benchmark's builder; a builder has the
signature ``(out: Path, *, seed: int, n_cases: int | None) -> BuildSummary``.

Every builder writes the benchmark's official layout under ``out`` and, outside it,
``out/_truth/``: what really happened in each video (per-frame entity boxes, camera
poses, gaps). Scorers never read ``_truth``; validation tests do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vidmem.errors import UserInputError

__all__ = ["TRUTH_DIR", "BuildSummary", "check_n_cases"]

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
