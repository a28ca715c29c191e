"""``diffusers``: any diffusers pipeline class over the user's own weights.

``--generator diffusers --generator-opt pipeline=ClassName,weights=DIR``. The call is
built from the pipeline's own ``__call__`` signature: ``prompt``, ``negative_prompt``,
``image`` (the start image or the context's last frame, when the pipeline takes one),
``height``/``width``/``num_frames``/``num_inference_steps``/``guidance_scale`` when
given as options (else the pipeline's defaults), a seeded ``generator`` and
``output_type="np"``. Any other ``key=value`` option is passed to the call as is (a
number when it reads as one). A video pipeline's ``frames[0]`` becomes the clip; an
image pipeline's ``images[0]`` a one-frame clip.
"""

from __future__ import annotations

import inspect
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

__all__ = ["AnyPipeline"]

DEFAULT_FPS = 16.0


def _value(text: Any) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except (TypeError, ValueError):
            pass
    return {"true": True, "false": False}.get(str(text).lower(), text)


class AnyPipeline(DiffusersGenerator):
    """Any diffusers pipeline by class name (see the module docstring)."""

    name = "diffusers"

    def __init__(self, **options: Any) -> None:
        known = set((*COMMON_OPTIONS, "pipeline"))
        extra = {k: v for k, v in options.items() if k not in known}
        self.OPTIONS = tuple(known | set(extra))  # every other key goes to the call
        super().__init__(**options)

    def _prepare(self) -> None:
        s = self.settings
        if not s.pipeline:
            raise UserInputError("generator diffusers: no pipeline class given",
                                 hint="pass --generator-opt pipeline=ClassName,weights=DIR "
                                 "(e.g. pipeline=LTXPipeline)")
        self.folder = resolve(s, s.weights, generator=self.name, default=None)
        cls = runtime.pipeline_class(s.pipeline)
        self.params = inspect.signature(cls.__call__).parameters
        index = checks.read_config(self.folder)
        vae = checks.read_config(self.folder, "vae")
        if s.num_frames and "scale_factor_temporal" in vae:
            checks.check_frames(s.num_frames, int(vae["scale_factor_temporal"]), generator=self.name)
        if s.height and s.width and "scale_factor_spatial" in vae:
            checks.check_size(s.height, s.width, int(vae["scale_factor_spatial"]),
                              generator=self.name, what="render size")
        self.extra = {k: _value(v) for k, v in s.extra.items()}
        unknown = sorted(k for k in self.extra if k not in self.params)
        if unknown:
            raise UserInputError(f"generator diffusers: {s.pipeline}.__call__ takes no "
                                 f"argument(s) {', '.join(unknown)}",
                                 hint="its arguments: " + ", ".join(p for p in self.params if p != "self"))
        self._fps = s.fps or DEFAULT_FPS
        self._model = {"pipeline": s.pipeline, "weights": self.folder,
                       "weights_class": index.get("_class_name"),
                       "weights_fingerprint": checks.weights_fingerprint(self.folder),
                       "dtype": s.dtype, "device": str(s.device).split(":")[0],
                       "attention": s.attention, "height": s.height, "width": s.width,
                       "num_frames": s.num_frames, "steps": s.steps,
                       "guidance_scale": s.guidance_scale, "negative_prompt": s.negative_prompt,
                       "call_options": self.extra, "fps": self._fps}

    def _signature_model(self) -> dict[str, Any]:
        return self._model

    def fps(self) -> float:
        return self._fps

    def render_size(self) -> tuple[int, int]:
        s = self.settings
        return (s.height or 0, s.width or 0)

    def _check_inputs(self, inputs: Inputs, where: str) -> None:
        image = self.params.get("image")
        if inputs.start is None and image is not None and image.default is inspect.Parameter.empty:
            raise UserInputError(f"{where}: {self.settings.pipeline} needs an image and this "
                                 "request has no start image or context video",
                                 hint="use a text-to-video pipeline for text-only requests")

    def call_kwargs(self, inputs: Inputs, seed: int) -> dict[str, Any]:
        """The exact keyword arguments of the call (public for tests and docs)."""
        s = self.settings
        wanted: dict[str, Any] = {
            "prompt": inputs.prompt, "negative_prompt": s.negative_prompt or None,
            "image": inputs.start, "height": s.height, "width": s.width,
            "num_frames": s.num_frames, "num_inference_steps": s.steps,
            "guidance_scale": s.guidance_scale, "generator": runtime.torch_generator(seed),
            "output_type": "np", **self.extra}
        return {k: v for k, v in wanted.items() if v is not None and k in self.params}

    def _render(self, inputs: Inputs, seed: int) -> Rendered:
        s = self.settings
        pipe, _ = runtime.load_pipeline(s.pipeline, self.folder, dtype=s.dtype, device=s.device,
                                        offload=s.offload, vae_tiling=s.vae_tiling,
                                        attention=s.attention, local_files_only=not s.download)
        out = runtime.call_pipeline(pipe, self.call_kwargs(inputs, seed))
        frames = getattr(out, "frames", None)
        frames = frames[0] if frames is not None else out.images[0]
        return Rendered(frames_to_uint8(frames))
