"""Finding model weights on disk, never on the network.

A backend's ``weights=`` is either a local directory or a hub id such as
``facebook/dinov2-small``. Hub ids are looked up, in order, under ``--model-dir`` /
``$VIDMEM_MODEL_DIR`` (as ``<dir>/<org>/<name>`` or ``<dir>/<org>--<name>``) and then in
the local Hugging Face cache. Nothing is downloaded here: `vidmem models fetch` is the
one command that talks to a hub.
"""

from __future__ import annotations

import os
from pathlib import Path

from vidmem.errors import MissingDependencyError

MODEL_DIR_ENV = "VIDMEM_MODEL_DIR"


def model_dirs(model_dir: str | Path | None = None) -> list[Path]:
    """Directories searched for hub ids, most specific first."""
    dirs: list[Path] = []
    if model_dir:
        dirs.append(Path(model_dir))
    env = os.environ.get(MODEL_DIR_ENV)
    if env:
        dirs.extend(Path(p) for p in env.split(os.pathsep) if p)
    return dirs


def _from_hf_cache(repo_id: str) -> Path | None:
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    try:
        return Path(snapshot_download(repo_id, local_files_only=True))
    except Exception:  # any miss in the local cache means "not found here"
        return None


def resolve_weights(weights: str | Path, *, backend: str, model_dir: str | Path | None = None) -> Path:
    """Return a local directory holding ``weights``.

    Raises:
        MissingDependencyError: nothing was found; the message lists where vidmem looked
            and how to provide the weights.
    """
    candidate = Path(weights).expanduser()
    if candidate.exists():
        return candidate
    text = str(weights)
    looked: list[str] = []
    for base in model_dirs(model_dir):
        for sub in (text, text.replace("/", "--"), text.split("/")[-1]):
            path = base / sub
            looked.append(str(path))
            if path.exists():
                return path
    if "/" in text and not text.startswith((".", "/")):
        cached = _from_hf_cache(text)
        if cached is not None:
            return cached
        looked.append(f"Hugging Face cache ({os.environ.get('HF_HOME', '~/.cache/huggingface')})")
    raise MissingDependencyError(
        f"backend '{backend}': weights '{text}' not found; looked in: "
        + ("; ".join(looked) if looked else "nowhere (not a path)"),
        hint=f"pass weights=<local dir>, set --model-dir or ${MODEL_DIR_ENV}, or run "
        f"`vidmem models fetch {backend} --to DIR` on a machine with hub access",
    )


def weights_fingerprint(backend: str, options: dict | None = None) -> str | None:
    """A cheap identity of the weights a backend would load: file names, sizes, mtimes.

    Put into cache keys so that swapping the weights behind the same name or path
    invalidates cached scores without hashing gigabytes on every run. ``None`` for
    weight-free backends and for weights that cannot be found (loading them will then
    raise the clear error).
    """
    from vidmem.io.hashing import content_hash
    from vidmem.registry import BACKENDS

    options = options or {}
    checkpoint = options.get("weights") or BACKENDS.get(backend).meta.get("checkpoint")
    if not checkpoint:
        return None
    try:
        path = resolve_weights(checkpoint, backend=backend, model_dir=options.get("model_dir"))
    except MissingDependencyError:
        return None
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return content_hash([(p.name if path.is_file() else str(p.relative_to(path)),
                          p.stat().st_size, p.stat().st_mtime_ns) for p in files])
