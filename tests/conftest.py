"""Test-wide settings: never touch the network, never write to the user's caches."""

from __future__ import annotations

import os

# Set before any test imports transformers/huggingface_hub: no test may download.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("MPLBACKEND", "Agg")

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Point vidmem's content-hash cache at a per-session temp dir."""
    monkeypatch.setenv("VIDMEM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "vidmem-cache"))
