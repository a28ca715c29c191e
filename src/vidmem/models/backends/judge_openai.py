"""``judge/openai``: a vision-language judge behind any OpenAI-compatible chat server.

Works with vLLM (``vllm serve Qwen/Qwen2.5-VL-7B-Instruct``), SGLang, the OpenAI API
and anything else that speaks ``POST {base_url}/chat/completions`` with image parts.

One :meth:`OpenAIJudge.judge` call is one logical question and may make several HTTP
calls, all inside ``max_total_seconds``:

1. The request goes out as ONE user message: the prompt text first, then each image
   as a base64 data URL (``{"type": "image_url", "image_url": {"url":
   "data:image/jpeg;base64,..."}}``), with ``temperature`` (0 by default).
2. Transport failures -- connection errors, timeouts, HTTP 408/409/429/5xx -- are
   retried up to ``max_retries`` times with exponential backoff and bounded, seeded
   jitter (``Retry-After`` is honoured when the server sends it). Other HTTP errors
   (400, 401, 404...) are not retried. If no answer comes back the result is
   ``status="error"``.
3. The answer is read with :func:`vidmem.models.json_extract.extract_json_object` and
   checked for ``request.required_keys``. If that fails, ONE follow-up call is made:
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
left and by never sleeping past it. The HTTP timeout limits each wait for the
server, so a server that keeps trickling bytes slower than the timeout could stretch
a single call; real inference servers answer in one piece.
"""

from __future__ import annotations

import base64
import io
import logging
import math
import os
import random
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from vidmem.errors import UserInputError
from vidmem.models.backends.base import BackendBase
from vidmem.models.json_extract import extract_json_object, missing_keys
from vidmem.models.protocols import JudgeRequest, JudgeResult

__all__ = [
    "JSON_ONLY_INSTRUCTION",
    "JudgePing",
    "OpenAIJudge",
    "clip_frame_indices",
    "encode_image_data_url",
    "sample_clip_frames",
]

log = logging.getLogger(__name__)

#: Sentence every "JSON only" follow-up contains (tests and logs look for it).
JSON_ONLY_INSTRUCTION = (
    "Reply with only the JSON object: no prose, no Markdown code fence, no comments."
)

URL_ENVS = ("VIDMEM_JUDGE_URL", "OPENAI_BASE_URL")
MODEL_ENVS = ("VIDMEM_JUDGE_MODEL",)
KEY_ENVS = ("VIDMEM_JUDGE_API_KEY", "OPENAI_API_KEY")

_RETRY_STATUS = frozenset({408, 409, 429})
_IMAGE_FORMATS = {"jpeg": "jpeg", "jpg": "jpeg", "png": "png"}


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


def _redact(url: str) -> str:
    """Drop any ``user:password@`` part of a URL before it is logged or recorded."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


# ---------------------------------------------------------------------------- images


def _check_image(image: Any, where: str) -> np.ndarray:
    if not isinstance(image, np.ndarray):
        raise UserInputError(
            f"{where}: expected a numpy uint8 array of shape (H, W, 3), found {type(image).__name__}",
            hint="convert the frame with numpy.asarray(frame, dtype=numpy.uint8)",
        )
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise UserInputError(
            f"{where}: expected a uint8 RGB array of shape (H, W, 3), found dtype "
            f"{image.dtype} and shape {tuple(image.shape)}",
            hint="pass RGB frames as uint8 (H, W, 3); drop alpha with frame[..., :3]",
        )
    if image.shape[0] < 1 or image.shape[1] < 1:
        raise UserInputError(f"{where}: the image is empty (shape {tuple(image.shape)})")
    return image


def encode_image_data_url(
    image: np.ndarray,
    *,
    image_format: str = "jpeg",
    max_image_side: int | None = None,
    jpeg_quality: int = 90,
) -> str:
    """Encode an RGB frame as a ``data:`` URL for a chat ``image_url`` part.

    Args:
        image: uint8 ``(H, W, 3)`` RGB.
        image_format: ``"jpeg"`` (lossy, small) or ``"png"`` (lossless).
        max_image_side: when set and the longer side is larger, the image is first
            resized (bicubic, aspect kept, each side at least 1 px) so that the longer
            side equals it, in pixels.
        jpeg_quality: JPEG quality 1-95.

    Returns:
        ``"data:image/<format>;base64,<payload>"``.

    Example:
        >>> url = encode_image_data_url(np.zeros((8, 4, 3), np.uint8), image_format="png")
        >>> url.startswith("data:image/png;base64,")
        True
    """
    from PIL import Image

    fmt = _IMAGE_FORMATS.get(str(image_format).lower())
    if fmt is None:
        raise UserInputError(
            f"judge/openai: image_format must be one of jpeg, png; found {image_format!r}"
        )
    image = _check_image(image, "judge/openai image")
    pil = Image.fromarray(np.ascontiguousarray(image), mode="RGB")
    if max_image_side is not None:
        h, w = image.shape[:2]
        longest = max(h, w)
        if longest > max_image_side:
            scale = max_image_side / longest
            size = (max(1, round(w * scale)), max(1, round(h * scale)))
            pil = pil.resize(size, Image.Resampling.BICUBIC)
    buf = io.BytesIO()
    if fmt == "jpeg":
        pil.save(buf, format="JPEG", quality=int(jpeg_quality))
    else:
        pil.save(buf, format="PNG")
    payload = base64.b64encode(buf.getvalue()).decode("ascii")
    return f"data:image/{fmt};base64,{payload}"


# ---------------------------------------------------------------------- clip frames


def clip_frame_indices(
    num_frames: int, n: int, positions: Sequence[float] | None = None
) -> list[int]:
    """Frame indices for ``n`` evenly spaced frames, or for fractional positions.

    A position ``p`` in ``[0, 1]`` maps to ``round(p * (num_frames - 1))``: 0 is the
    first frame, 1 the last. Without ``positions`` the clip is cut into ``n`` equal
    parts and the middle of each is taken, ``p_k = (k + 0.5) / n``; ``n`` is capped at
    ``num_frames`` so no frame is shown twice.

    Example:
        >>> clip_frame_indices(100, 4)
        [12, 37, 62, 87]
        >>> clip_frame_indices(101, 3, positions=[0.15, 0.5, 0.85])
        [15, 50, 85]
        >>> clip_frame_indices(3, 5)
        [0, 1, 2]
    """
    if num_frames < 1:
        raise UserInputError(f"clip frame sampling: the clip has no frames (found {num_frames})")
    if positions is None:
        if n < 1:
            raise UserInputError(f"clip frame sampling: n must be >= 1, found {n}")
        n = min(int(n), num_frames)
        positions = [(k + 0.5) / n for k in range(n)]
    out: list[int] = []
    for p in positions:
        p = float(p)
        if not (0.0 <= p <= 1.0) or math.isnan(p):
            raise UserInputError(
                f"clip frame sampling: positions must lie in [0, 1], found {p}",
                hint="give fractions of the clip length, e.g. [0.15, 0.5, 0.85]",
            )
        out.append(min(num_frames - 1, math.floor(p * (num_frames - 1) + 0.5)))
    return out


def sample_clip_frames(
    frames_or_path: np.ndarray | str | os.PathLike[str],
    n: int,
    positions: Sequence[float] | None = None,
) -> tuple[np.ndarray, ...]:
    """Pick frames of a clip to show a judge (see :func:`clip_frame_indices`).

    Args:
        frames_or_path: uint8 ``(T, H, W, 3)`` frames, or a video file; a file is
            probed and only the chosen frames are decoded (exact, by index, with
            :func:`vidmem.io.video.read_frames`).
        n: how many evenly spaced frames (ignored when ``positions`` is given).
        positions: fractions of the clip in ``[0, 1]``, e.g. ``(0.15, 0.5, 0.85)``.

    Returns:
        A tuple of ``(H, W, 3)`` uint8 frames, ready for ``JudgeRequest.images``.

    Raises:
        UserInputError: bad array, ``n`` or positions; a missing file.
        VideoError: a file that cannot be decoded.

    Example:
        >>> clip = np.arange(10, dtype=np.uint8)[:, None, None, None].repeat(3, axis=3)
        >>> [int(f[0, 0, 0]) for f in sample_clip_frames(clip, 3)]
        [2, 5, 8]
    """
    if isinstance(frames_or_path, (str, os.PathLike)):
        from vidmem.io.video import probe, read_frames

        info = probe(frames_or_path)
        idx = clip_frame_indices(info.n_frames, n, positions)
        decoded = read_frames(frames_or_path, idx)
        return tuple(decoded[k] for k in range(len(idx)))
    frames = frames_or_path
    if (
        not isinstance(frames, np.ndarray)
        or frames.dtype != np.uint8
        or frames.ndim != 4
        or frames.shape[3] != 3
    ):
        found = (
            f"dtype {frames.dtype}, shape {tuple(frames.shape)}"
            if isinstance(frames, np.ndarray)
            else type(frames).__name__
        )
        raise UserInputError(
            f"sample_clip_frames: expected uint8 frames of shape (T, H, W, 3) or a video "
            f"path, found {found}",
            hint="stack RGB frames with numpy.stack(frames).astype(numpy.uint8)",
        )
    idx = clip_frame_indices(frames.shape[0], n, positions)
    return tuple(frames[i] for i in idx)


# --------------------------------------------------------------------------- judge


@dataclass(frozen=True)
class JudgePing:
    """What :meth:`OpenAIJudge.ping` found (for ``vidmem doctor``).

    Attributes:
        ok: the server answered ``GET /models`` and lists the configured model (or
            lists no models at all).
        base_url: the server asked (credentials removed).
        model: the configured model name.
        latency_seconds: round-trip time of the check.
        models: model ids the server lists.
        message: one human-readable line: what is fine or what to fix.
    """

    ok: bool
    base_url: str
    model: str
    latency_seconds: float
    models: tuple[str, ...] = field(default_factory=tuple)
    message: str = ""


class _Transport(Exception):
    """Internal: one call failed; ``retryable`` and ``retry_after`` steer the retry loop."""

    def __init__(self, message: str, *, retryable: bool, retry_after: float | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after


@dataclass
class _Reply:
    text: str
    finish_reason: str | None


class OpenAIJudge(BackendBase):
    """A :class:`vidmem.models.protocols.Judge` over an OpenAI-compatible chat server.

    Args:
        base_url: server root including the API prefix, e.g.
            ``http://127.0.0.1:8000/v1`` (vLLM, SGLang) or ``https://api.openai.com/v1``.
            Default: ``$VIDMEM_JUDGE_URL``, then ``$OPENAI_BASE_URL``.
        model: the served model name. Default: ``$VIDMEM_JUDGE_MODEL``. ``weights=``
            is accepted as a synonym, since every backend takes it.
        api_key: default ``$VIDMEM_JUDGE_API_KEY``, then ``$OPENAI_API_KEY``, then
            ``"EMPTY"`` (what local servers expect). Never recorded.
        timeout_seconds: limit for each HTTP call.
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
        max_tokens: reply length limit (``None``: the server's default).
        seed: sent to servers that support it (``None``: not sent).
        response_format_json: also send ``response_format={"type": "json_object"}``;
            off by default because not every server accepts it.
        extra_body: extra JSON fields for the request body, e.g. vLLM's
            ``{"chat_template_kwargs": {"enable_thinking": False}}``. Recorded.
        official: whether this model is the judge a protocol prescribes; the
            benchmark decides, this backend only records it.
    """

    name = "judge/openai"
    default_weights = None
    official = False

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
        max_tokens: int | None = 1024,
        seed: int | None = 0,
        response_format_json: bool = False,
        extra_body: Mapping[str, Any] | None = None,
        official: bool = False,
        weights: str | Path | None = None,
        device: str = "remote",
        dtype: str = "n/a",
        batch_size: int = 1,
        model_dir: str | Path | None = None,
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
                f"{where}: base_url must start with http:// or https://, found '{_redact(base_url)}'",
                hint="e.g. http://127.0.0.1:8000/v1",
            )
        if not model:
            raise UserInputError(
                f"{where}: no model name; expected model= or ${MODEL_ENVS[0]}, found none",
                hint="export VIDMEM_JUDGE_MODEL=<the name the server serves> "
                "(`curl $VIDMEM_JUDGE_URL/models` lists them)",
            )
        fmt = _IMAGE_FORMATS.get(str(image_format).lower())
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
        if max_tokens is not None:
            max_tokens = _number(where, "max_tokens", max_tokens)
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
            ("temperature", temperature, temperature >= 0, ">= 0"),
            (
                "max_tokens",
                max_tokens,
                max_tokens is None or (max_tokens >= 1 and max_tokens == int(max_tokens)),
                "an integer >= 1 or None",
            ),
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
            base_url=_redact(base_url),
            temperature=float(temperature),
            max_tokens=None if max_tokens is None else int(max_tokens),
            seed=seed,
            image_format=fmt,
            jpeg_quality=int(jpeg_quality) if fmt == "jpeg" else None,
            max_image_side=None if max_image_side is None else int(max_image_side),
            response_format_json=bool(response_format_json),
            extra_body=dict(extra_body) if extra_body else None,
            timeout_seconds=float(timeout_seconds),
            max_retries=int(max_retries),
            max_total_seconds=float(max_total_seconds),
        )
        self.official = bool(official)
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
        self.max_tokens = None if max_tokens is None else int(max_tokens)
        self.seed = seed
        self.response_format_json = bool(response_format_json)
        self.extra_body = dict(extra_body) if extra_body else None

        import openai

        self._openai = openai
        self._client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key or _env(KEY_ENVS) or "EMPTY",
            timeout=self.timeout_seconds,
            max_retries=0,  # retries are ours: bounded, counted, logged
        )
        self._rng = random.Random(retry_seed)
        self._lock = threading.Lock()
        self._stats = {
            "requests": 0,
            "calls": 0,
            "retries": 0,
            "format_retries": 0,
            "ok": 0,
            "unparsable": 0,
            "errors": 0,
        }

    # ------------------------------------------------------------------ counters

    def _count(self, key: str, by: int = 1) -> None:
        with self._lock:
            self._stats[key] += by

    def stats(self) -> dict[str, int]:
        """Counters since construction (thread-safe snapshot).

        ``requests``: :meth:`judge` calls; ``calls``: HTTP calls made; ``retries``:
        calls repeated after a transport failure; ``format_retries``: "JSON only"
        follow-ups; ``ok`` / ``unparsable`` / ``errors``: results by status.
        """
        with self._lock:
            return dict(self._stats)

    # ------------------------------------------------------------------- request

    def _user_content(self, request: JudgeRequest) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = [{"type": "text", "text": request.prompt}]
        for k, image in enumerate(request.images):
            _check_image(image, f"{self.name} item '{request.item_id}' image {k}")
            url = encode_image_data_url(
                image,
                image_format=self.image_format,
                max_image_side=self.max_image_side,
                jpeg_quality=self.jpeg_quality,
            )
            content.append({"type": "image_url", "image_url": {"url": url}})
        return content

    def _body(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
        }
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.seed is not None:
            body["seed"] = self.seed
        if self.response_format_json:
            body["response_format"] = {"type": "json_object"}
        if self.extra_body:
            body["extra_body"] = dict(self.extra_body)
        return body

    def _call_once(self, body: dict[str, Any], timeout: float) -> _Reply:
        """One HTTP call. Raises :class:`_Transport` for anything that is not a reply."""
        openai = self._openai
        try:
            response = self._client.chat.completions.create(**body, timeout=timeout)
        except openai.APITimeoutError:
            raise _Transport(f"no reply within {timeout:.3g} s", retryable=True) from None
        except openai.APIConnectionError as exc:
            raise _Transport(
                f"cannot reach {_redact(self.base_url)}: {exc}", retryable=True
            ) from None
        except openai.APIStatusError as exc:
            status = exc.status_code
            retry_after = _retry_after_seconds(exc.response.headers.get("retry-after"))
            detail = str(exc.message)[:300]
            retryable = status in _RETRY_STATUS or status >= 500
            hint = ""
            if status == 404:
                hint = (
                    f" (check the model name '{self.model}' and that base_url ends with the "
                    "API prefix, usually /v1)"
                )
            elif status in (401, 403):
                hint = " (check $VIDMEM_JUDGE_API_KEY)"
            raise _Transport(
                f"HTTP {status}: {detail}{hint}", retryable=retryable, retry_after=retry_after
            ) from None
        except openai.OpenAIError as exc:
            raise _Transport(f"{type(exc).__name__}: {exc}", retryable=False) from None
        except ValueError as exc:  # a 200 whose body is not JSON (e.g. an HTML proxy page)
            raise _Transport(
                f"the server's reply is not JSON ({exc}); is base_url an OpenAI-compatible API?",
                retryable=False,
            ) from None
        try:
            choice = response.choices[0]
            text = choice.message.content
            finish = choice.finish_reason
        except (AttributeError, IndexError, TypeError):
            raise _Transport(
                f"the server's reply is not a chat completion: {str(response)[:200]!r}",
                retryable=False,
            ) from None
        return _Reply(text if isinstance(text, str) else "", finish)

    def _call(
        self, body: dict[str, Any], deadline: float, item_id: str
    ) -> tuple[_Reply | None, int, str | None]:
        """Call with transport retries. Returns ``(reply or None, calls made, error)``."""
        calls = 0
        failures = 0
        last_error = "no call made"
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return (
                    None,
                    calls,
                    f"{last_error}; gave up at max_total_seconds={self.max_total_seconds:g}",
                )
            calls += 1
            self._count("calls")
            if failures:
                self._count("retries")
            try:
                return self._call_once(body, min(self.timeout_seconds, left)), calls, None
            except _Transport as exc:
                last_error = str(exc)
                if not exc.retryable:
                    return None, calls, last_error
                retry_after = exc.retry_after
                failures += 1
            if failures > self.max_retries:
                return (
                    None,
                    calls,
                    f"{last_error} (after {calls} calls, max_retries={self.max_retries})",
                )
            delay = self._backoff(failures)
            if retry_after is not None:  # honour the server, within backoff_max_seconds
                delay = min(max(delay, retry_after), max(self.backoff_max_seconds, delay))
            left = deadline - time.monotonic()
            if delay >= left:
                return (
                    None,
                    calls,
                    (
                        f"{last_error}; gave up after {calls} calls: the next retry would pass "
                        f"max_total_seconds={self.max_total_seconds:g}"
                    ),
                )
            log.info(
                "%s item %s: %s; retry %d in %.2f s",
                self.name,
                item_id,
                last_error,
                failures,
                delay,
            )
            time.sleep(delay)

    def _backoff(self, failures: int) -> float:
        base = min(self.backoff_max_seconds, self.backoff_base_seconds * 2 ** (failures - 1))
        with self._lock:
            jitter = 0.5 + 0.5 * self._rng.random()
        return base * jitter

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
        required = tuple(request.required_keys)
        messages: list[dict[str, Any]] = [user]

        reply, calls, error = self._call(self._body(messages), deadline, request.item_id)
        attempts = calls
        if reply is None:
            return self._result(request, "error", None, "", attempts, error)
        data, problem = self._read(reply, required)
        if data is not None:
            return self._result(request, "ok", data, reply.text, attempts, None)

        # One "JSON only" follow-up, with the model's reply kept as the assistant turn.
        self._count("format_retries")
        log.info("%s item %s: %s; asking again for JSON only", self.name, request.item_id, problem)
        follow_up = f"Your previous reply could not be used: {problem}. {JSON_ONLY_INSTRUCTION}"
        if required:
            follow_up += " It must contain the keys: " + ", ".join(required) + "."
        if reply.text.strip():
            messages = [
                user,
                {"role": "assistant", "content": reply.text},
                {"role": "user", "content": follow_up},
            ]
        else:  # an empty assistant turn is refused by some servers: re-ask in one message
            parts = [*user["content"], {"type": "text", "text": follow_up}]
            messages = [{"role": "user", "content": parts}]
        second, calls, error = self._call(self._body(messages), deadline, request.item_id)
        attempts += calls
        if second is None:
            return self._result(
                request,
                "unparsable",
                None,
                reply.text,
                attempts,
                f"{problem}; the JSON-only follow-up got no answer: {error}",
            )
        data, problem2 = self._read(second, required)
        if data is not None:
            return self._result(request, "ok", data, second.text, attempts, None)
        return self._result(
            request,
            "unparsable",
            None,
            second.text,
            attempts,
            f"{problem2} (also after the JSON-only follow-up; first reply: {problem})",
        )

    @staticmethod
    def _read(reply: _Reply, required: tuple[str, ...]) -> tuple[dict[str, Any] | None, str]:
        """Parse a reply; return ``(data, "")`` or ``(None, why it is not usable)``."""
        truncated = " (the reply was cut at max_tokens)" if reply.finish_reason == "length" else ""
        if not reply.text.strip():
            return None, f"the reply was empty{truncated}"
        data = extract_json_object(reply.text)
        if data is None:
            return None, f"no JSON object found in the reply{truncated}"
        missing = missing_keys(data, required)
        if missing:
            return None, f"the JSON object lacks the required keys {missing}{truncated}"
        return data, ""

    def _result(
        self,
        request: JudgeRequest,
        status: str,
        data: dict[str, Any] | None,
        raw: str,
        attempts: int,
        error: str | None,
    ) -> JudgeResult:
        self._count({"ok": "ok", "unparsable": "unparsable", "error": "errors"}[status])
        if status != "ok":
            log.warning("%s item %s: %s: %s", self.name, request.item_id, status, error)
        return JudgeResult(
            item_id=request.item_id,
            status=status,  # type: ignore[arg-type]
            data=data,
            raw=raw,
            attempts=attempts,
            judge=self.name,
            error=error,
        )

    # ---------------------------------------------------------------------- ping

    def ping(self, timeout_seconds: float = 5.0) -> JudgePing:
        """Check quickly (``GET {base_url}/models``, no retries) that the server answers
        and serves the configured model. Never raises; read ``ok`` and ``message``."""
        openai = self._openai
        where = _redact(self.base_url)
        start = time.monotonic()
        try:
            page = self._client.models.list(
                timeout=min(float(timeout_seconds), self.timeout_seconds)
            )
            models = tuple(str(getattr(m, "id", m)) for m in page.data)
        except openai.APITimeoutError:
            return self._ping(
                False, start, (), f"{where} did not answer within {timeout_seconds:g} s"
            )
        except openai.APIConnectionError as exc:
            return self._ping(
                False, start, (), f"cannot reach {where}: {exc}; is the server running?"
            )
        except openai.APIStatusError as exc:
            extra = (
                " (does base_url end with the API prefix, usually /v1?)"
                if exc.status_code == 404
                else ""
            )
            return self._ping(
                False, start, (), f"{where}/models answered HTTP {exc.status_code}{extra}"
            )
        except Exception as exc:  # a reply that is not a model list is a failed check
            return self._ping(False, start, (), f"{where}/models gave an unexpected reply: {exc}")
        if models and self.model not in models:
            return self._ping(
                False,
                start,
                models,
                f"{where} is up but does not serve '{self.model}'; it serves: {', '.join(models)}",
            )
        return self._ping(True, start, models, f"{where} is up and serves '{self.model}'")

    def _ping(self, ok: bool, start: float, models: tuple[str, ...], message: str) -> JudgePing:
        return JudgePing(
            ok=ok,
            base_url=_redact(self.base_url),
            model=self.model,
            latency_seconds=time.monotonic() - start,
            models=models,
            message=message,
        )

    def close(self) -> None:
        """Release the HTTP connection pool."""
        self._client.close()


def _retry_after_seconds(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header given in seconds; ``None`` otherwise.

    Example:
        >>> _retry_after_seconds("2"), _retry_after_seconds(None), _retry_after_seconds("soon")
        (2.0, None, None)
    """
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 and math.isfinite(seconds) else None
