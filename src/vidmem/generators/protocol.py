"""The Generator protocol: a video model, or anything that plays one.

The request and result records live in :mod:`vidmem.generators.requests` (benchmarks build
them without depending on generators); they are re-exported here for generator authors.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from vidmem.generators.requests import GenerationRequest, GenerationResult, ReferenceImage

__all__ = ["GenerationRequest", "GenerationResult", "Generator", "ReferenceImage"]


@runtime_checkable
class Generator(Protocol):
    """A video model, or anything that plays one."""

    name: str

    def info(self) -> dict[str, Any]:
        """Plain data for the run log: name, version, settings that change outputs."""
        ...

    def generate(self, request: GenerationRequest) -> GenerationResult:
        """Write ``request.out_path`` and report how it went. Must not raise for a
        failure of one request; return ``status="error"`` with the reason instead."""
        ...
