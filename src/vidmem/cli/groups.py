"""Command groups whose subcommands are benchmark names.

`vidmem run cmbench ...`, `vidmem score cmbench ...`: each benchmark contributes its own
subcommand with its own options and help. A name that is not a subcommand is looked up
in the benchmark registry, so the user gets the same "did you mean" or "not implemented
yet" message as everywhere else instead of click's generic one.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperGroup

from vidmem.errors import UserInputError
from vidmem.registry import BENCHMARKS


class BenchmarkGroup(TyperGroup):
    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        cmd = super().get_command(ctx, cmd_name)
        if cmd is not None:
            return cmd
        entry = BENCHMARKS.get(cmd_name)  # unknown name -> UnknownNameError with suggestions
        entry.load()  # planned -> NotImplementedYetError
        have = ", ".join(self.list_commands(ctx)) or "none"
        raise UserInputError(
            f"benchmark '{cmd_name}' has no `vidmem {ctx.info_name}` command",
            hint=f"benchmarks with `vidmem {ctx.info_name}`: {have}",
        )

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        # click would report a missing command itself before asking get_command for
        # suggestions; route every name through get_command.
        name = args[0]
        cmd = self.get_command(ctx, name)
        return name, cmd, args[1:]
