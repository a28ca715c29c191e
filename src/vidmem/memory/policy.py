"""The retrieval-policy protocol, its reference record, and loading policies by name.

A policy is driven by :func:`vidmem.memory.guard.replay`, segment by segment:
``compose`` for segment n (seeing only segments before n in the store), then the
store observes segment n, then ``observe``. Built-in policies are listed in
:data:`BUILTIN_POLICIES`; a user's own is ``package.module:Class``.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from vidmem.errors import UserInputError
from vidmem.memory.frames import Segment
from vidmem.memory.store import MemoryStore
from vidmem.registry import POLICIES

__all__ = ["FilmContext", "Policy", "Reference", "builtin_policies", "load_policy"]


@dataclass(frozen=True)
class Reference:
    """One piece of evidence a policy retrieved: a past frame, by its source time.

    Attributes:
        source_seconds: source time of the frame in the film, seconds.
        score: the policy's own score (higher is better); the list order is the
            ranking, the score only explains it.
        kind: what the reference is (``"frame"`` for every built-in policy).
        segment_index: the segment the frame was sampled from, when known.
        info: policy-specific facts (ranks, fused parts), for the run log.
    """

    source_seconds: float
    score: float
    kind: str = "frame"
    segment_index: int | None = None
    info: Mapping[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class FilmContext:
    """What a policy is told when a film starts.

    Attributes:
        film_id: the film's id (the seeded random control draws from it).
        extras: anything else the caller wants a policy to know (never gold).
    """

    film_id: str
    extras: Mapping[str, Any] = field(default_factory=dict, hash=False)


@runtime_checkable
class Policy(Protocol):
    """A retrieval policy. Built-ins also offer ``protocol() -> dict`` (rules and
    parameters for run.json) and ``needs() -> [(ImageEmbedder, fps)]`` (what to embed
    while a segment's pixels are decoded)."""

    name: str

    def reset(self, context: FilmContext) -> None:
        """Forget everything: a new film starts."""
        ...

    def compose(self, instruction: str, segment_start: float, budget: int,
                store: MemoryStore) -> list[Reference]:
        """Rank past frames for the segment starting at ``segment_start`` seconds.

        Args:
            instruction: the segment's instruction text g_n.
            segment_start: its start, seconds; only earlier frames count.
            budget: how many references are wanted at most.
            store: segments before this one and their frames.

        Returns:
            References, best first.
        """
        ...

    def observe(self, segment: Segment, store: MemoryStore) -> None:
        """Segment ``segment`` is now in ``store``; update any state (e.g. embed its frames)."""
        ...


_REQUIRED = ("reset", "compose", "observe")


def builtin_policies() -> list[str]:
    """The names of the implemented policies in the catalog (and plugins)."""
    return [e.name for e in POLICIES.entries() if e.target is not None]


def _import_target(spec: str, target: str) -> Any:
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise UserInputError(f"memory policy {spec!r}: expected a built-in name or module:Class",
                             hint=f"built-ins: {', '.join(builtin_policies())}")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise UserInputError(f"memory policy {spec!r}: no module named '{module_name}'",
                                 hint="install the package or put its folder on PYTHONPATH") from None
        raise
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            public = sorted(n for n in dir(module) if not n.startswith("_"))
            raise UserInputError(
                f"memory policy {spec!r}: module '{module_name}' has no attribute '{attr}'",
                hint=f"it defines: {', '.join(public) or '(nothing public)'}")
        obj = getattr(obj, part)
    return obj


def load_policy(spec: str, options: Mapping[str, Any] | None = None, *,
                offered: Mapping[str, Any] | None = None) -> Policy:
    """Build the policy named ``spec`` with constructor keyword ``options``.

    Args:
        spec: a built-in name (:func:`builtin_policies`, the catalog's policies) or
            ``package.module:Class``
            (any callable returning an object with ``reset``, ``compose``, ``observe``).
        options: keyword arguments for the constructor (embedders, seed, ...).
        offered: keyword arguments passed only when the constructor names them (a
            benchmark offers its encoders; each policy takes those it uses).

    Raises:
        UnknownNameError: neither a built-in name nor ``module:Class``.
        UserInputError: the module or class cannot be found, the options do not fit
            the constructor, or the object lacks a protocol method.
    """
    options = dict(options or {})
    if ":" in spec:
        factory = _import_target(spec, spec)
    else:
        entry = POLICIES.get(spec)  # unknown: "did you mean", and the list
        if entry.target is None:
            raise UserInputError(f"memory policy {spec!r} is planned, not implemented yet",
                                 hint=f"built-ins: {', '.join(builtin_policies())}")
        factory = _import_target(spec, entry.target)
    if not callable(factory):
        raise UserInputError(f"memory policy {spec!r} is a {type(factory).__name__}, not a class",
                             hint="point at the policy class (module:Class)")
    if offered:
        try:
            params = inspect.signature(factory).parameters
        except (TypeError, ValueError):
            params = {}
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        options = {**{k: v for k, v in offered.items()
                      if v is not None and (takes_any or k in params)}, **options}
    try:
        inspect.signature(factory).bind(**options)
    except TypeError as exc:
        raise UserInputError(
            f"memory policy {spec!r}: options {sorted(options)} do not fit its constructor: {exc}",
            hint=f"it takes {_signature(factory)}") from None
    except ValueError:  # no signature to check (a builtin callable); let the call decide
        pass
    policy = factory(**options)
    missing = [m for m in _REQUIRED if not callable(getattr(policy, m, None))]
    if missing:
        raise UserInputError(
            f"memory policy {spec!r}: {type(policy).__name__} has no {', '.join(missing)} method",
            hint="implement reset(context), compose(instruction, segment_start, budget, store) "
                 "and observe(segment, store); see vidmem.memory.policy.Policy")
    if not isinstance(getattr(policy, "name", None), str):
        with contextlib.suppress(AttributeError):  # slots or frozen: the caller names it
            policy.name = spec
    return policy


def _signature(factory: Any) -> str:
    """The constructor's parameters without annotations, e.g. ``(*, seed=0, fps=1.0)``."""
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return "(unknown signature)"
    bare = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    return str(sig.replace(parameters=bare, return_annotation=inspect.Signature.empty))
