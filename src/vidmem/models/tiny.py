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

The builders live in :mod:`vidmem.models.tiny_embedders`,
:mod:`vidmem.models.tiny_detect_segment` and :mod:`vidmem.models.tiny_judges` (shared
plumbing in :mod:`vidmem.models.tiny_saving`); every one is re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from vidmem.errors import UserInputError
from vidmem.models.tiny_detect_segment import (
    tiny_grounding_dino,
    tiny_owlv2,
    tiny_owlvit,
    tiny_sam,
    tiny_sam2,
)
from vidmem.models.tiny_embedders import (
    TINY_WORDS,
    tiny_clip,
    tiny_dinov2,
    tiny_dinov3,
    tiny_qwen3_embedding,
    tiny_sentence,
    tiny_siglip,
)
from vidmem.models.tiny_judges import QWEN_CHAT_TEMPLATE, QWEN_VL_FAMILIES, tiny_qwen_vl
from vidmem.models.tiny_saving import PathLike, make_out_dir

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
    "tiny_qwen3_embedding",
    "tiny_qwen_vl",
    "tiny_sam",
    "tiny_sam2",
    "tiny_sentence",
    "tiny_siglip",
]


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
    "qwen3-embedding": tiny_qwen3_embedding,
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
    root = make_out_dir(dirpath)
    names = ("owlvit/base-patch32", "sam2/base-plus", "dinov2/base")
    return {
        name: str(build_tiny(name, root / name.replace("/", "--"), seed=seed)) for name in names
    }
