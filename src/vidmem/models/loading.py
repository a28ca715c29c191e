"""Build a backend from its registry name and user options, with errors a user can act on.

Rules: a name with ``:`` that is not registered is a ``package.module:Class`` plugin,
imported from the user's environment and checked for its role's method (how MegaLoc
plugs in as a place embedder). Any image embedder also plays ``place_embedder``
(whole frames, see :mod:`vidmem.models.backends.place_embedder`).
"""

from __future__ import annotations

import importlib
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
    "flow": "__call__",
    "face_embedder": "embed_faces",
    "place_embedder": "embed_images",
}
#: roles a backend may play besides those the catalog lists for it.
ALSO_PLAYS = {"image_embedder": ("place_embedder",)}


def _roles(meta_role: object) -> list[str]:
    roles = [r for r in str(meta_role or "").split(",") if r]
    return roles + [extra for r in roles for extra in ALSO_PLAYS.get(r, ())]


def _plugin(spec: str, options: Mapping[str, Any], role: str | None) -> Any:
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UserInputError(f"backend plugin {spec!r}: cannot import module '{module_name}': {exc}",
                             hint="install the package or put its folder on PYTHONPATH") from None
    if not attr or not hasattr(module, attr):
        raise UserInputError(f"backend plugin {spec!r}: module '{module_name}' has no '{attr}'",
                             hint="give the backend as package.module:Class")
    try:
        obj = getattr(module, attr)(**dict(options))
    except TypeError as exc:
        raise UserInputError(f"backend plugin {spec!r}: options {sorted(options)} do not fit: {exc}") from None
    method = ROLE_METHODS.get(role or "")
    if method and not callable(getattr(obj, method, None)):
        raise UserInputError(f"backend plugin {spec!r} has no {method}() method, so it cannot be a {role}",
                             hint="see vidmem.models.protocols for the role's methods")
    return obj


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
    if ":" in name and name not in BACKENDS:
        return _plugin(name, options or {}, role)
    entry = BACKENDS.get(name)
    if role is not None:
        roles = _roles(entry.meta.get("role"))
        if role not in roles:
            fitting = [e.name for e in BACKENDS.entries() if role in _roles(e.meta.get("role"))]
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
