"""Reading a local transformers checkpoint directory (never the network).

Shared by the embedders (:mod:`vidmem.models.backends.hf_images`), the detectors and
segmenters (:mod:`vidmem.models.backends.hf_detection`) and the local judge:

* ``config.json`` (:func:`read_config`), optional JSON files (:func:`read_json_if_present`,
  :func:`read_preprocessor_config`) and a preprocessor's mean/std;
* the tokenizer saved next to the weights (:func:`load_tokenizer`);
* the detectors' and segmenters' model loader (:func:`load_hf_model`). The embedders
  load theirs with :meth:`vidmem.models.backends.hf_images.HFEmbedderBase._load_model`,
  which differs on purpose (see there).

torch and transformers are imported lazily through :mod:`vidmem.models.backends.base`.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vidmem.errors import MissingDependencyError, UserInputError
from vidmem.models.backends.base import import_torch, import_transformers, torch_dtype

__all__ = [
    "load_hf_model",
    "load_tokenizer",
    "preprocessor_mean_std",
    "read_config",
    "read_json_if_present",
    "read_preprocessor_config",
]


def read_config(path: Path, *, backend: str) -> dict[str, Any]:
    """Read ``config.json`` of a local transformers model directory.

    Raises:
        MissingDependencyError: the directory has no readable ``config.json``.
    """
    config_file = Path(path) / "config.json"
    if not config_file.is_file():
        raise MissingDependencyError(
            f"backend '{backend}': weights directory '{path}' has no config.json, so it is "
            "not a transformers model directory",
            hint=f"point weights= at the folder that holds config.json and the weight files, or "
            f"run `vidmem models fetch {backend} --to DIR` on a machine with hub access",
        )
    try:
        return json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise MissingDependencyError(
            f"backend '{backend}': cannot read '{config_file}': {exc}",
            hint="re-download the weights; the file is damaged",
        ) from exc


def read_json_if_present(path: str | Path, name: str) -> dict[str, Any] | None:
    """Return the JSON object in ``path/name``, or ``None`` when the file is absent.

    Raises:
        UserInputError: the file is not readable as JSON, or holds something other than
            an object.
    """
    file = Path(path) / name
    if not file.is_file():
        return None
    hint = "fix or delete the file, or re-fetch the weights with `vidmem models fetch`"
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserInputError(f"cannot read '{file}': {exc}", hint=hint) from exc
    if not isinstance(data, dict):
        raise UserInputError(
            f"cannot read '{file}': expected a JSON object, found {type(data).__name__}",
            hint=hint,
        )
    return data


def read_preprocessor_config(path: str | Path) -> dict[str, Any]:
    """Return ``preprocessor_config.json`` of a weights directory, or ``{}`` if absent."""
    return read_json_if_present(path, "preprocessor_config.json") or {}


def preprocessor_mean_std(
    pre: dict[str, Any], mean: tuple[float, ...], std: tuple[float, ...]
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """``image_mean`` / ``image_std`` from a preprocessor config, else the given defaults."""
    got_mean = pre.get("image_mean", mean)
    got_std = pre.get("image_std", std)
    if isinstance(got_mean, (int, float)):
        got_mean = [got_mean] * 3
    if isinstance(got_std, (int, float)):
        got_std = [got_std] * 3
    return tuple(float(v) for v in got_mean), tuple(float(v) for v in got_std)


_TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.json",
    "vocab.txt",
    "spiece.model",
    "tokenizer.model",
    "sentencepiece.bpe.model",
)


def load_tokenizer(path: Path, *, backend: str) -> Any:
    """``AutoTokenizer.from_pretrained`` on a local directory, with clear errors.

    The directory must hold tokenizer files: transformers 5 otherwise builds an *empty*
    tokenizer from the model type without complaint, which would turn every text into
    unknown tokens.
    """
    present = [name for name in _TOKENIZER_FILES if (Path(path) / name).is_file()]
    if not present:
        raise MissingDependencyError(
            f"backend '{backend}': no tokenizer files in '{path}' (looked for "
            f"{', '.join(_TOKENIZER_FILES)})",
            hint="the weights folder must also hold the tokenizer (tokenizer.json + "
            "tokenizer_config.json, or the vocab files); fetch the full hub snapshot",
        )
    transformers = import_transformers()
    try:
        return transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except ImportError as exc:
        raise MissingDependencyError(
            f"backend '{backend}': the tokenizer in '{path}' needs a package that is not "
            f"installed: {exc}",
            hint="pip install sentencepiece (SigLIP's tokenizer), or provide a tokenizer.json",
        ) from exc
    except (OSError, ValueError, TypeError) as exc:
        raise MissingDependencyError(
            f"backend '{backend}': no usable tokenizer in '{path}': {exc}",
            hint="the weights folder must also hold the tokenizer files (tokenizer.json + "
            "tokenizer_config.json); fetch the full hub snapshot",
        ) from exc


def load_hf_model(
    class_name: str,
    path: Path,
    *,
    backend: str,
    device: str,
    dtype: str,
    model_types: Sequence[str],
    stacklevel: int = 3,
) -> Any:
    """Load ``transformers.<class_name>`` from a local directory, in eval mode.

    Args:
        class_name: e.g. ``"OwlViTForObjectDetection"``.
        path: local weights directory (``config.json`` + safetensors).
        backend: registry name, for messages.
        device: torch device string (``"cpu"``, ``"cuda"``, ``"cuda:1"``...).
        dtype: ``"float32"``, ``"float16"`` or ``"bfloat16"``.
        model_types: accepted ``config.json`` ``model_type`` values.
        stacklevel: of the missing-weights warning (3: the caller's caller).

    Raises:
        MissingDependencyError: transformers lacks the class, or the directory holds no
            loadable model.
        UserInputError: the directory holds a different model family, or the device or
            dtype is not valid.
    """
    transformers = import_transformers()
    torch = import_torch()
    cls = getattr(transformers, class_name, None)
    if cls is None:
        raise MissingDependencyError(
            f"backend '{backend}': the installed transformers {transformers.__version__} has no "
            f"{class_name}",
            hint="upgrade transformers: pip install -U 'transformers>=4.56'",
        )
    config_file = Path(path) / "config.json"
    if not config_file.is_file():
        raise MissingDependencyError(
            f"backend '{backend}': '{path}' has no config.json; expected a transformers model "
            "directory (config.json + model.safetensors)",
            hint=f"run `vidmem models fetch {backend} --to DIR` and pass weights=DIR/<org>--<name>",
        )
    try:
        model_type = json.loads(config_file.read_text(encoding="utf-8")).get("model_type")
    except (OSError, json.JSONDecodeError, AttributeError) as exc:
        raise UserInputError(f"{config_file}: not a readable JSON object ({exc})") from exc
    if model_type not in model_types:
        raise UserInputError(
            f"backend '{backend}': weights at '{path}' are a '{model_type}' model, expected "
            f"model_type {' or '.join(repr(t) for t in model_types)}",
            hint="pass weights of this model family, or choose the backend matching these weights",
        )
    dt = torch_dtype(dtype)
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise UserInputError(
            f"backend '{backend}': device '{device}' is not a torch device ({exc})",
            hint="use 'cpu', 'cuda', 'cuda:0' or 'mps'",
        ) from exc
    try:
        model, loading = cls.from_pretrained(
            str(path), local_files_only=True, output_loading_info=True
        )
    except (OSError, ValueError) as exc:
        raise MissingDependencyError(
            f"backend '{backend}': could not load {class_name} from '{path}': {exc}",
            hint=f"re-fetch with `vidmem models fetch {backend} --to DIR`",
        ) from exc
    missing = sorted(loading.get("missing_keys", ()) if isinstance(loading, dict) else ())
    if missing:
        warnings.warn(
            f"backend '{backend}': {len(missing)} weights missing from '{path}' were randomly "
            f"initialised (first: {', '.join(missing[:5])}); scores from this model are not "
            "meaningful",
            stacklevel=stacklevel,
        )
    model.to(device=dev, dtype=dt)
    model.eval()
    return model
