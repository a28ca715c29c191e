"""Generation requests and results: what a benchmark asks a video generator for.

Requests are plain data (paths, strings, numbers) so that they can be written to a
manifest, handed to another process or another machine, hashed for the run store and
replayed. A generator never sees benchmark truth: only the context video and/or
reference images and the prompt that the protocol lets a system see.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from vidmem.errors import UserInputError
from vidmem.io.jsonl import read_jsonl, write_jsonl


@dataclass(frozen=True)
class ReferenceImage:
    """An image a memory policy retrieved for the generator to condition on.

    Attributes:
        path: PNG/JPEG file on disk.
        source_time_seconds: where it came from in the source video, if known.
        source: which earlier clip or segment it came from (e.g. ``seg_003``).
    """

    path: str
    source_time_seconds: float | None = None
    source: str | None = None


@dataclass(frozen=True)
class GenerationRequest:
    """One video to generate.

    Attributes:
        request_id: the benchmark's id (task id, segment id...); names the output.
        benchmark: benchmark name, e.g. ``cmbench``.
        prompt: the text instruction, exactly as the protocol lets a system see it.
        out_path: where the generator must write its MP4.
        context_video: a video to continue (CMBench), or ``None``.
        start_image: a first frame to start from (memory loop), or ``None``.
        references: retrieved reference images (VMem-Bench Track-B), in rank order.
        duration_seconds, fps, width, height: the requested output format; a generator
            that cannot honour them writes what it can and the scorer reads the real
            values from the file.
        seed: the generation seed.
        extras: benchmark-specific plain data (e.g. a camera trajectory).
    """

    request_id: str
    benchmark: str
    prompt: str
    out_path: str
    context_video: str | None = None
    start_image: str | None = None
    references: tuple[ReferenceImage, ...] = ()
    duration_seconds: float | None = None
    fps: float | None = None
    width: int | None = None
    height: int | None = None
    seed: int = 0
    extras: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["references"] = [asdict(r) for r in self.references]
        data["extras"] = dict(self.extras)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "request") -> GenerationRequest:
        """Build a request from manifest data, naming the bad field on error."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise UserInputError(f"{where}: unknown field(s) {unknown}; known: {sorted(known)}")
        for required in ("request_id", "benchmark", "prompt", "out_path"):
            if not isinstance(data.get(required), str) or not data.get(required):
                raise UserInputError(f"{where}: field '{required}' must be a non-empty string")
        refs = data.get("references") or ()
        try:
            references = tuple(ReferenceImage(**r) for r in refs)
        except TypeError as exc:
            raise UserInputError(f"{where}: bad 'references' entry: {exc}") from None
        return cls(**{**dict(data), "references": references, "extras": dict(data.get("extras") or {})})


@dataclass(frozen=True)
class GenerationResult:
    """What came back from one request.

    Attributes:
        request_id: the request's id.
        status: ``ok`` when a readable video was written, else ``error``.
        video_path: the written video (``None`` on error).
        seconds: wall-clock generation time in seconds, as measured by the adapter.
        error: what went wrong, naming the request and the fix where possible.
        log_path: an optional log the generator wrote (e.g. a KV-cache log).
        extras: anything else the generator reports (plain data).
    """

    request_id: str
    status: Literal["ok", "error"]
    video_path: str | None
    seconds: float
    error: str | None = None
    log_path: str | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["extras"] = dict(self.extras)
        return data


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
    for k, r in enumerate(requests):
        if not isinstance(r, GenerationRequest):
            raise UserInputError(
                f"write_manifest: item {k} is a {type(r).__name__}, expected a GenerationRequest",
                hint="build requests with the benchmark's rollouts(dataset, out_dir)",
            )
    _refuse_duplicate_ids(((f"item {k}", r) for k, r in enumerate(requests)), "write_manifest")
    return write_jsonl(path, (r.to_dict() for r in requests))


def _refuse_duplicate_ids(placed: Iterable[tuple[str, GenerationRequest]], where: str) -> None:
    """Each request names one output file, so two may not share a ``request_id``."""
    seen: dict[str, str] = {}
    for place, r in placed:
        if r.request_id in seen:
            raise UserInputError(
                f"{where}: request_id {r.request_id!r} appears twice ({seen[r.request_id]} "
                f"and {place})",
                hint="each request names one output file; make request ids unique",
            )
        seen[r.request_id] = place


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
    placed = [(f"line {line}", GenerationRequest.from_dict(obj, where=f"{path}:{line}"))
              for line, obj in read_jsonl(path)]
    _refuse_duplicate_ids(placed, str(path))
    return [req for _, req in placed]
