"""Issue 15 spells the stripping analysis as a run flag: `vidmem run vmem_track_b ...
--strip-appearance` runs it after a clean run (the generic seam is tested with the toy
benchmark); `score` has no generator to regenerate with, so it has no such flag."""

from __future__ import annotations

from vidmem.cli.benchmark_commands import make_command
from vidmem.registry import BENCHMARKS


def _flags(verb: str) -> dict[str, str]:
    return {o: (p.help or "") for p in make_command(verb, BENCHMARKS.load("vmem_track_b")).params
            for o in p.opts}


def test_strip_appearance_is_a_run_flag_only():
    run = _flags("run")
    assert "--strip-appearance" in run and "--only stripping" in run["--strip-appearance"]
    assert "--strip-appearance" not in _flags("score")
