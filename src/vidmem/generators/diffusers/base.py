"""The shared frame of every diffusers generator: options, checks, seeds, cache, files.

A subclass says which pipelines it loads (:meth:`DiffusersGenerator._prepare`, run in
the constructor: weights found and every size rule checked before anything is loaded)
and how one request becomes frames (:meth:`DiffusersGenerator._render`). This class
does the rest the same way for all:

* the torch seed of a request is :func:`~vidmem.generators.diffusers.settings.derive_seed`
  of the request's seed, its id and the ``seed`` option;
* its generation signature (pipeline classes, weights fingerprints, dtype, device, every
  sampling setting, prompt, pixel hashes of the start image and the references, seed)
  keys the generation cache (:mod:`~vidmem.generators.diffusers.store`): a clip made
  before is copied, not generated again;
* files written for ``out_path = X.mp4``: ``X.mp4``; ``X.mp4.generation.json`` (the
  signature, the seed, timings, the cache key); ``X.mp4.inputs/`` with the start image
  (``start.png``) and references (``ref_00.png``...) exactly as the model received
  them; ``X.mp4.keyframe.png`` for a keyframe-first stack.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from vidmem.errors import UserInputError
from vidmem.generators.diffusers import checks, media
from vidmem.generators.diffusers.settings import (
    Settings,
    default_device,
    derive_seed,
    parse_settings,
)
from vidmem.generators.diffusers.store import GenerationCache, copy_atomic
from vidmem.generators.protocol import generate_or_error
from vidmem.generators.requests import GenerationRequest, GenerationResult
from vidmem.io.hashing import content_hash

__all__ = ["COMMON_OPTIONS", "DiffusersGenerator", "Inputs", "Rendered"]

#: the version of this adapter's output rule (part of every signature).
ADAPTER_VERSION = 1
COMMON_OPTIONS = ("weights", "model_dir", "device", "dtype", "offload", "vae_tiling",
                  "attention", "steps", "guidance_scale", "negative_prompt",
                  "max_sequence_length", "height", "width", "num_frames", "fps",
                  "deliver_height", "deliver_width", "seed", "cache", "download")


@dataclass
class Inputs:
    """What one request gives the model.

    Attributes:
        prompt: the text.
        start: the first-frame image (a start image, or a context video's last frame).
        start_from: where ``start`` came from (``start_image`` / ``context_video``).
        references: the retrieved reference images, in rank order.
    """

    prompt: str
    start: Image.Image | None = None
    start_from: str | None = None
    references: list[Image.Image] = field(default_factory=list)


@dataclass
class Rendered:
    """A render: frames ``(T, H, W, 3)`` uint8 and any intermediate images by name."""

    frames: np.ndarray
    intermediates: dict[str, Image.Image] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)


class DiffusersGenerator:
    """Base class; see the module docstring. Subclasses set ``name`` and ``OPTIONS``."""

    name = "diffusers"
    OPTIONS: tuple[str, ...] = COMMON_OPTIONS
    #: uses the references itself (keyframe stacks); others record them as not used.
    USES_REFERENCES = False

    def __init__(self, **options: Any) -> None:
        self.settings: Settings = parse_settings(options, generator=self.name,
                                                 allowed=self.OPTIONS)
        s = self.settings
        device = s.device or default_device()
        dtype = s.dtype or ("bfloat16" if device.startswith("cuda") else "float32")
        if s.offload != "none" and not device.startswith("cuda"):
            raise UserInputError(f"generator {self.name}: offload={s.offload} needs a CUDA "
                                 f"device, found device={device}",
                                 hint="drop offload= (or pass offload=none) on a CPU")
        self.settings = s.with_(device=device, dtype=dtype)
        self.cache = None if s.cache == "off" else GenerationCache(s.cache)
        self._prepare()

    # -- for subclasses -------------------------------------------------------------

    def _prepare(self) -> None:
        """Resolve weights and check every setting (no model is loaded here)."""
        raise NotImplementedError

    def _signature_model(self) -> dict[str, Any]:
        """Pipeline classes, weights fingerprints and resolved settings."""
        raise NotImplementedError

    def _render(self, inputs: Inputs, seed: int) -> Rendered:
        """Frames for one request (models loaded on first use, then reused)."""
        raise NotImplementedError

    def _check_inputs(self, inputs: Inputs, where: str) -> None:
        """Refuse a request this model cannot take, before anything is loaded."""

    def fps(self) -> float:
        raise NotImplementedError

    def render_size(self) -> tuple[int, int]:
        raise NotImplementedError

    def default_deliver(self) -> tuple[int, int] | None:
        return None

    # -- protocol -------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        """Plain data for the run log: name, adapter version and the model signature."""
        return {"name": self.name, "adapter_version": ADAPTER_VERSION,
                "uses_references": self.USES_REFERENCES, **self._signature_model()}

    def generate(self, request: GenerationRequest) -> GenerationResult:
        """Write ``request.out_path``; a failure comes back as ``status="error"``."""
        return generate_or_error(f"generator {self.name}", request, self._generate)

    # -- internals ------------------------------------------------------------------

    def _inputs(self, req: GenerationRequest) -> Inputs:
        where = f"request {req.request_id}"
        inputs = Inputs(prompt=req.prompt)
        if req.start_image:
            inputs.start, inputs.start_from = media.load_rgb(req.start_image, where=where), "start_image"
        elif req.context_video:
            inputs.start = media.last_frame(req.context_video, where=where)
            inputs.start_from = "context_video"
        for k, ref in enumerate(req.references):
            inputs.references.append(media.load_rgb(ref.path, where=f"{where}, reference {k}"))
        return inputs

    def _deliver(self, req: GenerationRequest) -> tuple[int, int] | None:
        s = self.settings
        if s.deliver_height and s.deliver_width:
            h, w = s.deliver_height, s.deliver_width
        elif isinstance(req.height, int) and isinstance(req.width, int) and req.height > 0 and req.width > 0:
            h, w = req.height, req.width
        else:
            h, w = self.default_deliver() or self.render_size()
        if not (h and w):
            return None  # as rendered (a pipeline left at its own default size)
        if h % 2 or w % 2:
            raise UserInputError(f"request {req.request_id}: delivery size {w}x{h} is odd; "
                                 "H.264 needs even sides",
                                 hint="pass deliver_width= and deliver_height= even")
        return h, w

    def signature(self, req: GenerationRequest, inputs: Inputs, seed: int,
                  deliver: tuple[int, int] | None) -> dict[str, Any]:
        """Everything that decides this clip's pixels (its cache key is their hash)."""
        return {
            "generator": self.info(), "prompt": inputs.prompt, "seed": seed,
            "start": None if inputs.start is None else media.pixel_hash(inputs.start),
            "references": [media.pixel_hash(r) for r in inputs.references]
            if self.USES_REFERENCES else [],
            "deliver": None if deliver is None else list(deliver), "fps": self.fps(),
        }

    def _generate(self, req: GenerationRequest) -> dict[str, Any]:
        out = Path(req.out_path)
        where = f"request {req.request_id}"
        inputs = self._inputs(req)
        self._check_inputs(inputs, where)
        deliver = self._deliver(req)
        seed = derive_seed(req.seed, req.request_id, self.settings.seed)
        sig = self.signature(req, inputs, seed, deliver)
        key = content_hash(sig, length=40)
        out.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        entry = self.cache.get(key) if self.cache else None
        load_seconds = 0.0
        if entry is not None:
            copy_atomic(entry / "clip.mp4", out)
            meta = json.loads((entry / "meta.json").read_text(encoding="utf-8"))
            for name in meta.get("intermediates", []):
                copy_atomic(entry / name, out.with_name(f"{out.name}.{name}"))
            n_frames, render_info = int(meta["n_frames"]), dict(meta.get("render", {}))
            size = tuple(meta["size"])
        else:
            from vidmem.generators.diffusers.runtime import load_stats

            before = load_stats()["load_seconds"]
            rendered = self._render(inputs, seed)
            load_seconds = load_stats()["load_seconds"] - before
            frames = rendered.frames if deliver is None else media.resize_frames(rendered.frames, *deliver)
            size = frames.shape[1:3]
            n_frames = media.write_clip(out, frames, self.fps())
            names = []
            for name, image in rendered.intermediates.items():
                image.save(out.with_name(f"{out.name}.{name}.png"))
                names.append(f"{name}.png")
            render_info = rendered.info
            if self.cache is not None:
                files = {"clip.mp4": out, **{n: out.with_name(f"{out.name}.{n}") for n in names}}
                self.cache.put(key, files, {"n_frames": n_frames, "intermediates": names,
                                            "size": [int(v) for v in size],
                                            "render": render_info, "signature": sig})
        seconds = time.perf_counter() - t0
        self._write_inputs(out, inputs)
        duration = n_frames / self.fps()
        extras = {
            "n_frames": n_frames, "fps": self.fps(), "height": int(size[0]), "width": int(size[1]),
            "render_height": self.render_size()[0], "render_width": self.render_size()[1],
            "seed": seed, "cache_key": key, "cache_hit": entry is not None,
            "mode": "image-to-video" if inputs.start is not None else "text-to-video",
            "start_from": inputs.start_from, "references_given": len(inputs.references),
            "references_used": len(inputs.references) if self.USES_REFERENCES else 0,
            "load_seconds": round(load_seconds, 6),
            "generate_seconds": round(seconds - load_seconds, 6),
            "seconds_per_output_second": round((seconds - load_seconds) / duration, 6),
            "requested_duration_seconds": req.duration_seconds, **render_info,
        }
        sidecar = {"request_id": req.request_id, "signature": sig, **extras}
        out.with_name(out.name + ".generation.json").write_text(
            json.dumps(sidecar, indent=1, sort_keys=True, default=str), encoding="utf-8")
        return extras

    def _write_inputs(self, out: Path, inputs: Inputs) -> None:
        """Keep the images the model received beside the clip (the paper's intermediates)."""
        if inputs.start is None and not (self.USES_REFERENCES and inputs.references):
            return
        folder = out.with_name(out.name + ".inputs")
        folder.mkdir(exist_ok=True)
        if inputs.start is not None:
            inputs.start.save(folder / "start.png")
        if self.USES_REFERENCES:
            for k, ref in enumerate(inputs.references):
                ref.save(folder / f"ref_{k:02d}.png")


def resolve(settings: Settings, weights: str | None, *, generator: str, default: str | None) -> str:
    """The local folder for ``weights`` (or the preset's hub id looked up on disk)."""
    name = weights or default
    if not name:
        raise UserInputError(f"generator {generator}: no weights given",
                             hint="pass --generator-opt weights=DIR (a diffusers pipeline folder)")
    return checks.resolve_weights(name, generator=generator, model_dir=settings.model_dir,
                                  download=settings.download)
