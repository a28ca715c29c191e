"""`vidmem compare RUN_A RUN_B`: two conditions of one run, or of two runs, from their run logs.

Parsing and printing only: both runs must be of one benchmark, whose ``comparer`` does
the work and whose ``comparison_printer`` prints it (:class:`~vidmem.benchmarks.contract.Benchmark`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from vidmem.cli.common import JsonOpt, console, print_json
from vidmem.errors import UserInputError

__all__ = ["compare"]


def _comparable() -> list[str]:
    """The registered benchmarks that have a comparer (loaded only to say so in an error)."""
    from vidmem.errors import VidmemError
    from vidmem.registry import BENCHMARKS

    names = []
    for entry in BENCHMARKS.entries():
        try:
            if entry.status != "planned" and getattr(entry.load(), "comparer", None):
                names.append(entry.name)
        except VidmemError:
            continue
    return names


def compare(
    run_a: Annotated[Path, typer.Argument(help="A scored run directory (arm A).")],
    run_b: Annotated[Path, typer.Argument(help="A scored run directory (arm B); may be RUN_A.")],
    condition_a: Annotated[str | None, typer.Option(
        "--condition-a", help="Condition of RUN_A (with one run: required).")] = None,
    condition_b: Annotated[str | None, typer.Option(
        "--condition-b", help="Condition of RUN_B (default: --condition-a with two runs, the "
        "baseline 'none' with one run).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Compare condition A of RUN_A with condition B of RUN_B (A minus B) on the stories both
    scored, with the paired story bootstrap; refused when the runs' gold differs."""
    from vidmem.registry import BENCHMARKS
    from vidmem.runners.store import RunDir

    a = RunDir.open(run_a)
    b = RunDir.open(run_b)
    name_a, name_b = a.manifest.benchmark, b.manifest.benchmark
    if name_a != name_b:
        raise UserInputError(f"{run_a} is a {name_a} run and {run_b} a {name_b} run",
                             hint="compare two runs of one benchmark")
    bench = BENCHMARKS.load(name_a)
    if not getattr(bench, "comparer", None):
        raise UserInputError(f"{run_a}: {name_a} runs cannot be compared",
                             hint="vidmem compare handles runs of: "
                             + (", ".join(_comparable()) or "no benchmark yet"))
    result = bench.compare(a, b, condition_a=condition_a, condition_b=condition_b)
    if as_json:
        print_json(result)
    else:
        bench.print_comparison(console, result)
