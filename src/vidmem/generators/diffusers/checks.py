"""Checks made before any model is loaded: weights on disk, sizes, frames, references.

Every rule is read from the weights' own config files, as the pipelines apply it (a
Wan pipeline needs height and width to be multiples of ``vae.scale_factor_spatial *
transformer.patch_size``: 32 for Wan2.2-TI2V-5B, 16 for A14B; frames ``4k+1`` for a VAE
with ``scale_factor_temporal`` 4; FLUX.2 needs multiples of ``2 * 2**(len(vae
block_out_channels) - 1)`` and refuses a reference under 64 px or past 8:1), so a wrong
setting fails with the fix in the message, not minutes later on a GPU (where the
pipelines would mostly just round the size and log a warning).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from vidmem.errors import UserInputError
from vidmem.io.hashing import content_hash

__all__ = [
    "MIN_REFERENCE_SIDE",
    "MAX_REFERENCE_ASPECT",
    "check_frames",
    "check_reference",
    "check_size",
    "flux2_multiple",
    "read_config",
    "resolve_weights",
    "wan_rules",
    "weights_fingerprint",
]

MODEL_DIR_ENV = "VIDMEM_MODEL_DIR"
#: FLUX.2's own reference limits (``Flux2ImageProcessor.check_image_input``).
MIN_REFERENCE_SIDE = 64
MAX_REFERENCE_ASPECT = 8.0


def resolve_weights(weights: str, *, generator: str, model_dir: str | None = None,
                    download: bool = False) -> str:
    """A local folder holding a diffusers pipeline (``model_index.json``), never a download.

    ``weights`` is a folder, or a hub id looked up under ``model_dir`` /
    ``$VIDMEM_MODEL_DIR`` (as ``<dir>/<org>/<name>``, ``<dir>/<org>--<name>`` or
    ``<dir>/<name>``) and then in the local Hugging Face cache. With ``download=True``
    (and ``HF_HUB_OFFLINE`` unset) a hub id that is nowhere on disk is returned as is,
    for ``from_pretrained`` to fetch.

    Raises:
        UserInputError: nothing found; the message lists where it looked and the fix.
    """
    looked: list[str] = []
    candidates = [Path(weights).expanduser()]
    bases = [Path(model_dir).expanduser()] if model_dir else []
    bases += [Path(p) for p in os.environ.get(MODEL_DIR_ENV, "").split(os.pathsep) if p]
    for base in bases:
        candidates += [base / weights, base / weights.replace("/", "--"), base / weights.split("/")[-1]]
    for path in dict.fromkeys(candidates):
        looked.append(str(path))
        if path.is_dir():
            if not (path / "model_index.json").is_file():
                raise UserInputError(
                    f"generator {generator}: {path} holds no model_index.json, so it is not a "
                    "diffusers pipeline folder",
                    hint="point weights= at the folder a diffusers pipeline was saved to "
                    "(save_pretrained or the hub's *-Diffusers repository)")
            return str(path)
    hub_id = "/" in weights and not weights.startswith((".", "/", "~"))
    if hub_id:
        try:
            from huggingface_hub import snapshot_download

            return snapshot_download(weights, local_files_only=True)
        except Exception:  # not in the local cache (or no huggingface_hub): keep looking
            looked.append("the local Hugging Face cache")
        if download:
            from vidmem.generators.diffusers.settings import offline

            if offline():
                raise UserInputError(
                    f"generator {generator}: download=true asks for {weights} from the hub, "
                    "but HF_HUB_OFFLINE is set",
                    hint="unset HF_HUB_OFFLINE for this run, or fetch the weights first and "
                    "pass weights=DIR")
            return weights
    raise UserInputError(
        f"generator {generator}: weights {weights!r} not found; looked in: " + "; ".join(looked),
        hint=f"pass --generator-opt weights=DIR (a diffusers folder), set model_dir= or "
        f"${MODEL_DIR_ENV}, or fetch them once with `huggingface-cli download {weights} "
        "--local-dir DIR` on a machine with hub access (vidmem never downloads during a "
        "run unless you pass download=true)")


def read_config(folder: str, sub: str = "") -> dict[str, Any]:
    """``model_index.json`` (``sub=""``) or ``<sub>/config.json`` of a pipeline folder, or
    ``{}`` for a hub id still to download."""
    path = Path(folder) / sub / ("config.json" if sub else "model_index.json")
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserInputError(f"{path}: unreadable JSON ({exc})",
                             hint="re-save or re-fetch the weights") from None


def _has_component(index: dict[str, Any], name: str) -> bool:
    spec = index.get(name)
    return isinstance(spec, list) and len(spec) == 2 and spec[0] is not None


def wan_rules(folder: str, *, generator: str, two_experts: bool = False,
              expand_timesteps: bool = False) -> dict[str, int]:
    """A Wan folder's size and frame rules, and its layout checked against the generator.

    Returns:
        ``{"multiple": ..., "temporal": ...}``: height and width must be multiples of
        ``multiple``; frames ``temporal * k + 1``.

    Raises:
        UserInputError: a component is missing, or the folder is not the model the
            generator names (no second expert for A14B, no ``expand_timesteps`` for 5B).
    """
    index = read_config(folder)
    if not index:
        return {"multiple": 16, "temporal": 4}  # hub id still to fetch: the pipelines' floor
    missing = [c for c in ("vae", "text_encoder", "tokenizer", "scheduler")
               if not _has_component(index, c)]
    if not (_has_component(index, "transformer") or _has_component(index, "transformer_2")):
        missing.append("transformer")
    missing += [c for c in ("vae", "text_encoder", "transformer") if _has_component(index, c)
                and not (Path(folder) / c).is_dir()]
    if missing:
        raise UserInputError(f"generator {generator}: weights {folder} lack component(s) "
                             f"{', '.join(sorted(set(missing)))}",
                             hint="fetch the complete *-Diffusers folder")
    if two_experts and not (_has_component(index, "transformer_2")
                            and index.get("boundary_ratio") is not None):
        raise UserInputError(
            f"generator {generator}: weights {folder} have no second expert (transformer_2 "
            "and boundary_ratio), so they are not a Wan2.2 A14B pipeline",
            hint="use the Wan-AI/Wan2.2-*-A14B-Diffusers folder, or --generator "
            "wan2.2-ti2v-5b / diffusers for other weights")
    if expand_timesteps and not index.get("expand_timesteps"):
        raise UserInputError(
            f"generator {generator}: weights {folder} do not set expand_timesteps, so they "
            "are not Wan2.2-TI2V-5B",
            hint="use the Wan-AI/Wan2.2-TI2V-5B-Diffusers folder")
    vae = read_config(folder, "vae")
    tf = read_config(folder, "transformer") or read_config(folder, "transformer_2")
    patch = tf.get("patch_size") or [1, 2, 2]
    spatial = int(vae.get("scale_factor_spatial", 8))
    return {"multiple": max(16, spatial * int(patch[1])),
            "temporal": int(vae.get("scale_factor_temporal", 4))}


def flux2_multiple(folder: str) -> int:
    """FLUX.2's size multiple: its VAE scale (``2**(len(block_out_channels)-1)``) x 2."""
    vae = read_config(folder, "vae")
    blocks = vae.get("block_out_channels") or [0, 0, 0, 0]
    return 2 ** (len(blocks) - 1) * 2


def check_size(height: int, width: int, multiple: int, *, generator: str, what: str) -> None:
    """Refuse a size the pipeline would silently round.

    Example:
        >>> check_size(704, 1280, 32, generator="g", what="render size")
        >>> check_size(720, 1280, 32, generator="g", what="render size")
        Traceback (most recent call last):
        ...
        vidmem.errors.UserInputError: generator g: render size 1280x720 is not a multiple of 32 ...
    """
    if height % multiple or width % multiple:
        fix_h, fix_w = (round(height / multiple) or 1) * multiple, (round(width / multiple) or 1) * multiple
        raise UserInputError(
            f"generator {generator}: {what} {width}x{height} is not a multiple of {multiple} "
            "(the pipeline would round it and log a warning)",
            hint=f"pass height={fix_h},width={fix_w}")


def check_frames(num_frames: int, temporal: int, *, generator: str) -> None:
    """Frames must be ``temporal * k + 1`` (the VAE's time compression).

    Example:
        >>> check_frames(121, 4, generator="g")
        >>> check_frames(120, 4, generator="g")
        Traceback (most recent call last):
        ...
        vidmem.errors.UserInputError: generator g: num_frames=120 is not 4k+1 ...
    """
    if num_frames < 1 or (num_frames - 1) % temporal:
        near = max(1, round((num_frames - 1) / temporal)) * temporal + 1
        raise UserInputError(
            f"generator {generator}: num_frames={num_frames} is not {temporal}k+1 (the VAE "
            f"compresses time {temporal}x; the pipeline would round it and log a warning)",
            hint=f"pass num_frames={near}")


def check_reference(size: tuple[int, int], *, where: str) -> None:
    """A FLUX.2 reference: each side >= 64 px and at most 8:1.

    Args:
        size: ``(width, height)``.
        where: names the request and the reference, e.g. ``request s1/seg_002, reference 2``.
    """
    w, h = size
    if min(w, h) < MIN_REFERENCE_SIDE:
        raise UserInputError(f"{where}: {w}x{h} is under {MIN_REFERENCE_SIDE} px on a side, "
                             "which FLUX.2 refuses",
                             hint="give references at least 64x64 (upscale small crops first)")
    if max(w, h) / min(w, h) > MAX_REFERENCE_ASPECT:
        raise UserInputError(f"{where}: {w}x{h} is wider than {MAX_REFERENCE_ASPECT:g}:1, which "
                             "FLUX.2 refuses", hint="crop the reference closer to square")


def weights_fingerprint(folder: str) -> str:
    """A cheap identity of a weights folder: file names, sizes and modification times.

    The same rule as the scorer backends' (``vidmem.models.weights``): swapping the
    weights behind one path changes every cache key, without hashing gigabytes per run.
    """
    path = Path(folder)
    if not path.exists():
        return content_hash(["hub", folder])
    files = sorted(p for p in path.rglob("*") if p.is_file())
    return content_hash([(str(p.relative_to(path)), p.stat().st_size, p.stat().st_mtime_ns)
                         for p in files])
