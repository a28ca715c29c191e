"""MIST generation's files: the per-case progress file and the start-image PNGs.

``progress.json`` (in the case folder) records for each file the content key of what
made it (a request's prompt, seed, format, start image's SHA-256 and the generator's
identity; or the clip a PNG was taken from) and the file's SHA-256, written atomically
after each file. A file is finished when its key is unchanged and the file on disk still
has the recorded SHA-256 (:meth:`Progress.done`).

Every file here is written beside its target under a hidden temp name and renamed over
it; the temp files a killed writer left (:data:`PARTIAL_PATTERNS`) are removed when the
case's rollout starts again (:class:`Progress`).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from vidmem.generators.requests import GenerationRequest
from vidmem.io.hashing import content_hash, file_sha256
from vidmem.io.safe_paths import inside

__all__ = ["LOOP_VERSION", "PARTIAL_PATTERNS", "PROGRESS", "Progress", "copy_clip",
           "generate_clip", "last_frame_png", "read_progress", "remove_partials",
           "request_key", "write_json", "write_last_frame"]

#: bumped whenever a case's clips would change for the same generator and cards
LOOP_VERSION = "1"
PROGRESS = "progress.json"

#: temp names of the writes into a case folder: a clip being encoded
#: (:func:`vidmem.io.video.write_video`), a last-frame PNG, a copied clip, progress.json
PARTIAL_PATTERNS = (".*.partial-*", ".*.partial.png", ".*.partial", f".{PROGRESS}.*.tmp")


def remove_partials(folder: Path) -> list[Path]:
    """Delete the temp files killed writers left anywhere under the case ``folder``.

    Only vidmem's own hidden temp names (:data:`PARTIAL_PATTERNS`) are touched. The
    caller must be the case's only writer (one rollout per case, in a locked run).

    Returns:
        The files removed.

    Example:
        >>> import tempfile
        >>> case = Path(tempfile.mkdtemp())
        >>> (case / "arm").mkdir()
        >>> for name in ("arm/.try_0.partial-12-34.mp4", "arm/try_0.mp4", "notes.partial"):
        ...     _ = (case / name).write_bytes(b"x")
        >>> [p.name for p in remove_partials(case)], sorted(p.name for p in case.rglob("*.*"))
        (['.try_0.partial-12-34.mp4'], ['notes.partial', 'try_0.mp4'])
    """
    removed = []
    for pattern in PARTIAL_PATTERNS:
        for path in Path(folder).rglob(pattern):
            if path.is_file() and not path.is_symlink():
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed


def read_progress(folder: Path) -> dict[str, Any]:
    """The case's progress entries (``{}`` when there is no usable progress file)."""
    try:
        data = json.loads((Path(folder) / PROGRESS).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("loop_version") != LOOP_VERSION:
        return {}
    return dict(data.get("clips") or {})


def write_json(path: Path, data: Any) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_last_frame(clip: str | os.PathLike[str], png: str | os.PathLike[str]) -> Path:
    """Write the last frame of ``clip`` as ``png``, its container tags as PNG text.

    Returns:
        The PNG path (written atomically).
    """
    import av
    from PIL import Image, PngImagePlugin

    from vidmem.io.video import probe, read_frames

    info = probe(clip)
    frame = read_frames(clip, [info.n_frames - 1])[0]
    with av.open(str(clip)) as container:
        tags = {str(k): str(v) for k, v in container.metadata.items()}
    meta = PngImagePlugin.PngInfo()
    for key, value in sorted(tags.items()):
        meta.add_text(key, value, zip=True)
    out = Path(png)
    tmp = out.with_name(f".{out.name}.partial.png")
    Image.fromarray(frame).save(tmp, format="PNG", pnginfo=meta)
    os.replace(tmp, out)
    return out


class Progress:
    """The case's progress file: per file its request key and SHA-256."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        remove_partials(folder)  # the case's rollout (re)starts: no writer is alive here
        self.entries = read_progress(folder)
        self.generated = 0

    def done(self, rel: str, key: str) -> bool:
        e = self.entries.get(rel)
        path = self.folder / rel
        return (isinstance(e, dict) and e.get("key") == key and path.is_file()
                and file_sha256(path) == e.get("sha256"))

    def record(self, rel: str, key: str, **extra: Any) -> None:
        self.entries[rel] = {"key": key, "sha256": file_sha256(self.folder / rel), **extra}
        write_json(self.folder / PROGRESS, {"loop_version": LOOP_VERSION,
                                             "clips": self.entries})


def request_key(request: GenerationRequest, generator_key: Any) -> str:
    data = request.to_dict()
    data.pop("out_path")
    start = data.pop("start_image")
    data["start_image_sha256"] = file_sha256(start) if start else None
    return content_hash({"request": data, "generator": generator_key}, length=64)


def generate_clip(generator: Any, request: GenerationRequest, progress: Progress,
              generator_key: Any) -> str:
    """Generate one clip unless it is finished; return its path relative to the case."""
    rel = inside(progress.folder, request.out_path).relative_to(progress.folder).as_posix()
    key = request_key(request, generator_key)
    if progress.done(rel, key):
        return rel
    Path(request.out_path).parent.mkdir(parents=True, exist_ok=True)
    result = generator.generate(request)
    if getattr(result, "status", None) != "ok" or not Path(request.out_path).is_file():
        why = getattr(result, "error", None) or f"{request.out_path} was not written"
        raise RuntimeError(f"MIST {request.request_id}: {why}")
    progress.generated += 1
    progress.record(rel, key)
    return rel


def last_frame_png(progress: Progress, rel: str) -> Path:
    clip = progress.folder / rel
    png = inside(progress.folder, clip.with_suffix(".last.png"))
    sha = file_sha256(clip)
    prel = png.relative_to(progress.folder).as_posix()
    e = progress.entries.get(prel)
    if not (isinstance(e, dict) and e.get("source_sha256") == sha and png.is_file()
            and file_sha256(png) == e.get("sha256")):
        write_last_frame(clip, png)
        progress.record(prel, "last_frame", source_sha256=sha)
    return png


def copy_clip(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.exists() and file_sha256(dst) == file_sha256(src):
        return
    tmp = dst.with_name(f".{dst.name}.partial")
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)
