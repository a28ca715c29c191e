"""Memory-loop data: loading and validating ``cases.jsonl``, requests, videos, pose tracks.

The memory loop gives a generator one start image and one closed camera loop (six
loops, :mod:`~vidmem.metrics.loop_paths`) and measures how much a view
still looks the same when the camera comes back to it. The dataset is a folder with a
``cases.jsonl`` manifest (format in :mod:`~vidmem.benchmarks.memory_loop.schema`);
``vidmem sim build memory_loop`` writes one.

This module reads that folder:

* :func:`validate_memory_loop` checks every row and reports *all* problems at once
  (rules in :mod:`~vidmem.benchmarks.memory_loop.validate`);
  :func:`load_memory_loop` refuses a dataset with errors and keeps the warnings.

and re-exports the pieces built on it:

* :mod:`~vidmem.benchmarks.memory_loop.requests`: generation requests and their
  manifest, the scan for ``<case_id>.mp4`` videos, pose-track files;
* :mod:`~vidmem.benchmarks.memory_loop.scorer`: pairing, revisit fidelity and the
  half-life fit of one video;
* :mod:`~vidmem.benchmarks.memory_loop.aggregate`: per-loop and overall results.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from vidmem.benchmarks.jsonl_dataset import excerpt, raise_on_load_errors, read_jsonl_rows
from vidmem.benchmarks.memory_loop.requests import (
    VideoScan,
    find_videos,
    generation_requests,
    read_manifest,
    read_pose_track,
    write_manifest,
)
from vidmem.benchmarks.memory_loop.schema import (
    BENCHMARK,
    CASES_FILE,
    MemoryLoopCase,
    MemoryLoopDataset,
    Problem,
)
from vidmem.benchmarks.memory_loop.validate import CaseRowChecker, MemoryLoopValidation
from vidmem.errors import VidmemError

__all__ = [
    "BENCHMARK",
    "CASES_FILE",
    "MemoryLoopCase",
    "MemoryLoopDataset",
    "MemoryLoopValidation",
    "Problem",
    "VideoScan",
    "find_videos",
    "generation_requests",
    "load_memory_loop",
    "read_manifest",
    "read_pose_track",
    "validate_memory_loop",
    "write_manifest",
]


def _read_rows(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], list[Problem]]:
    return read_jsonl_rows(path, CASES_FILE)


def _deep_problems(root: Path, case: MemoryLoopCase, line: int) -> list[Problem]:
    """Open the start image and parse the pose track of a valid case."""
    found: list[Problem] = []
    where = excerpt(case.case_id, quote=False)
    try:
        from PIL import Image

        with Image.open(root / case.start_image) as img:
            img.verify()
    except Exception as exc:  # noqa: BLE001 - any failure to open means the same to the user
        found.append(Problem(where, "start_image", f"{root / case.start_image} is not a "
                             f"readable image ({type(exc).__name__}: {exc}); re-export it as "
                             "PNG", "error", line))
    if case.poses is not None:
        try:
            read_pose_track(root / case.poses, where=f"case {where}: field 'poses'")
        except VidmemError as exc:
            found.append(Problem(where, "poses", exc.message, "error", line))
    return found


def _validate(root: str | os.PathLike[str], deep: bool) -> tuple[MemoryLoopValidation, list[MemoryLoopCase]]:
    root_path = Path(root).expanduser().absolute()
    if not root_path.is_dir():
        return MemoryLoopValidation(root_path, (Problem(
            str(root_path), "", "dataset folder not found; expected a folder holding "
            "cases.jsonl and start_images/ (`vidmem sim build memory_loop --out DIR` writes "
            "one)"),)), []
    path = root_path / CASES_FILE
    if not path.is_file():
        return MemoryLoopValidation(root_path, (Problem(
            CASES_FILE, "", f"not found in {root_path}; expected the memory-loop case file "
            "there (is this the dataset root?)"),)), []
    rows, problems = _read_rows(path)
    cases: list[MemoryLoopCase] = []
    first_line: dict[str, int] = {}
    for line, obj in rows:
        checker = CaseRowChecker(obj, line, root_path)
        row_problems = checker.check()
        cid = obj.get("case_id")
        if isinstance(cid, str) and cid.strip():
            if cid in first_line:
                row_problems.append(Problem(excerpt(cid, quote=False), "case_id",
                                            f"duplicate case id (first on line "
                                            f"{first_line[cid]}); case ids must be unique",
                                            "error", line))
            else:
                first_line[cid] = line
        if not any(p.severity == "error" for p in row_problems):
            try:
                case = MemoryLoopCase.model_validate(obj)
            except ValidationError as exc:  # defensive: the checks above should catch all
                row_problems.append(Problem(checker.where, "", f"invalid row: {exc}", "error", line))
            else:
                cases.append(case)
                if deep:
                    row_problems.extend(_deep_problems(root_path, case, line))
        problems.extend(row_problems)
    problems.sort(key=lambda p: p.line or 0)
    if not rows and not problems:
        problems.append(Problem(CASES_FILE, "", "holds no case rows; write one JSON object per "
                                "line"))
    bad = {p.where for p in problems if p.severity == "error"}
    cases = [c for c in cases if excerpt(c.case_id, quote=False) not in bad]
    return MemoryLoopValidation(root_path, tuple(problems), n_rows=len(rows)), cases


def validate_memory_loop(root: str | os.PathLike[str], *, deep: bool = False) -> MemoryLoopValidation:
    """Check a memory-loop folder and report every problem at once.

    Never stops at the first problem; each names the case (or line), the field, what
    was expected and what was found. Rules: :mod:`~vidmem.benchmarks.memory_loop.validate`.

    Args:
        root: dataset folder holding ``cases.jsonl``.
        deep: also open every start image and parse every pose track (errors when
            they cannot be read). Off by default.

    Returns:
        The report; ``report.ok`` is True when there are no errors.
    """
    report, _ = _validate(root, deep)
    return report


def load_memory_loop(root: str | os.PathLike[str], *, deep: bool = False) -> MemoryLoopDataset:
    """Load and validate a memory-loop dataset.

    Args:
        root: dataset folder holding ``cases.jsonl``.
        deep: also check that images and pose tracks open (see :func:`validate_memory_loop`).

    Returns:
        The dataset, cases in file order, with the validation warnings attached.

    Raises:
        UserInputError: validation found errors; the message lists the first
            ``MAX_LISTED_ERRORS`` and the count of the rest.
    """
    report, cases = _validate(root, deep)
    raise_on_load_errors(report, dataset="memory-loop",
                         hint="fix the rows listed above; `vidmem validate memory_loop --root DIR` "
                         "prints every error and warning")
    return MemoryLoopDataset(root=report.root, cases=tuple(cases), warnings=report.warnings)
