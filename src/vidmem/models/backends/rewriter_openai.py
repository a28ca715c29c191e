"""``rewriter/openai``: a text LLM behind any OpenAI-compatible chat server rewrites an instruction.

The ``rewriter`` role (:class:`vidmem.models.protocols.Rewriter`) turns a
:class:`~vidmem.models.protocols.RewriteRequest` into a new instruction. This backend
sends the request's ``prompt`` -- rendered by the caller from its prompt file (the
M3-Agent's ``agents/prompts/m3_rewrite.toml``), as judges get theirs -- as ONE user
message, at temperature 0 by default, to ``POST {base_url}/chat/completions`` (vLLM,
SGLang, the OpenAI API...). Rules:

* **Retries**: the HTTP calls are those of ``judge/openai``
  (:class:`~vidmem.models.backends.judge_openai_http.ChatServerCalls`): connection
  errors, timeouts and HTTP 408/409/429/5xx are retried up to ``max_retries`` times with
  seeded exponential backoff (``Retry-After`` honoured); other HTTP errors are not; no
  call and no sleep passes ``max_total_seconds``.
* **The answer** is plain text: :func:`clean_instruction` drops reasoning blocks
  (``<think>...</think>``), a Markdown code fence, a leading label line or prefix
  (``Here is the rewritten instruction:``, ``Instruction:``), list and emphasis marks
  and surrounding quotes, and joins the rest into one line. An empty result is
  ``status="error"``; nothing is ever filled in.
* **Failures** of the server or model never raise: they are ``RewriteResult.status ==
  "error"`` with the reason, and counted in :meth:`OpenAIRewriter.stats`.
  Misconfiguration (no URL or model, bad settings, a request without a prompt) raises
  :class:`vidmem.errors.UserInputError`.

Options are those of ``judge/openai`` that apply to text: ``base_url`` (default
``$VIDMEM_REWRITER_URL``, then ``$OPENAI_BASE_URL``), ``model`` (``$VIDMEM_REWRITER_MODEL``;
``weights=`` is a synonym), ``api_key`` (``$VIDMEM_REWRITER_API_KEY``, then
``$OPENAI_API_KEY``, then ``"EMPTY"``; never recorded), ``timeout_seconds``,
``max_retries``, ``backoff_base_seconds``, ``backoff_max_seconds``, ``retry_seed``,
``max_total_seconds``, ``temperature``, ``max_tokens``, ``seed``, ``extra_body``.
"""

from __future__ import annotations

import logging
import random
import re
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vidmem.errors import UserInputError
from vidmem.models.backends.base import BackendBase
from vidmem.models.backends.judge_openai import _env, _number
from vidmem.models.backends.judge_openai_http import ChatServerCalls, redact_url, remember_socket
from vidmem.models.protocols import RewriteRequest, RewriteResult

__all__ = ["OpenAIRewriter", "clean_instruction"]

log = logging.getLogger(__name__)

URL_ENVS = ("VIDMEM_REWRITER_URL", "OPENAI_BASE_URL")
MODEL_ENVS = ("VIDMEM_REWRITER_MODEL",)
KEY_ENVS = ("VIDMEM_REWRITER_API_KEY", "OPENAI_API_KEY")
STAT_KEYS = ("requests", "calls", "retries", "ok", "errors")

_QUOTES = ('"', "'", "`", "\u201c", "\u201d", "\u2018", "\u2019", "\u00ab", "\u00bb")
_LABEL = re.compile(r"^(?:here is |here's )?(?:the )?(?:new |revised |rewritten |final )?"
                    r"(?:instruction|prompt|rewrite|answer)\s*[:\-]\s*", re.IGNORECASE)


def _unquote(text: str) -> str:
    text = text.strip()
    while len(text) >= 2 and text[0] in _QUOTES and text[-1] in _QUOTES:
        text = text[1:-1].strip()
    return text


def clean_instruction(raw: str) -> str:
    """The instruction in a model's reply, without quotes, labels or Markdown.

    Example:
        >>> clean_instruction('Here is the rewritten instruction:\\n\\n"The cat opens the box."')
        'The cat opens the box.'
        >>> clean_instruction("```\\nThe cat opens the box\\nand holds it open.\\n```")
        'The cat opens the box and holds it open.'
        >>> clean_instruction("<think>no_action, so...</think>**Instruction:** *The cat opens it.*")
        'The cat opens it.'
        >>> clean_instruction("  ")
        ''
    """
    text = re.sub(r"<think>.*?</think>", " ", raw or "", flags=re.DOTALL | re.IGNORECASE)
    fence = re.search(r"```[\w-]*\n?(.*?)```", text, flags=re.DOTALL)
    if fence and fence.group(1).strip():
        text = fence.group(1)
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if len(lines) > 1 and lines[0].endswith(":"):  # "Here is the rewrite:" on its own line
        lines = lines[1:]
    cleaned: list[str] = []
    for line in lines:
        line = re.sub(r"^(?:[#>]+\s*|[-*+]\s+|\d+[.)]\s+)", "", line)
        line = re.sub(r"(\*\*|__)(.*?)\1", r"\2", line)
        line = _LABEL.sub("", line.strip())
        line = re.sub(r"^[*_]+(.*?)[*_]+$", r"\1", line.strip())
        cleaned.append(_unquote(line))
    return _unquote(" ".join(" ".join(cleaned).split()))


class OpenAIRewriter(ChatServerCalls, BackendBase):
    """A :class:`vidmem.models.protocols.Rewriter` over an OpenAI-compatible chat server
    (options and rules in the module docstring)."""

    name = "rewriter/openai"
    default_weights = None
    official = False
    _log = log

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
        temperature: float = 0.0,
        max_tokens: int | None = 512,
        seed: int | None = 0,
        extra_body: Mapping[str, Any] | None = None,
        weights: str | Path | None = None,
        device: str = "remote",
        dtype: str = "n/a",
        batch_size: int = 1,
        model_dir: str | Path | None = None,
    ) -> None:
        where = self.name
        if model is not None and weights is not None and str(weights) != str(model):
            raise UserInputError(f"{where}: got model='{model}' and weights='{weights}'",
                                 hint="give the served model name once, as model=")
        base_url = (base_url or _env(URL_ENVS) or "").strip()
        model = (model or (str(weights) if weights is not None else None)
                 or _env(MODEL_ENVS) or "").strip()
        if not base_url.startswith(("http://", "https://")):
            found = f"'{redact_url(base_url)}'" if base_url else "none"
            raise UserInputError(
                f"{where}: expected a server URL starting with http:// or https:// (base_url= "
                f"or ${URL_ENVS[0]}), found {found}",
                hint="start a server (e.g. `vllm serve Qwen/Qwen2.5-7B-Instruct`) and export "
                     "VIDMEM_REWRITER_URL=http://127.0.0.1:8000/v1")
        if not model:
            raise UserInputError(
                f"{where}: no model name; expected model= or ${MODEL_ENVS[0]}, found none",
                hint="export VIDMEM_REWRITER_MODEL=<the name the server serves>")
        numbers = {k: _number(where, k, v) for k, v in (
            ("timeout_seconds", timeout_seconds), ("max_retries", max_retries),
            ("backoff_base_seconds", backoff_base_seconds),
            ("backoff_max_seconds", backoff_max_seconds),
            ("max_total_seconds", max_total_seconds), ("temperature", temperature))}
        tokens = None if max_tokens is None else _number(where, "max_tokens", max_tokens)
        self._check_settings([
            ("timeout_seconds", timeout_seconds, numbers["timeout_seconds"] > 0, "> 0"),
            ("max_retries", max_retries, numbers["max_retries"] >= 0
             and numbers["max_retries"] == int(numbers["max_retries"]), "an integer >= 0"),
            ("backoff_base_seconds", backoff_base_seconds, numbers["backoff_base_seconds"] >= 0,
             ">= 0"),
            ("backoff_max_seconds", backoff_max_seconds, numbers["backoff_max_seconds"] >= 0,
             ">= 0"),
            ("max_total_seconds", max_total_seconds, numbers["max_total_seconds"] > 0, "> 0"),
            ("temperature", temperature, numbers["temperature"] >= 0, ">= 0"),
            ("max_tokens", max_tokens, tokens is None or (tokens >= 1 and tokens == int(tokens)),
             "an integer >= 1 or None"),
        ])
        super().__init__(weights=None, device=device, dtype=dtype, batch_size=batch_size,
                         model_dir=model_dir, model=model, base_url=redact_url(base_url),
                         temperature=numbers["temperature"],
                         max_tokens=None if tokens is None else int(tokens), seed=seed,
                         extra_body=dict(extra_body) if extra_body else None,
                         timeout_seconds=numbers["timeout_seconds"],
                         max_retries=int(numbers["max_retries"]),
                         max_total_seconds=numbers["max_total_seconds"])
        self.base_url, self.model = base_url, model
        self.timeout_seconds = numbers["timeout_seconds"]
        self.max_retries = int(numbers["max_retries"])
        self.backoff_base_seconds = numbers["backoff_base_seconds"]
        self.backoff_max_seconds = numbers["backoff_max_seconds"]
        self.max_total_seconds = numbers["max_total_seconds"]
        self.temperature = numbers["temperature"]
        self.max_tokens = None if tokens is None else int(tokens)
        self.seed = seed
        self.extra_body = dict(extra_body) if extra_body else None

        import openai
        from openai.types.chat import ChatCompletion

        self._openai = openai
        default_http = getattr(openai, "DefaultHttpxClient", None)
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or _env(KEY_ENVS) or "EMPTY",
            timeout=self.timeout_seconds,
            max_retries=0,  # retries are ours: bounded, counted, logged
            http_client=(None if default_http is None
                         else default_http(event_hooks={"response": [remember_socket]})))
        self._completion_type = ChatCompletion
        self._rng = random.Random(retry_seed)
        self._lock = threading.Lock()
        self._stats = dict.fromkeys(STAT_KEYS, 0)

    def _count(self, key: str, by: int = 1) -> None:
        with self._lock:
            self._stats[key] += by

    def stats(self) -> dict[str, int]:
        """Counters since construction: ``requests`` (rewrite calls), ``calls`` (HTTP
        calls), ``retries``, ``ok``, ``errors``."""
        with self._lock:
            return dict(self._stats)

    def _body(self, prompt: str) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "temperature": self.temperature,
                                "messages": [{"role": "user", "content": prompt}]}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.seed is not None:
            body["seed"] = self.seed
        if self.extra_body:
            body["extra_body"] = dict(self.extra_body)
        return body

    def rewrite(self, request: RewriteRequest) -> RewriteResult:
        """Send ``request.prompt``; the cleaned reply is the new instruction."""
        if not isinstance(request.prompt, str) or not request.prompt.strip():
            raise UserInputError(
                f"{self.name}: the rewrite request has no prompt",
                hint="render it from the prompt file (vidmem.agents.m3_calls.rewrite_request "
                     "does; M3Agent does it for you)")
        self._count("requests")
        item = f"rewrite attempt {request.attempt}"
        reply, calls, error = self._call(self._body(request.prompt),
                                         time.monotonic() + self.max_total_seconds, item)
        if reply is None:
            self._count("errors")
            self._log.warning("%s %s: no answer: %s", self.name, item, error)
            return RewriteResult("error", None, error, None)
        text = clean_instruction(reply.text)
        if not text:
            cut = " (cut at max_tokens)" if reply.finish_reason == "length" else ""
            self._count("errors")
            return RewriteResult("error", None, f"the reply held no instruction{cut}", reply.text)
        self._count("ok")
        return RewriteResult("ok", text, None, reply.text)

    def close(self) -> None:
        """Release the HTTP connection pool."""
        self._client.close()
