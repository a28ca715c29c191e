"""CMBench data: loading and validating the release, reference frames, request manifests.

CMBench (Context Memory Benchmark) asks a video generator to continue a roughly
one-minute context video so that a person, object or view seen earlier comes back.
The user downloads the release (vidmem never fetches it) and points vidmem at its
folder::

    ROOT/
      metadata.jsonl            one task per line
      videos/synthetic/*.mp4    context videos (paths in metadata are relative to ROOT)
      videos/real/*.mp4

This module reads that folder and nothing else:

* :func:`validate_cmbench` checks every row and reports *all* problems at once;
  :func:`load_cmbench` refuses a dataset with errors and keeps the warnings.
* :func:`resolve_reference` turns a reference annotation into a frame index (the
  annotated ``frame_index`` when present, else the frame on screen at
  ``timestamp_seconds`` according to the video's real timestamps) and a pixel box.
* :func:`continuation_requests`, :func:`write_manifest` and :func:`read_manifest`
  build the list of continuations a generator must write; :func:`find_continuations`
  checks which ones exist.
* :func:`read_kv_log` reads a KV-cache log (``docs/kv_log_format.md``) for the
  pruning-ratio metrics in :mod:`vidmem.metrics.kv_pruning`.

Validation decisions (errors block loading, warnings do not):

* Unknown fields (in a task, a clip prompt or a reference) are **kept** on the model
  (``model_extra``) and reported as warnings: a later release may add fields.
* ``context_clip_prompts`` must hold exactly six objects with a non-empty
  ``clip_prompt`` (errors). A ``clip_id`` other than ``"01"`` .. ``"06"`` in list
  order is only a warning: vidmem takes the chronological order from the list
  position and never reads the id.
* A task id that does not follow ``{video_id}_{task_type}_{NN}`` (``video_id`` = the
  video file stem) is a warning. A task id that is not a safe file name (letters,
  digits, ``.``, ``_``, ``-``, not starting with ``.``) is an error, because it names
  the continuation file ``<task_id>.mp4``.
* A ``video`` must lie inside the dataset root: no absolute path, no ``..``, and no
  symbolic link to a file outside the root. A root inside a Hugging Face snapshot
  (``.../datasets--org--name/snapshots/<rev>/``) may link into its own cache repository
  folder (the ``blobs/`` the hub links to), nowhere else.
* Values quoted in a message are cut to an excerpt (start, ellipsis, length).
* A line that is not UTF-8 (or not JSON) is an error naming the line; the other lines
  are still checked.
* A reference without a ``frame_index`` key is read as ``frame_index: null`` with a
  warning (the official schema always writes the key).
* An empty ``scene`` or an empty alias is a warning: neither is needed to score.

The loader lives here; the rest is split into sibling modules, and every public name is
re-exported from this one:

* :mod:`~vidmem.benchmarks.cmbench.schema`: the task models, :class:`Problem`,
  :class:`CMBenchDataset` and the constants of the release format;
* :mod:`~vidmem.benchmarks.cmbench.validate`: the per-row rules and
  :class:`ValidationReport`;
* :mod:`~vidmem.benchmarks.cmbench.references`: reference resolution;
* :mod:`~vidmem.benchmarks.cmbench.stats`: counts and :data:`OFFICIAL_COUNTS`;
* :mod:`~vidmem.benchmarks.cmbench.requests`: requests manifests, the continuation
  scan and :func:`read_kv_log`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from vidmem.benchmarks.cmbench.references import (
    ResolvedReference,
    resolve_reference,
    resolve_references,
    try_resolve_reference,
)
from vidmem.benchmarks.cmbench.requests import (
    ContinuationScan,
    continuation_requests,
    find_continuations,
    read_kv_log,
    read_manifest,
    write_manifest,
)
from vidmem.benchmarks.cmbench.schema import (
    BENCHMARK,
    METADATA_FILE,
    CMBenchClipPrompt,
    CMBenchDataset,
    CMBenchReference,
    CMBenchTask,
    Problem,
)

# Release-format constants: not in __all__, but callers import them from here too.
from vidmem.benchmarks.cmbench.schema import CLIP_FIELDS as CLIP_FIELDS
from vidmem.benchmarks.cmbench.schema import CLIP_IDS as CLIP_IDS
from vidmem.benchmarks.cmbench.schema import REFERENCE_FIELDS as REFERENCE_FIELDS
from vidmem.benchmarks.cmbench.schema import TASK_FIELDS as TASK_FIELDS
from vidmem.benchmarks.cmbench.schema import TASK_TYPES as TASK_TYPES
from vidmem.benchmarks.cmbench.schema import VIDEO_TYPES as VIDEO_TYPES
from vidmem.benchmarks.cmbench.stats import OFFICIAL_COUNTS, CMBenchStats, dataset_stats
from vidmem.benchmarks.cmbench.validate import TaskRowChecker, ValidationReport
from vidmem.benchmarks.jsonl_dataset import excerpt, raise_on_load_errors, read_jsonl_rows
from vidmem.errors import VidmemError
from vidmem.io.video import VideoInfo, probe

__all__ = [
    "BENCHMARK",
    "OFFICIAL_COUNTS",
    "CMBenchClipPrompt",
    "CMBenchDataset",
    "CMBenchReference",
    "CMBenchStats",
    "CMBenchTask",
    "ContinuationScan",
    "Problem",
    "ResolvedReference",
    "ValidationReport",
    "continuation_requests",
    "dataset_stats",
    "find_continuations",
    "load_cmbench",
    "read_kv_log",
    "read_manifest",
    "resolve_reference",
    "resolve_references",
    "validate_cmbench",
    "write_manifest",
]


def _read_rows(meta: Path) -> tuple[list[tuple[int, dict[str, Any]]], list[Problem]]:
    return read_jsonl_rows(meta, METADATA_FILE)


def _validate(
    root: str | os.PathLike[str], probe_videos: bool
) -> tuple[ValidationReport, list[CMBenchTask]]:
    root_path = Path(root).expanduser().absolute()
    if not root_path.is_dir():
        no_folder = Problem(
            str(root_path),
            "",
            "dataset folder not found; expected a folder holding metadata.jsonl and "
            "videos/ (download CMBench and pass its folder)",
        )
        return ValidationReport(root_path, (no_folder,)), []
    meta = root_path / METADATA_FILE
    if not meta.is_file():
        no_file = Problem(
            METADATA_FILE,
            "",
            f"not found in {root_path}; expected the CMBench task file there "
            "(is this the dataset root?)",
        )
        return ValidationReport(root_path, (no_file,)), []

    rows, problems = _read_rows(meta)
    tasks: list[CMBenchTask] = []
    first_line: dict[str, int] = {}
    for line, obj in rows:
        checker = TaskRowChecker(obj, line, root_path)
        row_problems = checker.check()
        tid = obj.get("task_id")
        if isinstance(tid, str) and tid.strip():
            if tid in first_line:
                row_problems.append(
                    Problem(
                        excerpt(tid, quote=False),
                        "task_id",
                        f"duplicate task id (first on line {first_line[tid]}); task ids "
                        "must be unique",
                        "error",
                        line,
                    )
                )
            else:
                first_line[tid] = line
        problems.extend(row_problems)
        if any(p.severity == "error" for p in row_problems):
            continue
        try:
            tasks.append(CMBenchTask.model_validate(obj))
        except ValidationError as exc:  # defensive: the checks above should catch all
            problems.append(Problem(checker.where, "", f"invalid row: {exc}", "error", line))
    problems.sort(key=lambda p: p.line or 0)  # file order; stable within a line
    if not rows and not problems:
        problems.append(Problem(METADATA_FILE, "", "holds no task rows"))
    if probe_videos:
        problems.extend(_probe_problems(root_path, tasks, first_line))
    return ValidationReport(root_path, tuple(problems), n_rows=len(rows)), tasks


def _probe_problems(
    root: Path, tasks: Sequence[CMBenchTask], lines: Mapping[str, int]
) -> list[Problem]:
    problems: list[Problem] = []
    infos: dict[str, VideoInfo | str] = {}
    for task in tasks:
        line = lines.get(task.task_id)
        if task.video not in infos:
            try:
                infos[task.video] = probe(root / task.video)
            except VidmemError as exc:
                infos[task.video] = exc.message
        info = infos[task.video]
        if isinstance(info, str):
            problems.append(
                Problem(excerpt(task.task_id, quote=False), "video", info, "error", line))
            continue
        for k in range(len(task.references)):
            _, found = try_resolve_reference(task, k, info, line)
            problems.extend(found)
    return problems


def validate_cmbench(
    root: str | os.PathLike[str], *, probe_videos: bool = False
) -> ValidationReport:
    """Check a CMBench folder and report every problem at once.

    Never stops at the first problem. Each problem names the task (or line), the
    field, what was expected and what was found. The rules are listed in the module
    docstring and in ``/work/shared/specs/PROTOCOLS.md``.

    Args:
        root: dataset folder holding ``metadata.jsonl`` and the videos.
        probe_videos: also open every context video (demux only, no decoding) and
            resolve every reference against it: unreadable videos and reference frames
            outside the video become errors, frame index / timestamp disagreements
            become warnings. Off by default (it reads every video file).

    Returns:
        The report; ``report.ok`` is True when there are no errors.
    """
    report, _ = _validate(root, probe_videos)
    return report


def load_cmbench(root: str | os.PathLike[str], *, probe_videos: bool = False) -> CMBenchDataset:
    """Load and validate a CMBench release.

    Args:
        root: dataset folder holding ``metadata.jsonl`` and the videos.
        probe_videos: also check every video and reference (see :func:`validate_cmbench`).

    Returns:
        The dataset, tasks in file order, with the validation warnings attached.

    Raises:
        UserInputError: validation found errors; the message lists the first
            ``MAX_LISTED_ERRORS`` and the count of the rest.
    """
    report, tasks = _validate(root, probe_videos)
    raise_on_load_errors(
        report,
        dataset="CMBench",
        hint="fix the rows listed above; validate_cmbench(root).format() prints every "
        "error and warning",
    )
    return CMBenchDataset(root=report.root, tasks=tuple(tasks), warnings=report.warnings)
