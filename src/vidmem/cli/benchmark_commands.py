"""`vidmem validate|requests|score|run|stats <benchmark>`, built from the benchmark's contract.

Each registered benchmark gets the same five commands: the generic options (``--root``,
``--out``, ``--workers`` ...) are declared here once, the benchmark's own ones come
from its :class:`~vidmem.benchmarks.contract.CliOption` declarations. Commands are made
when first asked for, so a benchmark registered by a plugin (or a test) gets them too.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from vidmem.cli.common import console, err_console, print_json
from vidmem.errors import UserInputError

VERBS = ("validate", "requests", "score", "run", "stats")


def _param(name: str, annotation: Any, default: Any, *flags: str, help: str,
           envvar: str | None = None, min: float | None = None,
           max: float | None = None) -> inspect.Parameter:
    kwargs: dict[str, Any] = {"help": help}
    if envvar:
        kwargs["envvar"] = envvar
    if min is not None:
        kwargs["min"] = min
    if max is not None:
        kwargs["max"] = max
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                             annotation=Annotated[annotation, typer.Option(*flags, **kwargs)],
                             default=... if default is inspect.Parameter.empty else default)


def _declared(options: Sequence[Any]) -> list[inspect.Parameter]:
    return [_param(o.name, o.type, o.default, *o.flags, help=o.help, envvar=o.envvar, min=o.min)
            for o in options]


def _command(fn: Callable[..., None], params: list[inspect.Parameter], doc: str) -> Any:
    """A click command calling ``fn(**values)`` with the options ``params``."""

    def command(**values: Any) -> None:
        fn(**values)

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    command.__doc__ = doc
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command()(command)
    return typer.main.get_command(app)


def _root(bench: Any, *extra: str) -> inspect.Parameter:
    flags = tuple(dict.fromkeys((*bench.root_flags, "--root", *extra)))
    return _param("root", Path, inspect.Parameter.empty, *flags, help=bench.root_help)


def _shared(bench: Any, *, videos: bool) -> list[inspect.Parameter]:
    params = [
        _root(bench),
        _param("out", Path, inspect.Parameter.empty, "--out", help="Run directory to write."),
    ]
    if videos:
        # the benchmark's own word (--rollouts, --continuations) and the generic --videos
        flags = tuple(dict.fromkeys((bench.outputs_flag, "--videos")))
        params.append(_param("videos", Path, inspect.Parameter.empty, *flags,
                             help=bench.videos_help))
    else:
        params += [
            _param("generator", str, inspect.Parameter.empty, "--generator",
                   help="sim, command, or package.module:Class."),
            _param("generator_opt", list[str] | None, None, "--generator-opt",
                   help="key=value for the generator, e.g. memory=decay:20."),
        ]
    # The request options (length, seed ...) shape what run generates and what score
    # expects to find, so both commands take them.
    return params + _declared(bench.requests_options) + _declared(bench.scorer_options) + \
        _declared(bench.score_options) + _judge_cache_option(bench) + [
        _param(param, bool, False, flag, help=text)
        for param, flag, _, text in analysis_flags(bench, generates=not videos)] + [
        _param("allow_missing", bool, False, "--allow-missing", help=bench.allow_missing_help),
        _param("workers", int, 1, "--workers", help="Worker processes (local) or Ray actors.",
               min=1),
        *executor_options(),
        _param("resume", bool, False, "--resume", help="Continue an interrupted run."),
        _param("overwrite", bool, False, "--overwrite", help="Replace an existing run directory."),
        _param("quiet", bool, False, "--quiet", "-q", help="No progress bars or tables."),
        _param("as_json", bool, False, "--json", help="Print machine-readable JSON only."),
    ]


def analysis_flags(bench: Any, *, generates: bool) -> list[tuple[str, str, str, str]]:
    """``(parameter, flag, analysis, help)`` of the benchmark's ``analysis_flags`` that fit
    the command: an analysis that generates needs the run's generator, so ``score`` (which
    has none) does not get its flag."""
    from vidmem.runners.analysis_run import analysis_module

    found = []
    for flag, name in dict(getattr(bench, "analysis_flags", {}) or {}).items():
        module = analysis_module(bench, name)
        if getattr(module, "GENERATES", False) and not generates:
            continue
        first = (module.__doc__ or "").strip().splitlines()[0].split(": ", 1)[-1]
        text = (f"Then run the {name!r} analysis with its defaults (as vidmem analyze "
                f"{bench.name} RUN --only {name}): {first}")
        found.append(("then_" + flag.lstrip("-").replace("-", "_"), flag, name, text))
    return found


def _run_flagged_analyses(bench: Any, values: dict[str, Any], outcome: Any, *,
                          generates: bool, quiet: bool) -> None:
    """The analyses asked for by flag, after a run without failed items (a failed item
    would leave the analysis without its scores; the run's own error says what failed)."""
    names = [name for param, _, name, _ in analysis_flags(bench, generates=generates)
             if values.get(param)]
    if not names or outcome.failed:
        return
    from vidmem.runners.analysis_run import AnalysisOptions, run_analyses
    from vidmem.runners.reporting import render_run_report

    cache = judge_cache_path(values.get("judge_cache")) if bench.asks_judge else None
    run_analyses(bench, outcome.run, names, AnalysisOptions(
        judge_cache=None if cache is None else str(cache.resolve()),
        workers=values["workers"], quiet=quiet))
    paths = render_run_report(outcome.run.path)
    if not quiet:
        for name in names:
            console.print(f"{name}: {outcome.run.path / 'analyses' / (name + '.json')}",
                          highlight=False)
        console.print(f"report: {paths['html']}", highlight=False)


def executor_options() -> list[inspect.Parameter]:
    """``--executor``, ``--ray-address``, ``--gpus-per-worker`` (with ``--workers``)."""
    return [
        _param("executor", str, "local", "--executor",
               help="local: this process, or a process pool of --workers; ray: --workers Ray "
               "actors on the cluster at --ray-address (see README, Scale out)."),
        _param("ray_address", str | None, None, "--ray-address",
               help="Ray cluster to join (HOST:6379, auto, ray://HOST:10001). Default: "
               "RAY_ADDRESS if set, else a local Ray instance of --workers CPUs."),
        _param("gpus_per_worker", float, 0.0, "--gpus-per-worker", min=0,
               help="GPUs each Ray actor reserves; fractional shares a GPU (0.5: two per "
               "GPU). Default 0."),
    ]


def executor_spec(values: dict[str, Any], *shared: Any) -> Any:
    """The :class:`~vidmem.runners.execution_spec.ExecutorSpec` of the command's options."""
    from vidmem.runners.execution_spec import ExecutorSpec

    return ExecutorSpec(kind=values["executor"].strip().lower(), workers=values["workers"],
                        address=values["ray_address"] or None,
                        gpus_per_worker=values["gpus_per_worker"]).sharing(*shared)


def _judge_cache_option(bench: Any) -> list[inspect.Parameter]:
    from vidmem.runners.judge_health import MAX_UNPARSABLE

    if not bench.asks_judge:
        return []
    return [_param("judge_cache", str | None, None, "--judge-cache", envvar="VIDMEM_JUDGE_CACHE",
                   help="SQLite file of the judge's usable answers, shared across runs: a "
                   "question asked before is not asked again. 'off' asks every question. "
                   "Default: judge-answers.sqlite in the user cache folder."),
            _param("max_unparsable", float, MAX_UNPARSABLE, "--max-unparsable", min=0.0, max=1.0,
                   help="Fail the run when more than this share of the judge's answers are "
                   "unusable (after its one JSON-only follow-up).")]


def judge_cache_path(value: str | None) -> Path | None:
    """``--judge-cache``: the cache file, or ``None`` for ``off``."""
    from vidmem.runners.judge_cache import default_judge_cache_path

    if value is None or not value.strip():
        return default_judge_cache_path()
    return None if value.strip().lower() in ("off", "none", "no") else Path(value).expanduser()


def supports(verb: str, bench: Any) -> bool:
    """Whether ``vidmem VERB <bench>`` does something for this benchmark.

    ``requests`` needs a benchmark that generates, ``stats`` one with corpus statistics,
    ``analyze`` one that declares analyses; ``validate``, ``score`` and ``run`` every one
    (the ``run`` of a benchmark that generates nothing scores the given videos).

    Example:
        >>> from vidmem.registry import BENCHMARKS
        >>> track_a = BENCHMARKS.load("vmem_track_a")
        >>> supports("requests", track_a), supports("score", track_a)
        (False, True)
    """
    from vidmem.benchmarks.contract import Benchmark

    if verb == "requests":
        return bool(bench.generates)
    if verb == "stats":
        return getattr(type(bench), "corpus_stats", None) is not Benchmark.corpus_stats
    if verb == "analyze":
        return bool(getattr(bench, "analyses", None))
    return True


def make_command(verb: str, bench: Any) -> Any:
    """The click command of ``vidmem VERB <bench.name>``."""
    if verb == "validate":
        return _validate_command(bench)
    if verb == "requests":
        return _requests_command(bench)
    if verb == "stats":
        return _stats_command(bench)
    if verb == "analyze":
        from vidmem.cli.analyze_commands import analyze_command

        return analyze_command(bench)
    # a benchmark that generates nothing (Track-A scores real films) runs on given videos
    videos = verb == "score" or not bench.generates

    def score_or_run(**values: Any) -> None:
        from vidmem.benchmarks.command_outputs import COMMAND_OUTPUTS
        from vidmem.benchmarks.sim_deck import COMMAND_ROOT
        from vidmem.generators.loading import parse_options
        from vidmem.runners.benchmark_run import print_result, run_benchmark
        from vidmem.runners.judge_health import MAX_UNPARSABLE
        from vidmem.runners.store import NOTICE

        scorer_names = [o.name for o in bench.scorer_options]
        token = COMMAND_ROOT.set(Path(values["root"]))  # where an offline deck is looked for
        # what score was brought (a default may follow it: Track-B's conditions)
        brought = COMMAND_OUTPUTS.set(Path(values["videos"]) if videos else None)
        try:
            config = bench.scorer_config(**{k: values[k] for k in scorer_names})
        finally:
            COMMAND_OUTPUTS.reset(brought)
            COMMAND_ROOT.reset(token)
        options = {o.name: values[o.name] for o in bench.score_options}
        requests = {o.name: values[o.name] for o in bench.requests_options}
        gen = None if videos else (values["generator"], parse_options(values["generator_opt"]))
        quiet = values["quiet"] or values["as_json"]
        executor = executor_spec(values, Path(values["root"]).resolve())
        # what the run directory did on its own (a failed first attempt replaced) is said
        # at once, not after the run
        notice = NOTICE.set(lambda text: err_console.print(f"note: {text}", markup=False, highlight=False,
                                                           soft_wrap=True))
        try:
            outcome = run_benchmark(
                bench, bench.load(values["root"]), videos=values.get("videos"), out=values["out"],
                gen=gen, config=config, allow_missing=values["allow_missing"],
                workers=values["workers"], resume=values["resume"], overwrite=values["overwrite"],
                quiet=quiet, options=options, requests=requests,
                judge_cache=judge_cache_path(values["judge_cache"]) if bench.asks_judge else None,
                executor=executor,
                max_unparsable=values["max_unparsable"] if bench.asks_judge else MAX_UNPARSABLE)
        finally:
            NOTICE.reset(notice)
        if values["as_json"]:
            print_json(outcome.summary)
        elif not quiet:
            print_result(bench, console, outcome.summary, outcome.run)
        _run_flagged_analyses(bench, values, outcome, generates=not videos, quiet=quiet)
        outcome.raise_if_failed(bench.item_word)  # any failed item reaches the exit code

    doc = (f"Score {bench.title} {bench.outputs_word} generated elsewhere (bring your own videos)."
           if videos else
           f"Generate every {bench.title} {bench.item_word}'s video with a generator adapter, then score it.")
    return _command(score_or_run, _shared(bench, videos=videos), doc)


def _validate_command(bench: Any) -> Any:
    def validate(root: Path, as_json: bool, **options: Any) -> None:
        report = bench.validate(root, **options)
        if as_json:
            print_json({"ok": report.ok,
                        "problems": [p.__dict__ for p in (*report.errors, *report.warnings)]})
        else:
            console.print(report.format(limit=1000) if report.problems else
                          bench.validation_summary(report), highlight=False)
        if not report.ok:
            raise typer.Exit(1)

    params = [_root(bench),
              *_declared(bench.validate_options),
              _param("as_json", bool, False, "--json", help="Print machine-readable JSON only.")]
    return _command(validate, params,
                    f"List every problem of a {bench.title} dataset at once (exit 1 if any error).")


def _requests_command(bench: Any) -> Any:
    def requests(root: Path, out: Path, outputs: Path, **options: Any) -> None:
        from vidmem.runners.benchmark_run import write_requests

        if not bench.generates:
            raise UserInputError(
                f"benchmark {bench.name} generates nothing: it scores the videos you give it",
                hint=f"vidmem run {bench.name} --videos DIR ... (see vidmem run {bench.name} --help)")
        n = write_requests(bench, root, out, outputs.resolve(), **options)
        console.print(f"{n} requests -> {out}; then: vidmem score {bench.name} --root {root} "
                      f"--videos {outputs} --out RUN", highlight=False)

    params = [
        _root(bench),
        _param("out", Path, inspect.Parameter.empty, "--out",
               help=f"Manifest to write (JSONL, one request per {bench.item_word})."),
        _param("outputs", Path, Path(bench.outputs_word), bench.outputs_flag,
               help=f"Where generators must write <{bench.item_word}_id>.mp4."),
        *_declared(bench.requests_options),
    ]
    return _command(requests, params,
                    f"Write one generation request per {bench.item_word}, for any generator to fill.")


def _stats_lines(data: Any, indent: int = 0) -> list[str]:
    """``key: value`` lines of a nested dict; a dict of plain values goes on one line."""
    pad, lines = "  " * indent, []
    for key, value in data.items():
        if isinstance(value, dict) and all(not isinstance(v, dict) for v in value.values()):
            inner = ", ".join(f"{k} {_number(v)}" for k, v in value.items())
            lines.append(f"{pad}{key}: {inner}")
        elif isinstance(value, dict):
            lines += [f"{pad}{key}:", *_stats_lines(value, indent + 1)]
        else:
            lines.append(f"{pad}{key}: {_number(value)}")
    return lines


def _number(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def _stats_command(bench: Any) -> Any:
    def stats(root: Path, as_json: bool, **options: Any) -> None:
        data = bench.corpus_stats(root, **options)
        if data is None:
            raise UserInputError(
                f"benchmark {bench.name} has no corpus statistics",
                hint="corpus statistics come from Benchmark.corpus_stats(root, **options) in "
                     "the benchmark's folder; this one does not define it")
        if as_json:
            print_json(data)
        else:
            console.print("\n".join(_stats_lines(data)), highlight=False)

    params = [_root(bench, "--gold"),
              *_declared(bench.stats_options),
              _param("as_json", bool, False, "--json", help="Print machine-readable JSON only.")]
    return _command(stats, params,
                    f"Count a {bench.title} corpus from its files alone (no videos, no models).")
