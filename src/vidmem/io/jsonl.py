"""JSON Lines reading and writing with errors that name the file and line."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from vidmem.errors import UserInputError


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line (1-based numbers).

    Raises:
        UserInputError: the file is missing, a line is not JSON, or not a JSON object.
    """
    p = Path(path)
    if not p.is_file():
        raise UserInputError(f"{p}: file not found", hint="check the path")
    with p.open("r", encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise UserInputError(
                    f"{p}:{number}: not valid JSON ({exc.msg} at column {exc.colno})",
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
