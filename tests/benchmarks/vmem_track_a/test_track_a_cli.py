"""The registered Track-A benchmark through the ordinary CLI: validate, stats, and the verbs
a benchmark that generates nothing has (run takes --videos, requests is refused)."""

from __future__ import annotations

import json

import pytest
from track_a_support import SPRING

from vidmem.cli import main


def _cli(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_validate_and_stats_of_a_sample_film(capsys):
    code, out, err = _cli(capsys, "validate", "vmem_track_a", "--gold", str(SPRING), "--json")
    assert code in (0, None), err
    code, out, err = _cli(capsys, "stats", "vmem_track_a", "--gold", str(SPRING), "--json")
    assert code in (0, None), err
    stats = json.loads(out)
    # spring (zh): 44 segments, 2 characters, 4 props, 5 locations (counted by hand, see test_stats)
    assert stats["films"] == 1 and stats["segments"] == 44
    assert stats["entities"] == {"character": 2, "prop": 4, "location": 5, "total": 11}


def test_run_scores_given_videos_and_requests_is_refused(capsys, tmp_path):
    code, out, _ = _cli(capsys, "run", "vmem_track_a", "--help")
    assert code in (0, None) and "--videos" in out and "--gold" in out and "--generator" not in out
    code, _, err = _cli(capsys, "requests", "vmem_track_a", "--gold", str(SPRING), "--out",
                        str(tmp_path / "m.jsonl"))
    assert code != 0 and "generates nothing" in err


def test_a_missing_video_exits_non_zero_naming_the_film(capsys, tmp_path):
    videos = tmp_path / "videos"
    videos.mkdir()
    code, _, err = _cli(capsys, "run", "vmem_track_a", "--gold", str(SPRING), "--videos", str(videos),
                        "--out", str(tmp_path / "run"))
    assert code != 0 and "spring" in err
