"""Memory-loop records: one case of ``cases.jsonl``, the loaded dataset, the file format.

A memory-loop dataset is a folder::

    ROOT/
      cases.jsonl               one case per line (fields below)
      start_images/*.png        start frames (paths in cases.jsonl are relative to ROOT)
      poses/*.json              optional pose tracks for bring-your-own videos

Case fields:

==================== ======== ==========================================================
field                required what
==================== ======== ==========================================================
``case_id``          yes      unique, a safe file name: it names ``<case_id>.mp4``
``start_image``      yes      path of the start frame, relative to ``ROOT``
``loop_id``          yes      one of :data:`~vidmem.metrics.loop_paths.LOOP_IDS`
``prompt``           yes      the text a generator receives (normally the loop's target)
``duration_seconds`` yes      requested rollout length, seconds (> 0; 60 in the protocol)
``fps``              yes      requested frame rate (> 0)
``poses``            no       pose track of this case's video, relative to ``ROOT``: a
                              JSON ``{"c2w": [N x 4 x 4]}`` (or a bare ``N x 4 x 4``
                              list) of camera-to-world matrices, one per video frame
==================== ======== ==========================================================

Validation rules live in :mod:`vidmem.benchmarks.memory_loop.validate`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from vidmem.benchmarks.jsonl_dataset import MAX_LISTED_ERRORS, Problem, find_row
from vidmem.metrics.loop_paths import LOOPS

__all__ = [
    "BENCHMARK",
    "BENCHMARK_VERSION",
    "CASES_FILE",
    "CASE_FIELDS",
    "MAX_DURATION_SECONDS",
    "MAX_FPS",
    "MAX_LISTED_ERRORS",
    "OPTIONAL_FIELDS",
    "MemoryLoopCase",
    "MemoryLoopDataset",
    "Problem",
]

#: Benchmark name (registry key, manifest ``benchmark`` field, run.json).
BENCHMARK = "memory_loop"
# 1.1: nearest match first, then the excursion test; 1.2: rows carry t_half_beyond_gaps;
# 1.3: the reference's rules where the card is silent (per-RGB-channel whole-map SSIM
# clamped at 0, earliest tie, nearest pair per gap bucket, relative "no translation"
# cut-off) and a near-linear decline reported as tau past the identifiable range;
# 1.4: rows carry t_half_below_gaps, the camera-compliance gate and their pairs (for the
# model-level half-life)
BENCHMARK_VERSION = "1.4"
CASES_FILE = "cases.jsonl"
CASE_FIELDS = ("case_id", "start_image", "loop_id", "prompt", "duration_seconds", "fps")
OPTIONAL_FIELDS = ("poses",)

# Input limits (errors): a case asks a generator for one rollout that vidmem decodes whole;
# a value far past any loop is a typo or a hostile row, and would start hours of encoding.
#: the longest rollout, seconds: the protocol's loops last 60 s; ten minutes is ten loops
MAX_DURATION_SECONDS = 600.0
#: the highest frame rate: past every generator's output (the protocol asks 8-30 fps)
MAX_FPS = 120.0


class MemoryLoopCase(BaseModel):
    """One memory-loop case: a start image and a closed camera loop to perform.

    Attributes:
        case_id: unique id; names the generated video ``<case_id>.mp4``.
        start_image: start frame path relative to the dataset root.
        loop_id: which of the six loops.
        prompt: the instruction a generator receives.
        duration_seconds: requested rollout length, seconds.
        fps: requested frame rate, frames per second.
        poses: optional pose-track path relative to the root (bring-your-own videos).
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    case_id: str
    start_image: str
    loop_id: str
    prompt: str
    duration_seconds: float
    fps: float
    poses: str | None = None

    @property
    def difficulty(self) -> str:
        """``easy``, ``medium`` or ``hard`` (from the loop)."""
        return LOOPS[self.loop_id].difficulty

    @property
    def extra_fields(self) -> dict[str, Any]:
        """Fields of the row that this version of vidmem does not know."""
        return dict(self.model_extra or {})


@dataclass(frozen=True)
class MemoryLoopDataset:
    """A validated memory-loop dataset.

    Attributes:
        root: absolute path of the dataset folder.
        cases: cases in file order.
        warnings: validation warnings (the dataset loaded despite them).
    """

    root: Path
    cases: tuple[MemoryLoopCase, ...]
    warnings: tuple[Problem, ...] = ()

    def __len__(self) -> int:
        return len(self.cases)

    def __iter__(self) -> Iterator[MemoryLoopCase]:
        return iter(self.cases)

    @property
    def case_ids(self) -> tuple[str, ...]:
        """Case ids in file order."""
        return tuple(c.case_id for c in self.cases)

    def start_image_path(self, case: MemoryLoopCase | str) -> Path:
        """Absolute path of a case's start image."""
        c = self.case(case) if isinstance(case, str) else case
        return self.root / c.start_image

    def poses_path(self, case: MemoryLoopCase | str) -> Path | None:
        """Absolute path of a case's pose track from the manifest, or ``None``."""
        c = self.case(case) if isinstance(case, str) else case
        return None if c.poses is None else self.root / c.poses

    def case(self, case_id: str) -> MemoryLoopCase:
        """The case with this id.

        Raises:
            UserInputError: no such case (with close matches).
        """
        case: MemoryLoopCase = find_row(self.cases, case_id, noun="case",
                                        source=self.root / CASES_FILE)
        return case
