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

from vidmem.errors import VidmemError
from vidmem.registry import BENCHMARKS


class BenchmarkGroup(TyperGroup):
    """A group whose subcommands are the registered benchmarks that support its verb."""

    def list_commands(self, ctx: Any) -> list[str]:
        # what --help advertises: a benchmark that does not support the verb (Track-A
        # generates nothing, so it has no `requests`) is left out; the command itself
        # still answers with a message that says why
        from vidmem.cli.benchmark_commands import supports

        names = []
        for entry in BENCHMARKS.entries():
            if entry.status != "available":
                continue
            try:
                bench = entry.load()
            except VidmemError:  # a plugin whose extra is missing: listed, it says so when run
                names.append(entry.name)
                continue
            if supports(ctx.info_name, bench):
                names.append(entry.name)
        return names

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        from vidmem.cli.benchmark_commands import make_command

        entry = BENCHMARKS.get(cmd_name)  # unknown -> "did you mean"
        bench = entry.load()  # planned -> "not implemented yet"
        command = make_command(ctx.info_name, bench)
        # the command is made from a function named `command`: give it the benchmark's
        # name, and the registry's one line as what `vidmem VERB --help` lists
        command.name = cmd_name
        command.short_help = entry.summary
        return command

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        # click would report a missing command itself before asking get_command for
        # suggestions; route every name through get_command.
        name = args[0]
        return name, self.get_command(ctx, name), args[1:]
