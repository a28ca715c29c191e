"""The transformers embedders, on tiny random models built from configs.

Each model is built by :mod:`vidmem.models.tiny` into a temp dir (with a tiny tokenizer
where texts are involved) and loaded back through the backend's public constructor with
``weights=<dir>``: the same ``from_pretrained`` path a user takes, with no network.
"""

from __future__ import annotations

import json
import re
import sys
from functools import partial

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from vidmem.errors import MissingDependencyError, UserInputError  # noqa: E402
from vidmem.models.backends import hf_images  # noqa: E402
from vidmem.models.backends.clip import ClipBackend, Siglip2BasePatch16, SiglipBasePatch16  # noqa: E402
from vidmem.models.backends.dinov2 import Dinov2Embedder, Dinov2Large  # noqa: E402
from vidmem.models.backends.dinov3 import Dinov3Embedder  # noqa: E402
from vidmem.models.backends.sentence import SentenceEmbedder  # noqa: E402
from vidmem.models.protocols import ImageEmbedder, TextEmbedder  # noqa: E402

pytestmark = pytest.mark.models

TEXTS = ["a photo of a red cat", "the blue car", "a dog on the left of a green tree", "tree"]


# -- inputs (the tiny models' *_dir fixtures are in conftest.py) -------------------------


def _images(seed=0):
    rng = np.random.default_rng(seed)
    sizes = [(40, 60), (75, 33), (50, 50), (91, 120)]
    return [rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8) for h, w in sizes]


# -- shared checks ---------------------------------------------------------------------


def _check_embedding_contract(make, method, items, dim, weights):
    """Shape, dtype, unit norms, determinism, batch invariance and the run-log record.

    ``make(batch_size=...)`` builds the backend; its method named ``method`` embeds ``items``.
    """

    def embed(backend, xs):
        return getattr(backend, method)(xs)

    batched4, single = make(batch_size=4), make(batch_size=1)
    a = embed(batched4, items)
    assert a.shape == (len(items), dim)
    assert a.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(a, embed(batched4, items))  # deterministic
    np.testing.assert_allclose(embed(single, items), a, atol=1e-5)  # 4 singles == one batch of 4
    assert not np.allclose(a[0], a[1], atol=1e-3), "different inputs gave the same vector"
    info = batched4.info()
    json.dumps(info.to_dict())  # the run log stores it
    assert info.weights == str(weights)
    assert re.fullmatch(r"[0-9a-f]{64}", info.weights_sha256 or "")
    assert info.settings["dim"] == dim
    empty = embed(batched4, [])
    assert empty.shape == (0, dim) and empty.dtype == np.float32
    return batched4, a


# -- DINOv2 ----------------------------------------------------------------------------


def test_dinov2_contract(dinov2_dir):
    make = partial(Dinov2Embedder, weights=dinov2_dir, image_size=28)
    emb, _ = _check_embedding_contract(make, "embed_images", _images(), 32, dinov2_dir)
    assert isinstance(emb, ImageEmbedder)
    assert emb.info().official is True
    assert emb.info().name == "dinov2/small"
    assert emb.settings["resize_shorter_side"] == 32 and emb.settings["center_crop"] == 28


def test_dinov2_feature_is_normalised_pooler_output(dinov2_dir):
    emb = Dinov2Embedder(weights=dinov2_dir, image_size=28)
    images = _images(1)
    with torch.inference_mode():
        out = emb.model(pixel_values=torch.from_numpy(emb.preprocess(images)))
    ref = out.pooler_output.numpy()
    cls_after_layernorm = out.last_hidden_state[:, 0].numpy()
    np.testing.assert_allclose(ref, cls_after_layernorm, atol=1e-6)
    ref = ref / np.linalg.norm(ref, axis=1, keepdims=True)
    np.testing.assert_allclose(emb.embed_images(images), ref, atol=1e-5)


@pytest.mark.parametrize(("image_size", "resize_size"), [(28, None), (224, None)])
def test_dinov2_preprocessing_matches_official_processor(dinov2_dir, image_size, resize_size):
    proc_cls = getattr(transformers, "BitImageProcessorPil", None)
    if proc_cls is None:
        pytest.skip("this transformers has no BitImageProcessorPil")
    emb = Dinov2Embedder(weights=dinov2_dir, image_size=image_size, resize_size=resize_size)
    official = proc_cls(
        size={"shortest_edge": emb.resize_size},
        crop_size={"height": image_size, "width": image_size},
        resample=3,  # bicubic
        image_mean=list(hf_images.IMAGENET_MEAN),
        image_std=list(hf_images.IMAGENET_STD),
    )
    rng = np.random.default_rng(3)
    images = [rng.integers(0, 256, size=s, dtype=np.uint8) for s in [(300, 200, 3), (64, 97, 3)]]
    out = official(images=images, return_tensors="np", input_data_format="channels_last")
    want = out["pixel_values"]
    np.testing.assert_allclose(emb.preprocess(images), want, atol=1e-5)


def test_dinov2_variant_classes_name_their_default_weights():
    assert Dinov2Large.name == "dinov2/large"
    assert Dinov2Large.default_weights == "facebook/dinov2-large"


def test_dinov2_rejects_image_size_not_multiple_of_patch(dinov2_dir):
    with pytest.raises(UserInputError, match="multiple of the patch size 14"):
        Dinov2Embedder(weights=dinov2_dir, image_size=30)


# -- DINOv3 ----------------------------------------------------------------------------


def test_dinov3_contract(dinov3_dir):
    make = partial(Dinov3Embedder, weights=dinov3_dir, image_size=32)
    emb, _ = _check_embedding_contract(make, "embed_images", _images(), 32, dinov3_dir)
    assert isinstance(emb, ImageEmbedder)
    assert emb.info().official is True
    assert emb.info().name == "dinov3/vits16"


def test_dinov3_preprocessing_resizes_to_a_square_and_normalises(dinov3_dir):
    emb = Dinov3Embedder(weights=dinov3_dir, image_size=32)
    flat = np.full((50, 90, 3), 128, np.uint8)
    x = emb.preprocess([flat])
    assert x.shape == (1, 3, 32, 32) and x.dtype == np.float32
    want = (128 / 255 - np.asarray(hf_images.IMAGENET_MEAN)) / np.asarray(hf_images.IMAGENET_STD)
    np.testing.assert_allclose(x[0].mean(axis=(1, 2)), want, atol=1e-5)


# -- CLIP / SigLIP -----------------------------------------------------------------------


def test_clip_image_contract(clip_dir):
    make = partial(ClipBackend, weights=clip_dir)
    emb, _ = _check_embedding_contract(make, "embed_images", _images(), 16, clip_dir)
    assert isinstance(emb, ImageEmbedder) and isinstance(emb, TextEmbedder)
    assert emb.info().official is False
    assert emb.settings["image_size"] == 32 and emb.settings["interpolate_pos_encoding"] is False
    assert emb.settings["max_text_length"] == 77


def test_clip_text_contract(clip_dir):
    make = partial(ClipBackend, weights=clip_dir)
    _check_embedding_contract(make, "embed_texts", TEXTS, 16, clip_dir)


def test_clip_image_size_override_interpolates_positions(clip_dir):
    emb = ClipBackend(weights=clip_dir, image_size=48)
    assert emb.preprocess(_images()[:1]).shape == (1, 3, 48, 48)
    assert emb.settings["interpolate_pos_encoding"] is True
    out = emb.embed_images(_images())
    assert out.shape == (4, 16)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)


def test_siglip_image_and_text_contract(siglip_dir):
    make = partial(SiglipBasePatch16, weights=siglip_dir)
    emb, _ = _check_embedding_contract(make, "embed_images", _images(), 32, siglip_dir)
    _check_embedding_contract(make, "embed_texts", TEXTS, 32, siglip_dir)
    assert emb.info().name == "siglip/base-patch16-224"
    assert emb.settings["text_padding"] == "max_length" and emb.max_text_length == 64
    assert emb.tokenize(["a cat"])["input_ids"].shape == (1, 64)
    assert "attention_mask" not in emb.tokenize(["a cat"])


def test_siglip2_lowercases_texts(siglip_dir):
    emb = Siglip2BasePatch16(weights=siglip_dir)
    assert emb.info().name == "siglip2/base-patch16-224"
    assert emb.settings["lowercase_text"] is True
    a, b = emb.embed_texts(["A Red CAT", "a red cat"])
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_clip_text_needs_a_tokenizer(tmp_path, clip_dir):
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("config.json", "model.safetensors"):
        (bare / name).write_bytes((clip_dir / name).read_bytes())
    emb = ClipBackend(weights=bare)
    assert emb.embed_images(_images()[:1]).shape == (1, 16)  # images need no tokenizer
    with pytest.raises(MissingDependencyError, match="tokenizer"):
        emb.embed_texts(["a cat"])


# -- sentence ----------------------------------------------------------------------------


def test_sentence_contract(sentence_dir):
    make = partial(SentenceEmbedder, weights=sentence_dir)
    emb, _ = _check_embedding_contract(make, "embed_texts", TEXTS, 32, sentence_dir)
    assert isinstance(emb, TextEmbedder)
    assert emb.info().name == "sentence/all-minilm-l6-v2"
    assert emb.max_seq_length == 48  # from sentence_bert_config.json


def test_sentence_is_mask_weighted_mean(sentence_dir):
    emb = SentenceEmbedder(weights=sentence_dir)
    inputs = emb.tokenize(["the red car"])
    with torch.inference_mode():
        hidden = emb.model(**inputs).last_hidden_state[0].numpy()
    ref = hidden.mean(axis=0)  # a single text has no padding
    ref /= np.linalg.norm(ref)
    np.testing.assert_allclose(emb.embed_texts(["the red car"])[0], ref, atol=1e-5)


# -- errors ------------------------------------------------------------------------------


def test_missing_weights_dir_is_a_clear_error(tmp_path):
    with pytest.raises(
        MissingDependencyError, match=r"backend 'dinov2/small': weights '.*nope' not found"
    ):
        Dinov2Embedder(weights=tmp_path / "nope")


def test_missing_default_weights_says_how_to_fetch(monkeypatch, tmp_path):
    monkeypatch.setenv("VIDMEM_MODEL_DIR", str(tmp_path))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(MissingDependencyError, match="facebook/dinov2-small' not found") as err:
        Dinov2Embedder()
    assert "vidmem models fetch dinov2/small" in str(err.value)


def test_dir_without_config_is_a_clear_error(tmp_path):
    with pytest.raises(MissingDependencyError, match="has no config.json"):
        Dinov3Embedder(weights=tmp_path)


def test_wrong_model_family_is_a_clear_error(dinov3_dir):
    with pytest.raises(
        UserInputError, match=r"holds? a 'dinov3_vit' model, expected model_type 'dinov2'"
    ):
        Dinov2Embedder(weights=dinov3_dir)


def test_missing_transformers_is_a_clear_error(monkeypatch, dinov2_dir):
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(MissingDependencyError, match="needs transformers"):
        Dinov2Embedder(weights=dinov2_dir, image_size=28)


def test_bad_images_and_texts_are_rejected(dinov2_dir, sentence_dir):
    emb = Dinov2Embedder(weights=dinov2_dir, image_size=28)
    with pytest.raises(UserInputError, match=r"image 1 must be uint8 \(H, W, 3\)"):
        emb.embed_images([np.zeros((8, 8, 3), np.uint8), np.zeros((8, 8, 3), np.float32)])
    with pytest.raises(UserInputError, match="single array"):
        emb.embed_images(np.zeros((8, 8, 3), np.uint8))
    with pytest.raises(UserInputError, match="single string"):
        SentenceEmbedder(weights=sentence_dir).embed_texts("a cat")
    with pytest.raises(UserInputError, match="batch_size must be >= 1"):
        Dinov2Embedder(weights=dinov2_dir, image_size=28, batch_size=0)
    with pytest.raises(UserInputError, match="device 'cuda:7'|device 'cuda:7' requested"):
        if torch.cuda.is_available() and torch.cuda.device_count() > 7:
            pytest.skip("machine has 8+ GPUs")
        Dinov2Embedder(weights=dinov2_dir, image_size=28, device="cuda:7")


def test_bfloat16_model_still_returns_float32_unit_rows(dinov2_dir, clip_dir):
    for make, embed in [
        (lambda **kw: Dinov2Embedder(weights=dinov2_dir, image_size=28, **kw), "embed_images"),
        (lambda **kw: ClipBackend(weights=clip_dir, **kw), "embed_texts"),
    ]:
        items = _images() if embed == "embed_images" else TEXTS
        ref = getattr(make(), embed)(items)
        low = getattr(make(dtype="bfloat16"), embed)(items)
        assert low.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(low, axis=1), 1.0, atol=1e-5)
        assert np.min(np.sum(low * ref, axis=1)) > 0.98  # cosine to the float32 result
