"""``qwen3-embedding/*`` on a tiny random Qwen3 decoder built from a config.

The model is built by :func:`vidmem.models.tiny.tiny_qwen3_embedding` into a temp dir
(a byte-level tokenizer that ends every text in ``<|endoftext|>``, as the hub's does)
and loaded back through the backend's constructor with ``weights=<dir>``: the same
``from_pretrained`` path real weights take, with no network. Reference vectors are
computed here from ``transformers.AutoModel`` directly, pooled by hand.
"""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from vidmem.errors import MissingDependencyError, UserInputError  # noqa: E402
from vidmem.models.backends.qwen3_embedding import (  # noqa: E402
    MODEL_CARD_TASK,
    TRACK_A_TASK,
    Qwen3Embedding4B,
    Qwen3Embedding8B,
    Qwen3EmbeddingBackend,
    format_query,
)
from vidmem.models.loading import load_backend  # noqa: E402
from vidmem.models.protocols import TextEmbedder  # noqa: E402
from vidmem.models.tiny import tiny_qwen3_embedding, tiny_sentence  # noqa: E402
from vidmem.registry import BACKENDS  # noqa: E402

pytestmark = pytest.mark.models

# different lengths, so that a batch needs padding
TEXTS = [
    "a photo of a red cat",
    "the blue car",
    "A dog on the left of a green tree, next to the old stone bridge.",
    "x",
    "她走进厨房。",
]
EOD = 256  # the tiny tokenizer's <|endoftext|> id (after the 256 bytes)


@pytest.fixture(scope="module")
def qwen3_dir(tmp_path_factory):
    return tiny_qwen3_embedding(tmp_path_factory.mktemp("qwen3-embedding"))


@pytest.fixture(scope="module")
def emb(qwen3_dir):
    return Qwen3EmbeddingBackend(weights=qwen3_dir)


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _by_hand(weights, texts):
    """Each text alone through AutoModel; the last position's hidden state, normalised."""
    model = transformers.AutoModel.from_pretrained(str(weights)).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(weights))
    rows = []
    for text in texts:
        ids = tokenizer([text], return_tensors="pt")["input_ids"]
        assert ids[0, -1].item() == EOD  # the tokenizer ends the text itself
        with torch.inference_mode():
            hidden = model(input_ids=ids).last_hidden_state[0]
        rows.append(hidden[-1].numpy())
    return _unit(np.stack(rows))


# -- loading, contract, run-log record ---------------------------------------------------


def test_contract_shape_dtype_norm_batch_size_and_info(qwen3_dir, emb):
    assert isinstance(emb, TextEmbedder)
    a = emb.embed_texts(TEXTS)
    assert a.shape == (len(TEXTS), 32) and a.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(a, emb.embed_texts(TEXTS))  # deterministic
    for batch_size in (1, 2, 3):  # batch composition and padding do not change a vector
        other = Qwen3EmbeddingBackend(weights=qwen3_dir, batch_size=batch_size)
        np.testing.assert_allclose(other.embed_texts(TEXTS), a, atol=1e-5)
    assert not np.allclose(a[0], a[1], atol=1e-3)
    empty = emb.embed_texts([])
    assert empty.shape == (0, 32) and empty.dtype == np.float32

    info = emb.info()
    json.dumps(info.to_dict())  # the run log stores it
    assert info.name == "qwen3-embedding/0.6b" and info.official is False
    assert info.weights == str(qwen3_dir)
    assert re.fullmatch(r"[0-9a-f]{64}", info.weights_sha256 or "")
    s = info.settings
    assert s["model_type"] == "qwen3" and s["dim"] == 32 and s["hidden_size"] == 32
    assert s["dimensions"] is None and s["batch_size"] == 16
    assert s["max_length"] == 1024  # 8192 by default, capped by max_position_embeddings
    assert s["padding_side"] == "left" and s["task"] == TRACK_A_TASK
    assert s["query_template"] == "Instruct: {task}\nQuery:{text}"
    assert s["eod"] == "<|endoftext|> (added by the tokenizer)"


def test_weights_hash_follows_the_weights(tmp_path, qwen3_dir, emb):
    other = tiny_qwen3_embedding(tmp_path / "seed1", seed=1)
    assert Qwen3EmbeddingBackend(weights=other).info().weights_sha256 != emb.info().weights_sha256


def test_loads_by_name_for_every_variant(qwen3_dir):
    for name, cls, checkpoint in [
        ("qwen3-embedding/0.6b", "Qwen3Embedding06B", "Qwen/Qwen3-Embedding-0.6B"),
        ("qwen3-embedding/4b", "Qwen3Embedding4B", "Qwen/Qwen3-Embedding-4B"),
        ("qwen3-embedding/8b", "Qwen3Embedding8B", "Qwen/Qwen3-Embedding-8B"),
    ]:
        entry = BACKENDS.get(name)
        assert entry.meta["checkpoint"] == checkpoint and entry.meta["role"] == "text_embedder"
        assert entry.extra == "models" and entry.meta["params"] and entry.meta["vram"]
        backend = load_backend(name, {"weights": str(qwen3_dir)}, role="text_embedder")
        assert type(backend).__name__ == cls and backend.info().name == name
        assert backend.default_weights == checkpoint
    assert Qwen3Embedding4B.default_weights == "Qwen/Qwen3-Embedding-4B"
    assert Qwen3Embedding8B.name == "qwen3-embedding/8b"


# -- pooling -------------------------------------------------------------------------------


def test_last_token_pooling_matches_a_hand_computation(qwen3_dir, emb):
    want = _by_hand(qwen3_dir, TEXTS)
    got = emb.embed_texts(TEXTS)  # one left-padded batch
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_left_and_right_padding_give_the_same_embeddings(qwen3_dir, emb):
    right = Qwen3EmbeddingBackend(weights=qwen3_dir, padding_side="right")
    left_tokens, right_tokens = emb.tokenize(TEXTS), right.tokenize(TEXTS)
    assert (left_tokens["input_ids"][:, -1] == EOD).all()  # left: every row ends in EOD
    mask = right_tokens["attention_mask"]
    assert mask[:, 0].all() and not mask[:, -1].all()  # right: padding at the end
    assert right.info().settings["padding_side"] == "right"
    np.testing.assert_allclose(right.embed_texts(TEXTS), emb.embed_texts(TEXTS), atol=1e-5)


def test_last_token_pool_finds_the_last_real_position():
    hidden = torch.arange(2 * 4 * 1, dtype=torch.float32).view(2, 4, 1)
    mask = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 0]])
    pooled = Qwen3EmbeddingBackend.last_token_pool(hidden, mask)
    assert pooled[:, 0].tolist() == [3.0, 6.0]


def test_long_texts_are_truncated_and_still_end_in_eod(qwen3_dir):
    short = Qwen3EmbeddingBackend(weights=qwen3_dir, max_length=8)
    ids = short.tokenize(["a much longer text than eight bytes", "ab"])["input_ids"]
    assert ids.shape == (2, 8) and (ids[:, -1] == EOD).all()
    out = short.embed_texts(["a much longer text than eight bytes"])  # 7 bytes + EOD
    np.testing.assert_allclose(out, _by_hand(qwen3_dir, ["a much "]), atol=1e-5)


def test_a_tokenizer_without_the_eod_template_gets_it_appended(tmp_path, qwen3_dir, emb):
    bare = tmp_path / "old-snapshot"
    shutil.copytree(qwen3_dir, bare)
    tokenizer_file = bare / "tokenizer.json"
    data = json.loads(tokenizer_file.read_text(encoding="utf-8"))
    data["post_processor"] = None  # as the hub snapshots before the fix
    tokenizer_file.write_text(json.dumps(data), encoding="utf-8")
    old = Qwen3EmbeddingBackend(weights=bare, max_length=8)
    assert old.tokenizer_adds_eod is False
    assert old.info().settings["eod"] == "<|endoftext|> (appended by vidmem)"
    ids = old.tokenize(["a much longer text than eight bytes", "ab"])["input_ids"]
    assert ids.shape == (2, 8) and (ids[:, -1] == EOD).all()
    full = Qwen3EmbeddingBackend(weights=bare)
    np.testing.assert_allclose(full.embed_texts(TEXTS), emb.embed_texts(TEXTS), atol=1e-5)


# -- queries -------------------------------------------------------------------------------


def test_query_instruction_is_the_model_cards_format(emb):
    text = "where is the red cat?"
    assert format_query(text, "Find it") == "Instruct: Find it\nQuery:where is the red cat?"
    assert emb.format_query(text) == f"Instruct: {TRACK_A_TASK}\nQuery:{text}"
    query = emb.embed_queries([text])
    document = emb.embed_texts([text])
    assert query.shape == (1, 32) and query.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(query, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(query, document, atol=1e-3)  # the instruction changes it
    formatted = f"Instruct: {TRACK_A_TASK}\nQuery:{text}"
    np.testing.assert_allclose(query, emb.embed_texts([formatted]), atol=1e-6)


def test_query_task_per_call_and_as_a_setting(qwen3_dir, emb):
    texts = ["the blue car", "a dog"]
    default = emb.embed_queries(texts)
    web = emb.embed_queries(texts, task=MODEL_CARD_TASK)
    assert not np.allclose(default, web, atol=1e-3)
    want = emb.embed_texts([format_query(t, MODEL_CARD_TASK) for t in texts])
    np.testing.assert_allclose(web, want, atol=1e-6)
    configured = Qwen3EmbeddingBackend(weights=qwen3_dir, task=MODEL_CARD_TASK)
    assert configured.info().settings["task"] == MODEL_CARD_TASK
    np.testing.assert_allclose(configured.embed_queries(texts), web, atol=1e-6)
    assert Qwen3EmbeddingBackend.default_task == TRACK_A_TASK
    assert emb.embed_queries([]).shape == (0, 32)


# -- Matryoshka ------------------------------------------------------------------------


def test_dimensions_truncate_then_renormalise(qwen3_dir, emb):
    small = Qwen3EmbeddingBackend(weights=qwen3_dir, dimensions=8)
    out = small.embed_texts(TEXTS)
    assert out.shape == (len(TEXTS), 8) and out.dtype == np.float32
    np.testing.assert_allclose(out, _unit(emb.embed_texts(TEXTS)[:, :8]), atol=1e-5)
    assert small.embed_queries(TEXTS[:1]).shape == (1, 8)
    s = small.info().settings
    assert s["dimensions"] == 8 and s["dim"] == 8 and s["hidden_size"] == 32
    full = Qwen3EmbeddingBackend(weights=qwen3_dir, dimensions=32)
    np.testing.assert_allclose(full.embed_texts(TEXTS), emb.embed_texts(TEXTS), atol=1e-6)


# -- errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"dimensions": 0}, "dimensions must be an int from 1 to the model width 32"),
        ({"dimensions": 33}, "dimensions must be"),
        ({"dimensions": 8.0}, "dimensions must be"),
        ({"task": ""}, "task must be a non-empty string"),
        ({"task": 3}, "task must be a non-empty string"),
        ({"padding_side": "middle"}, "padding_side must be 'left' or 'right'"),
        ({"max_length": 1}, "max_length must be an int >= 2"),
        ({"batch_size": 0}, "batch_size must be >= 1"),
    ],
)
def test_bad_settings_are_refused(qwen3_dir, options, match):
    with pytest.raises(UserInputError, match=match):
        Qwen3EmbeddingBackend(weights=qwen3_dir, **options)


def test_bad_inputs_are_refused(emb):
    with pytest.raises(UserInputError, match="single string"):
        emb.embed_texts("a cat")
    with pytest.raises(UserInputError, match="single string"):
        emb.embed_queries("a cat")
    with pytest.raises(UserInputError, match="text 1 must be a str"):
        emb.embed_texts(["a", 3])
    with pytest.raises(UserInputError, match="task must be a non-empty string"):
        emb.embed_queries(["a"], task="  ")


def test_wrong_family_and_missing_tokenizer_are_clear_errors(tmp_path, qwen3_dir):
    with pytest.raises(UserInputError, match=r"'bert' model, expected model_type 'qwen3'"):
        Qwen3EmbeddingBackend(weights=tiny_sentence(tmp_path / "bert"))
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(qwen3_dir / name, bare / name)
    with pytest.raises(MissingDependencyError, match="no tokenizer files"):
        Qwen3EmbeddingBackend(weights=bare)
