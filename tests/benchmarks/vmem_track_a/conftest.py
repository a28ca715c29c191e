"""Fixtures of the Track-A tests: writable copies of the official sample gold (two films,
CC BY 4.0, see data/vmem_track_a_sample/ATTRIBUTION.md) to break one thing at a time.

This folder is put on ``sys.path`` so that the tests (and the registry, for the
test-only benchmark) import :mod:`track_a_support` by name.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

HERE = str(Path(__file__).parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from track_a_support import SAMPLE  # noqa: E402


@pytest.fixture()
def sample(tmp_path) -> Path:
    """A writable copy of the sample root (``<copy>/BlenderOpenMovies/<film>/gold``), with
    the attribution next to it."""
    root = tmp_path / "trackA"
    shutil.copytree(SAMPLE, root)
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    assert (root / "ATTRIBUTION.md").is_file()
    return root
