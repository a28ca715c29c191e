"""The Generator protocol: a video model, or anything that plays one.

The request and result records live in :mod:`vidmem.generators.requests` (benchmarks build
them without depending on generators); they are re-exported here for generator authors.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from vidmem.errors import VidmemError
from vidmem.generators.requests import GenerationRequest, GenerationResult, ReferenceImage

__all__ = ["GenerationRequest", "GenerationResult", "Generator", "ReferenceImage",
           "generate_or_error"]


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


def generate_or_error(who: str, request: GenerationRequest,
                      produce: Callable[[GenerationRequest], Mapping[str, Any] | None]
                      ) -> GenerationResult:
    """Run ``produce(request)`` (which writes ``request.out_path`` and returns the
    result's extras) as the protocol asks: a failure of this one request comes back as
    ``status="error"`` naming the request and ``who`` ("sim generator", "generator
    wan2.2-ti2v-5b"), never as an exception that would stop the run.
    """
    start = time.perf_counter()
    rid = getattr(request, "request_id", "?")
    try:
        extras = produce(request)
    except VidmemError as exc:
        why = exc.message + (f" (fix: {exc.hint})" if exc.hint else "")
        return GenerationResult(rid, "error", None, time.perf_counter() - start,
                                error=f"request {rid}: {who}: {why}")
    except Exception as exc:  # a model or a bug must not stop the run; report it per item
        return GenerationResult(rid, "error", None, time.perf_counter() - start,
                                error=f"request {rid}: {who} failed: {type(exc).__name__}: {exc}")
    return GenerationResult(rid, "ok", str(request.out_path), time.perf_counter() - start,
                            extras=dict(extras or {}))

