"""classic/tfidf: hashed char n-gram TF(-IDF) text vectors."""

from __future__ import annotations

import numpy as np
import pytest

from vidmem.errors import UserInputError
from vidmem.models.backends.classic_text import TfidfTextEmbedder, analyse
from vidmem.models.protocols import TextEmbedder

SENTENCES = [
    "a small red car parked on the street",
    "the red cars are parked along the street",
    "a grey cat sleeping on a wooden chair",
    "quarterly revenue grew by four percent",
]


def test_similar_sentences_are_closer_than_unrelated_ones() -> None:
    emb = TfidfTextEmbedder()
    assert isinstance(emb, TextEmbedder)
    v = emb.embed_texts(SENTENCES)
    sim = v @ v.T
    assert sim[0, 1] > 0.5
    assert sim[0, 1] > max(sim[0, 2], sim[0, 3], sim[1, 2], sim[1, 3])
    assert sim[2, 3] < 0.2


def test_shape_dtype_norm_and_comparability() -> None:
    emb = TfidfTextEmbedder()
    v = emb.embed_texts(SENTENCES)
    assert v.shape == (4, 8192) == (4, emb.dim)
    assert v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-6)
    # No fitted vocabulary: a text gets the same vector alone, in any batch, in any instance.
    np.testing.assert_array_equal(
        v[2], TfidfTextEmbedder(batch_size=1).embed_texts([SENTENCES[2]])[0]
    )
    np.testing.assert_array_equal(v[::-1], emb.embed_texts(SENTENCES[::-1]))
    assert emb.embed_texts([]).shape == (0, 8192)
    assert TfidfTextEmbedder(n_features=256).embed_texts(["x"]).shape == (1, 256)


def test_fit_downweights_common_words() -> None:
    corpus = [f"a photo of a {thing}" for thing in ("dog", "cat", "car", "tree", "house", "boat")]
    plain = TfidfTextEmbedder()
    fitted = TfidfTextEmbedder(corpus=corpus)
    pair = ["a photo of a dog", "a photo of a boat"]
    p, f = plain.embed_texts(pair), fitted.embed_texts(pair)
    np.testing.assert_allclose(np.linalg.norm(f, axis=1), 1.0, atol=1e-6)
    assert float(f[0] @ f[1]) < float(p[0] @ p[1])
    settings = fitted.info().settings
    assert settings["idf_docs"] == 6 and len(settings["idf_sha256"]) == 64
    assert plain.info().settings["idf_docs"] == 0 and plain.info().official is False


def test_analyser_folds_case_accents_and_stop_words() -> None:
    assert analyse("Café") == analyse("cafe")
    assert "w:the" not in analyse("the cat")
    assert analyse("the") == analyse("THE")  # only stop words: kept rather than dropped
    assert "w:the" in analyse("the")


@pytest.mark.parametrize(
    ("texts", "message"),
    [
        ("a single string", r"must be a sequence of strings; found one string"),
        (["ok", ""], r"texts\[1\] must be a string with at least one word character; found ''"),
        (["ok", "  ?! "], r"texts\[1\] must be a string"),
        (["ok", 3], r"texts\[1\] must be a string"),
    ],
)
def test_bad_texts_raise_user_input_error(texts: object, message: str) -> None:
    with pytest.raises(UserInputError, match=message):
        TfidfTextEmbedder().embed_texts(texts)  # type: ignore[arg-type]


def test_bad_fit_and_settings() -> None:
    with pytest.raises(UserInputError, match=r"empty corpus"):
        TfidfTextEmbedder().fit([])
    with pytest.raises(UserInputError, match=r"n_features >= 16"):
        TfidfTextEmbedder(n_features=4)
    with pytest.raises(UserInputError, match=r"has no weights"):
        TfidfTextEmbedder(weights="bert")
