"""``vidmem.models.tiny``: a tiny model for every transformers backend in the catalog.

Each registered backend of the ``models`` extra gets its tiny model from
:func:`build_tiny`, is loaded by name through :func:`load_backend` with only
``weights=<dir>`` (judges also with a short ``max_new_tokens``), and answers one
call on a small input in each of its roles.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys

import numpy as np
import pytest

from vidmem.errors import UnknownNameError, UserInputError
from vidmem.models import tiny
from vidmem.models.loading import load_backend
from vidmem.models.protocols import Detection, JudgeRequest
from vidmem.registry import BACKENDS

MODEL_BACKENDS = [e.name for e in BACKENDS.entries() if e.extra == "models"]
FRAME = np.random.default_rng(0).integers(0, 256, size=(48, 80, 3), dtype=np.uint8)


def _roles(name: str) -> list[str]:
    return str(BACKENDS.get(name).meta.get("role", "")).split(",")


def test_the_catalog_has_transformers_backends():
    assert {"dinov2/small", "owlvit/base-patch32", "sam2/base-plus", "judge/transformers"} <= set(
        MODEL_BACKENDS
    )


def test_every_transformers_family_has_a_builder():
    families = {name.split("/", 1)[0] for name in MODEL_BACKENDS}
    assert families <= set(tiny.TINY_BUILDERS)


def test_import_is_cheap():
    code = "import sys, vidmem.models.tiny; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_unknown_and_weight_free_backends_are_refused(tmp_path):
    with pytest.raises(UnknownNameError, match="dinov2/small"):
        tiny.build_tiny("dinov2/smal", tmp_path)
    for name in ("classic/sift", "judge/openai"):
        with pytest.raises(UserInputError, match="no tiny model") as err:
            tiny.build_tiny(name, tmp_path / "x")
        assert "owlvit/base-patch32" in err.value.hint
    assert not (tmp_path / "x").exists()
    with pytest.raises(UserInputError, match="family must be one of"):
        tiny.tiny_qwen_vl(tmp_path, family="llava")


# -- the rest needs torch + transformers ------------------------------------------------


@pytest.fixture(scope="module")
def torch():
    pytest.importorskip("transformers")
    return pytest.importorskip("torch")


@pytest.mark.models
@pytest.mark.parametrize("name", MODEL_BACKENDS)
def test_build_tiny_loads_and_runs(name, tmp_path, torch):
    path = tiny.build_tiny(name, tmp_path / "w")
    assert path == tmp_path / "w" and (path / "config.json").is_file()
    options = {"weights": str(path)}
    if "judge" in _roles(name):
        options["max_new_tokens"] = 8  # a random model never stops by itself: keep it short
    backend = load_backend(name, options)
    info = backend.info()
    assert info.name == name and info.weights == str(path)
    for role in _roles(name):
        if role == "image_embedder":
            out = backend.embed_images([FRAME])
            assert out.shape[0] == 1 and out.dtype == np.float32
            np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
        elif role == "text_embedder":
            out = backend.embed_texts(["a red cat"])
            assert out.shape[0] == 1 and out.dtype == np.float32
        elif role == "detector":
            (dets,) = backend.detect([FRAME], text_queries=["a cat"], threshold=0.0)
            assert all(isinstance(d, Detection) for d in dets)
        elif role == "segmenter":
            (mask,) = backend.segment([FRAME], [(4, 4, 40, 30)])
            assert mask.shape == FRAME.shape[:2] and mask.dtype == np.bool_
        elif role == "judge":
            request = JudgeRequest("tiny", 'Answer {"ok": true}.', images=(FRAME,))
            assert backend.judge(request).status in ("ok", "unparsable")
        else:
            pytest.fail(f"no check for role {role!r}")


@pytest.mark.models
def test_builds_are_deterministic_and_keep_the_callers_random_state(tmp_path, torch):
    def digest(path):
        return hashlib.sha256((path / "model.safetensors").read_bytes()).hexdigest()

    torch.manual_seed(7)
    want = torch.rand(3)
    torch.manual_seed(7)
    a = tiny.tiny_sam2(tmp_path / "a")
    assert torch.equal(torch.rand(3), want)
    b = tiny.build_tiny("sam2/large", tmp_path / "b")
    c = tiny.tiny_sam2(tmp_path / "c", seed=1)
    assert digest(a) == digest(b) != digest(c)


@pytest.mark.models
def test_qwen_judges_get_their_family(tmp_path, torch):
    import json

    for name, family in [
        ("judge/transformers", "qwen2_vl"),
        ("judge/qwen2.5-vl-7b", "qwen2_5_vl"),
        ("judge/qwen3-vl-8b", "qwen3_vl"),
    ]:
        path = tiny.build_tiny(name, tmp_path / family)
        assert json.loads((path / "config.json").read_text())["model_type"] == family


@pytest.mark.models
def test_tiny_official_cmbench(tmp_path, torch):
    weights = tiny.tiny_official_cmbench(tmp_path / "cmbench")
    preset = {"owlvit/base-patch32": "detector", "sam2/base-plus": "segmenter"}
    preset["dinov2/base"] = "image_embedder"
    assert set(weights) == set(preset)
    for name, role in preset.items():
        backend = load_backend(name, {"weights": weights[name]}, role=role)
        assert backend.info().weights == weights[name]
        assert backend.info().official is True
