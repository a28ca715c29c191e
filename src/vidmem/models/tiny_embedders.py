"""Tiny image and text embedders: DINOv2, DINOv3, CLIP, SigLIP, a BERT sentence encoder
and a Qwen3 decoder for Qwen3-Embedding.

The CLIP, SigLIP and BERT text towers share a lower-casing word-level tokenizer over
:data:`TINY_WORDS`; the Qwen3 one is byte-level (any text, instructions included).
Each builder is re-exported by :mod:`vidmem.models.tiny`, which maps registry names
to builders.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from vidmem.models.backends.base import image_processor_class, import_transformers
from vidmem.models.tiny_saving import PathLike, make_out_dir, save_seeded_model, tiny_builder

__all__ = [
    "TINY_WORDS",
    "tiny_clip",
    "tiny_dinov2",
    "tiny_dinov3",
    "tiny_qwen3_embedding",
    "tiny_sentence",
    "tiny_siglip",
]

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


def _qwen3_embedding_tokenizer(out: Path) -> int:
    """Save a byte-level BPE (every byte a token, no merges) shaped like Qwen3-Embedding's.

    As on the hub: ``tokenizer_class`` ``Qwen2Tokenizer``, ``<|endoftext|>`` is the
    padding token and a ``TemplateProcessing`` post-processor appends it to every text.

    Returns:
        The vocabulary size (bytes + special tokens).
    """
    transformers = import_transformers()
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    eod = tok.token_to_id("<|endoftext|>")
    tok.post_processor = processors.TemplateProcessing(
        single="$A:0 <|endoftext|>:0",
        pair="$A:0 <|endoftext|>:0 $B:1 <|endoftext|>:1",
        special_tokens=[("<|endoftext|>", eod)],
    )
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        model_max_length=131072,
    )
    fast.save_pretrained(out)
    config_file = out / "tokenizer_config.json"
    config = json.loads(config_file.read_text(encoding="utf-8"))
    config["tokenizer_class"] = "Qwen2Tokenizer"
    config_file.write_text(json.dumps(config, indent=2), encoding="utf-8")
    return tok.get_vocab_size(with_added_tokens=True)


@tiny_builder
def tiny_qwen3_embedding(path: PathLike, *, seed: int = 0) -> Path:
    """Save a tiny Qwen3 decoder (``qwen3-embedding/*``): 2 layers of width 32 (32-d).

    ``model_type`` ``qwen3`` saved as ``Qwen3Model`` (what ``AutoModel`` loads), 2 query
    heads and 1 key/value head of 16, ``max_position_embeddings`` 1024 (so the backend's
    8192-token default is capped to 1024), and a byte-level tokenizer that ends every
    text in ``<|endoftext|>`` as the hub's does.
    """
    transformers = import_transformers()
    out = make_out_dir(path)
    vocab_size = _qwen3_embedding_tokenizer(out)
    config = transformers.Qwen3Config(
        **_EMBEDDER,
        num_key_value_heads=1,
        head_dim=16,
        vocab_size=vocab_size,
        max_position_embeddings=1024,
        tie_word_embeddings=True,
    )
    save_seeded_model(transformers.Qwen3Model, config, out, seed)
    return out
