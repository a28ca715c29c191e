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
* A reference without a ``frame_index`` key is read as ``frame_index: null`` with a
  warning (the official schema always writes the key).
* An empty ``scene`` or an empty alias is a warning: neither is needed to score.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from vidmem.data.requests import GenerationRequest
from vidmem.errors import UserInputError, VidmemError
from vidmem.io.boxes import check_normalized_box, normalized_to_pixel
from vidmem.io.jsonl import read_jsonl, write_jsonl
from vidmem.io.video import VideoInfo, index_at_time, probe
from vidmem.metrics.kv_pruning import KVLog, KVLogError, parse_kv_log

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

#: Benchmark name (registry key, manifest ``benchmark`` field).
BENCHMARK = "cmbench"
METADATA_FILE = "metadata.jsonl"
VIDEO_TYPES = ("synthetic", "real")
TASK_TYPES = ("reappear", "revisit")
CLIP_IDS = ("01", "02", "03", "04", "05", "06")
TASK_FIELDS = (
    "type",
    "task_id",
    "scene",
    "video",
    "context_clip_prompts",
    "continue_prompt",
    "task_type",
    "target_label",
    "target_aliases",
    "references",
)
REFERENCE_FIELDS = ("timestamp_seconds", "frame_index", "bbox_xyxy_normalized")
CLIP_FIELDS = ("clip_id", "clip_prompt")

#: Counts of the official release (CMBench dataset card).
OFFICIAL_COUNTS: Mapping[str, int] = {
    "videos": 58,
    "videos/synthetic": 50,
    "videos/real": 8,
    "tasks": 116,
    "tasks/synthetic": 102,
    "tasks/real": 14,
    "tasks/reappear": 77,
    "tasks/revisit": 39,
    "tasks/synthetic/reappear": 67,
    "tasks/synthetic/revisit": 35,
    "tasks/real/reappear": 10,
    "tasks/real/revisit": 4,
}

#: At most this many errors are spelled out in the message of :func:`load_cmbench`.
MAX_LISTED_ERRORS = 20

_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_KV_FORMAT_HINT = "see docs/kv_log_format.md for the row format"


# --------------------------------------------------------------------------- models


class CMBenchClipPrompt(BaseModel):
    """One of the six chronological descriptions of the context video.

    Attributes:
        clip_id: ``"01"`` .. ``"06"``.
        clip_prompt: what happens in that part of the context.
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    clip_id: str
    clip_prompt: str


class CMBenchReference(BaseModel):
    """Where the target is visible in the context video.

    Attributes:
        timestamp_seconds: reference time in seconds from the first frame of the video.
        frame_index: 0-based frame index (presentation order) when annotated, else
            ``None``; it wins over the timestamp.
        bbox_xyxy_normalized: ``(x0, y0, x1, y1)`` as fractions of the frame width and
            height, origin top-left.
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    timestamp_seconds: float
    frame_index: int | None = None
    bbox_xyxy_normalized: tuple[float, float, float, float]


class CMBenchTask(BaseModel):
    """One CMBench task: a context video, a continuation instruction and a target.

    Fields are those of the official ``metadata.jsonl``; unknown fields are kept in
    ``model_extra`` (see :attr:`extra_fields`).

    Attributes:
        type: ``synthetic`` or ``real``.
        task_id: unique id, ``{video_id}_{task_type}_{NN}`` in the release.
        scene: short scene description (not unique).
        video: path of the context video relative to the dataset root.
        context_clip_prompts: six descriptions of the context, in chronological order.
        continue_prompt: the instruction a generator receives.
        task_type: ``reappear`` or ``revisit``.
        target_label: English name of the target (detector query).
        target_aliases: other names of the target.
        references: where the target is visible in the context (one per task in the
            release).
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    type: Literal["synthetic", "real"]
    task_id: str
    scene: str
    video: str
    context_clip_prompts: tuple[CMBenchClipPrompt, ...]
    continue_prompt: str
    task_type: Literal["reappear", "revisit"]
    target_label: str
    target_aliases: tuple[str, ...]
    references: tuple[CMBenchReference, ...]

    @property
    def video_id(self) -> str:
        """The context video's file stem, e.g. ``syn_001``."""
        return PurePosixPath(self.video.replace("\\", "/")).stem

    @property
    def extra_fields(self) -> dict[str, Any]:
        """Fields of the row that this version of vidmem does not know."""
        return dict(self.model_extra or {})


# --------------------------------------------------------------------------- reports


@dataclass(frozen=True)
class Problem:
    """One problem found while validating the dataset.

    Attributes:
        where: the task id, or ``"line N"`` when the row has no usable id, or the file.
        field: the field at fault, e.g. ``references[0].frame_index`` (``""`` for a
            problem with a whole line or file).
        message: what was expected, what was found and how to fix it.
        severity: ``error`` (blocks loading) or ``warning``.
        line: 1-based line in ``metadata.jsonl``, when known.
    """

    where: str
    field: str
    message: str
    severity: Literal["error", "warning"] = "error"
    line: int | None = None

    def __str__(self) -> str:
        place = self.where
        if self.line is not None and self.where != f"line {self.line}":
            place += f" (line {self.line})"
        what = f"field '{self.field}': " if self.field else ""
        return f"{self.severity}: {place}: {what}{self.message}"


@dataclass(frozen=True)
class ValidationReport:
    """Everything :func:`validate_cmbench` found.

    Attributes:
        root: the dataset folder.
        problems: errors and warnings in file order.
        n_tasks: rows that parsed as JSON objects.
    """

    root: Path
    problems: tuple[Problem, ...]
    n_tasks: int = 0

    @property
    def errors(self) -> tuple[Problem, ...]:
        """Problems that block loading."""
        return tuple(p for p in self.problems if p.severity == "error")

    @property
    def warnings(self) -> tuple[Problem, ...]:
        """Problems worth a look that do not block loading."""
        return tuple(p for p in self.problems if p.severity == "warning")

    @property
    def ok(self) -> bool:
        """True when there are no errors (warnings allowed)."""
        return not self.errors

    def format(self, limit: int | None = None) -> str:
        """Human-readable report: a summary line then one line per problem.

        Args:
            limit: list at most this many problems (``None``: all).
        """
        head = (
            f"{self.root / METADATA_FILE}: {self.n_tasks} task row(s), "
            f"{len(self.errors)} error(s), {len(self.warnings)} warning(s)"
        )
        shown = self.problems if limit is None else self.problems[:limit]
        lines = [head, *(f"  {p}" for p in shown)]
        if len(shown) < len(self.problems):
            lines.append(f"  ... and {len(self.problems) - len(shown)} more")
        return "\n".join(lines)


@dataclass(frozen=True)
class CMBenchDataset:
    """A validated CMBench release.

    Attributes:
        root: absolute path of the dataset folder.
        tasks: tasks in file order.
        warnings: validation warnings (the dataset loaded despite them).
    """

    root: Path
    tasks: tuple[CMBenchTask, ...]
    warnings: tuple[Problem, ...] = ()

    def __len__(self) -> int:
        return len(self.tasks)

    def __iter__(self) -> Iterator[CMBenchTask]:
        return iter(self.tasks)

    @property
    def task_ids(self) -> tuple[str, ...]:
        """Task ids in file order."""
        return tuple(t.task_id for t in self.tasks)

    @property
    def videos(self) -> tuple[str, ...]:
        """Distinct context-video paths (relative to :attr:`root`) in first-use order."""
        return tuple(dict.fromkeys(t.video for t in self.tasks))

    def video_path(self, task: CMBenchTask | str) -> Path:
        """Absolute path of a task's context video."""
        t = self.task(task) if isinstance(task, str) else task
        return self.root / t.video

    def task(self, task_id: str) -> CMBenchTask:
        """The task with this id.

        Raises:
            UserInputError: no such task (with close matches).
        """
        for t in self.tasks:
            if t.task_id == task_id:
                return t
        close = difflib.get_close_matches(str(task_id), self.task_ids, n=3, cutoff=0.6)
        guess = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise UserInputError(
            f"{self.root / METADATA_FILE}: no task {task_id!r}{guess}",
            hint=f"the dataset has {len(self.tasks)} tasks; list them with ds.task_ids",
        )


# --------------------------------------------------------------------------- validation


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _type_name(v: object) -> str:
    return {
        dict: "object",
        list: "array",
        str: "string",
        bool: "boolean",
        int: "integer",
        float: "number",
        type(None): "null",
    }.get(type(v), type(v).__name__)


def _one_of(value: object, options: Sequence[str]) -> str:
    found = f"{value!r}"
    guess = ""
    if isinstance(value, str):
        close = difflib.get_close_matches(value.strip().lower(), options, n=1, cutoff=0.5)
        if close:
            guess = f"; did you mean {close[0]!r}?"
    return f"expected one of {list(options)}, found {found}{guess}"


class _RowChecker:
    """Collect the problems of one metadata row."""

    def __init__(self, obj: dict[str, Any], line: int, root: Path) -> None:
        self.obj = obj
        self.line = line
        self.root = root
        tid = obj.get("task_id")
        self.where = tid if isinstance(tid, str) and tid.strip() else f"line {line}"
        self.problems: list[Problem] = []

    def error(self, field_name: str, message: str) -> None:
        self.problems.append(Problem(self.where, field_name, message, "error", self.line))

    def warn(self, field_name: str, message: str) -> None:
        self.problems.append(Problem(self.where, field_name, message, "warning", self.line))

    def _text(self, name: str, *, required_non_empty: bool) -> str | None:
        if name not in self.obj:
            return None
        v = self.obj[name]
        if not isinstance(v, str):
            self.error(name, f"expected a string, found {_type_name(v)} {v!r}")
            return None
        if not v.strip():
            if required_non_empty:
                self.error(name, "must not be empty")
            else:
                self.warn(name, "is empty")
            return None
        return v

    def check(self) -> list[Problem]:
        obj = self.obj
        for name in TASK_FIELDS:
            if name not in obj:
                self.error(name, f"missing; every task row needs {list(TASK_FIELDS)}")
        for name in obj:
            if name not in TASK_FIELDS:
                self.warn(name, "unknown field, kept as an extra (not used by vidmem)")

        task_id = self._text("task_id", required_non_empty=True)
        if task_id is not None and not _SAFE_ID.match(task_id):
            self.error(
                "task_id",
                f"{task_id!r} is not a safe file name (it names the continuation "
                "<task_id>.mp4); use letters, digits, '.', '_' and '-', not starting with '.'",
            )
        vtype = obj.get("type")
        if "type" in obj and vtype not in VIDEO_TYPES:
            self.error("type", _one_of(vtype, VIDEO_TYPES))
        task_type = obj.get("task_type")
        if "task_type" in obj and task_type not in TASK_TYPES:
            self.error("task_type", _one_of(task_type, TASK_TYPES))
        self._text("scene", required_non_empty=False)
        self._text("continue_prompt", required_non_empty=True)
        self._text("target_label", required_non_empty=True)
        video = self._check_video()
        self._check_clips()
        self._check_aliases()
        self._check_references()
        if task_id is not None and video is not None and task_type in TASK_TYPES:
            stem = PurePosixPath(video.replace("\\", "/")).stem
            if not re.fullmatch(rf"{re.escape(stem)}_{task_type}_\d{{2,}}", task_id):
                self.warn(
                    "task_id",
                    f"{task_id!r} does not follow {{video_id}}_{{task_type}}_{{NN}}; "
                    f"expected {stem}_{task_type}_NN (e.g. {stem}_{task_type}_01) for video "
                    f"{video!r}",
                )
        return self.problems

    def _check_video(self) -> str | None:
        video = self._text("video", required_non_empty=True)
        if video is None:
            return None
        posix, win = PurePosixPath(video), PureWindowsPath(video)
        if posix.is_absolute() or win.is_absolute() or win.drive or video.startswith("\\"):
            self.error(
                "video",
                f"{video!r} is an absolute path; expected a path relative to the dataset "
                f"root {self.root}, e.g. 'videos/synthetic/syn_001.mp4'",
            )
            return None
        if ".." in re.split(r"[\\/]", video):
            self.error(
                "video",
                f"{video!r} contains '..'; context videos must lie inside the dataset root",
            )
            return None
        path = self.root / video
        if not path.exists():
            self.error("video", f"file not found: {path}; check the path or the download")
        elif not path.is_file():
            self.error("video", f"{path} is a folder, expected a video file")
        return video

    def _check_clips(self) -> None:
        clips = self.obj.get("context_clip_prompts")
        if "context_clip_prompts" not in self.obj:
            return
        if not isinstance(clips, list):
            self.error(
                "context_clip_prompts",
                f"expected an array of 6 objects, found {_type_name(clips)}",
            )
            return
        if len(clips) != len(CLIP_IDS):
            self.error(
                "context_clip_prompts",
                f"expected exactly {len(CLIP_IDS)} clip prompts, found {len(clips)}",
            )
        for k, clip in enumerate(clips):
            name = f"context_clip_prompts[{k}]"
            if not isinstance(clip, dict):
                self.error(
                    name,
                    f"expected an object {{clip_id, clip_prompt}}, found {_type_name(clip)}",
                )
                continue
            for key in clip:
                if key not in CLIP_FIELDS:
                    self.warn(f"{name}.{key}", "unknown field, kept as an extra")
            if "clip_id" not in clip:
                self.error(f"{name}.clip_id", "missing")
            elif not isinstance(clip["clip_id"], str):
                self.error(
                    f"{name}.clip_id",
                    f"expected a string like '01', found {_type_name(clip['clip_id'])} "
                    f"{clip['clip_id']!r}",
                )
            elif k < len(CLIP_IDS) and clip["clip_id"] != CLIP_IDS[k]:
                self.warn(
                    f"{name}.clip_id",
                    f"expected {CLIP_IDS[k]!r} at position {k}, found {clip['clip_id']!r}; "
                    "vidmem takes the order from the list position",
                )
            prompt = clip.get("clip_prompt")
            if "clip_prompt" not in clip:
                self.error(f"{name}.clip_prompt", "missing")
            elif not isinstance(prompt, str):
                self.error(
                    f"{name}.clip_prompt",
                    f"expected a string, found {_type_name(prompt)} {prompt!r}",
                )
            elif not prompt.strip():
                self.error(f"{name}.clip_prompt", "must not be empty")

    def _check_aliases(self) -> None:
        if "target_aliases" not in self.obj:
            return
        aliases = self.obj["target_aliases"]
        if not isinstance(aliases, list):
            self.error(
                "target_aliases",
                f"expected an array of strings, found {_type_name(aliases)} {aliases!r}",
            )
            return
        for k, a in enumerate(aliases):
            if not isinstance(a, str):
                self.error(
                    f"target_aliases[{k}]", f"expected a string, found {_type_name(a)} {a!r}"
                )
            elif not a.strip():
                self.warn(f"target_aliases[{k}]", "is empty")

    def _check_references(self) -> None:
        if "references" not in self.obj:
            return
        refs = self.obj["references"]
        if not isinstance(refs, list):
            self.error("references", f"expected an array of objects, found {_type_name(refs)}")
            return
        if not refs:
            self.error("references", "must not be empty; every task needs a reference")
            return
        for k, ref in enumerate(refs):
            name = f"references[{k}]"
            if not isinstance(ref, dict):
                self.error(
                    name,
                    "expected an object {timestamp_seconds, frame_index, "
                    f"bbox_xyxy_normalized}}, found {_type_name(ref)}",
                )
                continue
            for key in ref:
                if key not in REFERENCE_FIELDS:
                    self.warn(f"{name}.{key}", "unknown field, kept as an extra")
            ts = ref.get("timestamp_seconds")
            if "timestamp_seconds" not in ref:
                self.error(f"{name}.timestamp_seconds", "missing")
            elif not _is_number(ts) or not math.isfinite(ts) or ts < 0:
                self.error(
                    f"{name}.timestamp_seconds",
                    f"expected a finite number of seconds >= 0, found {ts!r}",
                )
            if "frame_index" not in ref:
                self.warn(f"{name}.frame_index", "missing; read as null (seek by timestamp)")
            else:
                fi = ref["frame_index"]
                if fi is not None and (not _is_int(fi) or fi < 0):
                    self.error(
                        f"{name}.frame_index",
                        f"expected null or an integer >= 0, found {_type_name(fi)} {fi!r}",
                    )
            if "bbox_xyxy_normalized" not in ref:
                self.error(f"{name}.bbox_xyxy_normalized", "missing")
            else:
                box = ref["bbox_xyxy_normalized"]
                if not isinstance(box, list):
                    self.error(
                        f"{name}.bbox_xyxy_normalized",
                        f"expected [x_min, y_min, x_max, y_max], found {_type_name(box)}",
                    )
                else:
                    for msg in check_normalized_box(box):
                        self.error(f"{name}.bbox_xyxy_normalized", f"{msg} (box {box})")


def _read_rows(meta: Path) -> tuple[list[tuple[int, dict[str, Any]]], list[Problem]]:
    rows: list[tuple[int, dict[str, Any]]] = []
    problems: list[Problem] = []
    try:
        text = meta.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        problems.append(
            Problem(METADATA_FILE, "", f"not UTF-8 text ({exc.reason} at byte {exc.start})")
        )
        return rows, problems
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(
                Problem(
                    f"line {number}",
                    "",
                    f"not valid JSON ({exc.msg} at column {exc.colno}); each line must be one "
                    "complete JSON object",
                    line=number,
                )
            )
            continue
        if not isinstance(obj, dict):
            problems.append(
                Problem(
                    f"line {number}",
                    "",
                    f"expected a JSON object, found {_type_name(obj)}",
                    line=number,
                )
            )
            continue
        rows.append((number, obj))
    return rows, problems


def _validate(
    root: str | os.PathLike[str], probe_videos: bool
) -> tuple[ValidationReport, list[CMBenchTask]]:
    root_path = Path(root).expanduser().absolute()
    problems: list[Problem] = []
    tasks: list[CMBenchTask] = []
    if not root_path.is_dir():
        problems.append(
            Problem(
                str(root_path),
                "",
                "dataset folder not found; expected a folder holding metadata.jsonl and "
                "videos/ (download CMBench and pass its folder)",
            )
        )
        return ValidationReport(root_path, tuple(problems)), tasks
    meta = root_path / METADATA_FILE
    if not meta.is_file():
        problems.append(
            Problem(
                METADATA_FILE,
                "",
                f"not found in {root_path}; expected the CMBench task file there "
                "(is this the dataset root?)",
            )
        )
        return ValidationReport(root_path, tuple(problems)), tasks

    rows, problems = _read_rows(meta)
    first_line: dict[str, int] = {}
    for line, obj in rows:
        checker = _RowChecker(obj, line, root_path)
        row_problems = checker.check()
        tid = obj.get("task_id")
        if isinstance(tid, str) and tid.strip():
            if tid in first_line:
                row_problems.append(
                    Problem(
                        tid,
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
    return ValidationReport(root_path, tuple(problems), n_tasks=len(rows)), tasks


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
            problems.append(Problem(task.task_id, "video", info, "error", line))
            continue
        for k in range(len(task.references)):
            _, found = _resolve(task, k, info, line)
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
    errors = report.errors
    if errors:
        listed = "\n".join(f"  {p}" for p in errors[:MAX_LISTED_ERRORS])
        more = len(errors) - MAX_LISTED_ERRORS
        tail = f"\n  ... and {more} more error(s)" if more > 0 else ""
        raise UserInputError(
            f"{report.root / METADATA_FILE}: {len(errors)} error(s) in the CMBench dataset:\n"
            f"{listed}{tail}",
            hint="fix the rows listed above; validate_cmbench(root).format() prints every "
            "error and warning",
        )
    return CMBenchDataset(root=report.root, tasks=tuple(tasks), warnings=report.warnings)


# --------------------------------------------------------------------------- references


@dataclass(frozen=True)
class ResolvedReference:
    """A reference annotation pinned to one decoded frame and a pixel box.

    Attributes:
        frame_index: frame to read (presentation order, 0-based).
        box_px: ``(x0, y0, x1, y1)`` half-open pixel box inside that frame.
        note: a warning about the annotation (e.g. frame index and timestamp disagree),
            or ``None``.
        task_id: the task.
        reference: position of the reference in ``task.references``.
        source: ``"frame_index"`` or ``"timestamp"``: which annotation chose the frame.
        time_seconds: presentation time of the chosen frame, relative to frame 0.
    """

    frame_index: int
    box_px: tuple[int, int, int, int]
    note: str | None = None
    task_id: str = ""
    reference: int = 0
    source: Literal["frame_index", "timestamp"] = "frame_index"
    time_seconds: float = 0.0


def _reference_position(task: CMBenchTask, ref: CMBenchReference | int) -> int:
    if isinstance(ref, int) and not isinstance(ref, bool):
        if not 0 <= ref < len(task.references):
            raise UserInputError(
                f"task {task.task_id}: reference {ref} does not exist; the task has "
                f"{len(task.references)} reference(s)",
                hint="pass a position 0 <= k < len(task.references) or the reference itself",
            )
        return ref
    for k, r in enumerate(task.references):
        if r is ref:
            return k
    for k, r in enumerate(task.references):
        if r == ref:
            return k
    raise UserInputError(
        f"task {task.task_id}: the reference passed is not one of the task's references",
        hint="pass an element of task.references or its position",
    )


def _resolve(
    task: CMBenchTask, k: int, info: VideoInfo, line: int | None = None
) -> tuple[ResolvedReference | None, list[Problem]]:
    ref = task.references[k]
    name = f"references[{k}]"
    problems: list[Problem] = []
    t = float(ref.timestamp_seconds)
    ts_index = index_at_time(info, t) if 0 <= t < info.duration_seconds else None
    note: str | None = None
    valid_times = f"valid times are 0 <= t < {info.duration_seconds:.6f} s"
    if ref.frame_index is not None:
        fi = ref.frame_index
        if fi >= info.n_frames:
            problems.append(
                Problem(
                    task.task_id,
                    f"{name}.frame_index",
                    f"frame_index {fi} is outside the video {info.path}, which has "
                    f"{info.n_frames} frames (0..{info.n_frames - 1}); check the annotation "
                    "or that the video is the released file",
                    "error",
                    line,
                )
            )
            return None, problems
        index, source = fi, "frame_index"
        if ts_index is None:
            note = (
                f"{name}: timestamp_seconds {t} lies outside the video ({valid_times}); "
                "frame_index is used"
            )
        elif abs(ts_index - fi) > 1:
            note = (
                f"{name}: frame_index {fi} and timestamp_seconds {t} (frame {ts_index} is on "
                f"screen then) disagree by {abs(ts_index - fi)} frames; frame_index is used"
            )
    else:
        if ts_index is None:
            problems.append(
                Problem(
                    task.task_id,
                    f"{name}.timestamp_seconds",
                    f"timestamp_seconds {t} lies outside the video {info.path} "
                    f"({valid_times}) and there is no frame_index",
                    "error",
                    line,
                )
            )
            return None, problems
        index, source = ts_index, "timestamp"
    if note is not None:
        problems.append(Problem(task.task_id, name, note, "warning", line))
    box = normalized_to_pixel(ref.bbox_xyxy_normalized, info.width, info.height)
    resolved = ResolvedReference(
        frame_index=index,
        box_px=box,
        note=note,
        task_id=task.task_id,
        reference=k,
        source=source,  # type: ignore[arg-type]
        time_seconds=info.frame_times[index],
    )
    return resolved, problems


def resolve_reference(
    task: CMBenchTask, ref: CMBenchReference | int, video_info: VideoInfo
) -> ResolvedReference:
    """Pin a reference annotation to a frame index and an integer pixel box.

    The frame is ``ref.frame_index`` when annotated; otherwise the frame on screen at
    ``ref.timestamp_seconds`` (seconds from the first frame), found from the video's
    real presentation timestamps with :func:`vidmem.io.video.index_at_time`, so
    variable-frame-rate and offset-PTS files resolve correctly. When both are given and
    the timestamp points more than one frame away from the index (or outside the
    video), the index is kept and :attr:`ResolvedReference.note` says so.

    The box is ``normalized_to_pixel(bbox, W, H)``: multiplied by ``[W, H, W, H]``,
    snapped within ``1e-8`` of an integer, top-left floored, bottom-right ceiled,
    clipped to the frame.

    Args:
        task: the task.
        ref: one of ``task.references``, or its position.
        video_info: :func:`vidmem.io.video.probe` of the task's context video.

    Returns:
        The resolved reference.

    Raises:
        UserInputError: ``frame_index >= n_frames``, or a timestamp-only reference
            outside the video; the message names the task and the field.
    """
    k = _reference_position(task, ref)
    resolved, problems = _resolve(task, k, video_info)
    if resolved is None:
        p = problems[0]
        raise UserInputError(
            f"task {task.task_id}: field '{p.field}': {p.message}",
            hint="fix the annotation in metadata.jsonl, or re-download the context video",
        )
    return resolved


def resolve_references(ds: CMBenchDataset, task: CMBenchTask | str) -> list[ResolvedReference]:
    """Probe a task's context video and resolve all of its references.

    Args:
        ds: the dataset.
        task: a task or its id.

    Returns:
        One :class:`ResolvedReference` per reference, in order.

    Raises:
        UserInputError, VideoError: the video cannot be read or a reference is outside it.
    """
    t = ds.task(task) if isinstance(task, str) else task
    info = probe(ds.video_path(t))
    return [resolve_reference(t, k, info) for k in range(len(t.references))]


# --------------------------------------------------------------------------- statistics


@dataclass(frozen=True)
class CMBenchStats:
    """Counts of a dataset, to compare with the official release.

    Attributes:
        tasks: number of tasks.
        videos: number of distinct context videos.
        by_type: tasks per ``type``.
        by_task_type: tasks per ``task_type``.
        by_cell: tasks per ``(type, task_type)``.
        videos_by_type: distinct videos per ``type`` (of the first task using each).
    """

    tasks: int
    videos: int
    by_type: Mapping[str, int]
    by_task_type: Mapping[str, int]
    by_cell: Mapping[tuple[str, str], int]
    videos_by_type: Mapping[str, int]

    def as_counts(self) -> dict[str, int]:
        """Flat counts keyed like :data:`OFFICIAL_COUNTS`."""
        out = {"videos": self.videos, "tasks": self.tasks}
        for vt in VIDEO_TYPES:
            out[f"videos/{vt}"] = self.videos_by_type.get(vt, 0)
            out[f"tasks/{vt}"] = self.by_type.get(vt, 0)
        for tt in TASK_TYPES:
            out[f"tasks/{tt}"] = self.by_task_type.get(tt, 0)
        for vt in VIDEO_TYPES:
            for tt in TASK_TYPES:
                out[f"tasks/{vt}/{tt}"] = self.by_cell.get((vt, tt), 0)
        return out

    def differences_from_official(self) -> list[str]:
        """One line per count that differs from the official release (empty: same)."""
        mine = self.as_counts()
        return [
            f"{key}: {mine.get(key, 0)} here, {value} in the official release"
            for key, value in OFFICIAL_COUNTS.items()
            if mine.get(key, 0) != value
        ]

    def table(self) -> list[dict[str, Any]]:
        """Rows ``type, videos, reappear, revisit, tasks`` plus a ``total`` row."""
        rows = []
        for vt in (*VIDEO_TYPES, "total"):
            if vt == "total":
                cells = {tt: self.by_task_type.get(tt, 0) for tt in TASK_TYPES}
                rows.append({"type": vt, "videos": self.videos, **cells, "tasks": self.tasks})
            else:
                cells = {tt: self.by_cell.get((vt, tt), 0) for tt in TASK_TYPES}
                rows.append(
                    {
                        "type": vt,
                        "videos": self.videos_by_type.get(vt, 0),
                        **cells,
                        "tasks": self.by_type.get(vt, 0),
                    }
                )
        return rows


def dataset_stats(ds: CMBenchDataset) -> CMBenchStats:
    """Count tasks by ``type`` x ``task_type`` and distinct videos.

    The official release has 58 videos (50 synthetic, 8 real) and 116 tasks: 77
    reappear + 39 revisit, 102 synthetic + 14 real (see :data:`OFFICIAL_COUNTS` and
    :meth:`CMBenchStats.differences_from_official`).

    Args:
        ds: a loaded dataset.

    Returns:
        The counts.
    """
    by_type: dict[str, int] = {}
    by_task_type: dict[str, int] = {}
    by_cell: dict[tuple[str, str], int] = {}
    video_type: dict[str, str] = {}
    for t in ds.tasks:
        by_type[t.type] = by_type.get(t.type, 0) + 1
        by_task_type[t.task_type] = by_task_type.get(t.task_type, 0) + 1
        by_cell[(t.type, t.task_type)] = by_cell.get((t.type, t.task_type), 0) + 1
        video_type.setdefault(t.video, t.type)
    videos_by_type: dict[str, int] = {}
    for vt in video_type.values():
        videos_by_type[vt] = videos_by_type.get(vt, 0) + 1
    return CMBenchStats(
        tasks=len(ds.tasks),
        videos=len(video_type),
        by_type=by_type,
        by_task_type=by_task_type,
        by_cell=by_cell,
        videos_by_type=videos_by_type,
    )


# --------------------------------------------------------------------------- requests


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
class ContinuationScan:
    """Which continuations exist. Unpacks as ``found, missing = scan``.

    Attributes:
        found: task id -> readable ``<videos_dir>/<task_id>.mp4``.
        missing: task ids (dataset order) whose continuation is absent, empty or
            unreadable.
        reasons: task id -> why it is in ``missing``.
        unexpected: ``.mp4`` file names in the folder that match no task id.
        videos_dir: the folder scanned.
    """

    found: dict[str, Path]
    missing: list[str]
    reasons: dict[str, str] = field(default_factory=dict)
    unexpected: list[str] = field(default_factory=list)
    videos_dir: Path = Path()

    def __iter__(self) -> Iterator[Any]:
        yield self.found
        yield self.missing

    def raise_if_missing(self) -> None:
        """Raise when any continuation is missing (a missing one is never skipped).

        Raises:
            UserInputError: listing each missing task id with its reason.
        """
        if not self.missing:
            return
        shown = "\n".join(
            f"  {tid}: {self.reasons.get(tid, 'missing')}"
            for tid in self.missing[:MAX_LISTED_ERRORS]
        )
        more = len(self.missing) - MAX_LISTED_ERRORS
        tail = f"\n  ... and {more} more" if more > 0 else ""
        extra = f" (unmatched files: {', '.join(self.unexpected[:5])})" if self.unexpected else ""
        raise UserInputError(
            f"{self.videos_dir}: {len(self.missing)} of "
            f"{len(self.missing) + len(self.found)} continuation(s) missing or unreadable"
            f"{extra}:\n{shown}{tail}",
            hint="the generator must write <task_id>.mp4 for every task; rerun it for the "
            "listed tasks",
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
    found: dict[str, Path] = {}
    missing: list[str] = []
    reasons: dict[str, str] = {}
    for t in ds.tasks:
        p = folder / f"{t.task_id}.mp4"
        reason: str | None = None
        if not p.exists():
            reason = f"{p} not found"
        elif not p.is_file():
            reason = f"{p} is not a file"
        elif p.stat().st_size == 0:
            reason = f"{p} is empty (0 bytes)"
        else:
            try:
                probe(p)
            except VidmemError as exc:
                reason = exc.message
            except OSError as exc:
                reason = f"{p}: {exc}"
        if reason is None:
            found[t.task_id] = p
        else:
            missing.append(t.task_id)
            reasons[t.task_id] = reason
    ids = set(ds.task_ids)
    unexpected = sorted(
        f.name for f in folder.iterdir() if f.suffix.lower() == ".mp4" and f.stem not in ids
    )
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
