"""What each benchmark preset needs: backends, their weights, sizes and pip extra.

``vidmem models needed BENCH --preset official`` prints it. The backend names come from
the benchmarks' own preset tables (so this never drifts from what a run loads), and the
checkpoint, parameter count, memory and extra from the backend catalog
(:mod:`vidmem.catalog`). It lives with the command line because it reads every
benchmark's presets, which no layer below the benchmarks may import.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from vidmem.errors import UserInputError
from vidmem.registry import BACKENDS, BENCHMARKS, unknown_name_message

__all__ = ["SERVER_URL_ENV", "Need", "needed", "presets"]


@dataclass(frozen=True)
class Need:
    """One backend a preset loads.

    Attributes:
        used_for: where it is used (``score: detector``, ``run: retrieval ...``).
        backend: the backend name.
        checkpoint: the weights' hub id (``None``: weight-free, a server, or user files).
        params, vram: sizes from the catalog (``None`` where it has none).
        extra: the pip extra it needs (``None``: core).
        provide: how to make it available, in words.
        optional: loaded only when asked for (an analysis option).
    """

    used_for: str
    backend: str
    checkpoint: str | None
    params: str | None
    vram: str | None
    extra: str | None
    provide: str
    optional: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return asdict(self)


#: backends that ask a server, and the variable that names it (the backends' URL_ENVS[0])
SERVER_URL_ENV = {"judge/openai": "VIDMEM_JUDGE_URL", "rewriter/openai": "VIDMEM_REWRITER_URL"}


def _table(benchmark: str) -> dict[str, dict[str, str | None]]:
    table = BENCHMARKS.load(benchmark).preset_backends()  # unknown: "did you mean"
    if not table:
        raise UserInputError(f"benchmark {benchmark} has no preset table",
                             hint=f"see vidmem score {benchmark} --help for the backends it loads")
    return table


def presets(benchmark: str) -> list[str]:
    """The preset names of ``benchmark``.

    Example:
        >>> presets("memory_loop")
        ['official', 'offline']
    """
    return list(_table(benchmark))


def _provide(entry: Any) -> str:
    checkpoint = entry.meta.get("checkpoint")
    if checkpoint:
        gated = " (gated on the hub: accept its licence first)" if "gated" in entry.summary else ""
        return f"vidmem models fetch {entry.name} --to DIR, then --model-dir DIR{gated}"
    if entry.name in SERVER_URL_ENV:
        return (f"an OpenAI-compatible chat server at ${SERVER_URL_ENV[entry.name]} (or "
                f"--backend-opt {entry.name}:base_url=URL); no local weights")
    if entry.extra:
        return "your own weight files (weights=DIR); see the backend's docs"
    return "nothing: weight-free, in the core install"


def _need(used_for: str, name: str, *, optional: bool = False) -> Need:
    entry = BACKENDS.get(name)
    return Need(used_for=used_for, backend=name, checkpoint=entry.meta.get("checkpoint"),
                params=entry.meta.get("params"), vram=entry.meta.get("vram"),
                extra=entry.extra, provide=_provide(entry), optional=optional)


def needed(benchmark: str, preset: str = "official") -> list[Need]:
    """The backends ``benchmark`` loads under ``preset``, in its preset table's order.

    Example:
        >>> [(n.used_for, n.backend, n.extra) for n in needed("memory_loop")]
        [('score: embedder', 'dinov2/base', 'models')]

    Raises:
        UnknownNameError: ``benchmark`` is not registered.
        UserInputError: ``preset`` is not one of the benchmark's.
    """
    table = _table(benchmark)
    if preset not in table:
        raise UserInputError(unknown_name_message(f"{benchmark} preset", preset, list(table)),
                             hint=f"vidmem models needed {benchmark} --preset "
                             + "|".join(table))
    rows = [_need(used_for, name) for used_for, name in table[preset].items() if name]
    if preset == "official":
        rows += [_need(used_for, name, optional=True)
                 for used_for, name in BENCHMARKS.load(benchmark).optional_backends.items()]
    return rows
