"""Wan2.2 through diffusers: TI2V-5B (one model, text or image to video) and the A14B
pair (two experts: ``transformer`` for high noise, ``transformer_2`` below
``boundary_ratio``, each with its own guidance scale).

Which call a request becomes (the README's table has every benchmark):

* a start image, or a context video's last frame -> ``WanImageToVideoPipeline(image=...)``
  (TI2V-5B: the same weights, ``expand_timesteps``: the first latent frame is the
  image; I2V-A14B);
* neither -> ``WanPipeline`` text-to-video (TI2V-5B, T2V-A14B).

A request the model cannot take (a start image for T2V-A14B, none for I2V-A14B) is one
clear error. References are not a Wan input: they are counted in the result as not used
(use ``flux2-wan`` for a reference-conditioned stack).
"""

from __future__ import annotations

from typing import Any

from vidmem.errors import UserInputError
from vidmem.generators.diffusers import checks, runtime
from vidmem.generators.diffusers.base import (
    COMMON_OPTIONS,
    DiffusersGenerator,
    Inputs,
    Rendered,
    resolve,
)
from vidmem.generators.diffusers.media import frames_to_uint8
from vidmem.generators.diffusers.settings import PRESETS, Preset

__all__ = ["Wan22I2VA14B", "Wan22T2VA14B", "Wan22TI2V5B", "WanClipMaker"]


class WanClipMaker:
    """One Wan2.2 model: its folder, its rules, and how it renders a clip.

    Shared by the Wan generators and the keyframe stack (``flux2-wan`` expands its
    keyframe with the TI2V-5B maker).
    """

    def __init__(self, preset: Preset, settings: Any, *, generator: str,
                 weights: str | None = None) -> None:
        s = settings
        self.preset, self.settings, self.generator = preset, s, generator
        self.folder = resolve(s, weights or s.weights, generator=generator,
                              default=preset.checkpoint)
        rules = checks.wan_rules(self.folder, generator=generator,
                                 two_experts=preset.two_experts,
                                 expand_timesteps=preset.expand_timesteps)
        self.height = s.height or preset.height
        self.width = s.width or preset.width
        self.num_frames = s.num_frames or preset.num_frames
        checks.check_size(self.height, self.width, rules["multiple"], generator=generator,
                          what="render size")
        checks.check_frames(self.num_frames, rules["temporal"], generator=generator)
        if s.guidance_scale_2 is not None and not preset.two_experts:
            raise UserInputError(f"generator {generator}: guidance_scale_2 is the low-noise "
                                 "expert's guidance; this model has one expert",
                                 hint="drop guidance_scale_2 (or use an A14B generator)")
        self.steps = s.steps or preset.steps
        self.guidance_scale = preset.guidance_scale if s.guidance_scale is None else s.guidance_scale
        self.guidance_scale_2 = (None if not preset.two_experts else
                                 preset.guidance_scale_2 if s.guidance_scale_2 is None
                                 else s.guidance_scale_2)
        self.fingerprint = checks.weights_fingerprint(self.folder)

    def signature(self) -> dict[str, Any]:
        s = self.settings
        return {"text_pipeline": self.preset.text_pipeline,
                "image_pipeline": self.preset.image_pipeline, "weights": self.folder,
                "weights_fingerprint": self.fingerprint, "dtype": s.dtype, "vae_dtype": "float32",
                "device": str(s.device).split(":")[0], "attention": s.attention,
                "height": self.height, "width": self.width, "num_frames": self.num_frames,
                "steps": self.steps, "guidance_scale": self.guidance_scale,
                "guidance_scale_2": self.guidance_scale_2, "negative_prompt": s.negative_prompt,
                "max_sequence_length": s.max_sequence_length}

    def check(self, inputs: Inputs, where: str) -> None:
        if inputs.start is None and self.preset.text_pipeline is None:
            raise UserInputError(f"{where}: {self.generator} is image-to-video and this request "
                                 "has no start image or context video",
                                 hint="use wan2.2-ti2v-5b or wan2.2-t2v-a14b for text-only requests")
        if inputs.start is not None and self.preset.image_pipeline is None:
            raise UserInputError(f"{where}: {self.generator} is text-to-video and this request "
                                 f"starts from an image ({inputs.start_from})",
                                 hint="use wan2.2-ti2v-5b or wan2.2-i2v-a14b for requests "
                                 "with a start image")

    def _pipeline(self, image: bool) -> Any:
        s = self.settings
        common = dict(dtype=s.dtype, device=s.device, offload=s.offload,
                      vae_tiling=s.vae_tiling, attention=s.attention, vae_float32=True,
                      local_files_only=not s.download)
        text, img = self.preset.text_pipeline, self.preset.image_pipeline
        if not image:
            return runtime.load_pipeline(text, self.folder, **common)[0]
        if text is not None:  # TI2V-5B: one folder, saved as the text pipeline; share it
            return runtime.load_pipeline(img, self.folder, base=(text, self.folder), **common)[0]
        return runtime.load_pipeline(img, self.folder, **common)[0]

    def call_kwargs(self, prompt: str, image: Any, seed: int) -> dict[str, Any]:
        """The exact keyword arguments of the pipeline call (public for tests and docs)."""
        kw: dict[str, Any] = dict(
            prompt=prompt, negative_prompt=self.settings.negative_prompt or None,
            height=self.height, width=self.width, num_frames=self.num_frames,
            num_inference_steps=self.steps, guidance_scale=self.guidance_scale,
            generator=runtime.torch_generator(seed), output_type="np",
            max_sequence_length=self.settings.max_sequence_length)
        if self.guidance_scale_2 is not None:
            kw["guidance_scale_2"] = self.guidance_scale_2
        if image is not None:
            kw["image"] = image.resize((self.width, self.height), _lanczos())
        return kw

    def render(self, prompt: str, image: Any, seed: int) -> Any:
        pipe = self._pipeline(image is not None)
        out = runtime.call_pipeline(pipe, self.call_kwargs(prompt, image, seed))
        return frames_to_uint8(out.frames[0])


def _lanczos() -> Any:
    from PIL import Image

    return Image.LANCZOS


class _WanGenerator(DiffusersGenerator):
    PRESET = ""

    def _prepare(self) -> None:
        self.maker = WanClipMaker(PRESETS[self.PRESET], self.settings, generator=self.name)
        self._fps = self.settings.fps or self.maker.preset.fps
        self._model = {**self.maker.signature(), "fps": self._fps}

    def _signature_model(self) -> dict[str, Any]:
        return self._model

    def _check_inputs(self, inputs: Inputs, where: str) -> None:
        self.maker.check(inputs, where)

    def fps(self) -> float:
        return self._fps

    def render_size(self) -> tuple[int, int]:
        return self.maker.height, self.maker.width

    def _render(self, inputs: Inputs, seed: int) -> Rendered:
        return Rendered(self.maker.render(inputs.prompt, inputs.start, seed))


class Wan22TI2V5B(_WanGenerator):
    """Wan2.2-TI2V-5B: text-to-video, or image-to-video from a start image / context.

    Options: ``weights=DIR`` (else ``Wan-AI/Wan2.2-TI2V-5B-Diffusers`` under ``model_dir``
    / ``$VIDMEM_MODEL_DIR`` / the local HF cache), ``dtype``, ``device``,
    ``offload=none|model|sequential``, ``vae_tiling``, ``attention``, ``steps`` (50),
    ``guidance_scale`` (5.0), ``negative_prompt``, ``height``/``width`` (704x1280,
    multiples of 32), ``num_frames`` (121, 4k+1), ``fps`` (24), ``deliver_height`` /
    ``deliver_width``, ``seed``, ``cache=DIR|off``, ``download=true``.
    """

    name = "wan2.2-ti2v-5b"
    PRESET = "wan2.2-ti2v-5b"


class Wan22T2VA14B(_WanGenerator):
    """Wan2.2-T2V-A14B (two experts): text-to-video. Adds ``guidance_scale_2`` (the
    low-noise expert's guidance; default 3.0, high-noise 4.0)."""

    name = "wan2.2-t2v-a14b"
    PRESET = "wan2.2-t2v-a14b"
    OPTIONS = (*COMMON_OPTIONS, "guidance_scale_2")


class Wan22I2VA14B(_WanGenerator):
    """Wan2.2-I2V-A14B (two experts): image-to-video from a start image or a context
    video's last frame. Adds ``guidance_scale_2`` (default 3.5, as the high-noise one)."""

    name = "wan2.2-i2v-a14b"
    PRESET = "wan2.2-i2v-a14b"
    OPTIONS = (*COMMON_OPTIONS, "guidance_scale_2")
