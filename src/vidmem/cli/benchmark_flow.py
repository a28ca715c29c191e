"""The flow shared by `vidmem score|run <benchmark>`: open the run, generate, score, report.

Each benchmark's CLI module parses its options, builds its scorer config and hands the
rest to :func:`score_or_run` with its runner module (``vidmem.runners.<benchmark>``),
which provides ``open_run``, ``generate``, ``score``, ``record_backends`` and
``print_summary``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from vidmem.cli.common import console, print_json
from vidmem.errors import UserInputError

__all__ = ["score_or_run"]


def score_or_run(
    runner: ModuleType,
    ds: Any,
    *,
    videos: Path | None,
    out: Path,
    gen: tuple[str, dict[str, Any]] | None,
    cfg: Any,
    allow_missing: bool,
    find_videos: Callable[[Any, Path], Any],
    failed_what: str,
    failed_hint: str,
    workers: int,
    resume: bool,
    overwrite: bool,
    quiet: bool,
    as_json: bool,
    score_options: Mapping[str, Any] | None = None,
    print_options: Mapping[str, Any] | None = None,
) -> None:
    """Score ``videos`` (``gen`` is None) or generate them with ``gen`` and score them.

    Args:
        runner: the benchmark's runner module.
        ds: the loaded dataset.
        videos: folder of videos to score (bring your own), or None with ``gen``.
        out: run directory.
        gen: ``(generator name, options)`` to generate the videos first, or None.
        cfg: the scorer config.
        allow_missing: score what exists instead of refusing missing videos.
        find_videos: ``find_videos(ds, folder)`` -> a scan with ``raise_if_missing``;
            checked before a run directory exists, so a retry needs no ``--resume``.
        failed_what: what failed to generate, e.g. ``"continuations"``.
        failed_hint: the hint when generation failed.
        workers, resume, overwrite, quiet, as_json: the CLI options of that name.
        score_options: extra keyword arguments of ``runner.score``.
        print_options: extra keyword arguments of ``console.print`` for the report line.

    Raises:
        UserInputError: videos missing, or generation failed (without ``allow_missing``).
    """
    from vidmem.runners.reporting import render_run_report

    extra: dict[str, Any] = {"allow_missing": allow_missing}
    if gen:
        extra["generator"] = {"name": gen[0], "options": gen[1]}
    else:
        videos = Path(videos).resolve()  # type: ignore[arg-type]
        extra["videos"] = str(videos)
        if not allow_missing:  # fail before a run directory exists, so a retry needs no --resume
            scan = find_videos(ds, videos)
            if scan.missing:
                scan.raise_if_missing()
    run = runner.open_run(ds, out, cfg, extra, resume=resume, overwrite=overwrite, argv=sys.argv)
    quiet = quiet or as_json
    if gen:
        g = runner.generate(ds, run, gen[0], gen[1], workers=workers, quiet=quiet)
        videos = g["dir"]
        if g["summary"]["errors"] and not allow_missing:
            first = g["errors"][0] if g["errors"] else ("?", "?")
            raise UserInputError(f"{g['summary']['errors']} {failed_what} failed to generate; "
                                 f"first: {first[0]}: {first[1]}", hint=failed_hint)
    result = runner.score(ds, run, videos, cfg, allow_missing=allow_missing, workers=workers,
                          quiet=quiet, **dict(score_options or {}))
    runner.record_backends(run, cfg)
    result["report"] = {k: str(v) for k, v in render_run_report(run.path).items()}
    if as_json:
        print_json(result)
    elif not quiet:
        runner.print_summary(console, result, run)
        console.print(f"report: {result['report']['html']}", **dict(print_options or {}))
