"""CMBench generation requests and outputs: the requests manifest, the continuation scan, KV logs.

A generator sees only the context video and ``continue_prompt``; it writes one
``<task_id>.mp4`` per task into an output folder, which :func:`find_continuations` then
checks. :func:`read_kv_log` reads the KV-cache log a memory-compressing generator may
write alongside (``docs/kv_log_format.md``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from vidmem.benchmarks.cmbench.schema import BENCHMARK, CMBenchDataset
from vidmem.benchmarks.jsonl_dataset import VideoFolderScan, _is_int, _is_number, scan_video_folder
from vidmem.errors import UserInputError
from vidmem.generators.requests import GenerationRequest
from vidmem.io.jsonl import read_jsonl, write_jsonl
from vidmem.metrics.kv_log import KVLog, parse_kv_log
from vidmem.metrics.kv_pruning import KVLogError

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
    number = float(value) if _is_number(value) else math.nan  # type: ignore[arg-type]
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
    if not _is_int(seed):
        raise UserInputError(
            f"continuation_requests: seed must be an int, found {seed!r}", hint="pass e.g. seed=0"
        )
    out = Path(out_dir).expanduser().absolute()
    return [
        GenerationRequest(
            request_id=t.task_id,
            benchmark=BENCHMARK,
            prompt=t.continue_prompt,
            out_path=str(out / f"{t.task_id}.mp4"),
            context_video=str(ds.video_path(t).absolute()),
            duration_seconds=duration,
            fps=rate,
            seed=seed,
        )
        for t in ds.tasks
    ]


def write_manifest(requests: Sequence[GenerationRequest], path: str | os.PathLike[str]) -> int:
    """Write requests as JSON Lines, one ``GenerationRequest.to_dict()`` per line.

    Args:
        requests: the requests (unique ``request_id``).
        path: manifest file; its folder is created; written atomically.

    Returns:
        The number of rows written.

    Raises:
        UserInputError: an item is not a request, or two share a ``request_id``.
    """
    seen: dict[str, int] = {}
    for k, r in enumerate(requests):
        if not isinstance(r, GenerationRequest):
            raise UserInputError(
                f"write_manifest: item {k} is a {type(r).__name__}, expected a GenerationRequest",
                hint="build requests with continuation_requests(ds, out_dir)",
            )
        if r.request_id in seen:
            raise UserInputError(
                f"write_manifest: request_id {r.request_id!r} appears twice (items "
                f"{seen[r.request_id]} and {k})",
                hint="each request names one output file; make request ids unique",
            )
        seen[r.request_id] = k
    return write_jsonl(path, (r.to_dict() for r in requests))


def read_manifest(path: str | os.PathLike[str]) -> list[GenerationRequest]:
    """Read a manifest written by :func:`write_manifest`.

    Args:
        path: the JSONL manifest.

    Returns:
        The requests in file order.

    Raises:
        UserInputError: missing file, bad JSON, a bad row (naming the line and field) or
            a duplicate ``request_id``.
    """
    out: list[GenerationRequest] = []
    seen: dict[str, int] = {}
    for line, obj in read_jsonl(path):
        req = GenerationRequest.from_dict(obj, where=f"{path}:{line}")
        if req.request_id in seen:
            raise UserInputError(
                f"{path}:{line}: request_id {req.request_id!r} already on line "
                f"{seen[req.request_id]}",
                hint="each request must have its own id",
            )
        seen[req.request_id] = line
        out.append(req)
    return out


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
    folder = Path(videos_dir).expanduser()
    if not folder.is_dir():
        raise UserInputError(
            f"{folder}: continuation folder not found",
            hint="pass the folder the generator wrote <task_id>.mp4 files into",
        )
    found, missing, reasons, unexpected = scan_video_folder(folder, ds.task_ids)
    return ContinuationScan(found, missing, reasons, unexpected, folder)


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
