"""The contract every benchmark folder implements, and the records it shares.

A benchmark is plain data in, plain data out, like an lm-evaluation-harness task or an
inspect_ai Task: it loads and validates its dataset, says which videos must be generated
(:class:`Rollout`), says what must be scored (:class:`ScoreItem`), scores one item with
loaded backends, builds one row per dataset item, and aggregates the rows with pure
functions. Everything else -- the run store, resume, caching, worker processes,
progress, ``run.json``, ``scores.jsonl``, ``summary.json``, the report and the CLI -- is
done once for all benchmarks by :mod:`vidmem.runners.benchmark_run` and
:mod:`vidmem.cli.benchmark_commands`.

Adding a benchmark is one folder that subclasses :class:`Benchmark` and exposes an
instance as ``BENCHMARK``, plus one catalog line pointing at it.
"""

from __future__ import annotations

import dataclasses
import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from vidmem.benchmarks.records import (
    CliOption,
    OutputScan,
    Problem,
    Rollout,
    RowValidationReport,
    ScoreItem,
    ValidationReport,
)
from vidmem.runners.benchmark_run import Outcome

if TYPE_CHECKING:
    from rich.console import Console

    from vidmem.report import Report
    from vidmem.runners.item_rows import StoredItem
    from vidmem.runners.store import RunDir
    from vidmem.sim.build import BuildSummary

__all__ = [
    "Benchmark",
    "CliOption",
    "Outcome",
    "Problem",
    "Rollout",
    "RowValidationReport",
    "ScoreItem",
    "ValidationReport",
    "OutputScan",
]


class Benchmark(ABC):
    """One benchmark. Subclasses set the class attributes and implement the methods.

    Class attributes:
        name: the one spelling (folder, registry key, CLI argument, run log).
        version: bumped whenever a stored result would change.
        title: the display name (``CMBench``).
        item_word: what one dataset item is called (``task``, ``case``).
        outputs_word: what the generated videos are called (``continuations``, ``videos``).
        outputs_flag: the ``vidmem requests`` option that names where they go.
        root_help: help for ``--root``.
        videos_help: help for ``--videos`` of ``vidmem score``.
        allow_missing_help: what ``--allow-missing`` does for this benchmark.
    """

    name: ClassVar[str]
    version: ClassVar[str]
    title: ClassVar[str]
    item_word: ClassVar[str]
    outputs_word: ClassVar[str] = "videos"
    outputs_flag: ClassVar[str] = "--videos"
    root_help: ClassVar[str] = "Dataset root in the benchmark's official layout."
    videos_help: ClassVar[str] = "Folder holding one <id>.mp4 per item."
    allow_missing_help: ClassVar[str] = "Score the items that have a video; list the others as missing."
    #: True when one item holds many outputs (Track-B: a story's clips) and ``score_items``
    #: takes ``allow_missing``, to score a single missing output inside a found item by the
    #: benchmark's own rule instead of refusing the item
    partial_outputs: ClassVar[bool] = False
    #: options of ``vidmem validate``, ``vidmem requests``, and of ``score``/``run``
    validate_options: ClassVar[Sequence[CliOption]] = ()
    requests_options: ClassVar[Sequence[CliOption]] = ()
    scorer_options: ClassVar[Sequence[CliOption]] = ()
    #: options of ``score``/``run`` that are not part of the scorer's identity
    score_options: ClassVar[Sequence[CliOption]] = ()
    #: options of ``vidmem stats`` (see :meth:`corpus_stats`)
    stats_options: ClassVar[Sequence[CliOption]] = ()
    #: the dataset root's flags (``--root`` is always accepted too)
    root_flags: ClassVar[tuple[str, ...]] = ("--root",)
    #: whether the benchmark asks a generator for videos; one that does not (Track-A scores
    #: real films) has no ``requests`` verb, and its ``run`` is ``score``
    generates: ClassVar[bool] = True
    #: whether scoring asks a judge: ``score``/``run`` then take ``--judge-cache`` and the
    #: run can be checked with ``vidmem judge-agreement``
    asks_judge: ClassVar[bool] = False
    #: the output side, as ``"module:function"`` (``demo_module``: a module), imported
    #: only when used so that listing benchmarks stays light
    summary_printer: ClassVar[str | None] = None
    report_builder: ClassVar[str | None] = None
    sim_builder: ClassVar[str | None] = None
    demo_module: ClassVar[str | None] = None
    #: ``vidmem compare``: ``comparer(run_a, run_b, **options) -> JSON-ready dict`` (two
    #: opened runs of this benchmark, possibly the same) and ``comparison_printer(console,
    #: result)``; ``None``: the benchmark's runs cannot be compared
    comparer: ClassVar[str | None] = None
    comparison_printer: ClassVar[str | None] = None
    #: ``vidmem analyze``: post-scoring analyses, name -> module path; each module has
    #: ``run(run, options) -> dict`` and ``report(report, data, run)``
    #: (:mod:`vidmem.runners.analysis_run`)
    analyses: ClassVar[Mapping[str, str]] = {}
    #: ``vidmem run`` / ``score`` flags that run one of :attr:`analyses` (its default
    #: options) once the run finished without a failed item: flag -> analysis name, e.g.
    #: ``{"--strip-appearance": "stripping"}``. An analysis that generates gets the flag
    #: on ``run`` only (``score`` has no generator). Not part of the run's configuration.
    analysis_flags: ClassVar[Mapping[str, str]] = {}
    #: ``run_rollout(rollout, generator, ctx) -> summary dict``: how one rollout is run, for
    #: a benchmark whose rollout is more than one request (Track-B: a (story, condition)
    #: whose segments are generated in order, each from its own earlier clips). ``None``
    #: (the default): each rollout's request is one video, handed to the generator as it
    #: is. When set, the runner stores one work item per rollout (a finished rollout is
    #: not run again; workers run rollouts in parallel), calls ``rollouts(dataset, out_dir,
    #: config=<scorer configuration>, **requests)`` and then ``run_rollout`` with the
    #: loaded generator and ``ctx`` (plain data: ``generator_key``, the generator's
    #: identity; ``judge_cache``, the run's answer cache file when it has one, never a key);
    #: ``run_rollout`` writes under the rollout request's ``out_path`` folder,
    #: resumes inside itself and raises when the rollout cannot be finished. Its summary
    #: lists ``clips`` (``name -> SHA-256``, files in that folder) so that a clip deleted
    #: or changed later makes the runner run the rollout again.
    run_rollout: ClassVar[Callable[..., dict[str, Any]] | None] = None

    # ------------------------------------------------------------------ dataset

    @abstractmethod
    def load(self, root: str | Path) -> Any:
        """Load and validate the dataset; raise a :class:`~vidmem.errors.UserInputError`
        listing the problems when it is unusable."""

    @abstractmethod
    def validate(self, root: str | Path, **options: Any) -> ValidationReport:
        """Every problem of the dataset at ``root`` at once (``validate_options`` as keywords)."""

    @abstractmethod
    def items(self, dataset: Any) -> Sequence[Any]:
        """The dataset's items (tasks, cases), in dataset order."""

    @abstractmethod
    def item_id(self, item: Any) -> str:
        """The id of one item."""

    def corpus_stats(self, root: str | Path, **options: Any) -> dict[str, Any] | None:
        """Statistics of the dataset at ``root`` from its files alone (no videos, no models),
        for ``vidmem stats`` (``stats_options`` as keywords): counts of items, hours,
        slices ... as a JSON-ready dict.

        The default returns ``None``: the benchmark has no corpus statistics.
        """
        return None

    def validation_summary(self, report: Any) -> str:
        """The line printed when validation found nothing."""
        return "no problems found"

    # ------------------------------------------------------------------ generation

    @abstractmethod
    def rollouts(self, dataset: Any, out_dir: Path, **options: Any) -> list[Rollout]:
        """The generation work: one rollout per video, writing under ``out_dir``."""

    @abstractmethod
    def find_outputs(self, dataset: Any, videos: str | Path) -> OutputScan:
        """Which items have a usable video in ``videos`` (and why the others do not)."""

    # ------------------------------------------------------------------ scoring

    @abstractmethod
    def scorer_config(self, **options: Any) -> Any:
        """The scorer configuration from the ``scorer_options`` (a frozen value with
        ``to_dict()``); checked here, before any run directory exists."""

    @abstractmethod
    def config_from_dict(self, data: Mapping[str, Any]) -> Any:
        """The scorer configuration back from its ``to_dict()`` (how workers receive it)."""

    def select(self, dataset: Any, config: Any) -> Any:
        """The part of ``dataset`` that ``config`` scores (Track-B's ``--stories`` cohort);
        applied before outputs are looked for, so unselected items need no outputs and get
        no rows. Default: all of it."""
        return dataset

    @abstractmethod
    def score_items(self, dataset: Any, scan: OutputScan, config: Any, run_dir: Path,
                    **requests: Any) -> list[ScoreItem]:
        """The scoring work for the items that have a video (``requests``: the values of
        ``requests_options``, i.e. what the videos were asked to be)."""

    @abstractmethod
    def load_backends(self, config: Any) -> Any:
        """Load the scorer's models for ``config`` (called once per process and config)."""

    def with_judges(self, backends: Any, wrap: Callable[[Any], Any]) -> Any:
        """``backends`` with every judge replaced by ``wrap(judge)`` (the runner's answer
        cache, the agreement check's recorder).

        The default handles ``load_backends`` returning a judge, a mapping or a dataclass
        whose values include judges (anything with ``judge_many`` and ``info``), or any
        other object whose attributes include judges (replaced in place); a benchmark
        with another shape overrides it.
        """
        def is_judge(value: Any) -> bool:
            return callable(getattr(value, "judge_many", None)) and callable(
                getattr(value, "info", None))

        if is_judge(backends):
            return wrap(backends)
        if isinstance(backends, Mapping):
            return {k: wrap(v) if is_judge(v) else v for k, v in backends.items()}
        if dataclasses.is_dataclass(backends) and not isinstance(backends, type):
            changes = {f.name: wrap(getattr(backends, f.name))
                       for f in dataclasses.fields(backends) if is_judge(getattr(backends, f.name))}
            return dataclasses.replace(backends, **changes) if changes else backends
        for name, value in list(getattr(backends, "__dict__", {}).items()):
            if is_judge(value):
                setattr(backends, name, wrap(value))
        return backends

    @abstractmethod
    def score_item(self, request: Mapping[str, Any], backends: Any) -> dict[str, Any]:
        """Score one item: ``{"response": full result, "score": the row's numbers}``."""

    @abstractmethod
    def row(self, item: Any, stored: StoredItem | None, status: str) -> dict[str, Any]:
        """The ``scores.jsonl`` row of one item; ``status`` is ``scored``, ``missing`` or
        ``error`` and ``stored`` the stored result (``None`` when there is none)."""

    @abstractmethod
    def aggregate(self, rows: list[dict[str, Any]], config: Any, outcome: Outcome) -> dict[str, Any]:
        """The run's summary from its rows (pure: no models, no files)."""

    def summary_extras(self, rows: list[dict[str, Any]], options: Mapping[str, Any]) -> dict[str, Any]:
        """Summary blocks that read side inputs named by ``score_options`` (a log file)."""
        return {}

    def preset_backends(self) -> dict[str, dict[str, str | None]]:
        """``{preset: {what it is used for: backend name, or None when unused}}`` of the
        scorer presets (``vidmem models needed``); ``{}`` when the benchmark has none."""
        return {}

    #: backends an analysis loads only when asked, listed with the official preset
    #: (``{what it is used for: backend name}``)
    optional_backends: dict[str, str] = {}

    @abstractmethod
    def protocol(self, config: Any) -> dict[str, Any]:
        """Every protocol choice, written into ``run.json``."""

    @abstractmethod
    def run_config(self, dataset: Any, config: Any) -> dict[str, Any]:
        """What identifies the run besides the protocol (dataset root and hash, scorer)."""

    def seeds(self, config: Any) -> dict[str, int]:
        """The seeds written into ``run.json``."""
        return {}

    def backend_infos(self, backends: Any) -> dict[str, Any]:
        """The loaded backends' ``info()`` by role, for ``run.json``."""
        return {}

    # ------------------------------------------------------------------ output

    def print_summary(self, console: Console, summary: Mapping[str, Any], run: RunDir) -> None:
        """Print the headline numbers (``summary_printer(console, summary, run)``)."""
        _target(self, "summary_printer")(console, summary, run)

    def report(self, run: RunDir) -> Report:
        """The run's report, built from the run directory only (``report_builder(run)``)."""
        return _target(self, "report_builder")(run)

    def compare(self, run_a: RunDir, run_b: RunDir, **options: Any) -> dict[str, Any]:
        """Two runs (or two arms of one run) compared from their run logs (``comparer``)."""
        return _target(self, "comparer")(run_a, run_b, **options)

    def print_comparison(self, console: Console, result: Mapping[str, Any]) -> None:
        """Print :meth:`compare`'s result (``comparison_printer(console, result)``)."""
        _target(self, "comparison_printer")(console, result)

    def demo(self) -> Any | None:
        """This benchmark's part of ``vidmem demo`` (the ``demo_module``), or ``None``.

        A demo part is a module with ``ANNOUNCE`` (the line printed before it runs),
        ``config()``, ``run(bench, base, quiet=...) -> result``, ``passed(result)``,
        ``print_result(console, result)`` and ``report_section(report, result, base,
        report_dir)``.
        """
        return importlib.import_module(self.demo_module) if self.demo_module else None

    def sim_build(self, out: Path, *, seed: int, n_cases: int | None) -> BuildSummary:
        """Write a dataset in this benchmark's layout from the sim world (``sim_builder``)."""
        return _target(self, "sim_builder")(out, seed=seed, n_cases=n_cases)


def _target(bench: Benchmark, attribute: str) -> Any:
    """Import the ``"module:function"`` a benchmark names in ``attribute``."""
    from vidmem.errors import UserInputError

    spec = getattr(bench, attribute)
    if not spec:
        raise UserInputError(f"benchmark {bench.name} has no {attribute}",
                             hint="see vidmem.benchmarks.contract.Benchmark")
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)
