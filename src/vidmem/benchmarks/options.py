"""Backend options from the command line, shared by every benchmark's scorer options."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vidmem.errors import UserInputError
from vidmem.registry import BACKENDS


def parse_backend_option(spec: str) -> tuple[str, str, Any]:
    """Split ``NAME:key=value``; the value is read as JSON when it is a number, bool or null.

    Example:
        >>> parse_backend_option("classic/sift:ratio=0.8")
        ('classic/sift', 'ratio', 0.8)
        >>> parse_backend_option("dinov2/base:weights=/models/dinov2-base")
        ('dinov2/base', 'weights', '/models/dinov2-base')
        >>> parse_backend_option("my_pkg.megaloc:MegaLoc:weights=/m/a:b")  # a module:Class plugin
        ('my_pkg.megaloc:MegaLoc', 'weights', '/m/a:b')
    """
    head, eq, text = spec.partition("=")
    name, sep, key = head.rpartition(":")  # the last ':' before '=': plugin names hold one
    if not sep or not eq or not key:
        raise UserInputError(f"--backend-opt {spec!r} is not NAME:key=value",
                             hint="e.g. --backend-opt dinov2/base:weights=/models/dinov2-base")
    try:
        value: Any = json.loads(text)
    except json.JSONDecodeError:
        value = text
    if not isinstance(value, (int, float, bool, type(None))):
        value = text  # only scalars are converted; paths and names stay strings
    return name, key, value


def backend_options_for(names: Sequence[str], backend_opt: Sequence[str] | None,
                        device: str | None, model_dir: Path | None) -> dict[str, dict[str, Any]]:
    """Per-backend options: ``--device`` and ``--model-dir`` for every model backend of the
    run, then each ``--backend-opt NAME:key=value`` (NAME must be one of ``names``).

    Example:
        >>> backend_options_for(["classic/sift"], ["classic/sift:ratio=0.8"], "cpu", None)
        {'classic/sift': {'device': 'cpu', 'ratio': 0.8}}
    """
    options: dict[str, dict[str, Any]] = {}
    for name in names:
        opts = options.setdefault(name, {})
        if device:
            opts["device"] = device
        if model_dir and BACKENDS.get(name).extra == "models":
            opts["model_dir"] = str(model_dir)
    for spec in backend_opt or []:
        name, key, value = parse_backend_option(spec)
        if name not in options:
            raise UserInputError(f"--backend-opt {spec!r}: '{name}' is not one of this run's backends",
                                 hint=f"this run uses {', '.join(options)}")
        options[name][key] = value
    return options
