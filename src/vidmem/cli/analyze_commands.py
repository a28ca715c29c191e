"""`vidmem analyze BENCHMARK RUN`: the post-scoring analyses a benchmark declares.

Parsing and printing only; :mod:`vidmem.runners.analysis_run` runs the analyses (each a
module the benchmark names in ``Benchmark.analyses``) and writes ``RUN/analyses/``.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from vidmem.cli.common import console, print_json
from vidmem.errors import UserInputError

__all__ = ["analyze_command"]


def analyze_command(bench: Any) -> Any:
    """The click command of ``vidmem analyze <bench.name>``."""
    from vidmem.cli.benchmark_commands import _command, _param, judge_cache_path

    declared = list(getattr(bench, "analyses", {}) or {})

    def analyze(run: Path, only: str | None, opt: list[str] | None,
                backend_opt: list[str] | None, generator: str | None,
                generator_opt: list[str] | None, judge_cache: str | None, workers: int,
                quiet: bool, as_json: bool) -> None:
        from vidmem.benchmarks.options import parse_backend_option
        from vidmem.generators.loading import parse_options
        from vidmem.runners.analysis_run import AnalysisOptions, default_analyses, run_analyses
        from vidmem.runners.reporting import render_run_report
        from vidmem.runners.store import RunDir

        if not declared:
            raise UserInputError(f"benchmark {bench.name} declares no analyses",
                                 hint="see Benchmark.analyses in its folder")
        names = (default_analyses(bench) if not only
                 else [n.strip() for n in only.split(",") if n.strip()])
        backend_options: dict[str, dict[str, Any]] = {}
        for spec in backend_opt or []:
            name, key, value = parse_backend_option(spec)
            backend_options.setdefault(name, {})[key] = value
        cache = judge_cache_path(judge_cache)
        options = AnalysisOptions(
            opts=parse_options(opt), backend_options=backend_options, generator=generator,
            generator_options=parse_options(generator_opt),
            judge_cache=None if cache is None else str(cache.resolve()), workers=workers,
            quiet=quiet or as_json)
        opened = RunDir.open(run)
        results = run_analyses(bench, opened, names, options)
        paths = render_run_report(opened.path)
        if as_json:
            print_json({n: r["result"] for n, r in results.items()})
            return
        for name, record in results.items():
            _print_headline(bench, name, record["result"])
            console.print(f"{name}: {opened.path / 'analyses' / (name + '.json')}",
                          highlight=False)
        console.print(f"report: {paths['html']}", highlight=False)

    params = [
        inspect.Parameter("run", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                          annotation=_run_argument(), default=inspect.Parameter.empty),
        _param("only", str | None, None, "--only",
               help="Comma-separated analyses to run (default: every one that generates "
               "nothing; declared: " + (", ".join(declared) or "none") + ")."),
        _param("opt", list[str] | None, None, "--opt", help="key=value for the analyses."),
        _param("backend_opt", list[str] | None, None, "--backend-opt",
               help="NAME:key=value for a backend an analysis loads."),
        _param("generator", str | None, None, "--generator",
               help="Generator for an analysis that generates (sim, command, module:Class)."),
        _param("generator_opt", list[str] | None, None, "--generator-opt",
               help="key=value for the generator."),
        _param("judge_cache", str | None, None, "--judge-cache", envvar="VIDMEM_JUDGE_CACHE",
               help="Judge answer cache file, or 'off'."),
        _param("workers", int, 1, "--workers", help="Worker processes.", min=1),
        _param("quiet", bool, False, "--quiet", help="No progress bars."),
        _param("as_json", bool, False, "--json", help="Print machine-readable JSON only."),
    ]
    return _command(analyze, params,
                    f"Run {bench.title}'s post-scoring analyses on a scored run; write "
                    "RUN/analyses/<name>.json and render the report again.")


def _print_headline(bench: Any, name: str, result: Any) -> None:
    """Print an analysis's headline numbers as a table, when its module offers
    ``headline(result) -> {"title", "columns", "rows", "note"}`` (the numbers, not only
    the file they are in)."""
    from rich.table import Table

    from vidmem.runners.analysis_run import analysis_module

    make = getattr(analysis_module(bench, name), "headline", None)
    if make is None:
        return
    head = make(result)
    table = Table(title=head["title"], caption=head.get("note"), title_justify="left",
                  caption_justify="left")
    for i, col in enumerate(head["columns"]):
        # the first column holds ids: never wrapped into each other
        table.add_column(col, no_wrap=i == 0, justify="left" if i == 0 else "right")
    for row in head["rows"]:
        table.add_row(*row)
    console.print(table)


def _run_argument() -> Any:
    from typing import Annotated

    import typer

    return Annotated[Path, typer.Argument(help="A scored run directory.")]
