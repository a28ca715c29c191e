"""The generic ``vidmem stats <benchmark>`` verb, through test-only benchmarks (the
Track-A benchmark class is built elsewhere): JSON and text output, ``--gold``/``--root``,
a benchmark option (``--lang``), and a benchmark without corpus statistics."""

from __future__ import annotations

import json

import pytest
from track_a_support import CAMINANDES, SPRING

from vidmem.benchmarks.vmem_track_a.gold import load_film
from vidmem.benchmarks.vmem_track_a.stats import corpus_stats
from vidmem.cli import main
from vidmem.registry import BENCHMARKS


@pytest.fixture(scope="module", autouse=True)
def registered():
    BENCHMARKS.add("gold_stats_test", "track_a_support:BENCHMARK", "a test-only benchmark")
    BENCHMARKS.add("gold_nostats_test", "track_a_support:NO_STATS", "a test-only benchmark")
    yield
    BENCHMARKS._entries.pop("gold_stats_test")
    BENCHMARKS._entries.pop("gold_nostats_test")


def _cli(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_stats_json(capsys):
    code, out, err = _cli(capsys, "stats", "gold_stats_test", "--gold", str(SPRING), "--json")
    assert code in (0, None), err
    assert json.loads(out) == corpus_stats([load_film(SPRING)])
    code, out, err = _cli(capsys, "stats", "gold_stats_test", "--root", str(CAMINANDES),
                          "--lang", "en", "--json")
    assert code in (0, None), err
    data = json.loads(out)
    assert (data["films"], data["segments"]) == (1, 16)
    assert data["entities"] == {"character": 1, "prop": 3, "location": 1, "total": 5}


def test_stats_text(capsys):
    code, out, err = _cli(capsys, "stats", "gold_stats_test", "--gold", str(SPRING))
    assert code in (0, None), err
    lines = out.splitlines()
    assert "films: 1" in lines and "segments: 44" in lines and "hours: 0.13" in lines
    assert "entities: character 2, prop 4, location 5, total 11" in lines
    assert "by_dataset:" in lines and "  BlenderOpenMovies:" in lines


def test_stats_of_gold_with_errors_exits_2_with_the_problems(capsys):
    code, _, err = _cli(capsys, "stats", "gold_stats_test", "--gold", str(SPRING), "--lang", "en")
    assert code == 2
    assert "no 'en' variant" in err


def test_a_benchmark_without_corpus_statistics_says_so(capsys):
    code, _, err = _cli(capsys, "stats", "gold_nostats_test", "--gold", str(SPRING))
    assert code == 2
    assert "benchmark gold_nostats_test has no corpus statistics" in err


def test_unknown_benchmark_gets_did_you_mean(capsys):
    code, _, err = _cli(capsys, "stats", "gold_stats_tst", "--gold", str(SPRING))
    assert code == 2
    assert "did you mean 'gold_stats_test'" in err
