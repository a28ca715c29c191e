"""Tiny randomly initialised diffusers pipelines, built offline, for tests and benchmarks.

Each builder makes the real pipeline classes (``WanPipeline``, ``WanImageToVideoPipeline``,
``Flux2KleinPipeline``) from small configs -- nothing is downloaded: the tokenizer is a
byte-level one built in memory with the ``tokenizers`` library and wrapped as a
``PreTrainedTokenizerFast``, the text encoders are ``UMT5EncoderModel`` (Wan; its
``d_model`` is the transformer's ``text_dim``) and ``Qwen3ForCausalLM`` (FLUX.2 [klein];
three hidden-state layers stacked are the transformer's ``joint_attention_dim``) -- and
saves it with ``save_pretrained``, so a generator loads it through the normal
``from_pretrained(local_files_only=True)`` path, exactly as it would load real weights.

The shapes follow the real checkpoints where that decides a rule the generators check
(Wan2.2-TI2V-5B: VAE 16x spatial, patch 2, 48 latent channels, ``expand_timesteps``;
A14B: VAE 8x, two experts and a ``boundary_ratio``); everything else is as small as the
classes allow. Weights are drawn from ``torch.manual_seed(seed)``, so a build is
reproducible.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = [
    "BYTE_VOCAB_SIZE",
    "build_tiny",
    "build_tiny_flux2_klein",
    "build_tiny_wan_a14b",
    "build_tiny_wan_ti2v_5b",
    "byte_tokenizer",
]

#: 256 byte symbols + <pad>, </s>, <unk>.
BYTE_VOCAB_SIZE = 259
#: FLUX.2 [klein] stacks these Qwen3 hidden-state layers (its pipeline's default).
FLUX2_TEXT_LAYERS = (9, 18, 27)
_CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{% endfor %}"
                  "{% if add_generation_prompt %}<|assistant|>{% endif %}")


def byte_tokenizer(*, chat: bool = False) -> Any:
    """A byte-level ``PreTrainedTokenizerFast`` built in memory (never downloaded).

    Every UTF-8 byte is one token (a BPE model with no merges over the byte alphabet), so
    any prompt tokenizes; ids 256-258 are ``<pad>``, ``</s>`` and ``<unk>``.

    Args:
        chat: give it a minimal chat template (FLUX.2 [klein] formats its prompt with
            ``apply_chat_template``).
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {ch: i for i, ch in enumerate(alphabet)}
    specials = ["<pad>", "</s>", "<unk>"]
    for tok in specials:
        vocab[tok] = len(vocab)
    core = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    core.post_processor = processors.TemplateProcessing(
        single="$A </s>", special_tokens=[("</s>", vocab["</s>"])])
    tok = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", eos_token="</s>",
                                  unk_token="<unk>", model_max_length=4096)
    if chat:
        tok.chat_template = _CHAT_TEMPLATE
    return tok


def _wan_vae(*, five_b: bool) -> Any:
    from diffusers import AutoencoderKLWan

    if five_b:  # the Wan2.2 VAE: 48 latent channels, 16x spatial (2x patchify inside)
        return AutoencoderKLWan(
            base_dim=3, z_dim=48, in_channels=12, out_channels=12, is_residual=True,
            patch_size=2, latents_mean=[0.0] * 48, latents_std=[1.0] * 48,
            dim_mult=[1, 1, 1, 1], num_res_blocks=1, scale_factor_spatial=16,
            scale_factor_temporal=4, temperal_downsample=[False, True, True])
    return AutoencoderKLWan(base_dim=3, z_dim=16, dim_mult=[1, 1, 1, 1], num_res_blocks=1,
                            temperal_downsample=[False, True, True])


def _wan_transformer(in_channels: int, out_channels: int, text_dim: int) -> Any:
    from diffusers import WanTransformer3DModel

    return WanTransformer3DModel(
        patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=12,
        in_channels=in_channels, out_channels=out_channels, text_dim=text_dim, freq_dim=256,
        ffn_dim=32, num_layers=2, cross_attn_norm=True, qk_norm="rms_norm_across_heads",
        rope_max_seq_len=32)


def _umt5(text_dim: int) -> Any:
    from transformers import UMT5Config, UMT5EncoderModel

    return UMT5EncoderModel(UMT5Config(
        vocab_size=BYTE_VOCAB_SIZE, d_model=text_dim, d_kv=8, d_ff=32, num_layers=1,
        num_heads=2, relative_attention_num_buckets=8, pad_token_id=256, eos_token_id=257,
        decoder_start_token_id=256))


def _save(pipe: Any, out: str | Path) -> Path:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    pipe.save_pretrained(out)
    return out


def build_tiny_wan_ti2v_5b(out: str | Path, *, seed: int = 0) -> Path:
    """A tiny Wan2.2-TI2V-5B-shaped ``WanPipeline`` (``expand_timesteps=True``) in ``out``.

    Like the real ``Wan-AI/Wan2.2-TI2V-5B-Diffusers`` folder, it is saved as a
    ``WanPipeline``; the generator builds the image-to-video pipeline from the same
    components.

    Returns:
        ``out``, holding ``model_index.json`` and one folder per component.
    """
    import torch
    from diffusers import FlowMatchEulerDiscreteScheduler, WanPipeline

    text_dim = 32
    torch.manual_seed(seed)
    pipe = WanPipeline(
        tokenizer=byte_tokenizer(), text_encoder=_umt5(text_dim), vae=_wan_vae(five_b=True),
        scheduler=FlowMatchEulerDiscreteScheduler(shift=5.0),
        transformer=_wan_transformer(48, 48, text_dim), transformer_2=None,
        boundary_ratio=None, expand_timesteps=True)
    return _save(pipe, out)


def build_tiny_wan_a14b(out: str | Path, *, image_to_video: bool = False, seed: int = 0) -> Path:
    """A tiny Wan2.2-A14B-shaped pipeline with two experts in ``out``.

    Args:
        out: folder to write.
        image_to_video: build ``WanImageToVideoPipeline`` (the I2V-A14B layout: latent,
            mask and condition channels in, ``boundary_ratio=0.9``) instead of
            ``WanPipeline`` (T2V-A14B, ``boundary_ratio=0.875``).
        seed: torch seed for the random weights.
    """
    import torch
    from diffusers import FlowMatchEulerDiscreteScheduler, WanImageToVideoPipeline, WanPipeline

    text_dim = 32
    torch.manual_seed(seed)
    common = dict(tokenizer=byte_tokenizer(), text_encoder=_umt5(text_dim),
                  vae=_wan_vae(five_b=False),
                  scheduler=FlowMatchEulerDiscreteScheduler(shift=3.0))
    if image_to_video:
        pipe = WanImageToVideoPipeline(
            **common, image_processor=None, image_encoder=None,
            transformer=_wan_transformer(36, 16, text_dim),
            transformer_2=_wan_transformer(36, 16, text_dim), boundary_ratio=0.9)
    else:
        pipe = WanPipeline(**common, transformer=_wan_transformer(16, 16, text_dim),
                           transformer_2=_wan_transformer(16, 16, text_dim), boundary_ratio=0.875)
    return _save(pipe, out)


def build_tiny_flux2_klein(out: str | Path, *, seed: int = 0) -> Path:
    """A tiny ``Flux2KleinPipeline`` in ``out`` (Qwen3 text encoder, 28 layers of width 16).

    The text encoder is deep enough for the pipeline's default layers (9, 18, 27), so the
    generator calls it exactly as it calls the real FLUX.2 [klein].
    """
    import torch
    from diffusers import (
        AutoencoderKLFlux2,
        FlowMatchEulerDiscreteScheduler,
        Flux2KleinPipeline,
        Flux2Transformer2DModel,
    )
    from transformers import Qwen3Config, Qwen3ForCausalLM

    hidden = 16
    torch.manual_seed(seed)
    text_encoder = Qwen3ForCausalLM(Qwen3Config(
        vocab_size=BYTE_VOCAB_SIZE, hidden_size=hidden, intermediate_size=16,
        num_hidden_layers=max(FLUX2_TEXT_LAYERS) + 1, num_attention_heads=2,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=1024, pad_token_id=256,
        eos_token_id=257))
    transformer = Flux2Transformer2DModel(
        patch_size=1, in_channels=4, num_layers=1, num_single_layers=1, attention_head_dim=16,
        num_attention_heads=2, joint_attention_dim=hidden * len(FLUX2_TEXT_LAYERS),
        timestep_guidance_channels=256, axes_dims_rope=[4, 4, 4, 4], guidance_embeds=False)
    vae = AutoencoderKLFlux2(
        sample_size=32, in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",),
        up_block_types=("UpDecoderBlock2D",), block_out_channels=(4,), layers_per_block=1,
        latent_channels=1, norm_num_groups=1, use_quant_conv=False, use_post_quant_conv=False)
    pipe = Flux2KleinPipeline(scheduler=FlowMatchEulerDiscreteScheduler(), vae=vae,
                              text_encoder=text_encoder, tokenizer=byte_tokenizer(chat=True),
                              transformer=transformer, is_distilled=False)
    return _save(pipe, out)


def build_tiny(kind: str, out: str | Path, *, seed: int = 0) -> Path:
    """Build one tiny pipeline by kind: ``wan-ti2v-5b``, ``wan-t2v-a14b``, ``wan-i2v-a14b``
    or ``flux2-klein``."""
    builders = {
        "wan-ti2v-5b": lambda: build_tiny_wan_ti2v_5b(out, seed=seed),
        "wan-t2v-a14b": lambda: build_tiny_wan_a14b(out, seed=seed),
        "wan-i2v-a14b": lambda: build_tiny_wan_a14b(out, image_to_video=True, seed=seed),
        "flux2-klein": lambda: build_tiny_flux2_klein(out, seed=seed),
    }
    if kind not in builders:
        raise ValueError(f"unknown tiny pipeline {kind!r}; known: {', '.join(builders)}")
    return builders[kind]()
