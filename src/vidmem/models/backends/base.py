"""What every backend shares: settings, run-log description, batching, weights hashing.

Heavy imports (torch, transformers) go through :func:`import_torch` and
:func:`import_transformers` so a missing ``models`` extra gives one clear message.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from vidmem.errors import MissingDependencyError, UserInputError
from vidmem.io.hashing import tree_sha256
from vidmem.models.protocols import BackendInfo
from vidmem.models.weights import resolve_weights

T = TypeVar("T")

_WEIGHT_PATTERNS = ("*.safetensors", "*.bin", "*.pt", "*.pth", "*.json", "*.model", "*.txt")


def batched(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """Yield consecutive slices of at most ``size`` items.

    Example:
        >>> [list(b) for b in batched([1, 2, 3, 4, 5], 2)]
        [[1, 2], [3, 4], [5]]
    """
    if size < 1:
        raise UserInputError(f"batch_size must be >= 1, found {size}")
    for start in range(0, len(items), size):
        yield items[start : start + size]


@cache
def weights_digest(path: str) -> str:
    """SHA-256 over the weight/config files of a local model directory (cached)."""
    return tree_sha256(path, patterns=_WEIGHT_PATTERNS)


class BackendBase:
    """Common constructor and :meth:`info` for all backends.

    Subclasses set ``name`` (the registry key), ``default_weights`` (a hub id or
    ``None`` for weight-free backends) and ``official``.
    """

    name: str = "base/unnamed"
    default_weights: str | None = None
    official: bool = False

    def __init__(
        self,
        *,
        weights: str | Path | None = None,
        device: str = "cpu",
        dtype: str = "float32",
        batch_size: int = 16,
        model_dir: str | Path | None = None,
        **settings: Any,
    ) -> None:
        if batch_size < 1:
            raise UserInputError(f"{self.name}: batch_size must be >= 1, found {batch_size}")
        self.device = device
        self.dtype = dtype
        self.batch_size = int(batch_size)
        self.settings = dict(settings)
        self.weights_path: Path | None = None
        wanted = weights if weights is not None else self.default_weights
        if wanted is not None:
            self.weights_path = resolve_weights(wanted, backend=self.name, model_dir=model_dir)

    def info(self) -> BackendInfo:
        path = self.weights_path
        return BackendInfo(
            name=self.name,
            weights=str(path) if path is not None else None,
            weights_sha256=weights_digest(str(path)) if path is not None else None,
            device=self.device,
            dtype=self.dtype,
            official=self.official,
            settings=dict(self.settings),
        )

    # -- for the weight-free (classic) backends ------------------------------------------

    def _refuse_weights(self, weights: Any, *, subject: str, instead: str) -> None:
        """Refuse ``weights=`` for a weight-free backend; ``instead`` names a model backend."""
        if weights is not None:
            raise UserInputError(
                f"{self.name}: {subject} has no weights; found weights={weights!r}",
                hint=f"drop the weights argument, or choose {instead}",
            )

    def _check_settings(self, checks: Iterable[tuple[str, Any, bool, str]]) -> None:
        """Raise :class:`UserInputError` on the first ``(key, value, ok, expected)`` not ``ok``."""
        for key, value, ok, expected in checks:
            if not ok:
                raise UserInputError(
                    f"{self.name}: setting {key} must be {expected}; found {value!r}",
                    hint="omit it to use the documented default",
                )


def import_torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        raise MissingDependencyError(
            "this backend needs PyTorch, which is not installed",
            hint="pip install torch==2.13.0 && pip install 'vidmem[models]'",
        ) from exc
    return torch


def import_transformers() -> Any:
    import_torch()
    try:
        import transformers
    except ImportError as exc:
        raise MissingDependencyError(
            "this backend needs transformers, which is not installed",
            hint="pip install 'vidmem[models]'",
        ) from exc
    return transformers


def image_processor_class(name: str) -> Any:
    """The numpy/PIL flavour of transformers' image processor ``name``.

    transformers 5 names it ``<name>Pil``; in 4.x the plain ``<name>`` is the numpy one.
    """
    transformers = import_transformers()
    return getattr(transformers, name + "Pil", None) or getattr(transformers, name)


def torch_dtype(name: str) -> Any:
    torch = import_torch()
    table = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
    if name not in table:
        raise UserInputError(f"dtype must be one of {sorted(table)}, found '{name}'")
    return table[name]
