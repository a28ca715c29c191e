"""`vidmem calibrate BENCHMARK RUN`: the frozen similarity cuts of a run, with their ROC.

Printing only. A benchmark's analysis that calibrates a threshold freezes it in run.json
(``calibration[analysis][key]``, :meth:`vidmem.runners.store.RunDir.freeze_calibration`)
and exposes ``read_calibration(run_path) -> {key: entry} | None``, where ``key`` names
the measuring settings and ``entry["kinds"]`` maps each kind to
``Calibration.to_dict()`` or ``{"cut": None, "why": ...}`` (see
:mod:`vidmem.stats.calibration`). This command finds the declared analyses that do, and
prints per entry and kind the ROC points, the cut, its TPR and FPR, and the AUC.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from vidmem.cli.common import JsonOpt, console, print_json
from vidmem.errors import UserInputError

__all__ = ["calibrate"]


def _calibrations(bench: Any, run_path: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for name, module_path in dict(getattr(bench, "analyses", {}) or {}).items():
        reader = getattr(importlib.import_module(module_path), "read_calibration", None)
        if reader is not None and (cal := reader(run_path)) is not None:
            found[name] = cal
    return found


def _fmt(x: Any) -> str:
    return "n/a" if x is None else f"{x:.4f}" if isinstance(x, float) else str(x)


def _cut_row(thresholds: list[float | None], cut: float) -> int:
    """The ROC point whose rates the cut has: the lowest threshold still >= the cut (the
    cut may lie between two control scores).

    Example:
        >>> _cut_row([None, 0.9, 0.8, 0.3], 0.55), _cut_row([None, 0.9], 0.9)
        (2, 1)
    """
    rows = [i for i, t in enumerate(thresholds) if t is not None and t >= cut]
    return rows[-1] if rows else -1


def _print_entry(analysis: str, key: str, entry: Mapping[str, Any]) -> None:
    n = entry.get("n_controls", {})
    console.print(f"{analysis}: {key} (frozen in run.json at {entry.get('frozen_at', '?')}; "
                  f"{n.get('positive', '?')} positive, {n.get('negative', '?')} negative "
                  f"control pairs; controls sha256 {str(entry.get('controls_sha256'))[:12]})",
                  highlight=False)
    for kind, c in dict(entry.get("kinds", {})).items():
        _print_kind(analysis, kind, c)


def _print_kind(analysis: str, kind: str, c: Mapping[str, Any]) -> None:
    from rich.table import Table

    if c.get("cut") is None:
        console.print(f"{analysis} / {kind}: no cut ({c.get('why', 'not calibrated')})",
                      highlight=False)
        return
    table = Table(title=f"{analysis} / {kind}: ROC of the control pairs "
                        f"({c['n_positive']} positive, {c['n_negative']} negative)")
    for col in ("threshold", "FPR", "TPR", ""):
        table.add_column(col)
    curve = c["curve"]
    at = _cut_row(curve["thresholds"], c["cut"])
    for i, (t, fpr, tpr) in enumerate(zip(curve["thresholds"], curve["fpr"], curve["tpr"],
                                          strict=True)):
        mark = f"<- cut {c['cut']:.4f}" if i == at else ""
        table.add_row("inf" if t is None else f"{t:.4f}", f"{fpr:.4f}", f"{tpr:.4f}", mark)
    console.print(table)
    console.print(f"cut {c['cut']:.4f} (same iff score >= cut)  TPR {c['tpr']:.4f}  "
                  f"FPR {c['fpr']:.4f}  J {c['tpr'] - c['fpr']:.4f}  AUC {c['auc']:.4f}",
                  highlight=False)


def calibrate(
    benchmark: Annotated[str, typer.Argument(help="The benchmark of the run.")],
    run: Annotated[Path, typer.Argument(help="A run directory whose calibrating analysis ran.")],
    as_json: JsonOpt = False,
) -> None:
    """Show the frozen similarity cuts of RUN (per kind: ROC points, cut, TPR, FPR, AUC),
    as the run's analyses froze them in run.json before scoring any condition."""
    from vidmem.registry import BENCHMARKS
    from vidmem.runners.store import RunDir

    bench = BENCHMARKS.load(benchmark)
    opened = RunDir.open(run)
    if opened.manifest.benchmark != bench.name:
        raise UserInputError(f"{run} is a {opened.manifest.benchmark} run, not {bench.name}",
                             hint=f"vidmem calibrate {opened.manifest.benchmark} {run}")
    found = _calibrations(bench, opened.path)
    if not found:
        declared = ", ".join(getattr(bench, "analyses", {}) or {}) or "none"
        raise UserInputError(f"{run}: no calibration written yet",
                             hint=f"run the calibrating analysis first: vidmem analyze "
                                  f"{bench.name} {run} --only NAME (its analyses: {declared})")
    if as_json:
        print_json(found)
        return
    for analysis, entries in found.items():
        for key, entry in entries.items():
            _print_entry(analysis, key, entry)
