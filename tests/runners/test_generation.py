"""Resumable generation: cached items are trusted only while their video exists."""

from __future__ import annotations

import sys

from vidmem.generators.requests import GenerationRequest
from vidmem.models.weights import weights_fingerprint
from vidmem.runners.generation import make_item, run_generation
from vidmem.runners.item_store import ItemStore

WRITER = "import sys, numpy as np\nfrom vidmem.io.video import write_video\nwrite_video(sys.argv[1], np.zeros((4, 32, 48, 3), np.uint8), 8)\n"


def test_deleted_output_is_generated_again(tmp_path):
    script = tmp_path / "gen.py"
    script.write_text(WRITER)
    options = {"template": f"{sys.executable} {script} {{out}}"}
    reqs = [GenerationRequest(f"t{i}", "cmbench", "p", str(tmp_path / "out" / f"t{i}.mp4")) for i in range(3)]
    items = [make_item(r, "command", options, {}) for r in reqs]
    with ItemStore(tmp_path / "items.sqlite") as store:
        assert run_generation(store, items, quiet=True).computed == 3
        assert run_generation(store, items, quiet=True).cached == 3
        (tmp_path / "out" / "t1.mp4").unlink()
        again = run_generation(store, items, quiet=True)
    assert (again.computed, again.cached) == (1, 2)
    assert (tmp_path / "out" / "t1.mp4").is_file()


def test_weights_fingerprint_changes_with_the_files(tmp_path):
    w = tmp_path / "w"
    w.mkdir()
    (w / "config.json").write_text("{}")
    first = weights_fingerprint("dinov2/base", {"weights": str(w)})
    (w / "model.safetensors").write_bytes(b"x" * 10)
    assert first is not None and weights_fingerprint("dinov2/base", {"weights": str(w)}) != first
    assert weights_fingerprint("classic/sift", {}) is None
