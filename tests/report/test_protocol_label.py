"""A run that stopped before scoring is not labelled non-official: it has no numbers,
and the preset it was started with is named (issue 26)."""

from __future__ import annotations

import pytest

from vidmem.registry import BENCHMARKS
from vidmem.runners.store import RunDir, RunManifest

BENCHES = ["cmbench", "memory_loop", "mist", "vmem_track_a", "vmem_track_b"]


def _dead_run(root, bench: str, preset: str) -> RunDir:
    manifest = RunManifest(benchmark=bench, benchmark_version="1", command=["pytest"],
                           config={"scorer": {"preset": preset}})
    run = RunDir.create(root, manifest)
    del run  # the process died before scoring: no summary.json, lock released
    return RunDir.open(root)


@pytest.mark.parametrize("bench", BENCHES)
def test_an_official_run_without_scores_is_not_called_non_official(tmp_path, bench):
    run = _dead_run(tmp_path / "run", bench, "official")
    rep = BENCHMARKS.load(bench).report(run)
    assert "non-official" not in rep.subtitle.lower()
    assert "did not finish scoring" in rep.subtitle and "'official'" in rep.subtitle
    assert all("non-official" not in n.text for n in rep.notices)
    assert any(n.level == "error" for n in rep.notices)  # no numbers: said as an error
    assert rep.meta["status"] == "interrupted"
