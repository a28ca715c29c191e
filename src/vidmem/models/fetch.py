"""`vidmem models fetch`: the one place that downloads weights, on user request only.

Kept thin on purpose: it maps a backend name to its checkpoint id and asks
``huggingface_hub`` for a snapshot. Offline, it fails with a message that says how to
bring the weights over from a machine with network access.
"""

from __future__ import annotations

from pathlib import Path

from vidmem.errors import MissingDependencyError, UserInputError
from vidmem.registry import BACKENDS


def fetch_weights(name: str, to: str | Path) -> Path:
    """Download backend ``name``'s checkpoint into ``to/<org>--<repo>`` and return it."""
    entry = BACKENDS.get(name)
    checkpoint = entry.meta.get("checkpoint")
    if not checkpoint:
        raise UserInputError(f"backend '{name}' has no weights to fetch (it is weight-free)")
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:
        raise MissingDependencyError(
            "fetching weights needs huggingface_hub", hint="pip install 'vidmem[models]'"
        ) from exc
    target = Path(to) / checkpoint.replace("/", "--")
    try:
        return Path(snapshot_download(checkpoint, local_dir=target))
    except Exception as exc:  # offline, auth, missing repo: all end the same way for the user
        raise MissingDependencyError(
            f"could not download '{checkpoint}' for backend '{name}': {type(exc).__name__}: {exc}",
            hint="on a machine with hub access run `vidmem models fetch "
            f"{name} --to DIR`, copy DIR here and pass --model-dir DIR (or set VIDMEM_MODEL_DIR)",
        ) from exc
