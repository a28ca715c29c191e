"""Tiny image and text embedders: DINOv2, DINOv3, CLIP, SigLIP and a BERT sentence encoder.

The text towers share a lower-casing word-level tokenizer over :data:`TINY_WORDS`.
Each builder is re-exported by :mod:`vidmem.models.tiny`, which maps registry names
to builders.
"""

from __future__ import annotations

import re
from pathlib import Path

from vidmem.models.backends.base import image_processor_class, import_transformers
from vidmem.models.tiny_saving import PathLike, make_out_dir, save_seeded_model, tiny_builder

__all__ = ["TINY_WORDS", "tiny_clip", "tiny_dinov2", "tiny_dinov3", "tiny_sentence", "tiny_siglip"]

#: The word-level vocabulary of the CLIP, SigLIP and sentence tokenizers (lower-cased;
#: any other word is the unknown token).
TINY_WORDS: tuple[str, ...] = (
    "a",
    "photo",
    "of",
    "the",
    "red",
    "blue",
    "green",
    "cat",
    "dog",
    "car",
    "tree",
    "on",
    "left",
    "right",
)

# Transformer width/depth of the tiny embedders (text and vision towers alike).
_EMBEDDER = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
}


def _word_tokenizer(
    out: Path, *, specials: list[str], template: str, pad: str, **named: str
) -> dict[str, int]:
    """Save a lower-casing WordLevel tokenizer over ``specials + TINY_WORDS``.

    Args:
        out: directory to save the tokenizer files to.
        specials: special tokens, given the first ids in this order.
        template: the post-processing template for one text, e.g. ``"[CLS] $A [SEP]"``.
        pad: the padding token.
        **named: named special tokens (``unk_token`` is required), e.g. ``eos_token``.

    Returns:
        The vocabulary, token -> id.
    """
    transformers = import_transformers()
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    vocab = {tok: i for i, tok in enumerate([*specials, *TINY_WORDS])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token=named["unk_token"]))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    used = sorted(set(re.findall(r"\S+", template)) - {"$A"})
    tok.post_processor = processors.TemplateProcessing(
        single=template, special_tokens=[(s, vocab[s]) for s in used]
    )
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token=pad, model_max_length=512, **named
    )
    fast.save_pretrained(out)
    return vocab


@tiny_builder
def tiny_dinov2(path: PathLike, *, seed: int = 0) -> Path:
    """Save a tiny DINOv2 (``dinov2/*``): 2 layers of width 32 (a 32-d CLS), patch 14.

    Its config's ``image_size`` is 28; the backend's default 224 input works too
    (DINOv2 interpolates its position embeddings).
    """
    transformers = import_transformers()
    out = make_out_dir(path)
    config = transformers.Dinov2Config(**_EMBEDDER, image_size=28, patch_size=14)
    save_seeded_model(transformers.Dinov2Model, config, out, seed)
    return out


@tiny_builder
def tiny_dinov3(path: PathLike, *, seed: int = 0) -> Path:
    """Save a tiny DINOv3 ViT (``dinov3/*``): 2 layers of width 32, patch 16, 2 registers."""
    transformers = import_transformers()
    out = make_out_dir(path)
    config = transformers.DINOv3ViTConfig(
        **_EMBEDDER, image_size=32, patch_size=16, num_register_tokens=2
    )
    save_seeded_model(transformers.DINOv3ViTModel, config, out, seed)
    return out


@tiny_builder
def tiny_clip(path: PathLike, *, seed: int = 0) -> Path:
    """Save a tiny CLIP (``clip/*``): 32x32 input, 16-d embeddings, a word-level tokenizer.

    The directory also holds a ``preprocessor_config.json`` (shortest-edge 32 resize,
    32 x 32 center crop, as CLIP ships it); texts are tokenised over
    :data:`TINY_WORDS` with at most 77 tokens.
    """
    transformers = import_transformers()
    out = make_out_dir(path)
    vocab = _word_tokenizer(
        out,
        specials=["<|pad|>", "<|unk|>", "<|startoftext|>", "<|endoftext|>"],
        template="<|startoftext|> $A <|endoftext|>",
        pad="<|endoftext|>",
        unk_token="<|unk|>",
        bos_token="<|startoftext|>",
        eos_token="<|endoftext|>",
    )
    config = transformers.CLIPConfig(
        text_config={
            **_EMBEDDER,
            "vocab_size": len(vocab),
            "max_position_embeddings": 77,
            "bos_token_id": vocab["<|startoftext|>"],
            "eos_token_id": vocab["<|endoftext|>"],
            "pad_token_id": vocab["<|endoftext|>"],
        },
        vision_config={**_EMBEDDER, "image_size": 32, "patch_size": 16},
        projection_dim=16,
    )
    save_seeded_model(transformers.CLIPModel, config, out, seed)
    image_processor_class("CLIPImageProcessor")(
        size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}
    ).save_pretrained(out)
    return out


@tiny_builder
def tiny_siglip(path: PathLike, *, seed: int = 0) -> Path:
    """Save a tiny SigLIP (``siglip/*`` and ``siglip2/*``): 32x32 input, 32-d embeddings.

    ``model_type`` is ``siglip`` (the fixed-resolution kind both backends load). There
    is no ``preprocessor_config.json``: the backend's defaults apply. Texts are padded
    to 64 tokens over :data:`TINY_WORDS`.
    """
    transformers = import_transformers()
    out = make_out_dir(path)
    vocab = _word_tokenizer(
        out,
        specials=["<pad>", "<unk>", "</s>"],
        template="$A </s>",
        pad="<pad>",
        unk_token="<unk>",
        eos_token="</s>",
    )
    config = transformers.SiglipConfig(
        text_config={**_EMBEDDER, "vocab_size": len(vocab), "max_position_embeddings": 64},
        vision_config={**_EMBEDDER, "image_size": 32, "patch_size": 16},
    )
    save_seeded_model(transformers.SiglipModel, config, out, seed)
    return out


@tiny_builder
def tiny_sentence(path: PathLike, *, seed: int = 0) -> Path:
    """Save a tiny BERT sentence encoder (``sentence/*``): 32-d, ``max_seq_length`` 48."""
    transformers = import_transformers()
    out = make_out_dir(path)
    vocab = _word_tokenizer(
        out,
        specials=["[PAD]", "[UNK]", "[CLS]", "[SEP]"],
        template="[CLS] $A [SEP]",
        pad="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
    )
    config = transformers.BertConfig(**_EMBEDDER, vocab_size=len(vocab), max_position_embeddings=64)
    save_seeded_model(transformers.BertModel, config, out, seed)
    (out / "sentence_bert_config.json").write_text(
        '{"max_seq_length": 48, "do_lower_case": false}', encoding="utf-8"
    )
    return out
