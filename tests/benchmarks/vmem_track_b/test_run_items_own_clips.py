"""A copied run reads its own clips: `scored_items` points every stored clip path at the
copy's `rollouts/` folder when the copy holds that file, even while the original run's
files still exist (a plain `shutil.copytree`, without the conftest's path rewriting)."""

from __future__ import annotations

import shutil
from pathlib import Path

from vidmem.benchmarks.vmem_track_b.run_items import scored_items
from vidmem.runners.store import RunDir


def test_a_plain_copy_of_a_run_reads_its_own_clips(track_b_none_run, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(track_b_none_run.run, copy)
    original = {p for it in scored_items(RunDir.open(track_b_none_run.run))
                for paths in it.request["clips"].values() for p in paths}
    assert original and all(str(track_b_none_run.run) in p for p in original)
    got = [p for it in scored_items(RunDir.open(copy))
           for paths in it.request["clips"].values() for p in paths]
    assert len(got) == len(original) == 42
    assert all(Path(p).is_file() and Path(p).is_relative_to(copy) for p in got)
    # a clip the copy lacks falls back to the stored path (brought rollouts live elsewhere)
    Path(got[0]).unlink()
    again = [p for it in scored_items(RunDir.open(copy))
             for paths in it.request["clips"].values() for p in paths]
    assert again[0] in original and again[1:] == got[1:]
