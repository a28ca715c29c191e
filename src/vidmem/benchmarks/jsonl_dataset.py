"""Pieces shared by the JSONL benchmarks (CMBench, memory loop).

Both benchmarks read a folder with one JSON object per line, check every row before
pydantic sees it and report every problem at once; both then look for one generated
``<id>.mp4`` per row in a videos folder. What is the same lives here:

* :class:`Problem` and :class:`RowValidationReport`: validation problems and the report
  that lists them;
* :class:`RowChecker`: the base of the per-row rule checkers, with the check of a
  file path that must stay inside the dataset root (:meth:`RowChecker.relative_file`);
* :func:`excerpt`: a bounded quote of a user value, for every message that quotes one;
* :func:`read_jsonl_rows`: read a JSONL file into rows plus problems (never raises);
* :func:`raise_on_load_errors`: refuse a dataset whose report holds errors;
* :func:`find_row`: a row by id, with "did you mean" when there is none;
* :class:`VideoFolderScan` and :func:`scan_video_folder`: which ``<id>.mp4`` files exist
  and open.

The benchmark modules re-export these under their historical names. The JSON value
checks they share (``is_int``, ``is_number``, ``type_name``) live in
:mod:`vidmem.values`.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, ClassVar

from vidmem.benchmarks.contract import Problem, RowValidationReport
from vidmem.errors import UserInputError, VidmemError
from vidmem.io.jsonl import json_error_message, not_utf8_message, parse_json_line, raw_lines
from vidmem.io.safe_paths import (  # noqa: F401  (re-exported: the link rule lives there)
    HF_REPO_PREFIXES,
    allowed_link_targets,
    hf_cache_repo,
    link_escape,
)
from vidmem.io.video import VideoInfo, probe
from vidmem.values import type_name

__all__ = [
    "MAX_LISTED_ERRORS",
    "Problem",
    "RowChecker",
    "RowValidationReport",
    "VideoFolderScan",
    "excerpt",
    "hf_cache_repo",
    "raise_on_load_errors",
    "read_jsonl_rows",
    "find_row",
    "scan_video_folder",
]

#: At most this many errors (or missing videos) are spelled out in one message.
MAX_LISTED_ERRORS = 20

# --------------------------------------------------------------------------- quoting values


def excerpt(value: object, limit: int = 80, *, quote: bool = True) -> str:
    """Quote ``value`` in a message, at most about ``limit`` characters of it.

    A short value is quoted whole (``repr``, or ``str`` when ``quote`` is false). A
    longer one shows its start, an ellipsis and its length, so that a message stays
    short whatever the dataset holds (a 60 MB prompt quoted whole makes the report
    itself the slow part)::

        >>> excerpt("abc")
        "'abc'"
        >>> excerpt("x" * 1000, limit=5)
        "'xxxxx...' (1000 characters)"
        >>> excerpt(list(range(1000)), limit=10)
        '[0, 1, 2, ... (1000 items)'

    Args:
        value: any value read from the dataset (or typed by the user).
        limit: how many characters of the value to show at most.
        quote: ``repr`` the value (the default); false: show ``str`` (ids, paths).
    """
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value) if quote else value
        head = value[:limit]
        if not quote:
            return f"{head}... ({len(value)} characters)"
        shown = repr(head)
        while len(shown) > limit + 2 and len(head) > 1:  # escapes widen the repr
            head = head[: len(head) // 2]
            shown = repr(head)
        return f"{shown[:-1]}...{shown[-1]} ({len(value)} characters)"
    text = repr(value) if quote else str(value)
    if len(text) <= limit:
        return text
    size = (f"{len(value)} items" if isinstance(value, (list, tuple, dict, set))
            else f"{len(text)} characters")
    return f"{text[:limit]}... ({size})"


# --------------------------------------------------------------------------- problems, report


def raise_on_load_errors(report: RowValidationReport, *, dataset: str, hint: str) -> None:
    """Raise when ``report`` holds errors, listing the first :data:`MAX_LISTED_ERRORS`.

    Args:
        report: the validation report.
        dataset: the dataset's name in the message, e.g. ``"CMBench"``.
        hint: how to see every problem.

    Raises:
        UserInputError: the report holds errors.
    """
    errors = report.errors
    if not errors:
        return
    listed = "\n".join(f"  {p}" for p in errors[:MAX_LISTED_ERRORS])
    more = len(errors) - MAX_LISTED_ERRORS
    tail = f"\n  ... and {more} more error(s)" if more > 0 else ""
    raise UserInputError(
        f"{report.root / report.rows_file}: {len(errors)} error(s) in the {dataset} dataset:\n"
        f"{listed}{tail}",
        hint=hint,
    )


class RowChecker:
    """Collect the problems of one raw JSONL row (subclasses add the rules).

    :attr:`id_field` names the row's id; a row without a usable id is placed as
    ``"line N"``. Ids and field names (a row's keys) are user values too: a long one
    is shown as an :func:`excerpt`.
    """

    id_field: ClassVar[str] = "id"

    def __init__(self, obj: dict[str, Any], line: int, root: Path) -> None:
        self.obj = obj
        self.line = line
        self.root = root
        rid = obj.get(self.id_field)
        self.where = (excerpt(rid, quote=False) if isinstance(rid, str) and rid.strip()
                      else f"line {line}")
        self.problems: list[Problem] = []
        self._bases: tuple[Path, ...] | None = None

    def error(self, field_name: str, message: str) -> None:
        self.problems.append(
            Problem(self.where, excerpt(field_name, quote=False), message, "error", self.line))

    def warn(self, field_name: str, message: str) -> None:
        self.problems.append(
            Problem(self.where, excerpt(field_name, quote=False), message, "warning", self.line))

    def relative_file(self, field_name: str, value: str, *, what: str, noun: str,
                      example: str, missing_hint: str) -> str | None:
        """Check that ``value`` names a file inside the dataset root; report what is wrong.

        Errors: an absolute path; a ``..`` part; a path the system cannot use (too long,
        a NUL byte); a path that leads, through a symbolic link, outside the root (see
        :func:`allowed_link_targets`: a Hugging Face snapshot may link into its own
        cache repository); no such file; a folder.

        Args:
            field_name: the field, e.g. ``video``.
            value: the field's (non-empty string) value.
            what: the files in a sentence, e.g. ``context videos``.
            noun: one of them, e.g. ``video``.
            example: a good value, e.g. ``videos/synthetic/syn_001.mp4``.
            missing_hint: what to do about a missing file.

        Returns:
            ``value``, or ``None`` when it is not a usable relative path at all.
        """
        shown = excerpt(value)
        posix, win = PurePosixPath(value), PureWindowsPath(value)
        if posix.is_absolute() or win.is_absolute() or win.drive or value.startswith("\\"):
            self.error(field_name, f"{shown} is an absolute path; expected a path relative "
                       f"to the dataset root {self.root}, e.g. {example!r}")
            return None
        if ".." in re.split(r"[\\/]", value):
            self.error(field_name, f"{shown} contains '..'; {what} must lie inside the "
                       "dataset root")
            return None
        path = self.root / value
        try:
            if self._bases is None:
                self._bases = allowed_link_targets(self.root)
            real = link_escape(self.root, path, self._bases)
            if real is not None:
                how = ("is a symbolic link to" if path.is_symlink()
                       else "leads through a symbolic link to")
                self.error(field_name, f"{shown} {how} {excerpt(str(real), 200, quote=False)}, "
                           f"outside the dataset root {self.root}; {what} must lie inside it: "
                           "copy the file into the dataset folder (or link the whole dataset "
                           "folder instead)")
            elif not path.exists():
                broken = " (a broken symbolic link)" if path.is_symlink() else ""
                self.error(field_name, f"file not found: {excerpt(str(path), 200, quote=False)}"
                           f"{broken}; {missing_hint}")
            elif not path.is_file():
                self.error(field_name, f"{path} is a folder, expected a {noun} file")
        except (OSError, ValueError) as exc:  # name too long, NUL byte, link loop
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.error(field_name, f"{shown} is not a usable path ({reason}); expected a "
                       f"path relative to the dataset root, e.g. {example!r}")
            return None
        return value


def find_row(rows: Sequence[Any], wanted: str, *, noun: str, source: Path) -> Any:
    """The row whose ``<noun>_id`` is ``wanted`` (e.g. the task with this ``task_id``).

    Raises:
        UserInputError: no such row (with close matches), placed at ``source``.
    """
    id_attr = f"{noun}_id"
    for row in rows:
        if getattr(row, id_attr) == wanted:
            return row
    ids = tuple(getattr(row, id_attr) for row in rows)
    close = difflib.get_close_matches(str(wanted), ids, n=3, cutoff=0.6)
    guess = f"; did you mean {' or '.join(excerpt(c) for c in close)}?" if close else ""
    raise UserInputError(
        f"{source}: no {noun} {excerpt(wanted)}{guess}",
        hint=f"the dataset has {len(rows)} {noun}s; list them with ds.{noun}_ids",
    )


# --------------------------------------------------------------------------- JSONL rows


def read_jsonl_rows(
    path: Path, file_label: str
) -> tuple[list[tuple[int, dict[str, Any]]], list[Problem]]:
    """Read a JSONL dataset file into ``(line, object)`` rows and problems.

    The file is read as bytes and each line decoded on its own: a line that is not
    UTF-8, not JSON, or not a JSON object becomes a problem placed as ``"line N"``, and
    the other lines are still read. Blank lines are skipped; a UTF-8 byte-order mark
    is allowed. ``file_label`` places a problem with the whole file (it cannot be read).
    """
    rows: list[tuple[int, dict[str, Any]]] = []
    problems: list[Problem] = []
    try:
        data = path.read_bytes()
    except OSError as exc:
        problems.append(Problem(file_label, "", f"cannot be read ({exc.strerror or exc})"))
        return rows, problems
    for number, raw in raw_lines(data):
        place = f"line {number}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(Problem(place, "", not_utf8_message(exc), line=number))
            continue
        if not line.strip():
            continue
        try:
            obj = parse_json_line(line)
        except ValueError as exc:
            problems.append(
                Problem(
                    place,
                    "",
                    f"{json_error_message(exc)}; each line must be one complete JSON object",
                    line=number,
                )
            )
            continue
        if not isinstance(obj, dict):
            problems.append(
                Problem(place, "", f"expected a JSON object, found {type_name(obj)}", line=number)
            )
            continue
        rows.append((number, obj))
    return rows, problems


# --------------------------------------------------------------------------- video folder


@dataclass(frozen=True)
class VideoFolderScan:
    """Which ``<id>.mp4`` videos exist. Unpacks as ``found, missing = scan``.

    Subclasses word :meth:`raise_if_missing` through :attr:`missing_what` (e.g.
    ``"continuation(s)"``) and :attr:`missing_hint`.

    Attributes:
        found: id -> readable ``<videos_dir>/<id>.mp4``.
        missing: ids (dataset order) whose video is absent, empty or unreadable.
        reasons: id -> why it is in ``missing``.
        unexpected: ``.mp4`` file names in the folder that match no id.
        videos_dir: the folder scanned.
    """

    missing_what: ClassVar[str] = "video(s)"
    missing_hint: ClassVar[str] = "the generator must write <id>.mp4 for every row"
    #: what the folder holds, for the "folder not found" message
    folder_noun: ClassVar[str] = "video"
    id_noun: ClassVar[str] = "id"

    found: dict[str, Path]
    missing: list[str]
    reasons: dict[str, str] = field(default_factory=dict)
    unexpected: list[str] = field(default_factory=list)
    videos_dir: Path = Path()

    def __iter__(self) -> Iterator[Any]:
        yield self.found
        yield self.missing

    @classmethod
    def of(cls, videos_dir: str | os.PathLike[str], ids: Iterable[str], *,
           check: Callable[[Path, VideoInfo], str | None] | None = None) -> Any:
        """Scan ``videos_dir`` for ``<id>.mp4`` of every id (see :func:`scan_video_folder`).

        Raises:
            UserInputError: ``videos_dir`` is not a folder.
        """
        folder = Path(videos_dir).expanduser()
        if not folder.is_dir():
            raise UserInputError(
                f"{folder}: {cls.folder_noun} folder not found",
                hint=f"pass the folder the generator wrote <{cls.id_noun}>.mp4 files into")
        found, missing, reasons, unexpected = scan_video_folder(folder, ids, check=check)
        return cls(found, missing, reasons, unexpected, folder)

    def raise_if_missing(self) -> None:
        """Raise when any video is missing (a missing one is never skipped).

        Raises:
            UserInputError: listing each missing id with its reason.
        """
        if not self.missing:
            return
        shown = "\n".join(
            f"  {rid}: {self.reasons.get(rid, 'missing')}"
            for rid in self.missing[:MAX_LISTED_ERRORS]
        )
        more = len(self.missing) - MAX_LISTED_ERRORS
        tail = f"\n  ... and {more} more" if more > 0 else ""
        extra = f" (unmatched files: {', '.join(self.unexpected[:5])})" if self.unexpected else ""
        raise UserInputError(
            f"{self.videos_dir}: {len(self.missing)} of "
            f"{len(self.missing) + len(self.found)} {self.missing_what} missing or unreadable"
            f"{extra}:\n{shown}{tail}",
            hint=self.missing_hint,
        )


def scan_video_folder(
    folder: Path,
    ids: Iterable[str],
    *,
    check: Callable[[Path, VideoInfo], str | None] | None = None,
) -> tuple[dict[str, Path], list[str], dict[str, str], list[str]]:
    """Look for ``<folder>/<id>.mp4`` for every id and check it opens.

    Each file is probed (:func:`vidmem.io.video.probe`, demux only); a missing,
    zero-byte or unreadable file, or one that ``check`` rejects (it returns the
    reason), is missing with the reason. The caller checks that ``folder`` is a folder.

    Returns:
        ``(found, missing, reasons, unexpected)`` as in :class:`VideoFolderScan`.
    """
    found: dict[str, Path] = {}
    missing: list[str] = []
    reasons: dict[str, str] = {}
    id_list = list(ids)
    for rid in id_list:
        p = folder / f"{rid}.mp4"
        reason: str | None = None
        if not p.exists():
            reason = f"{p} not found"
        elif not p.is_file():
            reason = f"{p} is not a file"
        elif p.stat().st_size == 0:
            reason = f"{p} is empty (0 bytes)"
        else:
            try:
                info = probe(p)
                if check is not None:
                    reason = check(p, info)
            except VidmemError as exc:
                reason = exc.message
            except OSError as exc:
                reason = f"{p}: {exc}"
        if reason is None:
            found[rid] = p
        else:
            missing.append(rid)
            reasons[rid] = reason
    known = set(id_list)
    unexpected = sorted(
        f.name for f in folder.iterdir() if f.suffix.lower() == ".mp4" and f.stem not in known
    )
    return found, missing, reasons, unexpected
