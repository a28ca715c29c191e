"""`vidmem judge-agreement RUN --second-judge NAME`: check a run's judge with another one.

Parsing and printing only; the replay, the second judge and the statistics are in
:mod:`vidmem.runners.judge_agreement`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from vidmem.cli.common import JsonOpt, console, print_json
from vidmem.errors import UserInputError, VidmemError

__all__ = ["judge_agreement"]


def _options(name: str, pairs: Sequence[str] | None) -> dict[str, Any]:
    """``--second-judge-opt key=value`` pairs; numbers, bools and null are typed."""
    from vidmem.benchmarks.options import parse_backend_option

    options: dict[str, Any] = {}
    for pair in pairs or []:
        if "=" not in pair or not pair.partition("=")[0].strip():
            raise UserInputError(f"--second-judge-opt {pair!r} is not key=value",
                                 hint="e.g. --second-judge-opt base_url=http://127.0.0.1:8001/v1")
        _, key, value = parse_backend_option(f"{name}:{pair.strip()}")
        options[key.strip()] = value
    return options


def _value(value: float | None, ci: Sequence[float] | None = None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" + ("" if ci is None else f" [{ci[0]:.3f}, {ci[1]:.3f}]")


def _say(text: str) -> None:
    console.print(text, highlight=False, soft_wrap=True)


def _model(info: Mapping[str, Any]) -> str:
    return f"{info['name']} ({info['settings'].get('model') or info.get('weights') or '-'})"


def _print(record: Mapping[str, Any], path: Path) -> None:
    _say(f"first judge: {', '.join(_model(j) for j in record['first_judges'])}; "
         f"second judge: {_model(record['second_judge'])}")
    short = "" if record["sample_reached"] else " (all the run has)"
    _say(f"sample: {record['questions']} questions{short} from {record['n_items']} of "
         f"{record['items_in_run']} items, seed {record['seed']}: a cluster sample (every "
         "question of a sampled item is kept; intervals resample items)")
    _say(f"compared: {record['pairs']} questions both judges answered usably; not usable: "
         f"first judge {record['first_not_ok']}, second judge {record['second_not_ok']}")
    level = f"{100 * record['confidence']:g}% CI"
    fields = record["fields"]
    continuous = any(f["kind"] == "continuous" for f in fields)
    table = Table(title="agreement per answer field", title_justify="left")
    table.add_column("field", no_wrap=True)
    for column in ("n", "items", f"agreement [{level}]", f"kappa [{level}]"):
        table.add_column(column)
    if continuous:
        table.add_column("mean |diff|, pearson r")
    for f in fields:
        cells = [f["field"], str(f["n"]), str(f["n_clusters"]),
                 _value(f["agreement"], f["agreement_ci"]), _value(f["kappa"], f["kappa_ci"])]
        if continuous:
            cells.append(f"{_value(f['mean_abs_diff'])}, {_value(f['pearson_r'])}")
        table.add_row(*cells)
    console.print(table)
    for f in fields:
        if f["note"]:
            _say(f"  {f['field']}: {f['note']}")
    first, again = record["first_judge_answers"], record["second_judge_answers"]
    _say(f"judge calls: first {first['asked']} asked, {first['from_cache']} from the cache; "
         f"second {again['asked']} asked, {again['from_cache']} from the cache")
    _say(f"written: {path}")


def judge_agreement(
    run_dir: Annotated[Path, typer.Argument(help="A run directory of a benchmark that asks a judge.")],
    second_judge: Annotated[str, typer.Option(
        "--second-judge", help="The second judge's backend name, e.g. judge/openai.")],
    second_judge_opt: Annotated[list[str] | None, typer.Option(
        "--second-judge-opt", help="key=value for the second judge (repeatable), "
        "e.g. base_url=http://127.0.0.1:8001/v1.")] = None,
    sample: Annotated[int, typer.Option(
        "--sample", min=1, help="Questions to compare; whole items are added until at least "
        "this many (a cluster sample).")] = 200,
    seed: Annotated[int, typer.Option("--seed", help="Orders the items and seeds the bootstrap.")] = 0,
    judge_cache: Annotated[str | None, typer.Option(
        "--judge-cache", envvar="VIDMEM_JUDGE_CACHE",
        help="SQLite answer cache of both judges (the first judge's answers come from it). "
        "'off' asks every question again. Default: judge-answers.sqlite in the user cache "
        "folder.")] = None,
    confidence: Annotated[float, typer.Option(
        "--confidence", min=0.0, max=1.0, help="Interval level.")] = 0.95,
    n_resamples: Annotated[int, typer.Option(
        "--n-resamples", min=1, help="Bootstrap draws.")] = 2000,
    as_json: JsonOpt = False,
) -> None:
    """Re-ask a seeded sample of a run's judge questions to a second judge; report per-field
    agreement and Cohen's kappa with bootstrap intervals (exit 1 on any error)."""
    from vidmem.cli.benchmark_commands import judge_cache_path
    from vidmem.runners.judge_agreement import judge_agreement as check

    try:
        if not 0.0 < confidence < 1.0:
            raise UserInputError(f"--confidence must be in (0, 1), found {confidence}",
                                 hint="e.g. --confidence 0.95")
        record, path = check(run_dir, second_judge, _options(second_judge, second_judge_opt),
                             sample=sample, seed=seed, judge_cache=judge_cache_path(judge_cache),
                             confidence=confidence, n_resamples=n_resamples)
    except VidmemError as exc:
        exc.exit_code = 1  # this command's contract: 0 when it ran, 1 on any error
        raise
    if as_json:
        print_json({**record, "written": str(path)})
    else:
        _print(record, path)
