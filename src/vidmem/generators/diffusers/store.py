"""The generation cache: finished clips kept under their generation signature.

A clip's key is the content hash of everything that decides its pixels (pipeline
classes, weights fingerprints, dtype, device, every sampling setting, the prompt, the
start image's and references' pixel hashes, the seed), so a repeated or resumed run
copies what it already made instead of generating it again, and a changed setting
misses exactly the clips it changes.

Layout, like the array cache of the runners (one folder per entry, sharded by the key's
first two characters, written to a temporary folder and renamed into place so readers
never see half an entry; two processes making the same clip both rename one identical
entry)::

    <root>/ab/abcdef.../clip.mp4, meta.json, [keyframe.png]
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["GenerationCache", "default_root"]


def default_root() -> Path:
    """``$VIDMEM_CACHE_DIR/generations`` (else ``~/.cache/vidmem/generations``), the same
    base folder as every other vidmem cache."""
    env = os.environ.get("VIDMEM_CACHE_DIR", "").strip()
    base = Path(env).expanduser() if env else Path.home() / ".cache" / "vidmem"
    return base / "generations"


class GenerationCache:
    """Finished clips (and their intermediates) by generation signature.

    Args:
        root: the cache folder (``None``: :func:`default_root`).
    """

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root).expanduser() if root else default_root()

    def _entry(self, key: str) -> Path:
        return self.root / key[:2] / key

    def get(self, key: str) -> Path | None:
        """The entry folder for ``key`` (holding ``clip.mp4`` and ``meta.json``), or None."""
        entry = self._entry(key)
        return entry if (entry / "clip.mp4").is_file() and (entry / "meta.json").is_file() else None

    def put(self, key: str, files: dict[str, Path], meta: dict[str, Any]) -> None:
        """Store ``files`` (name in the entry -> source file) and ``meta`` under ``key``."""
        entry = self._entry(key)
        if self.get(key) is not None:
            return
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=entry.parent))
        try:
            for name, src in files.items():
                shutil.copyfile(src, tmp / name)
            (tmp / "meta.json").write_text(json.dumps(meta, sort_keys=True, indent=1),
                                           encoding="utf-8")
            # another process may have stored the same key first: keep theirs
            with contextlib.suppress(OSError):
                os.replace(tmp, entry)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)


def copy_atomic(src: Path, dst: Path) -> None:
    """Copy ``src`` to ``dst`` through a temporary name, so ``dst`` is never half written."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dst.name}.partial-", dir=dst.parent)
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
    finally:
        Path(tmp).unlink(missing_ok=True)
