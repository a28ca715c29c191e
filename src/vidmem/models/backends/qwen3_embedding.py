"""Qwen3-Embedding text embeddings: last-token pooling, instructed queries, optional MRL.

The recipe of the Qwen3-Embedding model cards (``Qwen/Qwen3-Embedding-0.6B``, ``-4B``,
``-8B`` on the Hugging Face hub, section "Transformers Usage"):

* ``AutoModel`` (a Qwen3 decoder, ``model_type`` ``qwen3``) + ``AutoTokenizer`` with
  ``padding_side="left"``; texts are padded to the longest in the batch and truncated
  at ``max_length = 8192`` tokens (the models were trained with a 32k context; 8192 is
  the cards' example value and this backend's default).
* Every text ends in ``<|endoftext|>``: the current hub tokenizers append it
  themselves (a ``TemplateProcessing`` post-processor added after release, see
  QwenLM/Qwen3-Embedding issue #54); for an older snapshot whose tokenizer does not,
  this backend appends it (checked once at load, recorded in ``info().settings``).
* The feature is the hidden state of the **last real token** (``last_token_pool``):
  with left padding that is the last position; this backend locates it from the
  attention mask, so right padding gives the same vectors. Position ids are counted
  from the first real token, so a text's vector does not depend on how much padding
  its batch needed. L2-normalised.
* Queries carry a one-sentence task instruction, ``Instruct: {task}\\nQuery:{text}``
  (no space after ``Query:``); documents are embedded as plain text. The cards advise
  writing the instruction in English even for other languages, and report 1-5 %
  lower retrieval scores without one.
* MRL: the cards list "MRL Support: Yes" and "user-defined output dimensions ranging
  from 32 to" the full width; ``dimensions=d`` keeps the first ``d`` components and
  re-normalises.

:meth:`Qwen3EmbeddingBackend.embed_texts` embeds **documents** (the ``TextEmbedder``
role); :meth:`~Qwen3EmbeddingBackend.embed_queries` embeds queries with the
instruction. VMem-Bench Track-A ranks earlier segments' text against the next
segment's instruction: the instruction is the query, the segments' texts are the
documents, and the default task (:data:`TRACK_A_TASK`) says so.

Registered as ``qwen3-embedding/0.6b`` (1024-d, 28 layers), ``qwen3-embedding/4b``
(2560-d, 36 layers) and ``qwen3-embedding/8b`` (4096-d, 36 layers).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vidmem.errors import MissingDependencyError, UserInputError
from vidmem.models.backends.base import import_torch
from vidmem.models.backends.hf_images import HFEmbedderBase, check_texts, load_tokenizer

__all__ = [
    "MODEL_CARD_TASK",
    "QUERY_TEMPLATE",
    "TRACK_A_TASK",
    "Qwen3Embedding06B",
    "Qwen3Embedding4B",
    "Qwen3Embedding8B",
    "Qwen3EmbeddingBackend",
    "format_query",
]

#: How the model cards format a query (``get_detailed_instruct``).
QUERY_TEMPLATE = "Instruct: {task}\nQuery:{text}"
#: The model cards' example task (web search).
MODEL_CARD_TASK = "Given a web search query, retrieve relevant passages that answer the query"
#: The default task: VMem-Bench Track-A retrieval of earlier film segments (documents:
#: their text) for the instruction of the next segment (the query).
TRACK_A_TASK = (
    "Given an instruction for the next shot of a film, retrieve descriptions of earlier "
    "shots that show the same characters, props or locations"
)
#: The end-of-text token every input ends with.
EOD_TOKEN = "<|endoftext|>"
_DEFAULT_MAX_LENGTH = 8192
_PADDING_SIDES = ("left", "right")


def format_query(text: str, task: str) -> str:
    """The model cards' query string for ``text`` under ``task``.

    Example:
        >>> format_query("where is the red car?", "Find scenes")
        'Instruct: Find scenes\\nQuery:where is the red car?'
    """
    return QUERY_TEMPLATE.format(task=task, text=text)


class Qwen3EmbeddingBackend(HFEmbedderBase):
    """Qwen3-Embedding documents and instructed queries (default: Qwen3-Embedding-0.6B).

    Implements :class:`~vidmem.models.protocols.TextEmbedder`: :meth:`embed_texts`
    embeds documents; :meth:`embed_queries` embeds queries with a task instruction.

    Args:
        weights: local model directory or hub id (looked up offline).
        device: torch device string.
        dtype: ``"float32"``, ``"float16"`` or ``"bfloat16"`` for the model (the 4B and
            8B models want ``"bfloat16"`` on a GPU); output is float32.
        batch_size: texts per forward pass.
        max_length: token limit per text, the final ``<|endoftext|>`` included
            (default 8192, capped by the model's ``max_position_embeddings``).
        task: the query instruction :meth:`embed_queries` uses when given none
            (default :data:`TRACK_A_TASK`).
        dimensions: keep the first ``dimensions`` components (Matryoshka) and
            re-normalise; ``None`` keeps the full width. The cards support 32 up to
            the full width.
        padding_side: ``"left"`` (the cards') or ``"right"``; the vectors are the same.
        model_dir: extra directory searched for hub ids.
    """

    name = "qwen3-embedding/0.6b"
    default_weights = "Qwen/Qwen3-Embedding-0.6B"
    official = False
    model_class = "AutoModel"
    model_types = ("qwen3",)
    #: The query instruction used when neither the constructor nor the call gives one.
    default_task: str = TRACK_A_TASK

    def __init__(
        self,
        *,
        weights: str | Path | None = None,
        device: str = "cpu",
        dtype: str = "float32",
        batch_size: int = 16,
        max_length: int = _DEFAULT_MAX_LENGTH,
        task: str | None = None,
        dimensions: int | None = None,
        padding_side: str = "left",
        model_dir: str | Path | None = None,
    ) -> None:
        super().__init__(
            weights=weights, device=device, dtype=dtype, batch_size=batch_size, model_dir=model_dir
        )
        self.task = self._check_task(self.default_task if task is None else task)
        if padding_side not in _PADDING_SIDES:
            raise UserInputError(
                f"backend '{self.name}': padding_side must be 'left' or 'right', found "
                f"{padding_side!r}",
                hint="omit it to use the model cards' left padding",
            )
        if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 2:
            raise UserInputError(
                f"backend '{self.name}': max_length must be an int >= 2, found {max_length!r}",
                hint=f"omit it to use {_DEFAULT_MAX_LENGTH}",
            )
        path = self._check_weights()
        self._load_model()
        cfg = self.model.config
        self.hidden_size = int(cfg.hidden_size)
        positions = getattr(cfg, "max_position_embeddings", None)
        self.max_length = min(max_length, int(positions)) if positions else max_length
        if dimensions is not None and (
            isinstance(dimensions, bool)
            or not isinstance(dimensions, int)
            or not 1 <= dimensions <= self.hidden_size
        ):
            raise UserInputError(
                f"backend '{self.name}': dimensions must be an int from 1 to the model width "
                f"{self.hidden_size}, found {dimensions!r}",
                hint="the model cards support 32 up to the full width; omit it for all",
            )
        self.dimensions = dimensions
        self.dim = self.hidden_size if dimensions is None else int(dimensions)
        self.padding_side = padding_side
        self.tokenizer = load_tokenizer(path, backend=self.name)
        self.tokenizer.padding_side = padding_side
        self.eod_id = self._eod_id()
        self.tokenizer_adds_eod = self._tokenizer_adds_eod()
        self.settings = {
            "feature": "hidden state of the last real token (attention mask), L2-normalised",
            "model_type": self.config.get("model_type"),
            "max_length": self.max_length,
            "padding": "longest",
            "padding_side": padding_side,
            "position_ids": "counted from each text's first real token",
            "eod": EOD_TOKEN
            + (" (added by the tokenizer)" if self.tokenizer_adds_eod else " (appended by vidmem)"),
            "documents": "plain text (embed_texts)",
            "query_template": QUERY_TEMPLATE,
            "task": self.task,
            "dimensions": dimensions,
            "hidden_size": self.hidden_size,
            "dim": self.dim,
            "batch_size": self.batch_size,
        }

    # -- checks ---------------------------------------------------------------------

    def _check_task(self, task: Any) -> str:
        if not isinstance(task, str) or not task.strip():
            raise UserInputError(
                f"backend '{self.name}': task must be a non-empty string, found {task!r}",
                hint="one English sentence saying what the query retrieves; embed documents "
                "(no instruction) with embed_texts",
            )
        return task

    def _eod_id(self) -> int:
        # not convert_tokens_to_ids: Qwen2Tokenizer's unknown token is <|endoftext|> itself
        eod = self.tokenizer.get_vocab().get(EOD_TOKEN)
        if not isinstance(eod, int):
            raise MissingDependencyError(
                f"backend '{self.name}': the tokenizer in '{self.weights_path}' has no "
                f"{EOD_TOKEN} token, so it is not a Qwen3 tokenizer",
                hint="point weights= at a Qwen3-Embedding snapshot with its tokenizer files",
            )
        return int(eod)

    def _tokenizer_adds_eod(self) -> bool:
        ids = self.tokenizer(["a"], padding=False, truncation=False)["input_ids"][0]
        return bool(ids) and ids[-1] == self.eod_id

    # -- tokens ---------------------------------------------------------------------

    def tokenize(self, texts: Sequence[str]) -> dict[str, Any]:
        """Token tensors: each text ends in ``<|endoftext|>``, padded to the longest.

        Returns ``input_ids``, ``attention_mask`` and ``position_ids`` on the device.
        """
        torch = import_torch()
        texts = list(texts)
        if self.tokenizer_adds_eod:
            tokens = self.tokenizer(
                texts, padding=True, truncation=True, max_length=self.max_length,
                return_tensors="pt",
            )
        else:
            raw = self.tokenizer(
                texts, padding=False, truncation=True, max_length=self.max_length - 1
            )
            features = [
                {"input_ids": [*ids, self.eod_id], "attention_mask": [*mask, 1]}
                for ids, mask in zip(raw["input_ids"], raw["attention_mask"], strict=True)
            ]
            tokens = self.tokenizer.pad(features, padding=True, return_tensors="pt")
        mask = tokens["attention_mask"]
        positions = (mask.long().cumsum(dim=-1) - 1).clamp_min(0)
        return {
            "input_ids": tokens["input_ids"].to(self._device),
            "attention_mask": mask.to(self._device),
            "position_ids": positions.to(torch.long).to(self._device),
        }

    @staticmethod
    def last_token_pool(hidden: Any, attention_mask: Any) -> Any:
        """Per row, the hidden state at the last position whose mask is 1.

        Left padding: the last position; right padding: ``mask.sum() - 1``; this
        finds both (and any other layout) from the mask.
        """
        torch = import_torch()
        steps = torch.arange(attention_mask.shape[1], device=attention_mask.device)
        last = (attention_mask.long() * steps).argmax(dim=1)
        return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]

    # -- embeddings -----------------------------------------------------------------

    def _embed(self, texts: list[str]) -> np.ndarray:
        def encode(chunk: Sequence[str]):
            inputs = self.tokenize(chunk)
            hidden = self.model(**inputs).last_hidden_state
            pooled = self.last_token_pool(hidden, inputs["attention_mask"]).float()
            return pooled[:, : self.dim]

        return self._run_batched(texts, encode, self.dim)

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents (plain text): ``(len(texts), dim)`` float32, unit rows."""
        return self._embed(check_texts(texts, where=self.name))

    def format_query(self, text: str, task: str | None = None) -> str:
        """The instructed query string for ``text`` (``task`` defaults to ``self.task``)."""
        return format_query(text, self.task if task is None else self._check_task(task))

    def embed_queries(self, texts: Sequence[str], task: str | None = None) -> np.ndarray:
        """Embed queries as ``Instruct: {task}\\nQuery:{text}``: ``(N, dim)`` float32 unit rows.

        Args:
            texts: the queries.
            task: the instruction; ``None`` uses ``self.task`` (the ``task`` setting,
                default :data:`TRACK_A_TASK`).
        """
        texts = check_texts(texts, where=self.name)
        return self._embed([self.format_query(t, task) for t in texts])


class Qwen3Embedding06B(Qwen3EmbeddingBackend):
    """``qwen3-embedding/0.6b``: Qwen3-Embedding-0.6B, 28 layers, 1024-d (MRL 32-1024)."""

    name = "qwen3-embedding/0.6b"
    default_weights = "Qwen/Qwen3-Embedding-0.6B"


class Qwen3Embedding4B(Qwen3EmbeddingBackend):
    """``qwen3-embedding/4b``: Qwen3-Embedding-4B, 36 layers, 2560-d (MRL 32-2560)."""

    name = "qwen3-embedding/4b"
    default_weights = "Qwen/Qwen3-Embedding-4B"


class Qwen3Embedding8B(Qwen3EmbeddingBackend):
    """``qwen3-embedding/8b``: Qwen3-Embedding-8B, 36 layers, 4096-d (MRL 32-4096)."""

    name = "qwen3-embedding/8b"
    default_weights = "Qwen/Qwen3-Embedding-8B"
