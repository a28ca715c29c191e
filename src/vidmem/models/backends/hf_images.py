"""Shared plumbing for the transformers-based embedders (DINOv2, DINOv3, CLIP, SigLIP, text).

Two halves:

* **Image preprocessing in numpy/PIL** (no torchvision): input checks
  (:func:`check_images`, from :mod:`vidmem.models.backends.image_checks`), resize of the
  shorter side, exact resize (uint8 or float), center crop, rescale + normalise, and
  stacking into an ``(N, 3, H, W)`` float32 batch. The arithmetic follows the
  transformers image processors (``get_resize_output_image_size`` and ``center_crop``
  in ``transformers.image_transforms``), so the numbers match the official pipelines.
* **Torch plumbing** for :class:`HFEmbedderBase`: checking ``config.json``'s model type,
  loading a model with ``from_pretrained`` from the resolved local directory (never the
  network), device/dtype placement, eval mode, batched inference under
  ``torch.inference_mode()`` and L2 normalisation to float32 numpy. The checkpoint files
  themselves are read by :mod:`vidmem.models.backends.hf_checkpoint`.

torch and transformers are imported lazily through :mod:`vidmem.models.backends.base`,
so importing this module needs numpy and Pillow only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from vidmem.errors import MissingDependencyError, UserInputError
from vidmem.models.backends.base import (
    BackendBase,
    batched,
    import_torch,
    import_transformers,
    torch_dtype,
)
from vidmem.models.backends.hf_checkpoint import (  # noqa: F401 (re-exported: they lived here)
    load_tokenizer,
    read_config,
    read_json_if_present,
)
from vidmem.models.backends.image_checks import check_images as check_images  # re-exported

#: ImageNet statistics (DINOv2, DINOv3).
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
#: OpenAI CLIP statistics.
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
#: SigLIP statistics (maps [0, 1] to [-1, 1]).
HALF_MEAN = (0.5, 0.5, 0.5)
HALF_STD = (0.5, 0.5, 0.5)

RESAMPLE = {
    "nearest": Image.Resampling.NEAREST,
    "bilinear": Image.Resampling.BILINEAR,
    "bicubic": Image.Resampling.BICUBIC,
    "lanczos": Image.Resampling.LANCZOS,
    "box": Image.Resampling.BOX,
}


# ---------------------------------------------------------------------------------------
# image checks and preprocessing (numpy / PIL)
# ---------------------------------------------------------------------------------------


def resample_filter(name: str, *, where: str) -> Image.Resampling:
    """Map a filter name (``"bicubic"``, ``"bilinear"``...) to its PIL constant.

    Example:
        >>> resample_filter("bicubic", where="demo") == Image.Resampling.BICUBIC
        True
    """
    try:
        return RESAMPLE[name]
    except KeyError:
        raise UserInputError(
            f"{where}: resample must be one of {sorted(RESAMPLE)}, found '{name}'"
        ) from None


def shorter_side_size(height: int, width: int, size: int) -> tuple[int, int]:
    """Output ``(height, width)`` when the shorter side is resized to ``size``.

    The longer side is ``int(size * long / short)`` (truncated), exactly as
    ``transformers.image_transforms.get_resize_output_image_size`` with
    ``default_to_square=False``.

    Example:
        >>> shorter_side_size(480, 640, 256)
        (256, 341)
        >>> shorter_side_size(100, 50, 32)
        (64, 32)
    """
    short, long = (width, height) if width <= height else (height, width)
    new_short, new_long = size, int(size * long / short)
    return (new_long, new_short) if width <= height else (new_short, new_long)


def resize(image: np.ndarray, size: tuple[int, int], resample: Image.Resampling) -> np.ndarray:
    """Resize a ``uint8 (H, W, 3)`` image to ``size = (height, width)`` with PIL.

    This is what the transformers PIL-backend processors do (PIL on uint8 pixels).

    Example:
        >>> resize(np.zeros((10, 20, 3), np.uint8), (5, 7), Image.Resampling.BICUBIC).shape
        (5, 7, 3)
    """
    height, width = size
    if image.shape[:2] == (height, width):
        return image
    return np.asarray(Image.fromarray(image).resize((width, height), resample=resample))


def resize_float(
    image: np.ndarray, size: tuple[int, int], resample: Image.Resampling
) -> np.ndarray:
    """Resize a float ``(H, W, C)`` image channel by channel in PIL's 32-bit float mode.

    Used where the official pipeline rescales to ``[0, 1]`` *before* resizing (DINOv3),
    so no rounding to uint8 happens in between. PIL's filters are antialiased when
    downscaling, like torchvision's ``antialias=True``.

    Example:
        >>> x = np.full((10, 20, 3), 0.25, np.float32)
        >>> y = resize_float(x, (5, 7), Image.Resampling.BILINEAR)
        >>> y.shape, y.dtype, bool(np.allclose(y, 0.25))
        ((5, 7, 3), dtype('float32'), True)
    """
    height, width = size
    image = np.asarray(image, dtype=np.float32)
    if image.shape[:2] == (height, width):
        return image
    channels = [
        # a 2-D float32 array becomes a PIL "F" (32-bit float) image
        np.asarray(
            Image.fromarray(np.ascontiguousarray(image[:, :, c])).resize(
                (width, height), resample=resample
            )
        )
        for c in range(image.shape[2])
    ]
    return np.stack(channels, axis=-1).astype(np.float32, copy=False)


def resize_shorter_side(image: np.ndarray, size: int, resample: Image.Resampling) -> np.ndarray:
    """Resize a ``uint8 (H, W, 3)`` image so that its shorter side is ``size``.

    Example:
        >>> resize_shorter_side(np.zeros((30, 60, 3), np.uint8), 16, Image.Resampling.BICUBIC).shape
        (16, 32, 3)
    """
    return resize(image, shorter_side_size(image.shape[0], image.shape[1], size), resample)


def center_crop(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Crop the central ``size = (height, width)`` window of an ``(H, W, C)`` image.

    The offsets are ``(H - height) // 2`` and ``(W - width) // 2``, as in
    ``transformers.image_transforms.center_crop``.

    Raises:
        UserInputError: the image is smaller than the crop.

    Example:
        >>> x = np.arange(5 * 6).reshape(5, 6, 1)
        >>> center_crop(x, (3, 2))[:, :, 0]
        array([[ 8,  9],
               [14, 15],
               [20, 21]])
    """
    height, width = size
    h, w = image.shape[:2]
    if h < height or w < width:
        raise UserInputError(
            f"center_crop: image of {h}x{w} is smaller than the crop {height}x{width}",
            hint="resize the image so that both sides are at least the crop size first",
        )
    top, left = (h - height) // 2, (w - width) // 2
    return image[top : top + height, left : left + width]


def normalise(image: np.ndarray, mean: Sequence[float], std: Sequence[float]) -> np.ndarray:
    """Rescale (uint8 input is divided by 255) and normalise per channel to float32.

    Float input is assumed to be already in ``[0, 1]``.

    Example:
        >>> x = np.full((1, 1, 3), 255, np.uint8)
        >>> normalise(x, (0.5, 0.5, 0.5), (0.5, 0.5, 0.5))[0, 0].tolist()
        [1.0, 1.0, 1.0]
    """
    x = (
        image.astype(np.float32) * np.float32(1 / 255)
        if image.dtype == np.uint8
        else image.astype(np.float32)
    )
    mean_arr = np.asarray(mean, dtype=np.float32)
    std_arr = np.asarray(std, dtype=np.float32)
    return (x - mean_arr) / std_arr


def to_nchw(images: Sequence[np.ndarray]) -> np.ndarray:
    """Stack equally sized float ``(H, W, 3)`` images into a float32 ``(N, 3, H, W)`` batch.

    Example:
        >>> to_nchw([np.zeros((4, 5, 3), np.float32)] * 2).shape
        (2, 3, 4, 5)
    """
    return np.ascontiguousarray(np.stack(images, axis=0).transpose(0, 3, 1, 2), dtype=np.float32)


# ---------------------------------------------------------------------------------------
# weights directory and torch plumbing
# ---------------------------------------------------------------------------------------


def l2_normalise_rows(features: Any) -> np.ndarray:
    """L2-normalise a ``(N, D)`` torch tensor row-wise in float32; return numpy float32."""
    feats = features.detach().float()
    feats = feats / feats.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return feats.cpu().numpy().astype(np.float32, copy=False)


def pooled(output: Any) -> Any:
    """The pooled tensor from a model output or a bare tensor.

    ``CLIPModel.get_image_features`` returns a tensor in transformers 4 and a
    ``BaseModelOutputWithPooling`` whose ``pooler_output`` holds the projected features
    in transformers 5; this accepts both.
    """
    torch = import_torch()
    if isinstance(output, torch.Tensor):
        return output
    value = getattr(output, "pooler_output", None)
    if value is None:
        raise TypeError(f"model output {type(output).__name__} has no pooler_output")
    return value


class HFEmbedderBase(BackendBase):
    """A transformers model loaded from a local directory, run batched on one device.

    Subclasses set ``model_class`` (the ``transformers`` attribute to load with) and
    ``model_types`` (the ``config.json`` ``model_type`` values that class can load), then
    call :meth:`_load_model` from ``__init__`` and :meth:`_run_batched` from their
    ``embed_*`` methods.
    """

    model_class: str = ""
    model_types: tuple[str, ...] = ()
    #: the hint of the error for weights of another ``model_type``
    _wrong_model_hint = "pick the backend that matches these weights (`vidmem list backends`)"

    model: Any
    config: dict[str, Any]

    def _check_weights(self) -> Path:
        if self.weights_path is None:  # only possible for a subclass without default weights
            raise MissingDependencyError(
                f"backend '{self.name}': no weights given",
                hint="pass weights=<local dir or hub id>",
            )
        if not self.weights_path.is_dir():
            raise MissingDependencyError(
                f"backend '{self.name}': weights '{self.weights_path}' is a file, expected a "
                "transformers model directory (config.json + weight files)",
                hint="pass the folder that holds config.json",
            )
        return self.weights_path

    def _torch_device(self) -> Any:
        torch = import_torch()
        try:
            device = torch.device(self.device)
        except (RuntimeError, TypeError) as exc:
            raise UserInputError(
                f"backend '{self.name}': device '{self.device}' is not a torch device ({exc})",
                hint="use 'cpu', 'cuda' or 'cuda:N'",
            ) from exc
        if device.type == "cuda" and not torch.cuda.is_available():
            raise UserInputError(
                f"backend '{self.name}': device '{self.device}' requested, but this torch "
                f"({torch.__version__}) sees no CUDA device",
                hint="pass device='cpu', or install a CUDA build of torch on a GPU machine",
            )
        if (
            device.type == "cuda"
            and device.index is not None
            and device.index >= torch.cuda.device_count()
        ):
            raise UserInputError(
                f"backend '{self.name}': device '{self.device}' requested, but only "
                f"{torch.cuda.device_count()} CUDA device(s) are visible",
                hint="pick an index below the device count, or check CUDA_VISIBLE_DEVICES",
            )
        return device

    def _read_config(self, path: Path) -> dict[str, Any]:
        """Read ``config.json`` into ``self.config``; its ``model_type`` must be accepted."""
        self.config = read_config(path, backend=self.name)
        model_type = self.config.get("model_type")
        if self.model_types and model_type not in self.model_types:
            raise UserInputError(
                f"backend '{self.name}': weights '{path}' hold a '{model_type}' model, expected "
                f"model_type {' or '.join(repr(t) for t in self.model_types)}",
                hint=self._wrong_model_hint,
            )
        return self.config

    def _load_model(self) -> Any:
        """Load ``model_class`` from the weights directory; set ``self.model``/``self.config``.

        Unlike the detectors' ``load_hf_model``: loads in ``dtype`` directly, refuses an
        unusable CUDA device up front, and does not warn about missing weights."""
        path = self._check_weights()
        self._read_config(path)
        transformers = import_transformers()
        dtype = torch_dtype(self.dtype)
        device = self._torch_device()
        cls = getattr(transformers, self.model_class)
        try:
            model = cls.from_pretrained(str(path), dtype=dtype, local_files_only=True)
        except (OSError, ValueError) as exc:
            raise MissingDependencyError(
                f"backend '{self.name}': cannot load {self.model_class} from '{path}': {exc}",
                hint="check that the folder holds the complete weights (config.json and "
                "*.safetensors or *.bin), or re-fetch them",
            ) from exc
        self.model = model.to(device).eval()
        self._device = device
        self._dtype = dtype
        return self.model

    def _check_patch_multiple(self, image_size: int, default_patch: int) -> None:
        """Refuse an ``image_size`` that is not a positive multiple of the model's patch size."""
        patch = int(self.config.get("patch_size", default_patch))
        if image_size < patch or image_size % patch:
            raise UserInputError(
                f"backend '{self.name}': image_size must be a positive multiple of the patch "
                f"size {patch}, found {image_size}",
                hint=f"use 224 (official) or another multiple of {default_patch}",
            )

    def _run_batched(
        self, items: Sequence[Any], encode: Callable[[Sequence[Any]], Any], dim: int
    ) -> np.ndarray:
        """Encode ``items`` in slices of ``batch_size``; return ``(N, dim)`` unit rows."""
        torch = import_torch()
        parts: list[np.ndarray] = []
        with torch.inference_mode():
            for chunk in batched(items, self.batch_size):
                parts.append(l2_normalise_rows(encode(chunk)))
        if not parts:
            return np.zeros((0, dim), dtype=np.float32)
        return np.concatenate(parts, axis=0)

    def _pixels(self, batch: np.ndarray) -> Any:
        """A float32 NCHW numpy batch as a tensor on the model's device and dtype."""
        torch = import_torch()
        return torch.from_numpy(batch).to(device=self._device, dtype=self._dtype)

    def _pixels_from_uint8(
        self, images: Sequence[np.ndarray], mean: Sequence[float], std: Sequence[float]
    ) -> Any:
        """Equally sized uint8 ``(H, W, 3)`` images -> normalised NCHW tensor on the device.

        The same arithmetic as :func:`normalise` + :func:`to_nchw` (scale by 1/255, then
        ``(x - mean) / std`` in float32), done on the whole batch by torch on the model's
        device: the host sends uint8 (4x less than float32) and one vectorised op
        replaces a numpy pass per image.
        """
        torch = import_torch()
        batch = torch.from_numpy(np.stack(images, axis=0)).to(self._device)
        x = batch.permute(0, 3, 1, 2).to(torch.float32) * (1.0 / 255.0)
        m = torch.tensor(mean, dtype=torch.float32, device=self._device).view(1, 3, 1, 1)
        s = torch.tensor(std, dtype=torch.float32, device=self._device).view(1, 3, 1, 1)
        return ((x - m) / s).to(self._dtype).contiguous()


def check_texts(texts: Sequence[str], *, where: str) -> list[str]:
    """Validate a batch of texts.

    Example:
        >>> check_texts(["a cat"], where="demo")
        ['a cat']
    """
    if isinstance(texts, str):
        raise UserInputError(
            f"{where}: expected a sequence of strings, found a single string",
            hint="wrap a single text in a list: embed_texts([text])",
        )
    out: list[str] = []
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise UserInputError(f"{where}: text {i} must be a str, found {type(text).__name__}")
        out.append(text)
    return out
