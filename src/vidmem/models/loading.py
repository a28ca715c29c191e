"""Build a backend from its registry name and user options, with errors a user can act on."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from vidmem.errors import UserInputError
from vidmem.registry import BACKENDS

ROLE_METHODS = {
    "image_embedder": "embed_images",
    "text_embedder": "embed_texts",
    "detector": "detect",
    "segmenter": "segment",
    "judge": "judge",
    "rewriter": "rewrite",
}


def load_backend(name: str, options: Mapping[str, Any] | None = None, *, role: str | None = None) -> Any:
    """Instantiate backend ``name`` with ``options`` (weights, device, dtype, ...).

    Args:
        name: registry name, ``family/variant``.
        options: constructor keyword arguments.
        role: when given, the backend must play this role (e.g. ``"detector"``).

    Raises:
        UnknownNameError: ``name`` is not registered (with "did you mean").
        UserInputError: the backend does not play ``role``, or an option is unknown.
        MissingDependencyError: the backend's extra or weights are not installed.
    """
    entry = BACKENDS.get(name)
    if role is not None:
        roles = str(entry.meta.get("role", "")).split(",")
        if role not in roles:
            fitting = [e.name for e in BACKENDS.entries() if role in str(e.meta.get("role", "")).split(",")]
            raise UserInputError(
                f"backend '{name}' plays the role '{entry.meta.get('role')}', not '{role}'",
                hint=f"choose one of: {', '.join(fitting)}",
            )
    cls = entry.load()
    options = dict(options or {})
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        params = {}
    if params and not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        unknown = sorted(set(options) - set(params))
        if unknown:
            known = sorted(k for k, p in params.items() if p.kind is not inspect.Parameter.VAR_POSITIONAL)
            raise UserInputError(
                f"backend '{name}': unknown option(s) {unknown}",
                hint=f"options it takes: {', '.join(known)}",
            )
    return cls(**options)
