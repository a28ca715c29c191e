"""What every tiny-model builder shares: the output directory, a seeded init, the save.

Building is deterministic: :func:`_seeded` forks the torch random state, so the same
seed writes the same weights and the caller's random state is left as it was. The
builders themselves live in :mod:`vidmem.models.tiny_embedders`,
:mod:`vidmem.models.tiny_detect_segment` and :mod:`vidmem.models.tiny_judges`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from vidmem.models.backends.base import import_torch

__all__ = ["PathLike"]

PathLike = str | os.PathLike[str]
_F = TypeVar("_F", bound=Callable[..., Path])


_PATH_AND_SEED_DOC = """
    Args:
        path: directory to write (created if missing).
        seed: torch seed of the random initialisation.

    Returns:
        ``path`` as a :class:`~pathlib.Path`, ready for ``weights=``.
    """


def tiny_builder(func: _F) -> _F:
    """Mark a ``tiny_<family>(path, *, seed=0)`` builder: append its shared Args/Returns doc."""
    func.__doc__ = f"{(func.__doc__ or '').rstrip()}\n{_PATH_AND_SEED_DOC}"
    return func


def make_out_dir(path: PathLike) -> Path:
    """``path`` as a :class:`~pathlib.Path`, created (with its parents) if missing."""
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    return out


@contextmanager
def _seeded(seed: int) -> Iterator[None]:
    """Seed torch for a model's initialisation, restoring the caller's random state after."""
    torch = import_torch()  # torch is imported only in models/backends (clear message if missing)

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def save_seeded_model(model_cls: Any, config: Any, out: Path, seed: int) -> None:
    """Build ``model_cls(config)`` under torch seed ``seed``; ``save_pretrained`` it to ``out``."""
    with _seeded(seed):
        model = model_cls(config)
    model.save_pretrained(out)
