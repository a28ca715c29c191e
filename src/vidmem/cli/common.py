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
