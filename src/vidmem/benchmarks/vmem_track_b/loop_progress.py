"""A Track-B rollout's progress file: which clips are finished, written atomically.

Rules: ``progress.json`` in the rollout's folder holds the rollout's identity and, per
finished segment, its clip's name, SHA-256 and references; it is rewritten atomically
(temporary file, fsync, rename) after every segment; a clip is finished when its file
exists with the recorded SHA-256; an unreadable file counts as no progress. Moved out
of :mod:`.loop` unchanged.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vidmem.io.hashing import file_sha256

__all__ = ["PROGRESS", "finished", "read_progress", "write_progress"]

#: the rollout's progress file, in its folder
PROGRESS = "progress.json"


def read_progress(folder: Path) -> dict[str, Any] | None:
    """The rollout's progress file, or ``None`` when there is none (or it is unreadable)."""
    path = Path(folder) / PROGRESS
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_progress(folder: Path, data: Mapping[str, Any]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{PROGRESS}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, folder / PROGRESS)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def finished(folder: Path, entry: Any) -> bool:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("sha256"), str):
        return False
    clip = folder / str(entry.get("clip", ""))
    return clip.is_file() and file_sha256(clip) == entry["sha256"]

