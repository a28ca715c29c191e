"""Offline text embedder: hashed character n-grams with optional IDF, no weights.

``classic/tfidf`` is the weight-free stand-in for a text encoder, used by
``vidmem demo`` and the offline tests; it is a proxy (``official = False``).

Design. A TF-IDF vectoriser needs a vocabulary fitted on a corpus, and vectors from
two differently fitted vocabularies are not comparable. So the vocabulary is replaced
by a fixed hash: every text goes through the same analyser and scikit-learn's
:class:`~sklearn.feature_extraction.text.HashingVectorizer` (MurmurHash3, the same on
every machine) into ``D = n_features`` dimensions (default ``2**13``), whatever was
seen before. Vectors are therefore comparable across calls, runs and processes.

* Analyser: Unicode NFKD with accents stripped, lower-cased, split into word tokens
  (``\\w+``); English stop words (scikit-learn's list) are dropped unless nothing else
  is left. Features are each word's character 3- to 5-grams with the word padded by
  spaces (robust to plurals, typos and word forms) plus the whole word itself.
* Term weight: sublinear ``1 + ln(tf)``.
* IDF (optional): :meth:`TfidfTextEmbedder.fit` counts document frequencies of the
  hashed features on a corpus and multiplies by the smoothed
  ``idf = ln((1 + n) / (1 + df)) + 1`` (scikit-learn's formula). Unfitted, every idf is
  1. Fitting changes the numbers, so :meth:`info` records the corpus size and a hash of
  the idf vector; vectors from the same fitted instance stay comparable.
* Rows are L2-normalised float32.

Example:
    >>> emb = TfidfTextEmbedder()
    >>> v = emb.embed_texts(["a red car", "a red cars", "quarterly tax report"])
    >>> v.shape, bool(v[0] @ v[1] > v[0] @ v[2])
    ((3, 8192), True)
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from vidmem.errors import UserInputError
from vidmem.models.backends.base import BackendBase

_WORD = re.compile(r"\w+")


def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def analyse(text: str, *, ngram_range: tuple[int, int] = (3, 5)) -> list[str]:
    """Turn a text into the features that get hashed.

    Example:
        >>> analyse("The Cats!", ngram_range=(3, 3))
        ['w:cats', ' ca', 'cat', 'ats', 'ts ']
    """
    folded = unicodedata.normalize("NFKD", text)
    folded = "".join(c for c in folded if not unicodedata.combining(c)).lower()
    words = _WORD.findall(folded)
    stop = _stop_words()
    content = [w for w in words if w not in stop] or words
    lo, hi = ngram_range
    feats: list[str] = []
    for word in content:
        feats.append("w:" + word)
        padded = f" {word} "
        for n in range(lo, hi + 1):
            if n > len(padded):
                break
            feats.extend(padded[i : i + n] for i in range(len(padded) - n + 1))
    return feats


class TfidfTextEmbedder(BackendBase):
    """``classic/tfidf``: hashed char n-gram TF(-IDF) vectors, see the module docstring.

    Args:
        weights, device, dtype, batch_size: the common backend arguments (no weights;
            CPU only; ``batch_size`` texts are hashed per step).
        n_features: output dimension ``D`` (a power of two keeps hashing uniform).
        ngram_range: smallest and largest character n-gram length.
        corpus: optional texts to :meth:`fit` the IDF on at construction.

    Attributes:
        dim: the embedding dimension ``D``.
    """

    name = "classic/tfidf"
    default_weights = None
    official = False

    def __init__(
        self,
        *,
        weights: Any = None,
        device: str = "cpu",
        dtype: str = "float32",
        batch_size: int = 256,
        n_features: int = 2**13,
        ngram_range: tuple[int, int] = (3, 5),
        corpus: Iterable[str] | None = None,
    ) -> None:
        self._refuse_weights(weights, subject="classic/tfidf", instead="a model text embedder")
        super().__init__(
            weights=None, device=device, dtype=dtype, batch_size=batch_size
        )
        lo, hi = (int(v) for v in ngram_range)
        if int(n_features) < 16 or not 1 <= lo <= hi:
            raise UserInputError(
                f"{self.name}: expected n_features >= 16 and 1 <= ngram_range[0] <= ngram_range[1]; "
                f"found n_features={n_features}, ngram_range={tuple(ngram_range)}",
                hint="omit them to use the defaults n_features=8192, ngram_range=(3, 5)",
            )
        from sklearn.feature_extraction.text import HashingVectorizer

        self.dim = int(n_features)
        self.ngram_range = (lo, hi)
        self._vectorizer = HashingVectorizer(
            analyzer=self._analyse,
            n_features=self.dim,
            alternate_sign=False,
            norm=None,
            dtype=np.float64,
        )
        self.idf: np.ndarray | None = None
        self.settings.update(
            {
                "n_features": self.dim,
                "ngram_range": list(self.ngram_range),
                "tf": "sublinear",
                "idf_docs": 0,
                "idf_sha256": None,
            }
        )
        if corpus is not None:
            self.fit(corpus)

    def _analyse(self, text: str) -> list[str]:
        return analyse(text, ngram_range=self.ngram_range)

    def _check(self, texts: Iterable[str], what: str) -> list[str]:
        if isinstance(texts, str):
            raise UserInputError(
                f"{self.name}: {what} must be a sequence of strings; found one string {texts[:40]!r}",
                hint="wrap a single text in a list: [text]",
            )
        out = list(texts)
        for i, t in enumerate(out):
            if not isinstance(t, str) or not _WORD.search(t):
                raise UserInputError(
                    f"{self.name}: {what}[{i}] must be a string with at least one word "
                    f"character; found {t!r}",
                    hint="drop empty texts, or replace them with a placeholder description",
                )
        return out

    def _tf(self, texts: list[str]) -> Any:
        counts = self._vectorizer.transform(texts).tocsr()
        counts.data = 1.0 + np.log(counts.data)
        return counts

    def fit(self, corpus: Iterable[str]) -> TfidfTextEmbedder:
        """Learn IDF weights from ``corpus`` (replacing any earlier fit) and return self.

        Args:
            corpus: at least one text; each must contain a word character.

        Raises:
            UserInputError: on an empty corpus or an empty text in it.
        """
        docs = self._check(corpus, "corpus")
        if not docs:
            raise UserInputError(
                f"{self.name}: fit() needs at least one text; found an empty corpus",
                hint="pass the descriptions of the benchmark (or skip fit() for plain TF)",
            )
        tf = self._tf(docs)
        df = np.bincount(tf.indices, minlength=self.dim).astype(np.float64)
        self.idf = np.log((1.0 + len(docs)) / (1.0 + df)) + 1.0
        self.settings["idf_docs"] = len(docs)
        self.settings["idf_sha256"] = hashlib.sha256(self.idf.astype("<f8").tobytes()).hexdigest()
        return self

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts.

        Args:
            texts: ``N`` strings, each with at least one word character.

        Returns:
            ``(N, D)`` float32, rows of unit L2 norm (``(0, D)`` for no texts).

        Raises:
            UserInputError: when ``texts`` is a bare string or holds an empty/non-string text.
        """
        docs = self._check(texts, "texts")
        out = np.zeros((len(docs), self.dim), np.float32)
        for start in range(0, len(docs), self.batch_size):
            chunk = docs[start : start + self.batch_size]
            mat = self._tf(chunk)
            if self.idf is not None:
                mat = mat.multiply(self.idf[None, :]).tocsr()
            dense = mat.toarray()
            dense /= np.linalg.norm(dense, axis=1, keepdims=True)
            out[start : start + len(chunk)] = dense
        return out


__all__ = ["TfidfTextEmbedder", "analyse"]
