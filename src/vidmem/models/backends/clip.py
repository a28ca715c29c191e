"""CLIP and SigLIP: one backend object that embeds both images and texts.

Both roles come from the same model, so image and text vectors share one space:

* images: ``get_image_features(pixel_values=...)`` -- CLIP projects the post-layernorm
  CLS token with ``visual_projection`` (``projection_dim``-d); SigLIP returns the
  attention-pooling head output (``hidden_size``-d). In transformers 5 these methods
  return a ``BaseModelOutputWithPooling`` whose ``pooler_output`` holds the features; in
  transformers 4 they return the tensor; both are accepted.
* texts: ``get_text_features(input_ids=...)`` -- CLIP pools the first EOS token (causal
  text encoder) and projects it; texts are padded to the longest in the batch and
  truncated at 77 tokens. SigLIP pools the *last* position, so texts are padded to
  ``max_length=64`` exactly as the model was trained, and only ``input_ids`` are passed
  (no attention mask, as in training). SigLIP 2 texts are lowercased (its training
  normalisation).

Image preprocessing uses transformers' own numpy/PIL processors (``CLIPImageProcessorPil``
/ ``SiglipImageProcessorPil``; the plain ``CLIPImageProcessor`` / ``SiglipImageProcessor``
on transformers 4, which are PIL/numpy there too), configured from the weights'
``preprocessor_config.json`` when present, else from the class defaults with the
model's ``vision_config.image_size``. CLIP: resize shorter side, center crop, OpenAI
mean/std. SigLIP: resize to a square, mean/std 0.5. All outputs are L2-normalised float32.

Only fixed-resolution SigLIP checkpoints (``model_type`` ``siglip``) are supported; the
SigLIP 2 "NaFlex" checkpoints (``model_type`` ``siglip2``) need patch-level inputs and
are refused with a message.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vidmem.errors import UserInputError
from vidmem.models.backends.base import image_processor_class
from vidmem.models.backends.hf_images import (
    HFEmbedderBase,
    check_images,
    check_texts,
    load_tokenizer,
    pooled,
    read_config,
)


@dataclass(frozen=True)
class _Family:
    model_class: str
    model_types: tuple[str, ...]
    processor: str
    max_text_length: int
    pad_to_max_length: bool
    pass_attention_mask: bool
    lowercase: bool


_FAMILIES: dict[str, _Family] = {
    "clip": _Family("CLIPModel", ("clip",), "CLIPImageProcessor", 77, False, True, False),
    "siglip": _Family("SiglipModel", ("siglip",), "SiglipImageProcessor", 64, True, False, False),
    "siglip2": _Family("SiglipModel", ("siglip",), "SiglipImageProcessor", 64, True, False, True),
}


def _plain(value: Any) -> Any:
    """A processor attribute as JSON-able data for the run log (drops ``None`` fields)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = vars(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (bool, int, float, str)):
        return value
    try:
        return int(value)  # PIL resampling enums
    except (TypeError, ValueError):
        return str(value)


class ClipBackend(HFEmbedderBase):
    """CLIP / SigLIP image *and* text embeddings (default: ``openai/clip-vit-base-patch32``).

    Implements both :class:`~vidmem.models.protocols.ImageEmbedder` and
    :class:`~vidmem.models.protocols.TextEmbedder`. The tokenizer is loaded from the
    weights directory on the first :meth:`embed_texts` call.

    Args:
        weights: local model directory or hub id (looked up offline).
        device: torch device string.
        dtype: ``"float32"``, ``"float16"`` or ``"bfloat16"`` for the model; output is float32.
        batch_size: images or texts per forward pass.
        image_size: input side in pixels; ``None`` uses the weights' processor config
            (or the model's ``vision_config.image_size``). A size other than the
            model's native one turns on ``interpolate_pos_encoding``.
        max_text_length: token limit; ``None`` uses 77 (CLIP) or 64 (SigLIP), capped
            by the text encoder's ``max_position_embeddings``.
        model_dir: extra directory searched for hub ids.
    """

    name = "clip/vit-b-32"
    default_weights = "openai/clip-vit-base-patch32"
    official = False
    family = "clip"

    def __init__(
        self,
        *,
        weights: str | Path | None = None,
        device: str = "cpu",
        dtype: str = "float32",
        batch_size: int = 32,
        image_size: int | None = None,
        max_text_length: int | None = None,
        model_dir: str | Path | None = None,
    ) -> None:
        super().__init__(
            weights=weights, device=device, dtype=dtype, batch_size=batch_size, model_dir=model_dir
        )
        spec = _FAMILIES[self.family]
        self._spec = spec
        self.model_class = spec.model_class
        self.model_types = spec.model_types
        path = self._check_weights()
        found = read_config(path, backend=self.name).get("model_type")
        if found == "siglip2":
            raise UserInputError(
                f"backend '{self.name}': weights '{path}' are a SigLIP 2 NaFlex model "
                "(model_type 'siglip2'), which this backend does not support",
                hint="use a fixed-resolution checkpoint such as google/siglip2-base-patch16-224",
            )
        self._load_model()
        cfg = self.model.config
        self.native_image_size = int(cfg.vision_config.image_size)
        self._processor = self._build_processor(path, image_size)
        self.image_size = self._processed_size()
        self._interpolate = self.image_size != self.native_image_size
        text_positions = int(
            getattr(cfg.text_config, "max_position_embeddings", spec.max_text_length)
        )
        wanted = spec.max_text_length if max_text_length is None else int(max_text_length)
        if wanted < 2:
            raise UserInputError(
                f"backend '{self.name}': max_text_length must be >= 2, found {wanted}"
            )
        self.max_text_length = min(wanted, text_positions)
        if self.family == "clip":
            self.dim = int(cfg.projection_dim)
        else:
            self.dim = int(cfg.vision_config.hidden_size)
            text_dim = int(cfg.text_config.hidden_size)
            if text_dim != self.dim:  # SigLIP has no projection: both towers must agree
                raise UserInputError(
                    f"backend '{self.name}': vision width {self.dim} != text width {text_dim} in '{path}'"
                )
        self._tokenizer: Any = None
        self.settings = {
            "family": self.family,
            "image_feature": "get_image_features (pooler_output), L2-normalised",
            "text_feature": "get_text_features (pooler_output), L2-normalised",
            "image_size": self.image_size,
            "interpolate_pos_encoding": self._interpolate,
            "image_processor": self._processor_summary(),
            "max_text_length": self.max_text_length,
            "text_padding": "max_length" if spec.pad_to_max_length else "longest",
            "text_attention_mask": spec.pass_attention_mask,
            "lowercase_text": spec.lowercase,
            "dim": self.dim,
            "batch_size": self.batch_size,
        }

    # -- images ---------------------------------------------------------------------

    def _build_processor(self, path: Path, image_size: int | None) -> Any:
        cls = image_processor_class(self._spec.processor)
        side = image_size
        has_config = (path / "preprocessor_config.json").is_file()
        if side is None and not has_config:
            side = self.native_image_size
        overrides: dict[str, Any] = {}
        if side is not None:
            if side < 1:
                raise UserInputError(
                    f"backend '{self.name}': image_size must be >= 1, found {side}"
                )
            if self.family == "clip":
                overrides = {
                    "size": {"shortest_edge": side},
                    "crop_size": {"height": side, "width": side},
                }
            else:
                overrides = {"size": {"height": side, "width": side}}
        if has_config:
            return cls.from_pretrained(str(path), local_files_only=True, **overrides)
        return cls(**overrides)

    def _processed_size(self) -> int:
        probe = self._processor(
            images=[np.zeros((7, 9, 3), np.uint8)],
            return_tensors="np",
            input_data_format="channels_last",
        )["pixel_values"]
        height, width = probe.shape[-2:]
        if height != width:
            raise UserInputError(
                f"backend '{self.name}': the image processor makes {height}x{width} inputs, "
                "expected a square",
                hint="pass image_size= to force a square input",
            )
        return int(height)

    def _processor_summary(self) -> dict[str, Any]:
        p = self._processor
        keys = (
            "do_resize",
            "size",
            "resample",
            "do_center_crop",
            "crop_size",
            "image_mean",
            "image_std",
        )
        out: dict[str, Any] = {"class": type(p).__name__}
        for key in keys:
            value = getattr(p, key, None)
            if value is not None:
                out[key] = _plain(value)
        return out

    def preprocess(self, images: Sequence[np.ndarray]) -> np.ndarray:
        """Images -> float32 ``(N, 3, S, S)`` through the family's image processor."""
        out = self._processor(
            images=list(images), return_tensors="np", input_data_format="channels_last"
        )
        return np.ascontiguousarray(out["pixel_values"], dtype=np.float32)

    def embed_images(self, images: Sequence[np.ndarray]) -> np.ndarray:
        """Return ``(len(images), D)`` float32 image embeddings with unit L2 norm per row."""
        images = check_images(images, where=self.name)

        def encode(chunk: Sequence[np.ndarray]):
            pixels = self._pixels(self.preprocess(chunk))
            kwargs = {"interpolate_pos_encoding": True} if self._interpolate else {}
            return pooled(self.model.get_image_features(pixel_values=pixels, **kwargs))

        return self._run_batched(images, encode, self.dim)

    # -- texts ----------------------------------------------------------------------

    @property
    def tokenizer(self) -> Any:
        """The weights' tokenizer (``AutoTokenizer``), loaded on first use."""
        if self._tokenizer is None:
            self._tokenizer = load_tokenizer(self._check_weights(), backend=self.name)
        return self._tokenizer

    def tokenize(self, texts: Sequence[str]) -> dict[str, Any]:
        """Token tensors for ``texts``, padded the way the family was trained."""
        spec = self._spec
        if spec.lowercase:
            texts = [t.lower() for t in texts]
        tokens = self.tokenizer(
            list(texts),
            padding="max_length" if spec.pad_to_max_length else True,
            truncation=True,
            max_length=self.max_text_length,
            return_tensors="pt",
        )
        out = {"input_ids": tokens["input_ids"].to(self._device)}
        if spec.pass_attention_mask and "attention_mask" in tokens:
            out["attention_mask"] = tokens["attention_mask"].to(self._device)
        return out

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Return ``(len(texts), D)`` float32 text embeddings with unit L2 norm per row."""
        texts = check_texts(texts, where=self.name)

        def encode(chunk: Sequence[str]):
            return pooled(self.model.get_text_features(**self.tokenize(chunk)))

        return self._run_batched(texts, encode, self.dim)


class ClipVitB32(ClipBackend):
    """``clip/vit-b-32``: OpenAI CLIP ViT-B/32, 151M parameters, 512-d."""

    name = "clip/vit-b-32"
    default_weights = "openai/clip-vit-base-patch32"


class ClipVitB16(ClipBackend):
    """``clip/vit-b-16``: OpenAI CLIP ViT-B/16, 150M parameters, 512-d."""

    name = "clip/vit-b-16"
    default_weights = "openai/clip-vit-base-patch16"


class ClipVitL14(ClipBackend):
    """``clip/vit-l-14``: OpenAI CLIP ViT-L/14 at 224 px, 428M parameters, 768-d."""

    name = "clip/vit-l-14"
    default_weights = "openai/clip-vit-large-patch14"


class SiglipBasePatch16(ClipBackend):
    """``siglip/base-patch16-224``: SigLIP ViT-B/16 at 224 px, 203M parameters, 768-d.

    Its tokenizer is SentencePiece-based: ``pip install sentencepiece`` for texts.
    """

    name = "siglip/base-patch16-224"
    default_weights = "google/siglip-base-patch16-224"
    family = "siglip"


class Siglip2BasePatch16(ClipBackend):
    """``siglip2/base-patch16-224``: SigLIP 2 ViT-B/16 at 224 px (fixed resolution), 375M
    parameters (most in the 256k-token Gemma vocabulary), 768-d."""

    name = "siglip2/base-patch16-224"
    default_weights = "google/siglip2-base-patch16-224"
    family = "siglip2"
