"""What the built-in policies share: argument checks, the segment ranking, the base class.

Segment-level policies first rank the eligible past segments (those ending at or
before the composing segment's start) by the cosine of the instruction's query
embedding with each segment's text embedding, as the reference store's
``rank_segments_text`` does: a segment is represented by its own instruction text,
segments with empty text are skipped, ties keep replay order, the top ``n`` are kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from vidmem.errors import UserInputError
from vidmem.memory.frames import Segment
from vidmem.memory.policy import FilmContext, Reference
from vidmem.memory.ranking import stable_order
from vidmem.memory.store import PROTOCOL as STORE_PROTOCOL
from vidmem.memory.store import MemoryStore
from vidmem.models.protocols import ImageEmbedder, TextEmbedder
from vidmem.values import is_int_like, is_number_like

__all__ = [
    "BuiltinPolicy", "check_budget", "check_count", "check_embedder", "check_fps", "frame_refs",
    "rank_segments",
]

#: The rule every segment-level policy shares (written into each one's PROTOCOL).
SEGMENT_RANKING = ("rank eligible past segments (end <= segment start) by cosine(query "
                   "embedding of the instruction, text embedding of the segment's own "
                   "instruction text); skip empty texts; ties keep replay order; keep the top "
                   "n (reference rank_segments_text, segment text = description or prompt = prompt)")


def check_budget(budget: Any, where: str) -> int:
    """``budget`` as an int ``>= 0`` (how many references compose may return)."""
    if isinstance(budget, bool) or not is_int_like(budget) or budget < 0:
        raise UserInputError(f"{where}: budget must be an int >= 0, found {budget!r}",
                             hint="the Track-A sweep composes once with budget 16")
    return int(budget)


def check_count(value: Any, name: str, where: str, low: int = 1) -> int:
    if isinstance(value, bool) or not is_int_like(value) or value < low:
        raise UserInputError(f"{where}: {name} must be an int >= {low}, found {value!r}")
    return int(value)


def check_fps(fps: Any, where: str) -> float:
    """A sampling rate in frames per second: 1 or 2 (the grids the store holds)."""
    if isinstance(fps, bool) or not is_number_like(fps) or float(fps) not in (1.0, 2.0):
        raise UserInputError(f"{where}: fps must be 1 or 2 (the store's grids), found {fps!r}",
                             hint="the protocol uses 1 fps, and 2 fps for DINO keyframes")
    return float(fps)


def check_embedder(embedder: Any, role: str, method: str, where: str) -> Any:
    if not callable(getattr(embedder, method, None)) or not callable(getattr(embedder, "info", None)):
        raise UserInputError(
            f"{where}: {role} must be a backend with {method}() and info(), found "
            f"{type(embedder).__name__}",
            hint="load one with vidmem.models.loading (e.g. an image/text embedder backend)")
    return embedder


def rank_segments(store: MemoryStore, embedder: TextEmbedder, instruction: str, *,
                  before: float, top: int) -> list[tuple[Segment, float]]:
    """The top ``top`` eligible segments by text similarity to ``instruction``.

    Returns:
        ``(segment, cosine)`` pairs, best first (cosine in float64).
    """
    segments = [s for s in store.eligible_segments(before) if s.text]
    if not segments or top <= 0:
        return []
    query = store.query_embeddings(embedder, [instruction])[0].astype(np.float64)
    docs = store.text_embeddings(embedder, [s.text for s in segments]).astype(np.float64)
    scores = docs @ query
    return [(segments[i], float(scores[i])) for i in stable_order(scores)[:top]]


class BuiltinPolicy:
    """Shared plumbing: reset, ``protocol()`` for run.json and ``needs()``.

    Subclasses set ``name`` and ``PROTOCOL`` and fill ``_params`` / ``_backends``.
    """

    name = "builtin"
    PROTOCOL: Mapping[str, str] = {}

    def __init__(self) -> None:
        self._params: dict[str, Any] = {}
        self._backends: dict[str, ImageEmbedder | TextEmbedder] = {}
        self._needs: list[tuple[ImageEmbedder, float]] = []
        self.context: FilmContext | None = None

    def reset(self, context: FilmContext) -> None:
        self.context = context

    def observe(self, segment: Segment, store: MemoryStore) -> None:
        # Embed the new segment's frames while its pixels are still decoded.
        for embedder, fps in self._needs:
            store.ensure_image_embeddings(embedder, store.pool(fps, segment_index=segment.index))
        text = self._backends.get("segment_text_embedder")
        if text is not None and segment.text:
            store.text_embeddings(text, [segment.text])  # type: ignore[arg-type]

    def needs(self) -> list[tuple[ImageEmbedder, float]]:
        """``(image embedder, fps)`` pairs this policy embeds frames with."""
        return list(self._needs)

    def protocol(self) -> dict[str, Any]:
        """Rules, parameters and backends, for the run log's ``protocol`` block."""
        return {
            "policy": self.name,
            "rules": {**STORE_PROTOCOL, **self.PROTOCOL},
            "params": dict(self._params),
            "backends": {role: e.info().to_dict() for role, e in self._backends.items()},
        }


def frame_refs(seconds: Any, segments: Any, scores: Any, infos: list[dict[str, Any]]) -> list[Reference]:
    """Frame references from parallel sequences (seconds, segment index, score, info)."""
    return [Reference(float(t), float(sc), "frame", int(si), info)
            for t, si, sc, info in zip(seconds, segments, scores, infos, strict=True)]
