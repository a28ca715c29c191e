"""Command groups whose subcommands are benchmark names.

`vidmem run cmbench ...`, `vidmem score memory_loop ...`: the group looks the name up in
the benchmark registry and builds the command from the benchmark's contract
(:mod:`vidmem.cli.benchmark_commands`), so every registered benchmark -- built in,
plugin or registered by a test -- has the same commands, and an unknown or planned name
gets the same "did you mean" or "not implemented yet" message as everywhere else.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperGroup

from vidmem.registry import BENCHMARKS


class BenchmarkGroup(TyperGroup):
    def list_commands(self, ctx: Any) -> list[str]:
        return [e.name for e in BENCHMARKS.entries() if e.status == "available"]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        from vidmem.cli.benchmark_commands import make_command

        bench = BENCHMARKS.load(cmd_name)  # unknown -> "did you mean"; planned -> not yet
        return make_command(ctx.info_name, bench)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        # click would report a missing command itself before asking get_command for
        # suggestions; route every name through get_command.
        name = args[0]
        return name, self.get_command(ctx, name), args[1:]
