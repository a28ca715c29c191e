"""Loading diffusers pipelines once per process, and calling them reproducibly.

A worker process loads each pipeline the first time an item needs it and keeps it in
:data:`_PIPELINES`, keyed by everything that decides what was loaded (class, weights
folder, dtype, device, offload, VAE tiling, attention backend); every later item of the
run reuses it, so the loading cost is paid once per worker, never per item
(:func:`load_stats` counts loads for the benchmark and the tests to show it).

torch and diffusers are imported inside functions only: listing or constructing a
generator never pulls them in.
"""

from __future__ import annotations

import time
from typing import Any

from vidmem.errors import MissingDependencyError, UserInputError

__all__ = ["call_pipeline", "load_pipeline", "load_stats", "torch_generator"]

_PIPELINES: dict[tuple[Any, ...], Any] = {}
_STATS = {"loads": 0, "load_seconds": 0.0, "reuses": 0}


def load_stats() -> dict[str, float]:
    """``{"loads", "load_seconds", "reuses"}`` in this process since it started."""
    return dict(_STATS)


def clear_pipelines() -> None:
    """Forget every loaded pipeline (tests, benchmarks) and zero the counters."""
    _PIPELINES.clear()
    _STATS.update(loads=0, load_seconds=0.0, reuses=0)


def _import_diffusers() -> Any:
    try:
        import diffusers
    except ImportError:
        raise MissingDependencyError(
            "the diffusers generators need the Python package 'diffusers'",
            hint="pip install 'vidmem[diffusers]' (install torch==2.13.0 first if you have "
            "no torch yet)") from None
    return diffusers


def pipeline_class(name: str) -> Any:
    """A diffusers pipeline class by name, e.g. ``WanPipeline``."""
    diffusers = _import_diffusers()
    cls = getattr(diffusers, name, None)
    if cls is None or not hasattr(cls, "from_pretrained"):
        raise UserInputError(f"diffusers {diffusers.__version__} has no pipeline class {name!r}",
                             hint="pass pipeline=<a class exported by diffusers>, e.g. "
                             "pipeline=LTXPipeline")
    return cls


def _dtype(name: str) -> Any:
    import torch

    return {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}[name]


def load_pipeline(class_name: str, folder: str, *, dtype: str, device: str, offload: str = "none",
                  vae_tiling: bool = False, attention: str | None = None,
                  vae_float32: bool = False, local_files_only: bool = True,
                  base: tuple[str, str] | None = None) -> tuple[Any, float]:
    """The pipeline for these settings, loaded on first use in this process.

    Args:
        class_name: diffusers class (``WanPipeline``...).
        folder: local pipeline folder (or a hub id with ``local_files_only=False``).
        dtype: ``bfloat16``, ``float16`` or ``float32``.
        device: ``cuda``, ``cuda:1``, ``cpu``...
        offload: ``none`` (all on ``device``), ``model`` (one model on the GPU at a time)
            or ``sequential`` (layer by layer; least memory, slowest).
        vae_tiling: decode in tiles (less memory at high resolution).
        attention: a diffusers attention backend name (``flash``, ``sage``...), or None.
        vae_float32: keep the VAE in float32 (Wan's own recommendation).
        local_files_only: never touch the network (the default; see ``download``).
        base: ``(class_name, folder)`` of an already loaded pipeline whose components
            this one shares (``from_pipe``: Wan2.2-TI2V-5B text-to-video and
            image-to-video are one set of weights).

    Returns:
        ``(pipeline, seconds spent loading now)`` (``0.0`` when it was already loaded).
    """
    key = (class_name, folder, dtype, device, offload, vae_tiling, attention, vae_float32)
    if key in _PIPELINES:
        _STATS["reuses"] += 1
        return _PIPELINES[key], 0.0
    start = time.perf_counter()
    cls = pipeline_class(class_name)
    torch_dtype: Any = _dtype(dtype)
    if vae_float32:
        import torch

        torch_dtype = {"default": torch_dtype, "vae": torch.float32}
    if base is not None:
        parent, _ = load_pipeline(base[0], base[1], dtype=dtype, device=device, offload=offload,
                                  vae_tiling=vae_tiling, attention=attention,
                                  vae_float32=vae_float32, local_files_only=local_files_only)
        pipe = _share(cls, parent)
        if offload != "none":  # hooks are per pipeline; give this one its own
            _place(pipe, device, offload)
    else:
        pipe = cls.from_pretrained(folder, dtype=torch_dtype,
                                   local_files_only=local_files_only)
        _place(pipe, device, offload)
        if vae_tiling and hasattr(getattr(pipe, "vae", None), "enable_tiling"):
            pipe.vae.enable_tiling()
        if attention:
            for name in ("transformer", "transformer_2"):
                model = getattr(pipe, name, None)
                if model is not None:
                    model.set_attention_backend(attention)
    # The run's own progress bar counts items; the pipeline's per-step bar would garble it.
    pipe.set_progress_bar_config(disable=True)
    seconds = time.perf_counter() - start
    _PIPELINES[key] = pipe
    _STATS["loads"] += 1
    _STATS["load_seconds"] += seconds
    return pipe, seconds


def _share(cls: Any, parent: Any) -> Any:
    """A ``cls`` pipeline made of ``parent``'s modules and config (no copy, no cast).

    Not ``from_pipe``: that casts every shared module to one dtype (float32 unless told),
    which would silently change the parent's transformer or its float32 VAE.
    """
    import inspect

    params = inspect.signature(cls.__init__).parameters
    comps = {k: v for k, v in parent.components.items() if k in params}
    config = {k: parent.config[k] for k in params if k in parent.config and k not in comps}
    return cls(**comps, **config)


def _place(pipe: Any, device: str, offload: str) -> None:
    if offload == "none":
        pipe.to(device)
    elif offload == "model":
        pipe.enable_model_cpu_offload(device=device)
    else:
        pipe.enable_sequential_cpu_offload(device=device)


def torch_generator(seed: int) -> Any:
    """A CPU ``torch.Generator`` seeded with ``seed``: diffusers draws the initial noise on
    it and moves it to the device, so the noise is the same on every machine."""
    import torch

    return torch.Generator(device="cpu").manual_seed(int(seed))


def call_pipeline(pipe: Any, kwargs: dict[str, Any]) -> Any:
    """Call ``pipe(**kwargs)`` under ``torch.inference_mode`` with deterministic kernels
    where torch offers them, and return its output object."""
    import torch

    with torch.inference_mode():
        return pipe(**kwargs)


def peak_memory_bytes(device: str) -> int | None:
    """Peak accelerator memory since the last reset (CUDA only), else None."""
    import torch

    if str(device).startswith("cuda") and torch.cuda.is_available():
        return int(torch.cuda.max_memory_allocated())
    return None
