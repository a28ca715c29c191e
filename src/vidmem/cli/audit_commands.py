"""`vidmem audit <benchmark> --root DIR [--json]`: a benchmark's prompt-channel audit.

Parsing and printing only. A benchmark offers the verb by having an ``audit(root)``
method (returning a report with ``ok`` and ``to_dict()``) and a ``print_audit(console,
report)`` method; the group lists exactly those. The exit code is 1 when the report is
not ``ok`` (a prompt that must not state the answer does).
"""

# no "from __future__ import annotations": typer reads the options from annotations that
# name this benchmark, so they must be evaluated where the command is made
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from vidmem.cli.common import console, print_json
from vidmem.errors import UserInputError
from vidmem.registry import BENCHMARKS

__all__ = ["AuditGroup", "audit_app"]


def _audits(bench: Any) -> bool:
    return callable(getattr(bench, "audit", None)) and callable(getattr(bench, "print_audit",
                                                                        None))


def _command(bench: Any) -> Any:
    def audit(
        root: Annotated[Path, typer.Option("--root", help=bench.root_help)],
        as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON only.")] = False,
    ) -> None:
        report = bench.audit(root)
        if as_json:
            print_json(report.to_dict())
        else:
            bench.print_audit(console, report)
        if not report.ok:
            raise typer.Exit(1)

    audit.__doc__ = (f"List, per {bench.title} arm and shot, which prompts state the hidden "
                     "answer (exit 1 when one that must not does).")
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command()(audit)
    return typer.main.get_command(app)


class AuditGroup(TyperGroup):
    """Subcommands are the benchmarks that have a prompt audit."""

    def list_commands(self, ctx: Any) -> list[str]:
        return [e.name for e in BENCHMARKS.entries()
                if e.status == "available" and _audits(e.load())]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        bench = BENCHMARKS.load(cmd_name)  # unknown -> "did you mean"; planned -> not yet
        if not _audits(bench):
            raise UserInputError(f"benchmark {cmd_name} has no prompt-channel audit",
                                 hint="benchmarks with one: " + ", ".join(self.list_commands(ctx)))
        return _command(bench)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name = args[0]
        return name, self.get_command(ctx, name), args[1:]


audit_app = typer.Typer(cls=AuditGroup, no_args_is_help=True,
                        help="Check a benchmark's prompts for the hidden answer (exit 1 on a leak).")
