"""Generator options for the diffusers family: parsing, presets and the seed rule.

Options arrive as strings from ``--generator-opt key=value``; each is parsed once here
into a :class:`Settings` record with a clear error naming the option and the fix. The
presets hold each model's published defaults (Wan2.2's ``generate.py`` configs and the
VMem-Bench paper's keyframe stack); every one can be overridden.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from vidmem.errors import UserInputError

__all__ = ["DTYPES", "OFFLOADS", "PRESETS", "Preset", "Settings", "derive_seed", "parse_settings"]

DTYPES = ("bfloat16", "float16", "float32")
OFFLOADS = ("none", "model", "sequential")


@dataclass(frozen=True)
class Preset:
    """One registered model's defaults.

    Attributes:
        name: the generator name (``wan2.2-ti2v-5b``...).
        checkpoint: the hub id its weights are published under (looked up on disk only).
        text_pipeline: diffusers class for a request without an image (``None``: refused).
        image_pipeline: diffusers class for a request with a start image (``None``: refused).
        height, width, num_frames, fps, steps, guidance_scale, guidance_scale_2: defaults.
        two_experts: the weights must hold ``transformer_2`` and a ``boundary_ratio``.
        expand_timesteps: the weights must say ``expand_timesteps: true`` (TI2V-5B).
    """

    name: str
    checkpoint: str
    text_pipeline: str | None
    image_pipeline: str | None
    height: int
    width: int
    num_frames: int
    fps: float
    steps: int
    guidance_scale: float
    guidance_scale_2: float | None = None
    two_experts: bool = False
    expand_timesteps: bool = False


# Wan2.2 defaults: the official generate.py configs (ti2v-5B: 1280*704, 121 frames at 24
# fps, 50 steps, guide 5.0; t2v-A14B: 40 steps, guide 4.0 high-noise / 3.0 low-noise;
# i2v-A14B: 40 steps, 3.5 / 3.5; both A14B at 1280*720, 81 frames, 16 fps).
PRESETS: dict[str, Preset] = {
    "wan2.2-ti2v-5b": Preset("wan2.2-ti2v-5b", "Wan-AI/Wan2.2-TI2V-5B-Diffusers", "WanPipeline",
                             "WanImageToVideoPipeline", 704, 1280, 121, 24.0, 50, 5.0,
                             expand_timesteps=True),
    "wan2.2-t2v-a14b": Preset("wan2.2-t2v-a14b", "Wan-AI/Wan2.2-T2V-A14B-Diffusers",
                              "WanPipeline", None, 720, 1280, 81, 16.0, 40, 4.0, 3.0,
                              two_experts=True),
    "wan2.2-i2v-a14b": Preset("wan2.2-i2v-a14b", "Wan-AI/Wan2.2-I2V-A14B-Diffusers", None,
                              "WanImageToVideoPipeline", 720, 1280, 81, 16.0, 40, 3.5, 3.5,
                              two_experts=True),
}
#: FLUX.2 [klein] keyframe defaults (the distilled 4B: 4 steps, guidance 1.0).
KEYFRAME_CHECKPOINT = "black-forest-labs/FLUX.2-klein-4B"
KEYFRAME_STEPS = 4
KEYFRAME_GUIDANCE = 1.0
#: The paper's delivered size for the keyframe stack (rendered 1280x704).
PAPER_DELIVER = (480, 832)
#: The paper's reference budget K.
MAX_REFERENCES = 3


@dataclass(frozen=True)
class Settings:
    """Everything that decides how a clip is made (``to_dict`` goes into ``info()``).

    Sizes are pixels, ``height`` x ``width`` is what the model renders; ``deliver_*``
    is what the MP4 holds (``None``: the request's size, else the render size).
    """

    weights: str | None = None
    model_dir: str | None = None
    device: str | None = None
    dtype: str | None = None
    offload: str = "none"
    vae_tiling: bool = False
    attention: str | None = None
    steps: int | None = None
    guidance_scale: float | None = None
    guidance_scale_2: float | None = None
    negative_prompt: str = ""
    max_sequence_length: int = 512
    height: int | None = None
    width: int | None = None
    num_frames: int | None = None
    fps: float | None = None
    deliver_height: int | None = None
    deliver_width: int | None = None
    seed: int = 0
    cache: str | None = None
    download: bool = False
    # flux2-wan only
    keyframe_weights: str | None = None
    keyframe_steps: int | None = None
    keyframe_guidance_scale: float | None = None
    max_references: int = MAX_REFERENCES
    # diffusers (any pipeline) only
    pipeline: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("cache")  # where clips are kept does not change them
        data.pop("download")
        return data

    def with_(self, **changes: Any) -> Settings:
        return replace(self, **changes)


def _int(name: str, value: Any, *, minimum: int = 1) -> int:
    try:
        out = int(str(value).strip())
    except ValueError:
        out = minimum - 1
    if isinstance(value, bool) or out < minimum:
        raise UserInputError(f"generator option {name}: expected an integer >= {minimum}, "
                             f"found {value!r}", hint=f"pass e.g. {name}={max(minimum, 4)}")
    return out


def _float(name: str, value: Any, *, minimum: float = 0.0) -> float:
    try:
        out = float(str(value).strip())
    except ValueError:
        out = float("nan")
    if isinstance(value, bool) or not out >= minimum or out == float("inf"):
        raise UserInputError(f"generator option {name}: expected a number >= {minimum:g}, "
                             f"found {value!r}", hint=f"pass e.g. {name}=5.0")
    return out


def _bool(name: str, value: Any) -> bool:
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise UserInputError(f"generator option {name}: expected true or false, found {value!r}",
                         hint=f"pass {name}=true or {name}=false")


def _choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    text = str(value).strip().lower()
    if text not in choices:
        raise UserInputError(f"generator option {name}: {value!r} is not one of "
                             f"{', '.join(choices)}", hint=f"pass e.g. {name}={choices[0]}")
    return text


_INTS = ("steps", "max_sequence_length", "height", "width", "num_frames", "deliver_height",
         "deliver_width", "keyframe_steps", "max_references")
_FLOATS = ("guidance_scale", "guidance_scale_2", "keyframe_guidance_scale")
_TEXTS = ("weights", "model_dir", "device", "attention", "negative_prompt", "cache",
          "keyframe_weights", "pipeline")


def parse_settings(options: dict[str, Any], *, generator: str, allowed: tuple[str, ...]) -> Settings:
    """Parse ``--generator-opt`` values into :class:`Settings`.

    Args:
        options: option name -> value (strings from the command line, or Python values).
        generator: the generator's name, for messages.
        allowed: the option names this generator takes (others are refused by name).

    Raises:
        UserInputError: an unknown option or a bad value, naming it and the fix.

    Example:
        >>> s = parse_settings({"steps": "4", "dtype": "float32", "vae_tiling": "true"},
        ...                    generator="wan2.2-ti2v-5b", allowed=("steps", "dtype", "vae_tiling"))
        >>> s.steps, s.dtype, s.vae_tiling
        (4, 'float32', True)
    """
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise UserInputError(f"generator {generator}: unknown option(s) {', '.join(unknown)}",
                             hint="options: " + ", ".join(sorted(allowed)))
    values: dict[str, Any] = {}
    for name, value in options.items():
        if value is None:
            continue
        if name in _INTS:
            values[name] = _int(name, value)
        elif name in _FLOATS:
            values[name] = _float(name, value)
        elif name == "fps":
            values[name] = _float(name, value, minimum=1e-6)
        elif name == "seed":
            values[name] = _int(name, value, minimum=0)
        elif name in ("vae_tiling", "download"):
            values[name] = _bool(name, value)
        elif name == "dtype":
            values[name] = _choice(name, value, DTYPES)
        elif name == "offload":
            values[name] = _choice(name, value, OFFLOADS)
        elif name in _TEXTS:
            values[name] = str(value)
        else:  # a diffusers-pipeline call argument passed through (generic generator)
            values.setdefault("extra", {})[name] = value
    if values.get("cache", "").strip().lower() in ("off", "none", "false", "0"):
        values["cache"] = "off"
    return Settings(**values)


def default_device() -> str:
    """``cuda`` when torch sees a GPU, else ``cpu``."""
    try:
        import torch
    except ImportError:
        from vidmem.errors import MissingDependencyError

        raise MissingDependencyError(
            "the diffusers generators need torch", hint="pip install torch==2.13.0 && pip "
            "install 'vidmem[diffusers]' (a CUDA torch on a GPU machine)") from None

    return "cuda" if torch.cuda.is_available() else "cpu"


def offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` forbids any hub access."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def derive_seed(run_seed: int, item_key: str, generator_seed: int = 0) -> int:
    """The torch seed of one clip: SHA-256 of the request's seed, its id and the
    generator's own ``seed`` option, in ``[0, 2**31)``.

    The request's seed is the run seed (or, for MIST, already the seed of one
    (case, arm, try)); the request id names the item (and the try), so every item and
    every try gets its own draw and a rerun gets the same one.

    Example:
        >>> derive_seed(0, "loop_a") == derive_seed(0, "loop_a")
        True
        >>> len({derive_seed(0, "loop_a"), derive_seed(1, "loop_a"), derive_seed(0, "loop_b")})
        3
    """
    text = f"{int(run_seed)}\x1f{item_key}\x1f{int(generator_seed)}"
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:4], "big") & 0x7FFFFFFF
