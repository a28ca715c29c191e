"""Every script under ``benchmarks/`` runs: each is started as its own process with its
``--tiny`` smoke sizes, must exit 0 and must print its numbers.

A benchmark script is not imported by anything else, so an API change that breaks one
(``bench_cmbench.py`` calling a removed ``runner._scorer``) shows only when it is run;
this test runs them all, two at a time, in about 70 s on two free cores (about 140 s of
CPU). A new script must get a line in :data:`SCRIPTS`: the test refuses a script it does
not know.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"

#: script -> (its smoke-run arguments, {tmp} standing for a scratch folder; what its
#: output must hold). Most take ``--tiny``; the others are given small sizes.
SCRIPTS: dict[str, tuple[tuple[str, ...], str]] = {
    "bench_clip_quality.py": (("--tiny",), r"projected for \d+ clips"),
    "bench_cmbench.py": (("--tiny", "--workdir", "{tmp}"), r'"frames_per_second": [\d.]+'),
    "bench_embed.py": (("--tiny",), r"speedup\s+[\d.]+ x"),
    "bench_executor.py": (("--tiny", "--workdir", "{tmp}"), r'"byte_identical": true'),
    "bench_generators.py": (("--items", "1", "--frames", "5", "--steps", "1"),
                            r"flux2-wan \(3 refs\)\s+[\d.]+"),
    "bench_halflife_recovery.py": (("--images", "1", "--taus", "6", "--fps", "2", "--size",
                                    "64x36", "--workdir", "{tmp}"), r"model-level \(vidmem\)\s+ranked"),
    "bench_judge.py": (("--tiny",),
                       r'"cached_rescoring": "track_b_segment".*"cpu_ms_per_question": [\d.]+'),
    "bench_memory_loop.py": (("--tiny", "--workdir", "{tmp}"), r"perfect\s+fidelity [\d.]+"),
    "bench_memory_query.py": (("--tiny",), r"recency\s+\d+\s+[\d.]+\s+[\d.]+"),
    "bench_sim.py": (("--tiny", "--workdir", "{tmp}"), r"cmbench total .*\s[\d.]+ s"),
    "bench_track_a.py": (("--tiny", "--out", "{tmp}"), r'"reference_questions": [1-9]\d*'),
    "bench_track_b_loop.py": (("--tiny", "--out", "{tmp}"),
                              r"clips decoded [1-9]\d* \(of \d+ clips\)"),
    "bench_track_b_stats.py": (("--tiny",), r"total \(wall\)\s+[\d.]+ s"),
    "bench_video.py": (("--tiny", "--workdir", "{tmp}"),
                       r"read_frames, 8 frames spread over \d+s\s+[\d.]+"),
}
#: one script's limit
TIMEOUT_S = 300


def _run(script: str, tmp: Path) -> str | None:
    """Run one script; return why it failed, or ``None``."""
    args, expected = SCRIPTS[script]
    work = tmp / script.removesuffix(".py")
    work.mkdir()
    cmd = [sys.executable, str(BENCHMARKS / script), *(a.format(tmp=work) for a in args)]
    # one thread per process: two scripts share the cores; no hub look-ups
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1"}
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, env=env,
                              cwd=work)
    except subprocess.TimeoutExpired:
        return f"{script}: still running after {TIMEOUT_S} s"
    if done.returncode != 0:
        return f"{script}: exit {done.returncode}\n{done.stderr[-3000:]}"
    if not re.search(expected, done.stdout, re.DOTALL):
        return f"{script}: no /{expected}/ in its output:\n{done.stdout[-2000:]}"
    return None


def test_every_benchmark_script_runs_with_tiny_sizes(tmp_path):
    found = sorted(p.name for p in BENCHMARKS.glob("*.py"))
    assert found == sorted(SCRIPTS), "a benchmark script without a line in SCRIPTS (or gone)"
    # the longest first (Ray's start, the tiny detectors), so two workers end together
    first = ["bench_executor.py", "bench_cmbench.py", "bench_track_a.py", "bench_generators.py"]
    order = first + [s for s in found if s not in first]
    with ThreadPoolExecutor(max_workers=2) as pool:
        problems = [p for p in pool.map(lambda s: _run(s, tmp_path), order) if p]
    assert not problems, "\n\n".join(problems)
