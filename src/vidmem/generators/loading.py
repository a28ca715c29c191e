"""Turn a generator name from the CLI or a config into a Generator object.

``NAME`` is a registered generator (``sim``, ``command``); ``package.module:Class`` is
a plugin class imported from the user's environment. Options (``key=value`` pairs from
``--generator-opt``) become constructor keyword arguments.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from vidmem.errors import UserInputError
from vidmem.generators.protocol import Generator
from vidmem.registry import GENERATORS


def parse_options(pairs: list[str] | None) -> dict[str, str]:
    """Parse ``["key=value", ...]``; the value may itself contain ``=``.

    Example:
        >>> parse_options(["memory=decay:20", "template=python g.py --x=1"])
        {'memory': 'decay:20', 'template': 'python g.py --x=1'}
    """
    options: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserInputError(f"generator option {pair!r} is not key=value",
                                 hint="e.g. --generator-opt memory=perfect")
        options[key.strip()] = value
    return options


def _plugin(spec: str) -> Any:
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UserInputError(f"generator plugin {spec!r}: cannot import module '{module_name}': {exc}",
                             hint="install the package or put it on PYTHONPATH") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise UserInputError(f"generator plugin {spec!r}: module '{module_name}' has no '{attr}'") from None


def load_generator(spec: str, options: Mapping[str, Any] | None = None) -> Generator:
    """Instantiate the generator named ``spec`` with ``options``."""
    options = dict(options or {})
    cls = _plugin(spec) if ":" in spec and spec not in GENERATORS else GENERATORS.load(spec)
    try:
        gen = cls(**options)
    except TypeError as exc:
        raise UserInputError(f"generator {spec!r}: bad options {sorted(options)}: {exc}") from None
    if not callable(getattr(gen, "generate", None)):
        raise UserInputError(f"generator {spec!r} has no generate(request) method",
                             hint="see vidmem.generators.protocol.Generator")
    if not hasattr(gen, "name"):
        gen.name = spec
    if not callable(getattr(gen, "info", None)):
        raise UserInputError(f"generator {spec!r} has no info() method",
                             hint="see vidmem.generators.protocol.Generator")
    return gen
