"""The `vidmem` command line: parse, look names up, call a runner, print.

No scoring logic lives here. Errors that come from input (`VidmemError`) are printed as
one message and exit non-zero; a traceback is shown only with ``--debug``.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from vidmem import __version__
from vidmem.cli.agent_commands import agent_app
from vidmem.cli.audit_commands import audit_app
from vidmem.cli.calibrate_commands import calibrate
from vidmem.cli.common import JsonOpt, QuietOpt, console, err_console, print_json
from vidmem.cli.compare_commands import compare
from vidmem.cli.groups import BenchmarkGroup
from vidmem.cli.judge_commands import judge_agreement
from vidmem.errors import UserInputError, VidmemError
from vidmem.registry import REGISTRIES, unknown_name_message

app = typer.Typer(
    name="vidmem",
    help="Measure memory in long-video generators and video world models.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
models_app = typer.Typer(help="List and fetch model weights.", no_args_is_help=True)
app.add_typer(models_app, name="models")
app.add_typer(agent_app, name="agent")

out = console
err = err_console


class _State:
    debug = False


STATE = _State()

_print_json = print_json


def _version_callback(value: bool) -> None:
    if value:
        out.print(f"vidmem {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version_callback, is_eager=True, help="Show the version.")
    ] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show full tracebacks on errors.")] = False,
) -> None:
    STATE.debug = debug


# ----------------------------------------------------------------------------- list


@app.command("list")
def list_names(
    kind: Annotated[str | None, typer.Argument(help="benchmarks, backends, generators or policies")] = None,
    as_json: JsonOpt = False,
) -> None:
    """List registered benchmarks, backends, generators and memory policies."""
    if kind is not None and kind not in REGISTRIES:
        raise UserInputError(unknown_name_message("kind", kind, list(REGISTRIES)))
    kinds = [kind] if kind else list(REGISTRIES)
    from vidmem.models.extras import availability

    data = {
        k: [
            # "needs the models extra" rather than "available" when torch (or the extra's
            # other packages) is not installed
            {"name": e.name, "status": availability(e.status, e.extra), "summary": e.summary,
             "extra": e.extra, **e.meta}
            for e in REGISTRIES[k].entries()
        ]
        for k in kinds
    }
    if as_json:
        _print_json(data)
        return
    for k in kinds:
        table = Table(title=k, title_justify="left", show_lines=False)
        for col in ("name", "status", "role" if k == "backends" else None, "needs", "summary"):
            if col:
                table.add_column(col, no_wrap=col == "name", overflow="fold")
        for row in data[k]:
            cells = [row["name"], row["status"]]
            if k == "backends":
                cells.append(str(row.get("role", "")))
            cells += [row["extra"] or "core", row["summary"]]
            table.add_row(*cells)
        if not data[k]:
            table.add_row("(none yet)", *[""] * (len(table.columns) - 1))
        out.print(table)


# --------------------------------------------------------------------------- doctor


@app.command()
def doctor(
    model_dir: Annotated[
        Path | None, typer.Option("--model-dir", envvar="VIDMEM_MODEL_DIR", help="Where local weights live.")
    ] = None,
    judge_url: Annotated[
        str | None, typer.Option("--judge-url", envvar="VIDMEM_JUDGE_URL", help="OpenAI-compatible judge server.")
    ] = None,
    judge_model: Annotated[
        str | None, typer.Option("--judge-model", envvar="VIDMEM_JUDGE_MODEL", help="Model the judge server should serve.")
    ] = None,
    executor: Annotated[str, typer.Option("--executor", help="ray: also report the Ray cluster and what loads on each node.")] = "local",
    ray_address: Annotated[str | None, typer.Option("--ray-address", help="Ray cluster to join (default: RAY_ADDRESS, else a local instance).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Check what is installed, which backends load, which weights are found."""
    from vidmem.runners.doctor import diagnose

    report = diagnose(model_dir=str(model_dir) if model_dir else None, judge_url=judge_url, judge_model=judge_model,
                      executor=executor, ray_address=ray_address)
    if as_json:
        _print_json(report)
        return
    out.print(f"python {report['python']} on {report['platform']}")
    pk = Table(title="packages", title_justify="left")
    pk.add_column("package")
    pk.add_column("version")
    pk.add_column("needed for")
    for name, ver in report["core_packages"].items():
        pk.add_row(name, ver or "[red]missing[/red]", "core")
    for name, ver in report["model_packages"].items():
        pk.add_row(name, ver or "[yellow]not installed[/yellow]", "extra 'models'")
    out.print(pk)
    out.print(f"H.264 encoder (libx264): {'yes' if report['h264_encoder'] else '[red]no[/red]'}")
    bt = Table(title="backends", title_justify="left")
    for col in ("name", "role", "status", "weights"):
        bt.add_column(col)
    for row in report["backends"]:
        status = row["status"]
        if status != "available":
            status = f"[yellow]{escape(status)}[/yellow]"
            if row.get("problem"):
                status += f" ({escape(row['problem'])})"
        bt.add_row(row["name"], str(row.get("role") or ""), status, escape(str(row["weights"])))
    out.print(bt)
    judge = report["judge"]
    out.print(f"judge endpoint: {judge['url'] or '-'}: {judge['detail']}")
    if judge.get("answers"):
        out.print(f"judge answer schema: {judge['json_schema_detail']}")
    if "ray" in report:
        from vidmem.cli.ray_doctor import print_cluster

        print_cluster(out, report["ray"])


# ----------------------------------------------------------------------------- demo


@app.command()
def demo(
    out_dir: Annotated[Path, typer.Option("--out", help="Run directory to write.")] = Path("vidmem-demo"),
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing run directory.")] = False,
    quiet: QuietOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Run the built-in offline demo: real work on a clip made here, with a report."""
    from vidmem.runners.demo import run_demo

    result = run_demo(out_dir, overwrite=overwrite, quiet=quiet or as_json, console=out, argv=sys.argv)
    if as_json:
        _print_json(result)
    if not result["all_checks_passed"]:  # a failed check is a failure, as in every command
        raise typer.Exit(1)


# ------------------------------------------------------------------- run / score / report


run_app = typer.Typer(cls=BenchmarkGroup, no_args_is_help=True,
                      help="Generate with a generator adapter, then score (closed loop).")
score_app = typer.Typer(cls=BenchmarkGroup, no_args_is_help=True,
                        help="Score videos generated elsewhere (bring your own videos).")
requests_app = typer.Typer(cls=BenchmarkGroup, no_args_is_help=True,
                           help="Write the generation requests of a benchmark as a manifest.")
validate_app = typer.Typer(cls=BenchmarkGroup, no_args_is_help=True,
                           help="Check a dataset in a benchmark's official layout; list every problem.")
stats_app = typer.Typer(cls=BenchmarkGroup, no_args_is_help=True,
                        help="Corpus statistics of a dataset from its files alone (no videos).")
app.add_typer(run_app, name="run")
app.add_typer(score_app, name="score")
app.add_typer(requests_app, name="requests")
app.add_typer(validate_app, name="validate")
app.add_typer(stats_app, name="stats")
analyze_app = typer.Typer(cls=BenchmarkGroup, no_args_is_help=True,
                          help="Post-scoring analyses of a scored run (identity, attribution ...).")
app.add_typer(analyze_app, name="analyze")


@app.command()
def report(
    run_dir: Annotated[Path, typer.Argument(help="A run directory written by vidmem.")],
    as_json: JsonOpt = False,
) -> None:
    """Render a run directory's Markdown and HTML report from its run log."""
    from vidmem.runners.reporting import render_run_report

    paths = render_run_report(run_dir)
    if as_json:
        _print_json({k: str(v) for k, v in paths.items()})
        return
    for kind, path in paths.items():
        out.print(f"{kind}: {path}")


app.command("judge-agreement")(judge_agreement)
app.add_typer(audit_app, name="audit")
app.command("compare")(compare)
app.command("calibrate")(calibrate)


# ------------------------------------------------------------------------------- sim

sim_app = typer.Typer(help="The offline reference world: build benchmark data with known truth.",
                      no_args_is_help=True)
app.add_typer(sim_app, name="sim")


@sim_app.command("build")
def sim_build(
    benchmark: Annotated[str, typer.Argument(help="A benchmark name (vidmem list benchmarks).")],
    out_dir: Annotated[Path, typer.Option("--out", help="Dataset root to write (official layout).")],
    seed: Annotated[int, typer.Option("--seed", help="Every byte is a function of (seed, n-cases).")] = 0,
    n_cases: Annotated[int | None, typer.Option("--n-cases", min=1, help="Context videos / start images.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Write a benchmark dataset from the sim world in the benchmark's own format."""
    from vidmem.runners.sim_build import build

    summary = build(benchmark, out_dir, seed=seed, n_cases=n_cases).to_dict()
    if as_json:
        _print_json(summary)
    else:
        out.print(", ".join(f"{k}: {v}" for k, v in summary.items()))


# ---------------------------------------------------------------------------- models


@models_app.command("list")
def models_list(as_json: JsonOpt = False) -> None:
    """Show each model backend with the checkpoint the protocols name, size and VRAM."""
    from vidmem.registry import BACKENDS

    rows = [
        {
            "name": e.name,
            "role": e.meta.get("role"),
            "checkpoint": e.meta.get("checkpoint"),
            "params": e.meta.get("params"),
            "vram": e.meta.get("vram"),
            "official": e.meta.get("official", False),
            "extra": e.extra or "core",
        }
        for e in BACKENDS.entries()
    ]
    if as_json:
        _print_json(rows)
        return
    table = Table(title="model backends", title_justify="left")
    for col in ("name", "role", "checkpoint", "params", "vram", "official", "extra"):
        table.add_column(col, no_wrap=col == "name", overflow="fold")
    for r in rows:
        table.add_row(*[str(r[c]) if r[c] not in (None, "") else "-" for c in
                        ("name", "role", "checkpoint", "params", "vram", "official", "extra")])
    out.print(table)


@models_app.command("needed")
def models_needed(
    benchmark: Annotated[str, typer.Argument(help="A benchmark name (vidmem list benchmarks).")],
    preset: Annotated[str, typer.Option("--preset", help="The benchmark's preset.")] = "official",
    as_json: JsonOpt = False,
) -> None:
    """What a benchmark's preset loads: each backend, its weights, sizes and pip extra."""
    from vidmem.cli.preset_needs import needed
    from vidmem.models.extras import install_line, missing_modules

    rows = needed(benchmark, preset)
    if as_json:
        _print_json([r.to_dict() for r in rows])
        return
    table = Table(title=f"{benchmark} --preset {preset}", title_justify="left")
    for col in ("used for", "backend", "checkpoint", "params", "vram", "extra"):
        table.add_column(col, overflow="fold", no_wrap=col == "backend")
    for r in rows:
        used = r.used_for + (" (optional)" if r.optional else "")
        table.add_row(*[escape(str(v)) if v not in (None, "") else "-" for v in
                        (used, r.backend, r.checkpoint, r.params, r.vram, r.extra or "core")])
    if not rows:
        table.add_row("(nothing to load)", *[""] * 5)
    out.print(table)
    fetch = list(dict.fromkeys(r.backend for r in rows if r.checkpoint and not r.optional))
    if fetch:
        out.print(f"fetch the weights: vidmem models fetch {' '.join(fetch)} --to DIR, then "
                  "pass --model-dir DIR", highlight=False, markup=False)
    for r in {r.backend: r for r in rows if not r.checkpoint}.values():
        out.print(f"{r.backend}: {r.provide}", highlight=False, markup=False)
    for r in {r.backend: r for r in rows if r.checkpoint and "gated" in r.provide}.values():
        out.print(f"{r.backend}: gated on the hub, accept its licence before fetching",
                  highlight=False, markup=False)
    for extra in sorted({r.extra for r in rows if r.extra and missing_modules(r.extra)}):
        out.print(f"not installed here: the {extra} extra ({install_line(extra)})",
                  highlight=False, markup=False)


@models_app.command("fetch")
def models_fetch(
    names: Annotated[list[str], typer.Argument(help="Backend names, e.g. dinov2/small owlvit/base-patch32.")],
    to: Annotated[Path, typer.Option("--to", help="Directory to download into.")],
) -> None:
    """Download weights from the hub into DIR (needs network; point --model-dir at DIR)."""
    from vidmem.models.fetch import fetch_weights

    for name in names:
        path = fetch_weights(name, to)
        out.print(f"{name}: {path}")
    out.print(f"use them with --model-dir {to} (or VIDMEM_MODEL_DIR={to})")


# ------------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> None:
    """Console entry point; turns VidmemError into a one-line message and exit code."""
    if argv is not None:
        sys.argv = ["vidmem", *argv]
    STATE.debug = "--debug" in sys.argv[1:] or os.environ.get("VIDMEM_DEBUG") == "1"
    try:
        app()
    except VidmemError as exc:
        if STATE.debug:
            traceback.print_exc()
        err.print(f"[bold red]error:[/bold red] {escape(exc.message)}", highlight=False, soft_wrap=True)
        if exc.hint:
            err.print(f"[bold]fix:[/bold] {escape(exc.hint)}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err.print("interrupted; finished items are saved, rerun with --resume to continue")
        sys.exit(130)
    except Exception as exc:  # an internal error: say so, keep the traceback for --debug
        if STATE.debug:
            traceback.print_exc()
        else:
            err.print(
                f"[bold red]internal error:[/bold red] {type(exc).__name__}: {escape(str(exc))}\n"
                "rerun with --debug for the traceback, and please report it",
                highlight=False,
                soft_wrap=True,
            )
        sys.exit(1)


if __name__ == "__main__":
    main()
