"""`vidmem run mist` refuses a judge that cannot load before it generates anything, and the
sim builder writes the deck the offline judge needs."""

from __future__ import annotations

import shutil

import pytest

from vidmem.benchmarks.mist.sim_build import CARDS_DIR, build_mist
from vidmem.cli import main


def test_a_judge_without_its_deck_fails_before_any_clip_is_generated(tmp_path, capsys):
    root = tmp_path / "sim"
    build_mist(root, seed=0, n_cases=1)
    assert (root / CARDS_DIR / "deck.json").is_file()
    shutil.rmtree(root / CARDS_DIR)  # with it the run finds its deck by itself (sim_deck)
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as exc:
        main(["run", "mist", "--root", str(root), "--generator", "sim", "--out", str(out),
              "--judge-cache", "off", "--quiet"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "card deck" in err and f"{CARDS_DIR}" in err
    assert not list(out.rglob("*.mp4"))  # nothing was generated
