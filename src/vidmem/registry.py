"""Name -> object registries for benchmarks, backends, generators and policies.

Each registered object is declared exactly once, as a ``"module:attribute"`` string,
so listing names never imports torch or any other heavy dependency; the module is
imported only when the object is asked for. Built-in names are declared in
:mod:`vidmem.catalog`; third-party packages add theirs through the entry-point
groups ``vidmem.benchmarks``, ``vidmem.backends``, ``vidmem.generators`` and
``vidmem.policies`` (the entry point's value is the same ``"module:attribute"``).
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Literal

from vidmem.errors import MissingDependencyError, NotImplementedYetError, UnknownNameError

Kind = Literal["benchmark", "backend", "generator", "policy"]
Status = Literal["available", "planned"]


@dataclass(frozen=True)
class Entry:
    """One registered name.

    Attributes:
        kind: which registry the name belongs to.
        name: the one spelling used everywhere (file, CLI, run log).
        target: ``"package.module:attribute"``; ``None`` while the entry is planned.
        summary: one line shown by ``vidmem list``.
        status: ``"available"`` or ``"planned"`` (declared, not implemented yet).
        extra: the pip extra the target needs (``"models"``), or ``None`` for core.
        meta: free-form facts shown by ``vidmem list --json`` (role, checkpoints...).
    """

    kind: Kind
    name: str
    target: str | None
    summary: str
    status: Status = "available"
    extra: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def load(self) -> Any:
        """Import and return the registered object."""
        if self.target is None or self.status == "planned":
            raise NotImplementedYetError(
                f"{self.kind} '{self.name}' is declared but not implemented in this version "
                "of vidmem.",
                hint="run `vidmem list` to see what is available now",
            )
        module_name, _, attr = self.target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            missing = exc.name or "a dependency"
            if self.extra and not module_name.startswith(str(missing)):
                raise MissingDependencyError(
                    f"{self.kind} '{self.name}' needs the Python package '{missing}', "
                    "which is not installed.",
                    hint=f"pip install 'vidmem[{self.extra}]' (install torch==2.13.0 "
                    "first if you have no torch yet)",
                ) from exc
            raise
        obj: Any = module
        for part in attr.split(".") if attr else []:
            obj = getattr(obj, part)
        return obj


class Registry:
    """Names of one kind, with lazy loading and "did you mean" on unknown names."""

    def __init__(self, kind: Kind) -> None:
        self.kind: Kind = kind
        self._entries: dict[str, Entry] = {}
        self._plugins_loaded = False

    def add(
        self,
        name: str,
        target: str | None,
        summary: str,
        *,
        status: Status = "available",
        extra: str | None = None,
        **meta: Any,
    ) -> Entry:
        """Declare ``name``. Declaring the same name twice is a programming error."""
        if name in self._entries:
            raise ValueError(f"{self.kind} '{name}' is registered twice")
        entry = Entry(self.kind, name, target, summary, status, extra, dict(meta))
        self._entries[name] = entry
        return entry

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        for ep in entry_points(group=f"vidmem.{self.kind}s"):
            if ep.name not in self._entries:
                self.add(ep.name, ep.value, f"plugin from {ep.dist.name if ep.dist else '?'}")

    def entries(self) -> list[Entry]:
        self._load_plugins()
        return [self._entries[n] for n in sorted(self._entries)]

    def names(self) -> list[str]:
        return [e.name for e in self.entries()]

    def __contains__(self, name: object) -> bool:
        self._load_plugins()
        return name in self._entries

    def get(self, name: str) -> Entry:
        """Return the entry for ``name`` or raise :class:`UnknownNameError`."""
        self._load_plugins()
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownNameError(unknown_name_message(self.kind, name, self.names())) from None

    def load(self, name: str) -> Any:
        return self.get(name).load()


def unknown_name_message(kind: str, name: str, known: list[str]) -> str:
    """Build the one message used for every unknown name.

    Example:
        >>> unknown_name_message("benchmark", "cmbnch", ["cmbench", "mist"])
        "unknown benchmark 'cmbnch'; did you mean 'cmbench'? known: cmbench, mist"
    """
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    # Also catch family-only or variant-only spellings such as "dinov2" for "dinov2/small".
    close += [k for k in known if name and (k.startswith(name + "/") or k.endswith("/" + name))]
    close = list(dict.fromkeys(close))[:3]
    guess = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    listing = ", ".join(known) if known else "(none registered)"
    return f"unknown {kind} '{name}'{guess} known: {listing}"


BENCHMARKS = Registry("benchmark")
BACKENDS = Registry("backend")
GENERATORS = Registry("generator")
POLICIES = Registry("policy")
REGISTRIES: dict[str, Registry] = {
    "benchmarks": BENCHMARKS,
    "backends": BACKENDS,
    "generators": GENERATORS,
    "policies": POLICIES,
}


def _populate() -> None:
    from vidmem import catalog

    catalog.declare(BENCHMARKS, BACKENDS, GENERATORS, POLICIES)


_populate()
