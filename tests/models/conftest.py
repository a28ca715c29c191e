"""Fixtures of the transformers backend tests: tiny random weights directories.

Each ``<name>_dir`` fixture builds the tiny model of one family with
:mod:`vidmem.models.tiny` into a temp dir, once per test module. Building needs torch
and transformers; the modules that use these fixtures skip themselves without them.
"""

from __future__ import annotations

import pytest

from vidmem.models.tiny import TINY_BUILDERS


def _tiny_weights(name: str, family: str):
    @pytest.fixture(scope="module", name=name)
    def weights_dir(tmp_path_factory):
        return TINY_BUILDERS[family](tmp_path_factory.mktemp(family))

    return weights_dir


# embedders (tests/models/test_hf_embedders.py)
dinov2_dir = _tiny_weights("dinov2_dir", "dinov2")
dinov3_dir = _tiny_weights("dinov3_dir", "dinov3")
# with a processor config: a shortest-edge 32 resize + 32x32 crop, as CLIP ships it
clip_dir = _tiny_weights("clip_dir", "clip")
siglip_dir = _tiny_weights("siglip_dir", "siglip")  # no preprocessor config: defaults
sentence_dir = _tiny_weights("sentence_dir", "sentence")  # max_seq_length 48

# detectors and segmenters (tests/models/test_hf_detect_segment.py)
owlvit_dir = _tiny_weights("owlvit_dir", "owlvit")
owlv2_dir = _tiny_weights("owlv2_dir", "owlv2")
gdino_dir = _tiny_weights("gdino_dir", "grounding-dino")
sam2_dir = _tiny_weights("sam2_dir", "sam2")
sam_dir = _tiny_weights("sam_dir", "sam")
