"""Options and output helpers shared by the CLI modules."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer
from rich.console import Console

console = Console()
err_console = Console(stderr=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON only.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars or tables.")]


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def parse_backend_option(spec: str) -> tuple[str, str, Any]:
    """Split ``NAME:key=value``; the value is read as JSON when it is a number, bool or null.

    Example:
        >>> parse_backend_option("classic/sift:ratio=0.8")
        ('classic/sift', 'ratio', 0.8)
        >>> parse_backend_option("dinov2/base:weights=/models/dinov2-base")
        ('dinov2/base', 'weights', '/models/dinov2-base')
    """
    from vidmem.errors import UserInputError

    name, sep, kv = spec.partition(":")
    key, eq, text = kv.partition("=")
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
