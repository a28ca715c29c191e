"""The identity analysis keys its stored per-story measurements on the weights' identity
(names, sizes, mtimes), not only their path: new weights behind the same folder measure
the story again instead of serving the old scores."""

from __future__ import annotations

import os

from vidmem.benchmarks.vmem_track_b.analysis_identity import _weights_fingerprints


def _settings(weights: str) -> dict:
    return {"detector": "sim-cards", "crop_embedder": "dinov3/vits16",
            "place_embedder": "mypkg.places:MegaLoc", "segmenter": "card-alpha",
            "face_embedder": None,
            "backend_options": {"dinov3/vits16": {"weights": weights}}}


def test_new_weights_in_the_same_folder_change_the_key(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"old weights")
    first = _weights_fingerprints(_settings(str(tmp_path)))
    # the card detector, its mask and a plug-in have no registered weights to look at
    assert list(first) == ["dinov3/vits16"] and first["dinov3/vits16"]
    assert _weights_fingerprints(_settings(str(tmp_path))) == first  # stable
    (tmp_path / "model.safetensors").write_bytes(b"new weights, other size")
    os.utime(tmp_path / "model.safetensors", ns=(1, 1))
    assert _weights_fingerprints(_settings(str(tmp_path))) != first
