"""`vidmem VERB --help` lists the benchmarks by name, each with its one line, and only
those the verb does something for (issue 26, "Help shows the benchmarks")."""

from __future__ import annotations

import re

import pytest

from vidmem.cli import main
from vidmem.registry import BENCHMARKS

#: which benchmark each verb is for, from the benchmarks' own declarations: Track-A
#: generates nothing (no requests); CMBench and the memory loop have no corpus statistics;
#: only Track-B declares post-scoring analyses
EXPECTED = {
    "run": {"cmbench", "memory_loop", "mist", "vmem_track_a", "vmem_track_b"},
    "score": {"cmbench", "memory_loop", "mist", "vmem_track_a", "vmem_track_b"},
    "validate": {"cmbench", "memory_loop", "mist", "vmem_track_a", "vmem_track_b"},
    "requests": {"cmbench", "memory_loop", "mist", "vmem_track_b"},
    "stats": {"mist", "vmem_track_a", "vmem_track_b"},
    "analyze": {"vmem_track_b"},
}


def _listed(capsys, monkeypatch, verb: str) -> dict[str, str]:
    """``name -> one line`` of the Commands panel of ``vidmem VERB --help``."""
    monkeypatch.setenv("COLUMNS", "200")  # one row per command, nothing wrapped
    monkeypatch.setenv("TERMINAL_WIDTH", "200")
    with pytest.raises(SystemExit):
        main([verb, "--help"])
    out = capsys.readouterr().out
    panel = out[out.index("Commands"):]
    rows = {}
    for line in panel.splitlines():
        m = re.match(r"\W*(\S+)\s{2,}(.+?)\s*\W*$", line)
        if m and "Commands" not in line:
            rows[m.group(1)] = m.group(2)
    return rows


@pytest.mark.parametrize("verb", sorted(EXPECTED))
def test_help_lists_each_supporting_benchmark_by_name_with_its_line(capsys, monkeypatch, verb):
    rows = _listed(capsys, monkeypatch, verb)
    assert set(rows) == EXPECTED[verb]  # no `command`, no unsupported benchmark
    for name, line in rows.items():
        assert line == BENCHMARKS.get(name).summary


def test_unadvertised_verb_still_says_why(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["requests", "vmem_track_a", "--root", "x", "--out", "y"])
    assert exc.value.code != 0
    assert "generates nothing" in capsys.readouterr().err
