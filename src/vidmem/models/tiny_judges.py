"""Tiny Qwen-VL chat models for the ``judge/*`` backends, with their chat template.

:func:`tiny_qwen_vl` builds any of :data:`QWEN_VL_FAMILIES`; it is re-exported by
:mod:`vidmem.models.tiny`, whose :func:`~vidmem.models.tiny.build_tiny` picks the
family a named judge expects.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vidmem.errors import UserInputError
from vidmem.models.backends.base import image_processor_class, import_transformers
from vidmem.models.tiny_saving import PathLike, make_out_dir, save_seeded_model

__all__ = ["QWEN_CHAT_TEMPLATE", "QWEN_VL_FAMILIES", "tiny_qwen_vl"]

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
    out = make_out_dir(path)
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
    save_seeded_model(model_cls, config, out, seed)
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
