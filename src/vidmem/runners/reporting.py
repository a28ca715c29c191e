"""Render a run directory's report from its run log (never re-running models)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vidmem.registry import BENCHMARKS
from vidmem.runners.store import RunDir

#: runs that are not benchmarks but still have a report
_SPECIAL = {"demo": "vidmem.runners.demo:build_report"}


def _builder(benchmark: str) -> Any:
    if benchmark in _SPECIAL:
        module, _, attr = _SPECIAL[benchmark].partition(":")
        import importlib

        return getattr(importlib.import_module(module), attr)
    return BENCHMARKS.load(benchmark).report


def render_run_report(run_dir: str | Path) -> dict[str, Path]:
    """Build the run's report and write ``report/report.md`` and ``report/report.html``."""
    from vidmem.report import render
    from vidmem.report.labels import name_generator_and_judge

    run = RunDir.open(run_dir)
    report = _builder(run.manifest.benchmark)(run)
    name_generator_and_judge(report, run.manifest)
    if run.manifest.benchmark not in _SPECIAL:
        from vidmem.runners.analysis_run import add_analysis_sections

        add_analysis_sections(BENCHMARKS.load(run.manifest.benchmark), report, run)
    return render(report, run.report_dir)
