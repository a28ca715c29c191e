"""``flux2-wan``: the VMem-Bench paper's keyframe-first stack.

FLUX.2 [klein] (``Flux2KleinPipeline``) composes one keyframe from the prompt and the
retrieved references (all of them, as a list of images, in rank order; none: from the
text alone), then Wan2.2-TI2V-5B expands that keyframe into the clip
(``WanImageToVideoPipeline``, ``expand_timesteps``). The paper's sizes are the defaults:
keyframe and clip rendered 1280x704, 121 frames, delivered 832x480. The references,
the keyframe and the clip are all kept beside the clip (``X.mp4.inputs/ref_NN.png``,
``X.mp4.keyframe.png``, ``X.mp4``), as the paper recorded them.

A request with a start image or a context video still goes through the keyframe (the
start image is then the first reference), so every clip of a run comes from one
mechanism.
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
from vidmem.generators.diffusers.settings import (
    KEYFRAME_CHECKPOINT,
    KEYFRAME_GUIDANCE,
    KEYFRAME_STEPS,
    PAPER_DELIVER,
    PRESETS,
)
from vidmem.generators.diffusers.wan import WanClipMaker

__all__ = ["Flux2Wan"]

KEYFRAME_PIPELINE = "Flux2KleinPipeline"


class Flux2Wan(DiffusersGenerator):
    """FLUX.2 [klein] keyframe from the references -> Wan2.2-TI2V-5B image-to-video.

    Options: those of ``wan2.2-ti2v-5b`` (``weights`` is the Wan folder) plus
    ``keyframe_weights=DIR`` (else ``black-forest-labs/FLUX.2-klein-4B`` on disk),
    ``keyframe_steps`` (4), ``keyframe_guidance_scale`` (1.0) and ``max_references``
    (3, the paper's K; a request with more is an error, never silently cut).
    """

    name = "flux2-wan"
    OPTIONS = (*COMMON_OPTIONS, "keyframe_weights", "keyframe_steps", "keyframe_guidance_scale",
               "max_references")
    USES_REFERENCES = True

    def _prepare(self) -> None:
        s = self.settings
        self.wan = WanClipMaker(PRESETS["wan2.2-ti2v-5b"], s, generator=self.name)
        self.keyframe_folder = resolve(s, s.keyframe_weights, generator=self.name,
                                       default=KEYFRAME_CHECKPOINT)
        # The keyframe is the clip's first frame: rendered at the clip's size.
        checks.check_size(self.wan.height, self.wan.width, checks.flux2_multiple(self.keyframe_folder),
                          generator=self.name, what="keyframe size")
        self.keyframe_steps = s.keyframe_steps or KEYFRAME_STEPS
        self.keyframe_guidance = (KEYFRAME_GUIDANCE if s.keyframe_guidance_scale is None
                                  else s.keyframe_guidance_scale)
        self._fps = s.fps or self.wan.preset.fps
        self._model = {
            "keyframe_pipeline": KEYFRAME_PIPELINE, "keyframe_weights": self.keyframe_folder,
            "keyframe_weights_fingerprint": checks.weights_fingerprint(self.keyframe_folder),
            "keyframe_steps": self.keyframe_steps, "keyframe_guidance_scale": self.keyframe_guidance,
            "max_references": s.max_references, **self.wan.signature(), "fps": self._fps}

    def _signature_model(self) -> dict[str, Any]:
        return self._model

    def fps(self) -> float:
        return self._fps

    def render_size(self) -> tuple[int, int]:
        return self.wan.height, self.wan.width

    def default_deliver(self) -> tuple[int, int] | None:
        s = self.settings
        # the paper delivers 832x480 from the default 1280x704 render; a changed render
        # size is delivered as rendered unless deliver_* says otherwise
        return PAPER_DELIVER if not (s.height or s.width) else None

    def _conditioning(self, inputs: Inputs) -> list[Any]:
        return ([inputs.start] if inputs.start is not None else []) + inputs.references

    def _check_inputs(self, inputs: Inputs, where: str) -> None:
        refs = self._conditioning(inputs)
        if len(refs) > self.settings.max_references:
            raise UserInputError(
                f"{where}: {len(refs)} conditioning images (start image + references), more "
                f"than max_references={self.settings.max_references}",
                hint="lower the memory policy's reference budget K, or pass "
                f"--generator-opt max_references={len(refs)}")
        for k, image in enumerate(refs):
            checks.check_reference(image.size, where=f"{where}, conditioning image {k}")

    def keyframe_kwargs(self, inputs: Inputs, seed: int) -> dict[str, Any]:
        """The exact keyword arguments of the keyframe call (public for tests and docs)."""
        refs = self._conditioning(inputs)
        return dict(image=refs or None, prompt=inputs.prompt, height=self.wan.height,
                    width=self.wan.width, num_inference_steps=self.keyframe_steps,
                    guidance_scale=self.keyframe_guidance,
                    generator=runtime.torch_generator(seed), output_type="pil",
                    max_sequence_length=self.settings.max_sequence_length)

    def _render(self, inputs: Inputs, seed: int) -> Rendered:
        s = self.settings
        flux, _ = runtime.load_pipeline(KEYFRAME_PIPELINE, self.keyframe_folder, dtype=s.dtype,
                                        device=s.device, offload=s.offload,
                                        vae_tiling=s.vae_tiling, attention=s.attention,
                                        local_files_only=not s.download)
        keyframe = runtime.call_pipeline(flux, self.keyframe_kwargs(inputs, seed)).images[0]
        frames = self.wan.render(inputs.prompt, keyframe, seed)
        return Rendered(frames, {"keyframe": keyframe},
                        {"keyframe_references": len(self._conditioning(inputs)),
                         "mode": "keyframe-to-video"})
