"""What each benchmark preset needs: backends, their weights, sizes and pip extra.

``vidmem models needed BENCH --preset official`` prints it. The backend names come from
the benchmarks' own preset tables (so this never drifts from what a run loads), and the
checkpoint, parameter count, memory and extra from the backend catalog
(:mod:`vidmem.catalog`). It lives with the command line because it reads every
benchmark's presets, which no layer below the benchmarks may import.
"""

from __future__ import annotations

from collections.abc import Callable
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


def _cmbench() -> dict[str, dict[str, str | None]]:
    from vidmem.benchmarks.cmbench.scorer import PRESETS

    return {p: {f"score: {k}": v for k, v in slots.items()} for p, slots in PRESETS.items()}


def _memory_loop() -> dict[str, dict[str, str | None]]:
    from vidmem.benchmarks.memory_loop.scorer import PRESETS

    return {p: {"score: embedder": name} for p, name in PRESETS.items()}


def _mist() -> dict[str, dict[str, str | None]]:
    from vidmem.benchmarks.mist.config import PRESETS

    return {p: {f"score and run: {k}": v for k, v in slots.items()} for p, slots in PRESETS.items()}


def _track_a() -> dict[str, dict[str, str | None]]:
    from vidmem.benchmarks.vmem_track_a.config import PRESETS

    return {p: {f"score: {k}": v for k, v in slots.items()
                if k.endswith("_embedder") or k == "judge"} for p, slots in PRESETS.items()}


def _track_b() -> dict[str, dict[str, str | None]]:
    from vidmem.benchmarks.vmem_track_b.config import PRESETS
    from vidmem.benchmarks.vmem_track_b.loop_config import RETRIEVAL_PRESETS

    return {p: {**{f"score: {k}": v for k, v in PRESETS[p].items() if k == "judge"},
                **{f"run (retrieval): {k}": v
                   for k, v in RETRIEVAL_PRESETS.get(p, {}).items()}}
            for p in PRESETS}


#: benchmark -> its presets' backends, ``{preset: {used for: backend or None}}``
_SLOTS: dict[str, Callable[[], dict[str, dict[str, str | None]]]] = {
    "cmbench": _cmbench, "memory_loop": _memory_loop, "mist": _mist,
    "vmem_track_a": _track_a, "vmem_track_b": _track_b,
}
#: backends an analysis loads only when asked (``--opt``), listed with the official preset
_OPTIONAL: dict[str, dict[str, str]] = {
    "vmem_track_b": {"analyze identity: face_embedder": "face/arcface-onnx"},
}


#: backends that ask a server, and the variable that names it (the backends' URL_ENVS[0])
SERVER_URL_ENV = {"judge/openai": "VIDMEM_JUDGE_URL", "rewriter/openai": "VIDMEM_REWRITER_URL"}


def _table(benchmark: str) -> dict[str, dict[str, str | None]]:
    BENCHMARKS.get(benchmark)  # an unknown name gets the "did you mean" error
    if benchmark not in _SLOTS:
        raise UserInputError(f"benchmark {benchmark} has no preset table here",
                             hint=f"see vidmem score {benchmark} --help for the backends it loads")
    return _SLOTS[benchmark]()


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
                 for used_for, name in _OPTIONAL.get(benchmark, {}).items()]
    return rows
