"""The checkpoint side of the local Qwen-VL judges: template, image processor, model inputs.

:class:`QwenVLInputs` is mixed into :class:`vidmem.models.backends.judge_qwen.QwenVLJudge`,
which loads the model and holds the settings these methods read. It finds the chat
template and builds the checkpoint's image processor (with the ``min_pixels`` /
``max_pixels`` overrides), checks that the tokenizer's image placeholder matches
``config.json``, and turns one conversation plus its images into the tensors
``generate`` takes -- the same ones ``Qwen2VLProcessor`` would return, built without
torchvision.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vidmem.errors import MissingDependencyError, UserInputError
from vidmem.models.backends.base import image_processor_class, import_torch
from vidmem.models.backends.hf_checkpoint import read_json_if_present
from vidmem.models.backends.hf_images import check_images, resample_filter, resize
from vidmem.models.backends.judge_frames import shrunk_size
from vidmem.models.protocols import JudgeRequest

__all__ = ["QwenVLInputs"]

_IMAGE_TOKEN = "<|image_pad|>"
_VIDEO_TOKEN = "<|video_pad|>"


class QwenVLInputs:
    """Mixin: the chat template, image processor and model inputs of a Qwen-VL judge."""

    name: str
    config: dict[str, Any]
    model: Any
    tokenizer: Any
    chat_template: str
    image_processor: Any
    max_image_side: int | None
    image_token: str
    image_token_id: int
    video_token_id: int | None
    _eos_ids: set[int]
    _pad_id: Any
    _device: Any
    _dtype: Any
    _forward_takes_mm_types: bool

    # ----------------------------------------------------------------------- loading

    def _find_chat_template(self, path: Path) -> str:
        """The processor's template (``chat_template.jinja`` / ``.json``), else the tokenizer's."""
        jinja = path / "chat_template.jinja"
        if jinja.is_file():
            return jinja.read_text(encoding="utf-8")
        data = read_json_if_present(path, "chat_template.json")
        if data is not None and isinstance(data.get("chat_template"), str):
            return data["chat_template"]
        template = getattr(self.tokenizer, "chat_template", None)
        if isinstance(template, dict):  # named templates: take the default one
            template = template.get("default")
        if isinstance(template, str) and template.strip():
            return template
        raise MissingDependencyError(
            f"backend '{self.name}': no chat template in '{path}' (looked for "
            "chat_template.jinja, chat_template.json and tokenizer_config.json's chat_template)",
            hint="fetch the full hub snapshot of the model; the Qwen-VL repos ship "
            "chat_template.json",
        )

    def _load_image_processor(
        self, path: Path, min_pixels: int | None, max_pixels: int | None
    ) -> Any:
        if not (path / "preprocessor_config.json").is_file():
            raise MissingDependencyError(
                f"backend '{self.name}': no preprocessor_config.json in '{path}', so the "
                "image preprocessing (patch size, pixel bounds, mean/std) is unknown",
                hint="fetch the full hub snapshot of the model, not only the weights",
            )
        cls = image_processor_class("Qwen2VLImageProcessor")
        overrides: dict[str, int] = {}
        if min_pixels is not None:
            overrides["min_pixels"] = min_pixels
        if max_pixels is not None:
            overrides["max_pixels"] = max_pixels
        try:
            processor = cls.from_pretrained(str(path), local_files_only=True, **overrides)
        except (OSError, ValueError, TypeError) as exc:
            raise MissingDependencyError(
                f"backend '{self.name}': cannot read the image processor in '{path}': {exc}",
                hint="re-fetch preprocessor_config.json from the model's hub snapshot",
            ) from exc
        lo = size_edge(processor.size, "shortest_edge")
        hi = size_edge(processor.size, "longest_edge")
        if lo is None or hi is None or int(lo) > int(hi):
            raise UserInputError(
                f"backend '{self.name}': pixel bounds min_pixels={lo}, max_pixels={hi} "
                f"(from '{path / 'preprocessor_config.json'}' and the arguments) are not usable",
                hint="pass min_pixels <= max_pixels",
            )
        return processor

    def _token_ids(self) -> None:
        """Check that the tokenizer knows the placeholders the model expects."""
        tok = self.tokenizer
        self.image_token = str(getattr(tok, "image_token", None) or _IMAGE_TOKEN)
        image_id = self.config.get("image_token_id")
        video_id = self.config.get("video_token_id")
        found = tok.convert_tokens_to_ids(self.image_token)
        if image_id is None or found != image_id:
            raise MissingDependencyError(
                f"backend '{self.name}': the tokenizer maps the image placeholder "
                f"'{self.image_token}' to id {found}, but config.json's image_token_id is "
                f"{image_id}",
                hint="the tokenizer files do not belong to these weights; fetch them from "
                "the same hub snapshot",
            )
        self.image_token_id = int(image_id)
        self.video_token_id = None if video_id is None else int(video_id)
        eos = self.model.generation_config.eos_token_id
        if eos is None:
            eos = tok.eos_token_id
        eos_list = eos if isinstance(eos, (list, tuple)) else [eos]
        self._eos_ids = {int(e) for e in eos_list if e is not None}
        pad = self.model.generation_config.pad_token_id
        if pad is None:
            pad = tok.pad_token_id
        if pad is None and self._eos_ids:
            pad = min(self._eos_ids)
        self._pad_id = pad

    # ------------------------------------------------------------------ model inputs

    def _vision(self, request: JudgeRequest) -> dict[str, Any] | None:
        """Shrink and preprocess the request's images once (reused by the follow-up)."""
        images = check_images(list(request.images), where=f"{self.name} item '{request.item_id}'")
        if not images:
            return None
        if self.max_image_side is not None:
            bicubic = resample_filter("bicubic", where=self.name)
            shrunk = []
            for image in images:
                size = shrunk_size(image.shape[0], image.shape[1], self.max_image_side)
                if size is not None:
                    image = resize(image, size, bicubic)
                shrunk.append(image)
            images = shrunk
        try:
            features = self.image_processor(images, return_tensors="pt")
        except ValueError as exc:  # e.g. an aspect ratio above 200
            raise UserInputError(
                f"{self.name} item '{request.item_id}': the image processor refused an "
                f"image: {exc}",
                hint="crop or pad extreme panoramas before judging them",
            ) from exc
        return {
            "pixel_values": features["pixel_values"],
            "image_grid_thw": features["image_grid_thw"],
        }

    def _render(self, messages: list[dict[str, Any]]) -> str:
        return self.tokenizer.apply_chat_template(
            messages,
            chat_template=self.chat_template,
            tokenize=False,
            add_generation_prompt=True,
        )

    def _prompt_text(
        self, messages: list[dict[str, Any]], vision: dict[str, Any] | None, item_id: str
    ) -> str:
        """The chat template's text with each image placeholder expanded, as ``Qwen2VLProcessor``."""
        text = self._render(messages)
        pieces = text.split(self.image_token)
        n_images = 0 if vision is None else int(vision["image_grid_thw"].shape[0])
        if len(pieces) - 1 != n_images:
            raise UserInputError(
                f"{self.name} item '{item_id}': the chat template rendered "
                f"{len(pieces) - 1} image placeholder(s) '{self.image_token}' for "
                f"{n_images} image(s)",
                hint="use the checkpoint's own chat template, and keep the literal "
                f"'{self.image_token}' out of the prompt text",
            )
        if vision is None:
            return text
        merge = int(self.image_processor.merge_size) ** 2
        out = [pieces[0]]
        for grid, piece in zip(vision["image_grid_thw"], pieces[1:], strict=True):
            out.append(self.image_token * (int(grid.prod()) // merge))
            out.append(piece)
        return "".join(out)

    def _prepare(
        self, messages: list[dict[str, Any]], vision: dict[str, Any] | None, item_id: str
    ) -> dict[str, Any]:
        """Chat template + placeholder expansion + tokenization, as ``Qwen2VLProcessor``.

        Returns the ``generate`` inputs on the model's device.
        """
        return self._model_inputs([self._prompt_text(messages, vision, item_id)], [vision])

    def _model_inputs(
        self, texts: list[str], visions: list[dict[str, Any] | None]
    ) -> dict[str, Any]:
        """Tokenize expanded prompt texts (:meth:`_prompt_text`) into ``generate`` inputs.

        One text is tokenized as is. Several become one batch: the tokenizer pads them to
        the longest with ``padding=True`` and ``padding_side="left"`` for this call only
        (its own ``padding_side`` is left as it is), and the attention mask marks the
        padding; the images of all rows are concatenated in row order, as the processor
        does for a batch.
        """
        # the template already holds every special token: add none
        if len(texts) == 1:
            encoded = self.tokenizer(texts[0], return_tensors="pt", add_special_tokens=False)
        else:
            encoded = self.tokenizer(
                texts,
                return_tensors="pt",
                add_special_tokens=False,
                padding=True,
                padding_side="left",
            )
        input_ids = encoded["input_ids"]
        inputs: dict[str, Any] = {
            "input_ids": input_ids.to(self._device),
            "attention_mask": encoded["attention_mask"].to(self._device),
        }
        if self._forward_takes_mm_types:
            types = (input_ids == self.image_token_id).long()
            if self.video_token_id is not None:
                types = types + 2 * (input_ids == self.video_token_id).long()
            inputs["mm_token_type_ids"] = types.to(self._device)
        present = [v for v in visions if v is not None]
        if present:
            if len(present) == 1:
                pixels, grids = present[0]["pixel_values"], present[0]["image_grid_thw"]
            else:
                torch = import_torch()
                pixels = torch.cat([v["pixel_values"] for v in present])
                grids = torch.cat([v["image_grid_thw"] for v in present])
            inputs["pixel_values"] = pixels.to(device=self._device, dtype=self._dtype)
            inputs["image_grid_thw"] = grids.to(self._device)
        return inputs


def size_edge(size: Any, key: str) -> Any:
    """Read ``shortest_edge`` / ``longest_edge`` from a dict or a transformers ``SizeDict``."""
    if isinstance(size, dict):
        return size.get(key)
    return getattr(size, key, None)
