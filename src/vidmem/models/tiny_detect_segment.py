"""Tiny detectors and segmenters: OWL-ViT, OWLv2, Grounding DINO, SAM 2 and SAM.

All of them take 64x64 input in their config. Each builder is re-exported by
:mod:`vidmem.models.tiny`, which maps registry names to builders.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vidmem.models.backends.base import import_transformers
from vidmem.models.tiny_saving import PathLike, make_out_dir, save_seeded_model, tiny_builder

__all__ = ["tiny_grounding_dino", "tiny_owlv2", "tiny_owlvit", "tiny_sam", "tiny_sam2"]

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
    save_seeded_model(model_cls, config, out, seed)
    _save_owl_tokenizer(out)
    return out


@tiny_builder
def tiny_owlvit(path: PathLike, *, seed: int = 0) -> Path:
    """Save a tiny OWL-ViT detector (``owlvit/*``): 64x64 input, patch 16 (16 boxes).

    The tokenizer is CLIP's byte-level BPE without merges (every byte a token) with
    at most 16 tokens per query.
    """
    transformers = import_transformers()
    return _save_owl(
        make_out_dir(path), transformers.OwlViTConfig, transformers.OwlViTForObjectDetection, seed
    )


@tiny_builder
def tiny_owlv2(path: PathLike, *, seed: int = 0) -> Path:
    """Save a tiny OWLv2 detector (``owlv2/*``): as :func:`tiny_owlvit`, ``model_type`` owlv2."""
    transformers = import_transformers()
    return _save_owl(
        make_out_dir(path), transformers.Owlv2Config, transformers.Owlv2ForObjectDetection, seed
    )


@tiny_builder
def tiny_grounding_dino(path: PathLike, *, seed: int = 0) -> Path:
    """Save a tiny Grounding DINO (``grounding-dino/*``): Swin backbone, 20 queries.

    The BERT tokenizer keeps bert-base-uncased's ids for the tokens Grounding DINO
    treats as special (``[CLS]`` 101, ``[SEP]`` 102, ``.`` 1012, ``?`` 1029) and knows
    the words a, red, car, person, cat, dog, blue, ##s, the (ids 200-208); the model
    reads at most 32 text tokens. Frames are resized to shortest edge 48, longest 80.
    """
    transformers = import_transformers()
    out = make_out_dir(path)
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
    save_seeded_model(transformers.GroundingDinoForObjectDetection, config, out, seed)
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


@tiny_builder
def tiny_sam2(path: PathLike, *, seed: int = 0) -> Path:
    """Save a tiny SAM 2 (``sam2/*``): a 4-stage Hiera backbone on 64x64 input."""
    transformers = import_transformers()
    out = make_out_dir(path)
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
    save_seeded_model(transformers.Sam2Model, config, out, seed)
    return out


@tiny_builder
def tiny_sam(path: PathLike, *, seed: int = 0) -> Path:
    """Save a tiny SAM (``sam/*``): a 2-layer ViT image encoder on 64x64 input."""
    transformers = import_transformers()
    out = make_out_dir(path)
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
    save_seeded_model(transformers.SamModel, config, out, seed)
    return out
