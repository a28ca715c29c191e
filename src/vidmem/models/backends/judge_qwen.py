"""``judge/transformers``: a local Qwen-VL judge run with transformers on your own GPU.

The same :class:`vidmem.models.protocols.Judge` as ``judge/openai``, without a server:
the model is loaded from a local weights directory and queried with greedy decoding.
Registered names (see :mod:`vidmem.catalog`):

* ``judge/qwen2-vl-7b`` -- ``Qwen/Qwen2-VL-7B-Instruct`` (``Qwen2VLForConditionalGeneration``);
* ``judge/qwen2.5-vl-7b`` -- ``Qwen/Qwen2.5-VL-7B-Instruct``
  (``Qwen2_5_VLForConditionalGeneration``);
* ``judge/qwen3-vl-8b`` -- ``Qwen/Qwen3-VL-8B-Instruct`` (``Qwen3VLForConditionalGeneration``);
* ``judge/transformers`` -- any local directory of these families (``weights=`` is
  required); the model class is picked from ``config.json``'s ``model_type``
  (``qwen2_vl``, ``qwen2_5_vl``, ``qwen3_vl``, ``qwen3_vl_moe``).

One :meth:`QwenVLJudge.judge` call behaves exactly like the server judge's:

1. ONE user message: the prompt text first, then each image (the order
   ``judge/openai`` sends, so a model served by vLLM sees the same conversation),
   rendered with the model's chat template (``add_generation_prompt=True``).
2. Greedy decoding (``do_sample=False``: temperature-0 semantics) of at most
   ``max_new_tokens`` tokens: the request's own limit (its prompt file's ``max_tokens``,
   else 1024) unless the ``max_new_tokens`` option is set
   (:mod:`vidmem.models.backends.judge_limits`). The sampling settings of the checkpoint's
   ``generation_config.json`` (temperature, top-p/top-k) are overridden;
   ``repetition_penalty`` is an explicit setting (1.0, i.e. none, by default; vLLM
   applies the checkpoint's value, 1.05 for Qwen2-VL, unless told otherwise).
3. The answer is read with :func:`vidmem.models.json_extract.extract_json_object` and
   checked for ``request.required_keys``. If that fails, ONE follow-up generation is
   made with the model's reply kept as the assistant turn and a user turn holding
   :data:`vidmem.models.backends.judge_common.JSON_ONLY_INSTRUCTION` (an empty first
   reply is not replayed: the instruction is appended to the original user message).
   Still not usable: ``status="unparsable"`` with the last raw text; no default
   answer is ever filled in.
4. An exception while generating (CUDA out of memory, a kernel error...) gives
   ``status="error"`` with the message (``"unparsable"`` if the first reply exists and
   only the follow-up failed), counted in :meth:`QwenVLJudge.stats`. Model
   misbehaviour never raises; misconfiguration (missing weights, no chat template,
   malformed images, an empty prompt) raises a :class:`vidmem.errors.VidmemError`.

Preprocessing (no torchvision): the frames are first shrunk so that the longer side
is at most ``max_image_side`` (bicubic, aspect kept, as ``judge/openai`` does before
encoding; images are not JPEG-compressed here), then go through the checkpoint's own
image processor in its PIL/numpy form (``Qwen2VLImageProcessorPil``, which Qwen2-VL,
Qwen2.5-VL and Qwen3-VL all use): ``smart_resize`` to multiples of
``patch_size * merge_size`` with the pixel count clamped to
``[min_pixels, max_pixels]``, rescale + normalise, patchify. The processor's text side
is reproduced too: the chat template's ``<|image_pad|>`` placeholder of image ``i`` is
repeated ``prod(image_grid_thw[i]) / merge_size**2`` times, the text is tokenized,
and ``mm_token_type_ids`` marks the image tokens (1) for the M-RoPE positions -- the
same tensors ``Qwen2VLProcessor`` returns (the full processor object cannot be built
without torchvision, because of its video half). Memory is bounded by
``max_image_side`` and ``max_pixels``: each image costs ``pixels / (28 * 28)`` tokens
(``32 * 32`` for Qwen3-VL). The template, the image processor and these model inputs
live in :mod:`vidmem.models.backends.judge_qwen_inputs`.

:meth:`QwenVLJudge.judge` answers one request. :meth:`QwenVLJudge.judge_many`
(:mod:`vidmem.models.backends.judge_qwen_batch`) takes the requests ``batch_size`` at
a time (default 1: one after another, as ``judge``): the first asks of a slice are one
greedy ``generate`` call over the left-padded prompts, the "JSON only" follow-ups stay
one at a time. In float32 the batched answers equal the one-at-a-time ones; in
bfloat16 on a GPU padding may change the rounding. Generations from several threads
are serialised.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vidmem.errors import MissingDependencyError, UserInputError
from vidmem.models.backends.base import import_torch
from vidmem.models.backends.hf_checkpoint import load_tokenizer
from vidmem.models.backends.hf_images import HFEmbedderBase
from vidmem.models.backends.judge_common import Attempt, JudgeExchange, JudgeReply
from vidmem.models.backends.judge_limits import (
    DEFAULT_REPLY_TOKENS,
    PER_QUESTION,
    check_limit_option,
    reply_limit,
)
from vidmem.models.backends.judge_qwen_batch import QwenVLBatching
from vidmem.models.backends.judge_qwen_inputs import QwenVLInputs, size_edge
from vidmem.models.protocols import JudgeRequest, JudgeResult

__all__ = [
    "MODEL_CLASSES",
    "Qwen2VL7BJudge",
    "Qwen3VL8BJudge",
    "Qwen25VL7BJudge",
    "QwenVLJudge",
]

log = logging.getLogger(__name__)

#: ``config.json`` ``model_type`` -> the transformers class that generates with it.
MODEL_CLASSES: dict[str, str] = {
    "qwen2_vl": "Qwen2VLForConditionalGeneration",
    "qwen2_5_vl": "Qwen2_5_VLForConditionalGeneration",
    "qwen3_vl": "Qwen3VLForConditionalGeneration",
    "qwen3_vl_moe": "Qwen3VLMoeForConditionalGeneration",
}


#: a request with no limit of its own: what the judge's option alone gives
_NO_REQUEST = JudgeRequest("-", "-")

#: One generation's reply, under the name it had before judge_common (tests build it).
_Reply = JudgeReply


def _positive_int(where: str, key: str, value: Any, *, allow_none: bool) -> int | None:
    if value is None and allow_none:
        return None
    ok = not isinstance(value, bool)
    try:
        number = int(value)
        ok = ok and number == float(value) and number >= 1
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        expected = "an integer >= 1" + (" or None" if allow_none else "")
        raise UserInputError(
            f"{where}: {key} must be {expected}, found {value!r}",
            hint=f"give {key} as a whole number, e.g. {key}=1024",
        )
    return number


class QwenVLJudge(QwenVLBatching, QwenVLInputs, JudgeExchange, HFEmbedderBase):
    """A :class:`vidmem.models.protocols.Judge` on a local Qwen-VL checkpoint.

    Args:
        weights: local model directory or hub id (looked up offline, see
            :func:`vidmem.models.weights.resolve_weights`); it must hold
            ``config.json``, the weights, the tokenizer, ``preprocessor_config.json``
            and a chat template (``chat_template.jinja``, ``chat_template.json`` or the
            tokenizer's). Required for ``judge/transformers``.
        device: torch device string (``"cuda"``, ``"cuda:1"``, ``"cpu"``).
        dtype: ``"bfloat16"``, ``"float16"`` or ``"float32"`` for the model; ``None``
            picks ``"bfloat16"`` on CUDA and ``"float32"`` on the CPU.
        batch_size: how many requests :meth:`judge_many` asks at once, in one padded
            ``generate`` call for their first asks (default 1: one at a time).
            :meth:`judge` always answers one.
        max_new_tokens: reply length limit in tokens for every question (``judge/openai``'s
            ``max_tokens``); the default ``"per_question"`` takes each request's own (its
            prompt file's ``max_tokens``, else 1024).
        max_image_side: shrink each image so that its longer side is at most this many
            pixels before the processor sees it (``None``: as is).
        min_pixels, max_pixels: bounds on each image's pixel count after the
            processor's ``smart_resize`` (``None``: the checkpoint's
            ``preprocessor_config.json``; Qwen2-VL ships 3136 .. 12845056, so with
            the default ``max_image_side`` that bound binds first, at most about
            1300 tokens per image).
        repetition_penalty: passed to ``generate`` (1.0: none).
        official: whether this model is the judge a protocol prescribes; the benchmark
            decides, this backend only records it.
        model_dir: extra directory searched for hub ids.

    Example:
        >>> judge = QwenVLJudge(weights="/models/Qwen2.5-VL-7B-Instruct",
        ...                     device="cuda")  # doctest: +SKIP
        >>> judge.judge(JudgeRequest("clip-3", prompt, images=frames,
        ...                          required_keys=("present",))).status  # doctest: +SKIP
        'ok'
    """

    name = "judge/transformers"
    default_weights: str | None = None
    official = False
    #: ``model_type`` values this registry name accepts.
    model_types: tuple[str, ...] = tuple(MODEL_CLASSES)
    _wrong_model_hint = (
        "pick the judge that matches these weights (`vidmem list backends`); "
        "judge/transformers takes any Qwen2-VL, Qwen2.5-VL or Qwen3-VL folder"
    )
    _log = log
    _token_limit = "max_new_tokens"

    def __init__(
        self,
        *,
        weights: str | Path | None = None,
        device: str = "cpu",
        dtype: str | None = None,
        batch_size: int = 1,
        max_new_tokens: int | str = PER_QUESTION,
        max_image_side: int | None = 1024,
        min_pixels: int | None = None,
        max_pixels: int | None = None,
        repetition_penalty: float = 1.0,
        official: bool = False,
        model_dir: str | Path | None = None,
    ) -> None:
        where = self.name
        if weights is None and self.default_weights is None:
            raise MissingDependencyError(
                f"backend '{where}': no weights given; expected weights=<local Qwen-VL "
                "model directory>, found none",
                hint="pass weights=/path/to/Qwen2.5-VL-7B-Instruct (a folder with config.json), "
                "or use judge/qwen2-vl-7b, judge/qwen2.5-vl-7b or judge/qwen3-vl-8b",
            )
        max_new_tokens = check_limit_option(where, "max_new_tokens", max_new_tokens,
                                            allow_none=False)
        max_image_side = _positive_int(where, "max_image_side", max_image_side, allow_none=True)
        min_pixels = _positive_int(where, "min_pixels", min_pixels, allow_none=True)
        max_pixels = _positive_int(where, "max_pixels", max_pixels, allow_none=True)
        if min_pixels is not None and max_pixels is not None and min_pixels > max_pixels:
            raise UserInputError(
                f"{where}: min_pixels ({min_pixels}) is larger than max_pixels ({max_pixels})",
                hint="pick min_pixels <= max_pixels",
            )
        try:
            repetition_penalty = float(repetition_penalty)
        except (TypeError, ValueError):
            repetition_penalty = float("nan")
        if not repetition_penalty > 0 or repetition_penalty == float("inf"):
            raise UserInputError(
                f"{where}: repetition_penalty must be a number > 0, found {repetition_penalty!r}",
                hint="1.0 means no penalty",
            )
        if dtype is None:
            dtype = "bfloat16" if str(device).startswith("cuda") else "float32"
        super().__init__(
            weights=weights,
            device=device,
            dtype=dtype,
            batch_size=batch_size,
            model_dir=model_dir,
        )
        self.official = bool(official)
        #: PER_QUESTION (each request's limit) or a number for every question
        self.max_new_tokens: int | str = max_new_tokens  # type: ignore[assignment]
        self.max_image_side = max_image_side
        self.repetition_penalty = repetition_penalty

        # -- cheap checks first (config, tokenizer, template, image processor), then the
        # model, whose class is chosen by config.json's model_type
        path = self._check_weights()
        self.model_type = str(self._read_config(path).get("model_type"))
        self.model_class = MODEL_CLASSES[self.model_type]
        self.tokenizer = load_tokenizer(path, backend=self.name)
        self.chat_template = self._find_chat_template(path)
        self.image_processor = self._load_image_processor(path, min_pixels, max_pixels)
        self._load_model()
        self._token_ids()
        self._forward_takes_mm_types = (
            "mm_token_type_ids" in inspect.signature(self.model.forward).parameters
        )
        size = self.image_processor.size
        self.settings.update(
            model_type=self.model_type,
            model_class=self.model_class,
            decoding="greedy",
            max_new_tokens=self.max_new_tokens,
            repetition_penalty=self.repetition_penalty,
            max_image_side=self.max_image_side,
            min_pixels=int(size_edge(size, "shortest_edge")),
            max_pixels=int(size_edge(size, "longest_edge")),
            patch_size=int(self.image_processor.patch_size),
            merge_size=int(self.image_processor.merge_size),
        )
        self._start_counters()
        self._model_lock = threading.Lock()  # one generation at a time

    # --------------------------------------------------------------------- generation

    def _limit(self, inputs: dict[str, Any]) -> int:
        """The token limit prepared inputs carry (``max_new_tokens``), else the judge's."""
        limit = inputs.get("max_new_tokens")
        if limit is None:
            limit = reply_limit(self.max_new_tokens, _NO_REQUEST)
        return int(limit or DEFAULT_REPLY_TOKENS)

    def _generate(self, inputs: dict[str, Any]) -> Any:
        """Greedy generation on prepared inputs (one row or a left-padded batch); the
        only place the model runs. Returns the prompt + generated token ids.

        ``inputs["max_new_tokens"]``, when present, is the limit (the request's, or the
        largest of a batch's rows); it is not a model input."""
        torch = import_torch()
        limit = self._limit(inputs)
        inputs = {k: v for k, v in inputs.items() if k != "max_new_tokens"}
        with self._model_lock, torch.inference_mode():
            output = self.model.generate(
                **inputs,
                do_sample=False,
                num_beams=1,
                temperature=None,
                top_p=None,
                top_k=None,
                repetition_penalty=self.repetition_penalty,
                max_new_tokens=limit,
                pad_token_id=self._pad_id,
            )
        return output

    def _run_model(self, inputs: dict[str, Any]) -> JudgeReply:
        """One request's generation and its reply (cut as in ``_decode_rows``)."""
        output = self._generate(inputs)
        return self._decode_rows(output, int(inputs["input_ids"].shape[1]),
                                 [self._limit(inputs)])[0]

    def _call(self, inputs: dict[str, Any]) -> Attempt:
        """One generation: ``(reply, 1, None)`` or ``(None, 1, what went wrong)``; never raises."""
        self._count("calls")
        try:
            return self._run_model(inputs), 1, None
        except Exception as exc:  # CUDA OOM, kernel errors...: an answer that never came
            self._release_memory()
            return None, 1, f"{type(exc).__name__}: {exc}"

    def _release_memory(self) -> None:
        torch = import_torch()
        if getattr(self, "_device", None) is not None and self._device.type == "cuda":
            with contextlib.suppress(Exception):  # best effort after a failure
                torch.cuda.empty_cache()

    # -------------------------------------------------------------------------- judge

    def _stage(self, request: JudgeRequest) -> tuple[dict[str, Any], Any, str]:
        """Check a request and build its first ask: ``(user turn, images, prompt text)``.

        Raises :class:`vidmem.errors.UserInputError` for an empty prompt, malformed
        images or a template that does not fit them.
        """
        if not isinstance(request.prompt, str) or not request.prompt.strip():
            raise UserInputError(
                f"{self.name} item '{request.item_id}': the prompt is empty",
                hint="the benchmark must build a prompt that asks for one JSON object",
            )
        vision = self._vision(request)  # validates images
        content: list[dict[str, Any]] = [{"type": "text", "text": request.prompt}]
        content.extend({"type": "image"} for _ in range(len(request.images)))
        user = {"role": "user", "content": content}
        return user, vision, self._prompt_text([user], vision, request.item_id)

    def _follow_up(self, vision: Any, item: str,
                   limit: int | None = None) -> Callable[[list[dict[str, Any]]], Attempt]:
        """The ``again`` of :meth:`_exchange`: one generation of the follow-up messages,
        with the request's token ``limit``."""

        def again(messages: list[dict[str, Any]]) -> Attempt:
            try:  # it replays the model's own reply, so a failure here is the model's doing
                follow_up = self._prepare(messages, vision, item)
            except Exception as exc:
                return None, 0, f"{type(exc).__name__}: {exc}"
            return self._call({**follow_up, "max_new_tokens": limit})

        return again

    def judge(self, request: JudgeRequest) -> JudgeResult:
        """Ask the model ``request.prompt`` about ``request.images``; never raises for
        model misbehaviour (see the module docstring for the sequence)."""
        user, vision, text = self._stage(request)  # misconfiguration raises here
        limit = reply_limit(self.max_new_tokens, request)
        inputs = {**self._model_inputs([text], [vision]), "max_new_tokens": limit}
        self._count("requests")
        return self._exchange(
            request, user, lambda: self._call(inputs),
            self._follow_up(vision, request.item_id, limit)
        )

    def close(self) -> None:
        """Drop the model and free its device memory."""
        self.model = None
        self._release_memory()


class Qwen2VL7BJudge(QwenVLJudge):
    """``judge/qwen2-vl-7b``: ``Qwen/Qwen2-VL-7B-Instruct`` (8.3B parameters, about 17 GB in bfloat16)."""

    name = "judge/qwen2-vl-7b"
    default_weights = "Qwen/Qwen2-VL-7B-Instruct"
    model_types = ("qwen2_vl",)


class Qwen25VL7BJudge(QwenVLJudge):
    """``judge/qwen2.5-vl-7b``: ``Qwen/Qwen2.5-VL-7B-Instruct`` (8.3B parameters, about 17 GB in bfloat16)."""

    name = "judge/qwen2.5-vl-7b"
    default_weights = "Qwen/Qwen2.5-VL-7B-Instruct"
    model_types = ("qwen2_5_vl",)


class Qwen3VL8BJudge(QwenVLJudge):
    """``judge/qwen3-vl-8b``: ``Qwen/Qwen3-VL-8B-Instruct`` (8.8B parameters, about 18 GB in bfloat16)."""

    name = "judge/qwen3-vl-8b"
    default_weights = "Qwen/Qwen3-VL-8B-Instruct"
    model_types = ("qwen3_vl",)
