"""CMBench generation requests and outputs: the requests manifest, the continuation scan, KV logs.

A generator sees only the context video and ``continue_prompt``; it writes one
``<task_id>.mp4`` per task into an output folder, which :func:`find_continuations` then
checks. :func:`read_kv_log` reads the KV-cache log a memory-compressing generator may
write alongside (``docs/kv_log_format.md``).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from vidmem.benchmarks.cmbench.schema import BENCHMARK, CMBenchDataset
from vidmem.benchmarks.jsonl_dataset import VideoFolderScan
from vidmem.errors import UserInputError
from vidmem.generators.requests import GenerationRequest, read_manifest, write_manifest
from vidmem.io.jsonl import read_jsonl
from vidmem.io.safe_paths import inside
from vidmem.metrics.kv_log import KVLog, parse_kv_log
from vidmem.metrics.kv_pruning import KVLogError
from vidmem.values import is_int, is_number

__all__ = [
    "ContinuationScan",
    "continuation_requests",
    "find_continuations",
    "read_kv_log",
    "read_manifest",
    "write_manifest",
]

_KV_FORMAT_HINT = "see docs/kv_log_format.md for the row format"


def _optional_positive(name: str, value: object) -> float | None:
    if value is None:
        return None
    number = float(value) if is_number(value) else math.nan  # type: ignore[arg-type]
    if not (math.isfinite(number) and number > 0):
        raise UserInputError(
            f"continuation_requests: {name} must be a positive number or None, found {value!r}",
            hint=f"pass e.g. {name}=16 or leave it out to let the generator choose",
        )
    return number


def continuation_requests(
    ds: CMBenchDataset,
    out_dir: str | os.PathLike[str],
    *,
    fps: float | None = None,
    duration_seconds: float | None = None,
    seed: int = 0,
) -> list[GenerationRequest]:
    """One generation request per task: continue the context video as instructed.

    A generator sees only the context video and ``continue_prompt`` (never the target
    label, aliases or references). Nothing is written; the output folder need not
    exist yet.

    Args:
        ds: a loaded dataset.
        out_dir: folder where the continuations go, one ``<task_id>.mp4`` each.
        fps: requested output frame rate, or ``None`` (generator's choice).
        duration_seconds: requested continuation length, or ``None``.
        seed: generation seed written into every request.

    Returns:
        Requests in task order: ``benchmark="cmbench"``, ``request_id`` = task id,
        ``prompt`` = ``continue_prompt``, ``context_video`` = absolute video path,
        ``out_path`` = absolute ``out_dir/<task_id>.mp4``.

    Raises:
        UserInputError: bad ``fps``, ``duration_seconds`` or ``seed``.
    """
    if not isinstance(out_dir, (str, os.PathLike)):
        raise UserInputError(
            f"continuation_requests: out_dir must be a path, found {type(out_dir).__name__}",
            hint="pass the folder where the generator writes <task_id>.mp4 files",
        )
    rate = _optional_positive("fps", fps)
    duration = _optional_positive("duration_seconds", duration_seconds)
    if not is_int(seed):
        raise UserInputError(
            f"continuation_requests: seed must be an int, found {seed!r}", hint="pass e.g. seed=0"
        )
    out = Path(out_dir).expanduser().absolute()
    return [
        GenerationRequest(
            request_id=t.task_id,
            benchmark=BENCHMARK,
            prompt=t.continue_prompt,
            out_path=str(inside(out, out / f"{t.task_id}.mp4")),  # the id stays a file name
            context_video=str(ds.video_path(t).absolute()),
            duration_seconds=duration,
            fps=rate,
            seed=seed,
        )
        for t in ds.tasks
    ]


@dataclass(frozen=True)
class ContinuationScan(VideoFolderScan):
    """Which continuations exist. Unpacks as ``found, missing = scan``.

    Attributes:
        found: task id -> readable ``<videos_dir>/<task_id>.mp4``.
        missing: task ids (dataset order) whose continuation is absent, empty or
            unreadable.
        reasons: task id -> why it is in ``missing``.
        unexpected: ``.mp4`` file names in the folder that match no task id.
        videos_dir: the folder scanned.
    """

    missing_what = "continuation(s)"
    folder_noun = "continuation"
    id_noun = "task_id"
    missing_hint = (
        "the generator must write <task_id>.mp4 for every task; rerun it for the listed tasks"
    )


def find_continuations(ds: CMBenchDataset, videos_dir: str | os.PathLike[str]) -> ContinuationScan:
    """Look for ``<videos_dir>/<task_id>.mp4`` for every task and check it opens.

    Each file is probed (:func:`vidmem.io.video.probe`, demux only); a missing,
    zero-byte or unreadable file puts the task in ``missing`` with the reason.

    Args:
        ds: the dataset.
        videos_dir: folder holding the generated continuations.

    Returns:
        A :class:`ContinuationScan`; ``found, missing = find_continuations(ds, d)``.

    Raises:
        UserInputError: ``videos_dir`` is not a folder.
    """
    return ContinuationScan.of(videos_dir, ds.task_ids)


# --------------------------------------------------------------------------- KV log


def read_kv_log(path: str | os.PathLike[str]) -> KVLog:
    """Read and validate a KV-cache log (format: ``docs/kv_log_format.md``).

    Args:
        path: the JSONL log a memory-compressing generator wrote.

    Returns:
        The validated :class:`vidmem.metrics.kv_pruning.KVLog`.

    Raises:
        UserInputError: missing file, bad JSON, or rows that break the format (every
            problem listed with its line number and field).
    """
    rows = list(read_jsonl(path))
    try:
        return parse_kv_log(rows, source=str(path))
    except KVLogError as exc:
        raise UserInputError(str(exc), hint=_KV_FORMAT_HINT) from None
