"""The generic runner: generate and/or score any benchmark into a run directory.

It knows no benchmark by name. A benchmark (see :mod:`vidmem.benchmarks.contract`) says
what to generate and what to score as plain data; this module turns that into stored,
resumable work items, runs them (in-process or in a worker pool), builds one row per
dataset item, writes ``scores.jsonl``, ``summary.json`` and ``run.json``, and renders
the report.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from vidmem.errors import RunFailedError, UserInputError
from vidmem.io.jsonl import write_text_atomic
from vidmem.runners import generation
from vidmem.runners.execute import ExecutorSpec, WorkItem, execute
from vidmem.runners.execution_spec import PROTOCOL as EXECUTION_PROTOCOL
from vidmem.runners.judge_health import MAX_UNPARSABLE, judge_health
from vidmem.runners.judge_health import PROTOCOL as JUDGE_FAILURES
from vidmem.runners.manifest import InputLocation
from vidmem.runners.store import RunDir, RunManifest

if TYPE_CHECKING:
    from rich.console import Console

#: A benchmark as :mod:`vidmem.benchmarks.contract` declares it. The runner sits below the
#: contract and only calls its methods, so it names the type without importing it.
Benchmark = Any

__all__ = ["SUMMARY_JSON", "Outcome", "RunResult", "generate", "open_run", "run_benchmark",
           "score", "write_requests"]

SUMMARY_JSON = "summary.json"
#: key of ``summary.json`` with the run's judge health (see :func:`judge_health`)
JUDGE_HEALTH = "judge_health"


@dataclass(frozen=True)
class Outcome:
    """How the scoring of a run went, handed to the benchmark's ``aggregate``.

    Attributes:
        n_items: dataset items (tasks, cases).
        missing: ids of items whose video was missing (scored only with ``allow_missing``).
        missing_reasons: why each missing video was not usable.
        errors: ``(item_id, first line of the error)`` for every item that failed to score.
        execution: the executor's counts (done, cached, errors ...).
        judge_failure: why the run's judge answers cannot be trusted (the unparsable
            share passed ``max_unparsable``), or ``None``.
    """

    n_items: int
    missing: tuple[str, ...]
    missing_reasons: Mapping[str, str]
    errors: tuple[tuple[str, str], ...]
    execution: Mapping[str, int]
    judge_failure: str | None = None


# ----------------------------------------------------------------------------- workers


#: loaded backends by (benchmark name, scorer configuration, judge answer cache), one
#: load per process: worker processes keep their models across items.
_BACKENDS: dict[tuple[str, str, str | None], Any] = {}
#: the answer-cached judges inside each entry of _BACKENDS, for the per-item counts
_CACHED_JUDGES: dict[tuple[str, str, str | None], list[Any]] = {}

#: key of a score item's stored ``response`` that counts its judge answers
JUDGE_ANSWERS = "judge_answers"


def _backends(bench: Benchmark, config_json: str, judge_cache: str | None = None) -> Any:
    key = (bench.name, config_json, judge_cache)
    if key not in _BACKENDS:
        backends = bench.load_backends(bench.config_from_dict(json.loads(config_json)))
        judges: list[Any] = []
        if bench.asks_judge:
            # every judge is asked through CachedJudge, with or without a cache: it is what
            # turns a question without an answer into the item's error
            from vidmem.runners.judge_cache import AnswerCache, CachedJudge

            cache = None if judge_cache is None else AnswerCache(judge_cache)

            def wrap(judge: Any) -> Any:
                judges.append(CachedJudge(judge, cache))
                return judges[-1]

            backends = bench.with_judges(backends, wrap)
        _BACKENDS[key], _CACHED_JUDGES[key] = backends, judges
    return _BACKENDS[key]


def _backend_records(bench: Benchmark, config_json: str,
                     judge_cache: str | None = None) -> dict[str, Any]:
    """Load the backends in this process (a Ray actor's warmup) and describe them for
    run.json: on Ray the driver loads no model, so the record comes from a worker."""
    return dict(bench.backend_infos(_backends(bench, config_json, judge_cache)))


def _driver_loads(executor: ExecutorSpec | None) -> bool:
    """Whether this process loads the scorer's models itself: always, but on Ray, where
    the driver may be a head node with neither the GPUs nor the memory of the workers."""
    return executor is None or executor.kind != "ray"


def _config_json(config: Any) -> str:
    return json.dumps(config.to_dict(), sort_keys=True)


def _answer_counts(key: tuple[str, str, str | None]) -> dict[str, int]:
    from vidmem.runners.judge_cache import ANSWER_COUNTS

    counts = dict.fromkeys(ANSWER_COUNTS, 0)
    for judge in _CACHED_JUDGES.get(key, ()):
        for name, n in judge.answer_counts().items():
            counts[name] += n
    return counts


def _score_work(bench: Benchmark, item: WorkItem, judge_cache: str | None = None) -> dict[str, Any]:
    config_json = json.dumps(item.request["scorer"], sort_keys=True)
    backends = _backends(bench, config_json, judge_cache)
    key = (bench.name, config_json, judge_cache)
    before = _answer_counts(key)
    result = bench.score_item(item.request, backends)
    if _CACHED_JUDGES.get(key) and isinstance(result.get("response"), Mapping):
        after = _answer_counts(key)
        answers: dict[str, Any] = {k: after[k] - before[k] for k in after}
        if answers["unparsable"]:
            answers["unparsable_sample"] = next(
                (j.unparsable_sample() for j in _CACHED_JUDGES[key] if j.unparsable_sample()), None)
        result = {**result, "response": {**result["response"], JUDGE_ANSWERS: answers}}
    return result


# --------------------------------------------------------------------------- entry points


def write_requests(bench: Benchmark, root: str | Path, manifest: str | Path,
                   outputs: str | Path, **options: Any) -> int:
    """Write one generation request per rollout to ``manifest`` (JSONL); return the count.

    Raises:
        UserInputError: the benchmark runs its rollouts itself (``run_rollout``): each
            request depends on the rollout's own earlier outputs, so no manifest can be
            written ahead.
    """
    from vidmem.io.jsonl import write_jsonl

    if getattr(bench, "run_rollout", None) is not None:
        raise UserInputError(
            f"benchmark {bench.name} generates nothing from a request manifest: its rollouts "
            "are closed loops (each request is built from the rollout's own earlier outputs)",
            hint=f"vidmem run {bench.name} --generator NAME ... runs the loop; or write the "
            f"{bench.outputs_word} elsewhere and vidmem score {bench.name} {bench.outputs_flag} DIR")

    ds = bench.load(root)
    rollouts = bench.rollouts(ds, Path(outputs), **options)
    return write_jsonl(manifest, [r.request.to_dict() for r in rollouts])


def open_run(bench: Benchmark, ds: Any, out: str | Path, config: Any, extra: Mapping[str, Any], *,
             resume: bool, overwrite: bool, argv: list[str] | None) -> RunDir:
    """Create (or reopen with ``resume``) the run directory ``out``."""
    manifest = RunManifest(
        benchmark=bench.name, benchmark_version=bench.version,
        config={**bench.run_config(ds, config), **extra}, seeds=bench.seeds(config),
        protocol={**bench.protocol(config), "execution": EXECUTION_PROTOCOL,
                  **({"judge_failures": JUDGE_FAILURES} if bench.asks_judge else {})},
        **({"command": argv} if argv else {}),
    )
    return RunDir.create(out, manifest, resume=resume, overwrite=overwrite)


def generate(bench: Benchmark, ds: Any, run: RunDir, generator: str, options: dict[str, Any], *,
             workers: int = 1, quiet: bool = False, config: Any = None,
             executor: ExecutorSpec | None = None, judge_cache: str | None = None,
             **requests: Any) -> dict[str, Any]:
    """Generate every rollout's video into ``RUN/<outputs_word>`` (resumable).

    A benchmark with ``run_rollout`` (a rollout of many requests, run by the benchmark)
    gets ``config`` (the scorer configuration: e.g. which conditions) in ``rollouts`` and
    one stored item per rollout, and ``judge_cache`` (the answer cache's file, for a
    rollout that asks a judge) in its ``ctx``; the others one item per request.
    ``executor`` (default: local with ``workers``) says where they run.
    """
    executor = executor or ExecutorSpec(workers=workers)
    out_dir = run.path / bench.outputs_word
    if getattr(bench, "run_rollout", None) is not None:
        items = [generation.make_rollout_item(r, generator, options)
                 for r in bench.rollouts(ds, out_dir, config=config, **requests)]
        with run.items() as store:
            summary = generation.run_rollouts(store, items, bench, quiet=quiet,
                                              executor=executor.one_per_call(),
                                              judge_cache=judge_cache)
        return {"dir": out_dir, "summary": summary.as_counts(),
                "errors": list(summary.error_samples)}
    items = [generation.make_item(r.request, generator, options, dict(r.inputs))
             for r in bench.rollouts(ds, out_dir, **requests)]
    with run.items() as store:
        summary = generation.run_generation(store, items, quiet=quiet, executor=executor)
    return {"dir": out_dir, "summary": summary.as_counts(), "errors": list(summary.error_samples)}


def score(bench: Benchmark, ds: Any, run: RunDir, videos: str | Path, config: Any, *,
          allow_missing: bool = False, workers: int = 1, quiet: bool = False,
          options: Mapping[str, Any] | None = None,
          requests: Mapping[str, Any] | None = None,
          judge_cache: str | Path | None = None,
          executor: ExecutorSpec | None = None,
          max_unparsable: float = MAX_UNPARSABLE) -> dict[str, Any]:
    """Score every item's video in ``videos`` into ``run``; write and return the summary.

    ``options`` are the benchmark's ``score_options``; ``requests`` its
    ``requests_options`` (what the videos were asked to be, e.g. their length);
    ``judge_cache`` the judge answer cache's file (``None``: none), see
    :mod:`vidmem.runners.judge_cache`; ``executor`` (default: local with ``workers``) where
    the items are scored.
    """
    return _score(bench, ds, run, videos, config, allow_missing=allow_missing, workers=workers,
                  quiet=quiet, options=options, requests=requests, judge_cache=judge_cache,
                  executor=executor, max_unparsable=max_unparsable)[0]


def _score(bench: Benchmark, ds: Any, run: RunDir, videos: str | Path, config: Any, *,
           allow_missing: bool, workers: int, quiet: bool, options: Mapping[str, Any] | None,
           requests: Mapping[str, Any] | None,
           judge_cache: str | Path | None = None,
           executor: ExecutorSpec | None = None,
           max_unparsable: float = MAX_UNPARSABLE) -> tuple[dict[str, Any], Outcome]:
    executor = (executor or ExecutorSpec(workers=workers)).sharing(Path(videos).resolve())
    cache = None if judge_cache is None else str(Path(judge_cache).expanduser().resolve())
    ds = bench.select(ds, config)  # idempotent: run() has selected already
    scan = bench.find_outputs(ds, videos)
    if scan.missing and not allow_missing:
        scan.raise_if_missing()
    inside = {"allow_missing": allow_missing} if bench.partial_outputs else {}
    items = [WorkItem.make(s.item_id, "score", dict(s.request), unkeyed=s.unkeyed)
             for s in bench.score_items(ds, scan, config, run.path, **inside,
                                        **dict(requests or {}))]
    with run.items() as store:
        done_before = store.done_keys()
        if any(item.key not in done_before for item in items) and _driver_loads(executor):
            # Load the backends here first: a bad option or missing weights is one clear
            # error now, not the same error stored once per item (on Ray every actor
            # loads them before its first item, with the same effect).
            _backends(bench, _config_json(config), cache)
        warmup = None if _driver_loads(executor) else partial(
            _backend_records, bench, _config_json(config), cache)
        summary = execute(store, items, partial(_score_work, bench, judge_cache=cache),
                          executor=executor, progress=not quiet, quiet=quiet, warmup=warmup)
        if summary.prepared:
            run.set_backends(summary.prepared)
        keys = {i.key for i in items}
        stored = {s.item_id: s for s in store.iter_items(kind="score") if s.key in keys}
        health = judge_health(stored.values(), max_unparsable) if bench.asks_judge else None
        if health is not None and health["failure"]:
            stored = _unusable_answers_failed(store, stored, health["failure"])
    rows = []
    for item in bench.items(ds):
        item_id = bench.item_id(item)
        s = stored.get(item_id)
        if s is not None and s.status == "done":
            status = "scored"
        else:
            status = "missing" if item_id in scan.missing else "error"
        rows.append(bench.row(item, s, status))
    run.write_scores(rows)
    errors = tuple((s.item_id, (s.error or "").splitlines()[0] if s.error else "")
                   for s in stored.values() if s.status == "error")
    outcome = Outcome(n_items=len(rows), missing=tuple(scan.missing),
                      missing_reasons=dict(scan.reasons), errors=errors,
                      execution=summary.as_counts(),
                      judge_failure=None if health is None else health["failure"])
    result = bench.aggregate(rows, config, outcome)
    result.update(bench.summary_extras(rows, dict(options or {})))
    if bench.asks_judge:
        result[JUDGE_ANSWERS] = _judge_answers(
            [s for s in stored.values() if s.key not in done_before], cache)
        result[JUDGE_HEALTH] = health
    write_text_atomic(run.path / SUMMARY_JSON, json.dumps(result, indent=2))
    run.set_counts({**summary.as_counts(), f"{bench.item_word}s": len(rows),
                    "missing": len(scan.missing)})
    run.set_status("complete" if summary.ok and outcome.judge_failure is None else "failed")
    return result, outcome


def plural(word: str) -> str:
    """The plural of an item word.

    Example:
        >>> plural("story"), plural("task"), plural("case")
        ('stories', 'tasks', 'cases')
    """
    return word[:-1] + "ies" if word.endswith("y") and word[-2:-1] not in "aeiou" else word + "s"


def _unusable_answers_failed(store: Any, stored: dict[str, Any], failure: str) -> dict[str, Any]:
    """Store every item that holds an unusable judge answer as an ``error`` (``failure``
    says why): a run whose judge failed keeps no number resting on it, and ``--resume``
    asks those questions again (the usable answers come from the answer cache)."""
    out = dict(stored)
    for item_id, s in stored.items():
        answers = (s.response or {}).get(JUDGE_ANSWERS) if isinstance(s.response, Mapping) else None
        if s.status != "done" or not isinstance(answers, Mapping) or not answers.get("unparsable"):
            continue
        error = f"JudgeAnswersUnusable: {failure}"
        store.put(s.key, item_id=item_id, kind=s.kind, request=s.request, status="error",
                  error=error)
        out[item_id] = dataclasses.replace(s, status="error", error=error, response=None,
                                           score=None)
    return out


def _judge_answers(scored_now: list[Any], cache: str | None) -> dict[str, Any]:
    """How the judge questions of the items scored in this call were answered."""
    counts = {"from_cache": 0, "asked": 0, "unparsable": 0}
    for s in scored_now:
        answers = (s.response or {}).get(JUDGE_ANSWERS) if isinstance(s.response, Mapping) else None
        for name in counts:
            counts[name] += int((answers or {}).get(name, 0))
    return {**counts, "items_scored_now": len(scored_now), "cache": cache}


def record_backends(bench: Benchmark, run: RunDir, config: Any,
                    judge_cache: str | Path | None = None) -> None:
    """Write the loaded backends' names, weights and hashes into run.json (if loaded)."""
    cache = None if judge_cache is None else str(Path(judge_cache).expanduser().resolve())
    backends = _BACKENDS.get((bench.name, _config_json(config), cache))
    if backends is not None:
        run.set_backends(bench.backend_infos(backends))


class RunResult(NamedTuple):
    """What :func:`run_benchmark` did.

    Attributes:
        summary: the summary (as in ``summary.json``) plus the report's paths.
        run: the run directory.
        failed: ``(item_id, first line of the error)`` for every item that failed to score.
        n_items: the dataset's items (tasks, cases).
        judge_failure: why the judge's answers cannot be trusted (see
            :mod:`vidmem.runners.judge_health`), or ``None``.
    """

    summary: dict[str, Any]
    run: RunDir
    failed: list[tuple[str, str]]
    n_items: int
    judge_failure: str | None = None

    def raise_if_failed(self, item_word: str) -> None:
        """Raise :class:`RunFailedError` (exit code 1) when any item failed, or when the
        judge answered too many questions unusably."""
        if self.judge_failure:
            raise RunFailedError(
                f"{len(self.failed)} of {self.n_items} {plural(item_word)} failed: "
                f"{self.judge_failure}",
                hint="check the judge (its model, prompt format, server), then rerun with "
                "--resume: those questions are asked again, usable answers come from the "
                "cache; to accept this share, pass a higher --max-unparsable")
        if not self.failed:
            return
        item_id, message = self.failed[0]
        raise RunFailedError(
            f"{len(self.failed)} of {self.n_items} {plural(item_word)} failed to score and are left out "
            f"of the mean; first: {item_id}: {message}",
            hint=f"every error is in {self.run.items_path} (and summary.json); fix what it "
            "names and rerun with --resume: finished items are not computed again")


def run_benchmark(
    bench: Benchmark,
    ds: Any,
    *,
    videos: Path | None,
    out: Path,
    gen: tuple[str, dict[str, Any]] | None,
    config: Any,
    allow_missing: bool,
    workers: int,
    resume: bool,
    overwrite: bool,
    quiet: bool,
    options: Mapping[str, Any] | None = None,
    requests: Mapping[str, Any] | None = None,
    judge_cache: str | Path | None = None,
    argv: list[str] | None = None,
    executor: ExecutorSpec | None = None,
    max_unparsable: float = MAX_UNPARSABLE,
) -> RunResult:
    """Score ``videos`` (``gen`` is None) or generate them with ``gen`` and score them.

    Missing videos are refused before a run directory exists, so a retry needs no
    ``--resume``; failed generations are refused unless ``allow_missing``. ``executor``
    (default: local with ``workers``) says where generation and scoring run.

    Returns:
        The summary (with the report's paths under ``report``), the run directory and
        the items that failed (the caller decides the exit code: see
        :meth:`RunResult.raise_if_failed`).

    Raises:
        UserInputError: videos missing, or generation failed (without ``allow_missing``).
    """
    from vidmem.runners.reporting import render_run_report

    requests = dict(requests or {})
    ds = bench.select(ds, config)
    extra: dict[str, Any] = {"allow_missing": allow_missing}
    if requests:
        extra["requests"] = requests
    if gen:
        extra["generator"] = {"name": gen[0], "options": gen[1]}
    else:
        videos = Path(videos).resolve()  # type: ignore[arg-type]
        # where the videos are, not what they are: the score items hold their hashes
        extra["videos"] = InputLocation(videos)
        if not allow_missing:
            scan = bench.find_outputs(ds, videos)
            if scan.missing:
                scan.raise_if_missing()
    run = open_run(bench, ds, out, config, extra, resume=resume, overwrite=overwrite,
                   argv=sys.argv if argv is None else argv)
    try:
        if gen:
            cache = None if judge_cache is None else str(Path(judge_cache).expanduser().resolve())
            if _driver_loads(executor):
                # The scorer's models (a judge's weights, a deck) load first: a bad option is
                # one clear error now, not after every rollout was generated (or per rollout,
                # for a benchmark whose generation asks the judge, like MIST's M3-Agent arms).
                # On Ray the driver loads no model: the scoring actors check them when
                # scoring starts.
                _backends(bench, _config_json(config), cache)
            g = generate(bench, ds, run, gen[0], gen[1], workers=workers, quiet=quiet,
                         config=config, executor=executor, judge_cache=cache, **requests)
            videos = g["dir"]
            if g["summary"]["errors"] and not allow_missing:
                first = g["errors"][0] if g["errors"] else ("?", "?")
                raise UserInputError(
                    f"{g['summary']['errors']} {bench.outputs_word} failed to generate; "
                    f"first: {first[0]}: {first[1]}",
                    hint="fix the generator and rerun with --resume, or pass --allow-missing: "
                    + bench.allow_missing_help)
        result, outcome = _score(bench, ds, run, videos, config,  # type: ignore[arg-type]
                                 allow_missing=allow_missing, workers=workers, quiet=quiet,
                                 options=options, requests=requests, judge_cache=judge_cache,
                                 executor=executor, max_unparsable=max_unparsable)
        record_backends(bench, run, config, judge_cache)
        result["report"] = {k: str(v) for k, v in render_run_report(run.path).items()}
    except BaseException as exc:
        # a failure before or between items (a bad judge option, a failed generation) or
        # Ctrl-C leaves run.json saying so, not 'running'
        with contextlib.suppress(Exception):
            run.set_status("interrupted" if isinstance(exc, KeyboardInterrupt) else "failed")
        raise
    return RunResult(result, run, list(outcome.errors), outcome.n_items,
                     outcome.judge_failure)


def print_result(bench: Benchmark, console: Console, result: Mapping[str, Any], run: RunDir) -> None:
    """The benchmark's summary, then where the report is."""
    bench.print_summary(console, result, run)
    answers = result.get(JUDGE_ANSWERS)
    if answers:
        where = f" ({answers['cache']})" if answers.get("cache") else " (no answer cache)"
        console.print(f"judge: {answers['asked']} questions asked, {answers['from_cache']} "
                      f"answered from the cache{where}", highlight=False)
    health = result.get(JUDGE_HEALTH)
    if health:
        console.print(f"judge health (whole run): {health['answers']} answers, "
                      f"{health['unparsable']} unusable ({100 * health['unparsable_share']:.1f}%, "
                      f"limit {100 * health['max_unparsable']:.0f}%)", highlight=False)
    console.print(f"report: {result['report']['html']}", highlight=False)

