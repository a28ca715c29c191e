"""``judge/openai``: a vision-language judge behind any OpenAI-compatible chat server.

Works with vLLM (``vllm serve Qwen/Qwen2.5-VL-7B-Instruct``), SGLang, the OpenAI API
and anything else that speaks ``POST {base_url}/chat/completions`` with image parts.

One :meth:`OpenAIJudge.judge` call is one logical question and may make several HTTP
calls, all inside ``max_total_seconds``:

1. The request goes out as ONE user message: the prompt text first, then each image
   as a base64 data URL (``{"type": "image_url", "image_url": {"url":
   "data:image/jpeg;base64,..."}}``), with ``temperature`` (0 by default) and
   ``max_tokens``: the request's own limit (its prompt file's, else 1024) unless the
   ``max_tokens`` option is set (:mod:`vidmem.models.backends.judge_limits`).
2. Transport failures -- connection errors, timeouts, HTTP 408/409/429/5xx -- are
   retried up to ``max_retries`` times with exponential backoff and bounded, seeded
   jitter (``Retry-After`` is honoured when the server sends it). Other HTTP errors
   (400, 401, 404...) are not retried. If no answer comes back the result is
   ``status="error"``.
3. The answer is read with :func:`vidmem.models.json_extract.find_json_object` (strict
   numbers: ``NaN``, ``Infinity`` and ``1e999`` make it unusable; for a request with
   ``strict_json`` the whole reply must be the object,
   :mod:`vidmem.models.json_strict`) and checked for
   ``request.required_keys`` and the JSON types of ``request.key_types``. If that
   fails, ONE follow-up call is made:
   the conversation is replayed with the model's own reply as the assistant turn,
   followed by a user turn that says why it was not usable and contains
   :data:`JSON_ONLY_INSTRUCTION`. Keeping the first reply lets the model repair its
   own answer instead of judging the images afresh. (An empty first reply is not
   replayed -- some servers refuse an empty assistant turn; the instruction is then
   added as a last text part of the original user message.) If the follow-up is still not
   usable (or gets no answer) the result is ``status="unparsable"`` with the last raw
   text; no default answer is ever filled in.

Model and server misbehaviour never raises: it shows up in ``JudgeResult.status``
and in :meth:`OpenAIJudge.stats`. Misconfiguration (no server URL or model name, bad
settings, malformed images) raises :class:`vidmem.errors.UserInputError`.

The ``max_total_seconds`` bound is enforced by capping each call's timeout at the time
left and by never sleeping past it. Each call is bounded as a whole, not only each
wait for the server: a server that trickles its reply a byte at a time is cut off at
the call's timeout and its connection shut down (see
:mod:`vidmem.models.backends.judge_openai_http`).

Layout: the HTTP calls, retries and ping are in
:mod:`vidmem.models.backends.judge_openai_http`, the reply reading and follow-up shared
with the local judges in :mod:`vidmem.models.backends.judge_common`, and image encoding
and clip frame sampling in :mod:`vidmem.models.backends.judge_frames`; their public
names are re-exported here.
"""

from __future__ import annotations

import logging
import math
import os
import random
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vidmem.errors import UserInputError
from vidmem.models.backends.base import BackendBase
from vidmem.models.backends.image_checks import JUDGE_WORDING, check_image
from vidmem.models.backends.judge_common import (
    JSON_ONLY_INSTRUCTION,
    Attempt,
    JudgeExchange,
    read_reply,
)
from vidmem.models.backends.judge_frames import (
    IMAGE_FORMATS,
    clip_frame_indices,
    encode_image_data_url,
    sample_clip_frames,
)
from vidmem.models.backends.judge_limits import PER_QUESTION, check_limit_option, reply_limit
from vidmem.models.backends.judge_openai_http import (
    ChatServerCalls,
    JudgePing,
    SchemaRefused,
    redact_url,
    remember_socket,
)
from vidmem.models.prompt_files import answer_schema
from vidmem.models.protocols import JudgeRequest, JudgeResult
from vidmem.values import is_int

__all__ = [
    "JSON_ONLY_INSTRUCTION",
    "JudgePing",
    "OpenAIJudge",
    "clip_frame_indices",
    "encode_image_data_url",
    "sample_clip_frames",
]

log = logging.getLogger(__name__)

URL_ENVS = ("VIDMEM_JUDGE_URL", "OPENAI_BASE_URL")
MODEL_ENVS = ("VIDMEM_JUDGE_MODEL",)
KEY_ENVS = ("VIDMEM_JUDGE_API_KEY", "OPENAI_API_KEY")


def _env(names: Sequence[str]) -> str | None:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def _number(where: str, key: str, value: Any) -> float:
    """``value`` as a finite number (config files and the CLI may hand over strings)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number):
        raise UserInputError(
            f"{where}: {key} must be a number, found {value!r}",
            hint=f"give {key} as a plain number, e.g. {key}=3",
        )
    return number


class OpenAIJudge(ChatServerCalls, JudgeExchange, BackendBase):
    """A :class:`vidmem.models.protocols.Judge` over an OpenAI-compatible chat server.

    Args:
        base_url: server root including the API prefix, e.g.
            ``http://127.0.0.1:8000/v1`` (vLLM, SGLang) or ``https://api.openai.com/v1``.
            Default: ``$VIDMEM_JUDGE_URL``, then ``$OPENAI_BASE_URL``.
        model: the served model name. Default: ``$VIDMEM_JUDGE_MODEL``. ``weights=``
            is accepted as a synonym, since every backend takes it.
        api_key: default ``$VIDMEM_JUDGE_API_KEY``, then ``$OPENAI_API_KEY``, then
            ``"EMPTY"`` (what local servers expect). Never recorded.
        timeout_seconds: limit for each HTTP call, from connecting to the last byte of
            the reply.
        max_retries: retries of one call after a transport failure.
        backoff_base_seconds: first retry delay; doubles per retry, capped at
            ``backoff_max_seconds``, times a jitter factor in ``[0.5, 1]`` drawn from
            a generator seeded with ``retry_seed``.
        max_total_seconds: hard bound on the wall time of one :meth:`judge` call,
            all retries and the "JSON only" follow-up included.
        max_image_side: resize images so the longer side is at most this, in pixels
            (``None``: send as is).
        image_format: ``"jpeg"`` or ``"png"``; ``jpeg_quality`` for the former.
        temperature: sampling temperature (0: the protocols ask for it).
        max_tokens: reply length limit for every question; the default
            ``"per_question"`` takes each request's own (its prompt file's
            ``max_tokens``, e.g. 256 for Track-A's reference question, else 1024);
            ``None``: send none (the server's default).
        seed: sent to servers that support it (``None``: not sent).
        response_format_json: also send ``response_format={"type": "json_object"}``;
            off by default because not every server accepts it. Not sent with a
            request that carries an answer schema (``json_schema`` below is sent then).
        json_schema: for a request with an ``answer_model``, send its JSON schema as
            ``response_format={"type": "json_schema", ...}``: servers with guided
            decoding (vLLM, SGLang) then can only produce a valid object. A server
            that refuses it (an HTTP 400 naming the schema) is asked again without it,
            and from then on prompt-only, with one warning; the answer is validated
            against the schema either way (see :attr:`schema_refused`).
        extra_body: extra JSON fields for the request body, e.g. vLLM's
            ``{"chat_template_kwargs": {"enable_thinking": False}}``. Recorded.
        official: whether this model is the judge a protocol prescribes; the
            benchmark decides, this backend only records it.
    """

    name = "judge/openai"
    default_weights = None
    official = False
    _log = log
    _token_limit = "max_tokens"

    def __init__(
        self,
        *,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        timeout_seconds: float = 120.0,
        max_retries: int = 3,
        backoff_base_seconds: float = 1.0,
        backoff_max_seconds: float = 30.0,
        retry_seed: int = 0,
        max_total_seconds: float = 600.0,
        max_image_side: int | None = 1024,
        image_format: str = "jpeg",
        jpeg_quality: int = 90,
        temperature: float = 0.0,
        max_tokens: int | str | None = PER_QUESTION,
        seed: int | None = 0,
        response_format_json: bool = False,
        json_schema: bool = True,
        extra_body: Mapping[str, Any] | None = None,
        official: bool = False,
        weights: str | Path | None = None,
        device: str = "remote",
        dtype: str = "n/a",
        batch_size: int = 1,
        model_dir: str | Path | None = None,
        concurrency: int = 16,
    ) -> None:
        where = self.name
        if model is not None and weights is not None and str(weights) != str(model):
            raise UserInputError(
                f"{where}: got model='{model}' and weights='{weights}'",
                hint="give the served model name once, as model=",
            )
        base_url = (base_url or _env(URL_ENVS) or "").strip()
        model = (
            model or (str(weights) if weights is not None else None) or _env(MODEL_ENVS) or ""
        ).strip()
        if not base_url:
            raise UserInputError(
                f"{where}: no server URL; expected base_url= or ${URL_ENVS[0]} "
                f"(or ${URL_ENVS[1]}), found none",
                hint="start a server (e.g. `vllm serve Qwen/Qwen2.5-VL-7B-Instruct`) and "
                "export VIDMEM_JUDGE_URL=http://127.0.0.1:8000/v1",
            )
        if not base_url.startswith(("http://", "https://")):
            raise UserInputError(
                f"{where}: base_url must start with http:// or https://, found '{redact_url(base_url)}'",
                hint="e.g. http://127.0.0.1:8000/v1",
            )
        if not model:
            raise UserInputError(
                f"{where}: no model name; expected model= or ${MODEL_ENVS[0]}, found none",
                hint="export VIDMEM_JUDGE_MODEL=<the name the server serves> "
                "(`curl $VIDMEM_JUDGE_URL/models` lists them)",
            )
        fmt = IMAGE_FORMATS.get(str(image_format).lower())
        if fmt is None:
            raise UserInputError(
                f"{where}: image_format must be one of jpeg, png; found {image_format!r}"
            )
        timeout_seconds = _number(where, "timeout_seconds", timeout_seconds)
        max_retries = _number(where, "max_retries", max_retries)
        backoff_base_seconds = _number(where, "backoff_base_seconds", backoff_base_seconds)
        backoff_max_seconds = _number(where, "backoff_max_seconds", backoff_max_seconds)
        max_total_seconds = _number(where, "max_total_seconds", max_total_seconds)
        jpeg_quality = _number(where, "jpeg_quality", jpeg_quality)
        temperature = _number(where, "temperature", temperature)
        if max_image_side is not None:
            max_image_side = _number(where, "max_image_side", max_image_side)
        max_tokens = check_limit_option(where, "max_tokens", max_tokens, allow_none=True)
        checks: list[tuple[str, Any, bool, str]] = [
            ("timeout_seconds", timeout_seconds, timeout_seconds > 0, "> 0"),
            (
                "max_retries",
                max_retries,
                int(max_retries) == max_retries and max_retries >= 0,
                "an integer >= 0",
            ),
            ("backoff_base_seconds", backoff_base_seconds, backoff_base_seconds >= 0, ">= 0"),
            ("backoff_max_seconds", backoff_max_seconds, backoff_max_seconds >= 0, ">= 0"),
            ("max_total_seconds", max_total_seconds, max_total_seconds > 0, "> 0"),
            (
                "max_image_side",
                max_image_side,
                max_image_side is None
                or (max_image_side >= 1 and max_image_side == int(max_image_side)),
                "an integer >= 1 or None",
            ),
            ("jpeg_quality", jpeg_quality, 1 <= jpeg_quality <= 95, "in 1..95"),
            ("concurrency", concurrency, is_int(concurrency) and concurrency >= 1,
             "an integer >= 1"),
            ("temperature", temperature, temperature >= 0, ">= 0"),
        ]
        for key, value, good, expected in checks:
            if not good:
                raise UserInputError(f"{where}: {key} must be {expected}, found {value!r}")

        super().__init__(
            weights=None,
            device=device,
            dtype=dtype,
            batch_size=batch_size,
            model_dir=model_dir,
            model=model,
            base_url=redact_url(base_url),
            temperature=float(temperature),
            max_tokens=max_tokens,
            seed=seed,
            image_format=fmt,
            jpeg_quality=int(jpeg_quality) if fmt == "jpeg" else None,
            max_image_side=None if max_image_side is None else int(max_image_side),
            response_format_json=bool(response_format_json),
            json_schema=bool(json_schema),
            extra_body=dict(extra_body) if extra_body else None,
            timeout_seconds=float(timeout_seconds),
            max_retries=int(max_retries),
            max_total_seconds=float(max_total_seconds),
        )
        self.official = bool(official)
        # questions in flight at once in judge_many; not a setting of the answers, so it
        # stays out of info()
        self.concurrency = int(concurrency)
        self.base_url = base_url
        self.model = model
        self.timeout_seconds = float(timeout_seconds)
        self.max_retries = int(max_retries)
        self.backoff_base_seconds = float(backoff_base_seconds)
        self.backoff_max_seconds = float(backoff_max_seconds)
        self.max_total_seconds = float(max_total_seconds)
        self.max_image_side = None if max_image_side is None else int(max_image_side)
        self.image_format = fmt
        self.jpeg_quality = int(jpeg_quality)
        self.temperature = float(temperature)
        #: PER_QUESTION (each request's limit), a number for every question, or None
        self.max_tokens = max_tokens
        self.seed = seed
        self.response_format_json = bool(response_format_json)
        self.json_schema = bool(json_schema)
        #: the server refused ``json_schema``: requests go prompt-only from then on
        self.schema_refused: str | None = None
        self.extra_body = dict(extra_body) if extra_body else None

        import openai

        self._openai = openai
        # the SDK's own HTTP client defaults, plus the hook that lets a call that runs
        # past its deadline cut its connection (judge_openai_http.remember_socket)
        default_http = getattr(openai, "DefaultHttpxClient", None)
        self._client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key or _env(KEY_ENVS) or "EMPTY",
            timeout=self.timeout_seconds,
            max_retries=0,  # retries are ours: bounded, counted, logged
            http_client=(
                None
                if default_http is None
                else default_http(event_hooks={"response": [remember_socket]})
            ),
        )
        from openai.types.chat import ChatCompletion

        self._completion_type = ChatCompletion
        self._rng = random.Random(retry_seed)
        self._start_counters()

    # ------------------------------------------------------------------- request

    def _user_content(self, request: JudgeRequest) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = [{"type": "text", "text": request.prompt}]
        for k, image in enumerate(request.images):
            check_image(
                image,
                where=f"{self.name} item '{request.item_id}' image {k}",
                wording=JUDGE_WORDING,
            )
            url = encode_image_data_url(
                image,
                image_format=self.image_format,
                max_image_side=self.max_image_side,
                jpeg_quality=self.jpeg_quality,
            )
            content.append({"type": "image_url", "image_url": {"url": url}})
        return content

    def _body(self, messages: list[dict[str, Any]], answer_model: type | None = None,
              max_tokens: int | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
        }
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if self.seed is not None:
            body["seed"] = self.seed
        if answer_model is not None and self.json_schema and self.schema_refused is None:
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": answer_model.__name__,
                "schema": answer_schema(answer_model),
            }}
        elif self.response_format_json:
            body["response_format"] = {"type": "json_object"}
        if self.extra_body:
            body["extra_body"] = dict(self.extra_body)
        return body

    def check_schema(self, timeout_seconds: float = 30.0) -> tuple[bool | None, str]:
        """Ask one tiny text question with a JSON schema (for ``vidmem doctor``).

        Returns ``(True, ...)`` when the server took ``response_format`` ``json_schema``,
        ``(False, why)`` when it refused it, ``(None, why)`` when no answer came.
        Never raises for server misbehaviour.
        """
        from pydantic import BaseModel

        class SchemaProbe(BaseModel):
            ok: bool

        text = 'Reply with the JSON object {"ok": true} and nothing else.'
        body = self._body([{"role": "user", "content": [{"type": "text", "text": text}]}],
                          SchemaProbe, max_tokens=32)
        deadline = time.monotonic() + min(float(timeout_seconds), self.max_total_seconds)
        try:
            reply, _, error = self._call(body, deadline, "schema check")
        except SchemaRefused as why:
            return False, (f"refuses response_format json_schema ({why}): answers are asked "
                           "prompt-only and still validated against the schema")
        if reply is None:
            return None, f"no answer to a one-line test question: {error}"
        data, _ = read_reply(reply, ("ok",), token_limit="max_tokens", answer_model=SchemaProbe)
        if data is None:
            return True, ("accepts response_format json_schema, but the reply did not follow "
                          "it: the server may ignore the schema (no guided decoding)")
        return True, "accepts response_format json_schema (guided decoding)"

    def _schema_refusal(self, why: str) -> None:
        with self._lock:
            first, self.schema_refused = self.schema_refused is None, self.schema_refused or why
        if first:
            self._log.warning(
                "%s: %s refused response_format json_schema (%s); asking prompt-only from now "
                "on, answers are still validated against the schema",
                self.name, redact_url(self.base_url), why)

    # --------------------------------------------------------------------- judge

    def judge(self, request: JudgeRequest) -> JudgeResult:
        """Ask the model ``request.prompt`` about ``request.images``; never raises for
        server or model misbehaviour (see the module docstring for the sequence)."""
        if not isinstance(request.prompt, str) or not request.prompt.strip():
            raise UserInputError(
                f"{self.name} item '{request.item_id}': the prompt is empty",
                hint="the benchmark must build a prompt that asks for one JSON object",
            )
        user = {"role": "user", "content": self._user_content(request)}  # validates images
        self._count("requests")
        deadline = time.monotonic() + self.max_total_seconds
        limit = reply_limit(self.max_tokens, request)

        def ask(messages: list[dict[str, Any]]) -> Attempt:
            try:
                return self._call(self._body(messages, request.answer_model, limit), deadline,
                                  request.item_id)
            except SchemaRefused as refusal:
                self._schema_refusal(str(refusal))
            reply, calls, error = self._call(self._body(messages, max_tokens=limit), deadline,
                                             request.item_id)
            return reply, calls + 1, error

        return self._exchange(request, user, lambda: ask([user]), ask)
