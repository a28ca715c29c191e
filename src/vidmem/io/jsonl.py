"""JSON Lines reading and writing with errors that name the file and line."""

from __future__ import annotations

import codecs
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from vidmem.errors import UserInputError

__all__ = [
    "json_error_message",
    "not_utf8_message",
    "parse_json_line",
    "raw_lines",
    "read_jsonl",
    "write_jsonl",
]


def raw_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_number, bytes)`` for every line of ``data`` (1-based numbers).

    Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` (never inside a line's text, so a JSON
    string holding U+2028 stays on its line). A UTF-8 byte-order mark at the start is
    dropped. Each line is decoded by the caller, so a line that is not UTF-8 spoils
    only itself.
    """
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    return enumerate(data.splitlines(), start=1)


def not_utf8_message(exc: UnicodeDecodeError) -> str:
    """Why one line is not UTF-8: the byte, where it is in the line, and the fix."""
    bad = exc.object[exc.start:exc.start + 1].hex()
    return (f"not UTF-8 text (byte 0x{bad} at byte {exc.start + 1} of the line: {exc.reason}); "
            "save the file as UTF-8")


def parse_json_line(text: str) -> Any:
    """``json.loads`` of one line; every way the text can fail is a ``ValueError``.

    Raises:
        ValueError: not JSON (:class:`json.JSONDecodeError`, with ``msg`` and
            ``colno``), an integer longer than Python converts, or nesting too deep.
    """
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("arrays or objects nested too deeply") from None


def json_error_message(exc: ValueError) -> str:
    """What :func:`parse_json_line` found wrong, e.g. ``not valid JSON (Expecting value at
    column 1)``."""
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON ({exc.msg} at column {exc.colno})"
    return f"not valid JSON ({exc})"


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line (1-based numbers).

    Raises:
        UserInputError: the file is missing, a line is not UTF-8, not JSON, or not a
            JSON object (the message names the line).
    """
    p = Path(path)
    if not p.is_file():
        raise UserInputError(f"{p}: file not found", hint="check the path")
    for number, raw in raw_lines(p.read_bytes()):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UserInputError(f"{p}:{number}: {not_utf8_message(exc)}") from None
        if not line.strip():
            continue
        try:
            obj = parse_json_line(line)
        except ValueError as exc:
            raise UserInputError(
                f"{p}:{number}: {json_error_message(exc)}",
                hint="each line must be one complete JSON object",
            ) from None
        if not isinstance(obj, dict):
            raise UserInputError(
                f"{p}:{number}: expected a JSON object, found {type(obj).__name__}"
            )
        yield number, obj


def write_jsonl(path: str | Path, rows: Iterable[dict[str, Any]]) -> int:
    """Write rows atomically (temp file + rename); return the number of rows."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    n = 0
    with tmp.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, allow_nan=False, sort_keys=True) + "\n")
            n += 1
    os.replace(tmp, p)
    return n


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` so a reader sees the old file or the new one, never half.

    A temp file beside ``path`` (unique per process) is written and renamed over it;
    a failed write (full disk) removes the temp file and raises
    :class:`~vidmem.errors.StoreError` naming the path.

    Example:
        >>> import tempfile
        >>> target = Path(tempfile.mkdtemp()) / "summary.json"
        >>> write_text_atomic(target, '{"a": 1}')
        >>> target.read_text(), sorted(p.name for p in target.parent.iterdir())
        ('{"a": 1}', ['summary.json'])
    """
    from vidmem.errors import StoreError

    p = Path(path)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, p)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StoreError(f"{p}: cannot write ({exc})",
                         hint="check free disk space and permissions of the folder") from None

