"""Tiny randomly initialised transformers models, saved as local weights directories.

Each builder makes a model of the family a transformers backend loads (a few layers of
width 16-64, a few hundred kilobytes), initialises it from a fixed seed, saves it with
``save_pretrained`` together with the tokenizer / processor files the backend reads,
and returns the directory. Pass that directory as ``weights=`` and the real backend
class loads it through the same ``from_pretrained`` path as real weights, offline::

    >>> from vidmem.models.loading import load_backend
    >>> from vidmem.models.tiny import build_tiny
    >>> path = build_tiny("owlvit/base-patch32", "/tmp/tiny-owlvit")  # doctest: +SKIP
    >>> det = load_backend("owlvit/base-patch32", {"weights": str(path)})  # doctest: +SKIP

The outputs are meaningless (random weights): use these models to test code and to
smoke-test a pipeline end to end without downloading anything, never to measure.
Building is deterministic: the same call writes the same weights (the global torch
random state is left as it was). torch and transformers are imported only inside the
builders, so importing this module is cheap.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from vidmem.errors import UserInputError
from vidmem.models.backends.base import image_processor_class, import_transformers

__all__ = [
    "QWEN_CHAT_TEMPLATE",
    "QWEN_VL_FAMILIES",
    "TINY_BUILDERS",
    "TINY_WORDS",
    "build_tiny",
    "tiny_clip",
    "tiny_dinov2",
    "tiny_dinov3",
    "tiny_grounding_dino",
    "tiny_official_cmbench",
    "tiny_owlv2",
    "tiny_owlvit",
    "tiny_qwen_vl",
    "tiny_sam",
    "tiny_sam2",
    "tiny_sentence",
    "tiny_siglip",
]

PathLike = str | os.PathLike[str]
_F = TypeVar("_F", bound=Callable[..., Path])

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

#: ``model_type`` values :func:`tiny_qwen_vl` can build.
QWEN_VL_FAMILIES: tuple[str, ...] = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe")

#: The chat template of the tiny Qwen-VL models: the structure of Qwen2-VL's (a default
#: system turn, text and image parts in order, string or list content, the assistant
#: header as the generation prompt).
QWEN_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}"
    "{% endfor %}<|im_end|>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

_QWEN_SPECIALS = (
    "<|im_end|>",
    "<|endoftext|>",
    "<|im_start|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
)

# Transformer width/depth of the tiny embedders (text and vision towers alike).
_EMBEDDER = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
}
# Input side of the tiny detectors and segmenters (their config's image size).
_DETECT_SIZE = 64
# Prompt encoder and mask decoder of the tiny SAM and SAM 2 alike.
_SAM_PROMPT_ENCODER = {"hidden_size": 32, "image_size": _DETECT_SIZE, "patch_size": 16}
_SAM_MASK_DECODER = {
    "hidden_size": 32,
    "mlp_dim": 64,
    "num_attention_heads": 2,
    "iou_head_hidden_dim": 32,
}


# -- helpers ---------------------------------------------------------------------------

_PATH_AND_SEED_DOC = """
    Args:
        path: directory to write (created if missing).
        seed: torch seed of the random initialisation.

    Returns:
        ``path`` as a :class:`~pathlib.Path`, ready for ``weights=``.
    """


def _builder(func: _F) -> _F:
    """Mark a ``tiny_<family>(path, *, seed=0)`` builder: append its shared Args/Returns doc."""
    func.__doc__ = f"{(func.__doc__ or '').rstrip()}\n{_PATH_AND_SEED_DOC}"
    return func


def _out_dir(path: PathLike) -> Path:
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    return out


@contextmanager
def _seeded(seed: int) -> Iterator[None]:
    """Seed torch for a model's initialisation, restoring the caller's random state after."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def _save_model(model_cls: Any, config: Any, out: Path, seed: int) -> None:
    with _seeded(seed):
        model = model_cls(config)
    model.save_pretrained(out)


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


def _bytes_to_unicode() -> list[str]:
    """GPT-2's byte -> printable character table, in byte order of ``keep`` then the rest."""
    keep = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    chars = keep[:]
    extra = 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + extra)
            extra += 1
    return [chr(c) for c in chars]


def _save_owl_tokenizer(out: Path) -> None:
    """A CLIP BPE tokenizer without merges: every byte is a token, 514 ids in all."""
    transformers = import_transformers()
    chars = _bytes_to_unicode()
    vocab = {c: i for i, c in enumerate(chars)}
    vocab.update({c + "</w>": 256 + i for i, c in enumerate(chars)})
    vocab["<|startoftext|>"] = 512
    vocab["<|endoftext|>"] = 513  # highest id: the text tower pools at argmax(input_ids)
    tokenizer = transformers.CLIPTokenizer(
        vocab=vocab, merges=[], pad_token="!", model_max_length=16
    )
    tokenizer.save_pretrained(out)


def _save_owl(out: Path, config_cls: Any, model_cls: Any, seed: int) -> Path:
    tower = {
        "hidden_size": 32,
        "intermediate_size": 37,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
    }
    text = {
        **tower,
        "vocab_size": 514,
        "max_position_embeddings": 16,
        "bos_token_id": 512,
        "eos_token_id": 513,
        "pad_token_id": 0,
    }
    vision = {**tower, "image_size": _DETECT_SIZE, "patch_size": 16}
    config = config_cls(
        text_config=text, vision_config=vision, projection_dim=32, initializer_range=0.02
    )
    _save_model(model_cls, config, out, seed)
    _save_owl_tokenizer(out)
    return out


# -- image and text embedders ----------------------------------------------------------


@_builder
def tiny_dinov2(path: PathLike, *, seed: int = 0) -> Path:
    """Save a tiny DINOv2 (``dinov2/*``): 2 layers of width 32 (a 32-d CLS), patch 14.

    Its config's ``image_size`` is 28; the backend's default 224 input works too
    (DINOv2 interpolates its position embeddings).
    """
    transformers = import_transformers()
    out = _out_dir(path)
    config = transformers.Dinov2Config(**_EMBEDDER, image_size=28, patch_size=14)
    _save_model(transformers.Dinov2Model, config, out, seed)
    return out


@_builder
def tiny_dinov3(path: PathLike, *, seed: int = 0) -> Path:
    """Save a tiny DINOv3 ViT (``dinov3/*``): 2 layers of width 32, patch 16, 2 registers."""
    transformers = import_transformers()
    out = _out_dir(path)
    config = transformers.DINOv3ViTConfig(
        **_EMBEDDER, image_size=32, patch_size=16, num_register_tokens=2
    )
    _save_model(transformers.DINOv3ViTModel, config, out, seed)
    return out


@_builder
def tiny_clip(path: PathLike, *, seed: int = 0) -> Path:
    """Save a tiny CLIP (``clip/*``): 32x32 input, 16-d embeddings, a word-level tokenizer.

    The directory also holds a ``preprocessor_config.json`` (shortest-edge 32 resize,
    32 x 32 center crop, as CLIP ships it); texts are tokenised over
    :data:`TINY_WORDS` with at most 77 tokens.
    """
    transformers = import_transformers()
    out = _out_dir(path)
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
    _save_model(transformers.CLIPModel, config, out, seed)
    image_processor_class("CLIPImageProcessor")(
        size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}
    ).save_pretrained(out)
    return out


@_builder
def tiny_siglip(path: PathLike, *, seed: int = 0) -> Path:
    """Save a tiny SigLIP (``siglip/*`` and ``siglip2/*``): 32x32 input, 32-d embeddings.

    ``model_type`` is ``siglip`` (the fixed-resolution kind both backends load). There
    is no ``preprocessor_config.json``: the backend's defaults apply. Texts are padded
    to 64 tokens over :data:`TINY_WORDS`.
    """
    transformers = import_transformers()
    out = _out_dir(path)
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
    _save_model(transformers.SiglipModel, config, out, seed)
    return out


@_builder
def tiny_sentence(path: PathLike, *, seed: int = 0) -> Path:
    """Save a tiny BERT sentence encoder (``sentence/*``): 32-d, ``max_seq_length`` 48."""
    transformers = import_transformers()
    out = _out_dir(path)
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
    _save_model(transformers.BertModel, config, out, seed)
    (out / "sentence_bert_config.json").write_text(
        '{"max_seq_length": 48, "do_lower_case": false}', encoding="utf-8"
    )
    return out


# -- detectors and segmenters ----------------------------------------------------------


@_builder
def tiny_owlvit(path: PathLike, *, seed: int = 0) -> Path:
    """Save a tiny OWL-ViT detector (``owlvit/*``): 64x64 input, patch 16 (16 boxes).

    The tokenizer is CLIP's byte-level BPE without merges (every byte a token) with
    at most 16 tokens per query.
    """
    transformers = import_transformers()
    return _save_owl(
        _out_dir(path), transformers.OwlViTConfig, transformers.OwlViTForObjectDetection, seed
    )


@_builder
def tiny_owlv2(path: PathLike, *, seed: int = 0) -> Path:
    """Save a tiny OWLv2 detector (``owlv2/*``): as :func:`tiny_owlvit`, ``model_type`` owlv2."""
    transformers = import_transformers()
    return _save_owl(
        _out_dir(path), transformers.Owlv2Config, transformers.Owlv2ForObjectDetection, seed
    )


@_builder
def tiny_grounding_dino(path: PathLike, *, seed: int = 0) -> Path:
    """Save a tiny Grounding DINO (``grounding-dino/*``): Swin backbone, 20 queries.

    The BERT tokenizer keeps bert-base-uncased's ids for the tokens Grounding DINO
    treats as special (``[CLS]`` 101, ``[SEP]`` 102, ``.`` 1012, ``?`` 1029) and knows
    the words a, red, car, person, cat, dog, blue, ##s, the (ids 200-208); the model
    reads at most 32 text tokens. Frames are resized to shortest edge 48, longest 80.
    """
    transformers = import_transformers()
    out = _out_dir(path)
    backbone = transformers.SwinConfig(
        image_size=_DETECT_SIZE,
        patch_size=4,
        embed_dim=16,
        depths=[1, 1, 1, 1],
        num_heads=[1, 1, 1, 1],
        window_size=4,
        out_features=["stage2", "stage3", "stage4"],
    )
    text = transformers.BertConfig(
        vocab_size=1100,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=64,
    )
    config = transformers.GroundingDinoConfig(
        backbone_config=backbone,
        text_config=text,
        d_model=32,
        encoder_layers=1,
        decoder_layers=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        num_queries=20,
        max_text_len=32,
        encoder_n_points=2,
        decoder_n_points=2,
        num_feature_levels=3,  # no extra level: it would be 1x1 on tiny frames
    )
    _save_model(transformers.GroundingDinoForObjectDetection, config, out, seed)
    tokens = {i: f"[unused{i}]" for i in range(1100)}
    tokens.update(
        {0: "[PAD]", 100: "[UNK]", 101: "[CLS]", 102: "[SEP]", 103: "[MASK]", 1012: ".", 1029: "?"}
    )
    for k, word in enumerate(["a", "red", "car", "person", "cat", "dog", "blue", "##s", "the"]):
        tokens[200 + k] = word
    transformers.BertTokenizer(vocab={t: i for i, t in tokens.items()}).save_pretrained(out)
    (out / "preprocessor_config.json").write_text(
        json.dumps({"size": {"shortest_edge": 48, "longest_edge": 80}}), encoding="utf-8"
    )
    return out


@_builder
def tiny_sam2(path: PathLike, *, seed: int = 0) -> Path:
    """Save a tiny SAM 2 (``sam2/*``): a 4-stage Hiera backbone on 64x64 input."""
    transformers = import_transformers()
    out = _out_dir(path)
    s = _DETECT_SIZE
    backbone = transformers.Sam2HieraDetConfig(
        hidden_size=16,
        image_size=[s, s],
        embed_dim_per_stage=[16, 32, 64, 128],
        blocks_per_stage=[1, 1, 2, 1],
        num_attention_heads_per_stage=[1, 1, 1, 1],
        window_size_per_stage=[4, 4, 2, 2],
        global_attention_blocks=[3],
        window_positional_embedding_background_size=[2, 2],
    )
    vision = transformers.Sam2VisionConfig(
        backbone_config=backbone,
        backbone_channel_list=[128, 64, 32, 16],
        backbone_feature_sizes=[[s // 4, s // 4], [s // 8, s // 8], [s // 16, s // 16]],
        fpn_hidden_size=32,
    )
    config = transformers.Sam2Config(
        vision_config=vision,
        prompt_encoder_config=transformers.Sam2PromptEncoderConfig(**_SAM_PROMPT_ENCODER),
        mask_decoder_config=transformers.Sam2MaskDecoderConfig(**_SAM_MASK_DECODER),
    )
    _save_model(transformers.Sam2Model, config, out, seed)
    return out


@_builder
def tiny_sam(path: PathLike, *, seed: int = 0) -> Path:
    """Save a tiny SAM (``sam/*``): a 2-layer ViT image encoder on 64x64 input."""
    transformers = import_transformers()
    out = _out_dir(path)
    config = transformers.SamConfig(
        vision_config=transformers.SamVisionConfig(
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            image_size=_DETECT_SIZE,
            patch_size=16,
            output_channels=32,
            window_size=2,
            global_attn_indexes=[1],
            num_pos_feats=16,
            mlp_dim=64,
        ),
        prompt_encoder_config=transformers.SamPromptEncoderConfig(**_SAM_PROMPT_ENCODER),
        mask_decoder_config=transformers.SamMaskDecoderConfig(**_SAM_MASK_DECODER),
    )
    _save_model(transformers.SamModel, config, out, seed)
    return out


# -- Qwen-VL judges --------------------------------------------------------------------


def _qwen_tokenizer(out: Path) -> tuple[dict[str, int], int]:
    """Byte-level BPE without merges (every byte a token) + the Qwen special tokens."""
    transformers = import_transformers()
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=list(_QWEN_SPECIALS[2:]),
        model_max_length=4096,
    )
    fast.save_pretrained(out)
    return {s: fast.convert_tokens_to_ids(s) for s in _QWEN_SPECIALS}, len(fast)


def tiny_qwen_vl(
    path: PathLike,
    family: str = "qwen2_vl",
    *,
    chat_template_file: str | None = "chat_template.json",
    seed: int = 0,
) -> Path:
    """Save a tiny Qwen-VL chat model (``judge/*``): 1 text layer of width 32, 1 vision block.

    The directory holds the model, a byte-level tokenizer with the Qwen special tokens,
    ``preprocessor_config.json`` (merge size 2; 1 to 16 merged patches per image) and
    :data:`QWEN_CHAT_TEMPLATE`. A random model writes garbage replies.

    Args:
        path: directory to write (created if missing).
        family: the ``model_type``, one of :data:`QWEN_VL_FAMILIES`.
        chat_template_file: where the chat template goes: ``"chat_template.json"``,
            ``"chat_template.jinja"``, or ``None`` for no template at all.
        seed: torch seed of the random initialisation.

    Returns:
        ``path`` as a :class:`~pathlib.Path`, ready for ``weights=``.

    Raises:
        UserInputError: ``family`` or ``chat_template_file`` is not one of the above.
    """
    if family not in QWEN_VL_FAMILIES:
        raise UserInputError(
            f"tiny_qwen_vl: family must be one of {', '.join(QWEN_VL_FAMILIES)}, found {family!r}"
        )
    if chat_template_file not in ("chat_template.json", "chat_template.jinja", None):
        raise UserInputError(
            "tiny_qwen_vl: chat_template_file must be 'chat_template.json', "
            f"'chat_template.jinja' or None, found {chat_template_file!r}"
        )
    transformers = import_transformers()
    out = _out_dir(path)
    ids, vocab_size = _qwen_tokenizer(out)
    special = {
        "image_token_id": ids["<|image_pad|>"],
        "video_token_id": ids["<|video_pad|>"],
        "vision_start_token_id": ids["<|vision_start|>"],
        "vision_end_token_id": ids["<|vision_end|>"],
    }
    text: dict[str, Any] = {
        "vocab_size": vocab_size,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "max_position_embeddings": 512,
        "bos_token_id": ids["<|endoftext|>"],
        "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"],
        # head_dim 16: the three M-RoPE sections (t, h, w) split its 8 frequencies
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
    }
    if family == "qwen2_vl":
        text["rope_parameters"]["mrope_section"] = [2, 3, 3]
        vision: dict[str, Any] = {
            "depth": 1,
            "embed_dim": 32,
            "hidden_size": 32,
            "num_heads": 2,
            "mlp_ratio": 2,
        }
        config = transformers.Qwen2VLConfig(text_config=text, vision_config=vision, **special)
        model_cls = transformers.Qwen2VLForConditionalGeneration
        patch = 14
    elif family == "qwen2_5_vl":
        text["rope_parameters"]["mrope_section"] = [2, 3, 3]
        vision = {
            "depth": 1,
            "hidden_size": 32,
            "intermediate_size": 64,
            "out_hidden_size": 32,
            "num_heads": 2,
            "window_size": 56,
            "fullatt_block_indexes": [0],
        }
        config = transformers.Qwen2_5_VLConfig(text_config=text, vision_config=vision, **special)
        model_cls = transformers.Qwen2_5_VLForConditionalGeneration
        patch = 14
    else:  # qwen3_vl, qwen3_vl_moe
        text["head_dim"] = 16
        text["rope_parameters"].update(mrope_section=[4, 2, 2], mrope_interleaved=True)
        vision = {
            "depth": 1,
            "hidden_size": 32,
            "intermediate_size": 64,
            "out_hidden_size": 32,
            "num_heads": 2,
            "patch_size": 16,
            "num_position_embeddings": 64,
            "deepstack_visual_indexes": [0],
        }
        if family == "qwen3_vl_moe":
            text.update(num_experts=2, num_experts_per_tok=1, moe_intermediate_size=32)
            config = transformers.Qwen3VLMoeConfig(
                text_config=text, vision_config=vision, **special
            )
            model_cls = transformers.Qwen3VLMoeForConditionalGeneration
        else:
            config = transformers.Qwen3VLConfig(text_config=text, vision_config=vision, **special)
            model_cls = transformers.Qwen3VLForConditionalGeneration
        patch = 16
    _save_model(model_cls, config, out, seed)
    factor = 2 * patch  # patch_size * merge_size
    image_processor_class("Qwen2VLImageProcessor")(
        patch_size=patch,
        merge_size=2,
        temporal_patch_size=2,
        min_pixels=factor * factor,
        max_pixels=16 * factor * factor,
    ).save_pretrained(out)
    (out / "chat_template.jinja").unlink(missing_ok=True)  # written by the tokenizer
    (out / "chat_template.json").unlink(missing_ok=True)  # left by an earlier build
    if chat_template_file == "chat_template.json":
        (out / "chat_template.json").write_text(
            json.dumps({"chat_template": QWEN_CHAT_TEMPLATE}), encoding="utf-8"
        )
    elif chat_template_file == "chat_template.jinja":
        (out / "chat_template.jinja").write_text(QWEN_CHAT_TEMPLATE, encoding="utf-8")
    return out


# -- by registry name ------------------------------------------------------------------

#: Backend family (the part of a registry name before ``/``) -> its tiny-model builder.
#: ``judge`` builds the Qwen-VL family the named judge expects (Qwen2-VL for
#: ``judge/transformers``).
TINY_BUILDERS: dict[str, Callable[..., Path]] = {
    "dinov2": tiny_dinov2,
    "dinov3": tiny_dinov3,
    "clip": tiny_clip,
    "siglip": tiny_siglip,
    "siglip2": tiny_siglip,
    "sentence": tiny_sentence,
    "owlvit": tiny_owlvit,
    "owlv2": tiny_owlv2,
    "grounding-dino": tiny_grounding_dino,
    "sam2": tiny_sam2,
    "sam": tiny_sam,
    "judge": tiny_qwen_vl,
}


def build_tiny(backend_name: str, path: PathLike, *, seed: int = 0) -> Path:
    """Save a tiny random model that the registered backend ``backend_name`` loads.

    Args:
        backend_name: registry name, e.g. ``"dinov2/small"``, ``"owlvit/base-patch32"``,
            ``"judge/qwen3-vl-8b"``; any variant of a family gets the same tiny model.
        path: directory to write (created if missing).
        seed: torch seed of the random initialisation.

    Returns:
        ``path`` as a :class:`~pathlib.Path`; pass it as the backend's ``weights=``.

    Raises:
        UnknownNameError: ``backend_name`` is not registered (with "did you mean").
        UserInputError: the backend is not a transformers one (``classic/*``,
            ``judge/openai``), so there is no tiny model for it.

    Example:
        >>> path = build_tiny("sam2/base-plus", "/tmp/tiny-sam2")  # doctest: +SKIP
        >>> load_backend("sam2/base-plus", {"weights": str(path)})  # doctest: +SKIP
    """
    from vidmem.registry import BACKENDS

    entry = BACKENDS.get(backend_name)
    family = backend_name.split("/", 1)[0]
    builder = TINY_BUILDERS.get(family)
    if builder is None or entry.extra != "models":
        buildable = [e.name for e in BACKENDS.entries() if _buildable(e)]
        raise UserInputError(
            f"build_tiny: backend '{backend_name}' loads no transformers weights, so there is "
            "no tiny model for it",
            hint=f"backends with a tiny model: {', '.join(buildable)}",
        )
    if builder is tiny_qwen_vl:
        # the judge's first accepted model_type (judge/transformers takes them all)
        model_types = tuple(getattr(entry.load(), "model_types", ()) or QWEN_VL_FAMILIES)
        return tiny_qwen_vl(path, family=model_types[0], seed=seed)
    return builder(path, seed=seed)


def _buildable(entry: Any) -> bool:
    return entry.extra == "models" and entry.name.split("/", 1)[0] in TINY_BUILDERS


def tiny_official_cmbench(dirpath: PathLike, *, seed: int = 0) -> dict[str, str]:
    """Save tiny models for CMBench's official preset, one subdirectory per backend.

    The preset runs ``owlvit/base-patch32`` (detector), ``sam2/base-plus`` (segmenter)
    and ``dinov2/base`` (crop embedder); the result is the ``weights`` option of each.

    Args:
        dirpath: parent directory (created if missing).
        seed: torch seed of the random initialisations.

    Returns:
        Backend name -> weights directory (as a string), e.g.
        ``{"owlvit/base-patch32": "<dirpath>/owlvit--base-patch32", ...}``.
    """
    root = _out_dir(dirpath)
    names = ("owlvit/base-patch32", "sam2/base-plus", "dinov2/base")
    return {
        name: str(build_tiny(name, root / name.replace("/", "--"), seed=seed)) for name in names
    }
