"""Post-scoring analyses of a run: ``vidmem analyze BENCHMARK RUN --only NAME[,NAME]``.

A benchmark declares its analyses in ``Benchmark.analyses`` (name -> module path). Each
module exposes

* ``run(run: RunDir, options: AnalysisOptions) -> dict`` -- reads the run log (and, when
  it must, the run's clips, the gold, a judge or a generator named in ``options``) and
  returns a JSON-ready result; long work should store its items in the run's item store
  under its own ``kind`` (``execute`` with ``kind=f"analysis:{name}"``) so a killed
  analysis resumes;
* ``report(report: Report, data: dict, run: RunDir) -> None`` -- adds its sections to
  the run's report;
* optionally ``PROTOCOL`` (rules, as everywhere), copied into the result, and
  ``GENERATES = True`` for an analysis that generates clips: it runs only when named in
  ``--only`` (:func:`default_analyses`).

The result is written atomically to ``RUN/analyses/<name>.json`` (``vidmem`` version,
time, options and protocol beside it), the run's report is rendered again with every
analysis that has a file, and a failed analysis is an error (non-zero exit) that leaves
the other analyses' files as they were.
"""

from __future__ import annotations

import importlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from vidmem.errors import UserInputError

__all__ = ["ANALYSES_DIR", "AnalysisOptions", "add_analysis_sections", "analysis_module",
           "default_analyses", "read_analysis", "run_analyses"]

#: the run directory's folder of analysis results
ANALYSES_DIR = "analyses"


@dataclass(frozen=True)
class AnalysisOptions:
    """What ``vidmem analyze`` hands an analysis.

    Attributes:
        opts: ``--opt key=value`` pairs (strings; the analysis parses and checks them).
        backend_options: ``--backend-opt NAME:key=value`` per backend name.
        generator: ``--generator NAME`` (with ``generator_options``), for an analysis
            that generates (``None``: none given).
        judge_cache: the judge answer cache's file (``None``: off).
        workers: ``--workers``.
        quiet: no progress bars.
    """

    opts: Mapping[str, str] = field(default_factory=dict)
    backend_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    generator: str | None = None
    generator_options: Mapping[str, Any] = field(default_factory=dict)
    judge_cache: str | None = None
    workers: int = 1
    quiet: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"opts": dict(self.opts),
                "backend_options": {k: dict(v) for k, v in self.backend_options.items()},
                "generator": self.generator, "generator_options": dict(self.generator_options),
                "judge_cache": self.judge_cache, "workers": self.workers}


def default_analyses(bench: Any) -> list[str]:
    """What ``vidmem analyze`` runs without ``--only``: every declared analysis that does not
    generate (generation is costly and needs a generator, so it is asked for by name)."""
    return [n for n in (getattr(bench, "analyses", {}) or {})
            if not getattr(analysis_module(bench, n), "GENERATES", False)]


def analysis_module(bench: Any, name: str) -> ModuleType:
    """The module of ``bench``'s analysis ``name``.

    Raises:
        UserInputError: the benchmark has no analysis of that name.
    """
    declared = dict(getattr(bench, "analyses", {}) or {})
    if name not in declared:
        known = ", ".join(sorted(declared)) or "none"
        raise UserInputError(f"benchmark {bench.name} has no analysis {name!r}",
                             hint=f"its analyses: {known}")
    return importlib.import_module(declared[name])


def _write_atomic(path: Path, data: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_analysis(run: Any, name: str) -> dict[str, Any] | None:
    """``RUN/analyses/<name>.json``, or ``None`` when the analysis has not run."""
    path = Path(run.path) / ANALYSES_DIR / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def run_analyses(bench: Any, run: Any, names: Sequence[str],
                 options: AnalysisOptions) -> dict[str, dict[str, Any]]:
    """Run the named analyses of ``run`` in order, writing each result as it finishes.

    Raises:
        UserInputError: an unknown name, or a run of another benchmark; an analysis's own
            error propagates after the earlier analyses' files were written.
    """
    from vidmem import __version__

    if run.manifest.benchmark != bench.name:
        raise UserInputError(f"{run.path} is a {run.manifest.benchmark} run, not {bench.name}",
                             hint=f"vidmem analyze {run.manifest.benchmark} {run.path} ...")
    modules = {n: analysis_module(bench, n) for n in names}  # unknown names fail first
    results: dict[str, dict[str, Any]] = {}
    for name, module in modules.items():
        data = module.run(run, options)
        record = {"analysis": name, "benchmark": bench.name, "vidmem": __version__,
                  "created": datetime.now(UTC).isoformat(timespec="seconds"),
                  "options": options.to_dict(),
                  "protocol": getattr(module, "PROTOCOL", {}), "result": data}
        _write_atomic(Path(run.path) / ANALYSES_DIR / f"{name}.json", record)
        results[name] = record
    return results


def add_analysis_sections(bench: Any, report: Any, run: Any) -> None:
    """Append the report sections of every declared analysis that has a result file."""
    for name in (getattr(bench, "analyses", {}) or {}):
        record = read_analysis(run, name)
        if record is not None:
            analysis_module(bench, name).report(report, record["result"], run)
