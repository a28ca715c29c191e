"""The MIST part of `vidmem demo`: reveal rises under M3-Agent by the judge and by the sim
truth while setup stays flat; a second run is served from the stores and the cache."""

from __future__ import annotations

import pytest

from vidmem.benchmarks.mist import BENCHMARK


@pytest.mark.slow  # six sim cases, baseline and M3-Agent (~40 s)
def test_demo_part_passes_and_reuses_its_run(tmp_path):
    part = BENCHMARK.demo()
    result = part.run(BENCHMARK, tmp_path, quiet=True)
    assert part.passed(result), result
    j, t = result["judge"], result["truth"]
    assert j["diagnosis_rewrite"]["best"] > j["baseline"]["first"]
    assert t["diagnosis_rewrite"]["best"] > t["baseline"]["first"]
    assert j["diagnosis_rewrite"]["setup"] == j["baseline"]["setup"] == 1.0
    assert len(result["running_best"]) == part.K
    assert result["running_best"] == sorted(result["running_best"])  # a running best
    again = part.run(BENCHMARK, tmp_path, quiet=True)
    assert again["judge"] == j and again["judge_answers"].get("asked", 0) == 0
