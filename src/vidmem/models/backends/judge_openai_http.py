"""The HTTP half of ``judge/openai``: one chat call, retries with backoff, the ``/models`` ping.

:class:`ChatServerCalls` is mixed into :class:`vidmem.models.backends.judge_openai.OpenAIJudge`,
which holds the settings and the ``openai`` client these methods use. Transport failures
-- connection errors, timeouts, HTTP 408/409/429/5xx -- are retried through
`tenacity <https://tenacity.readthedocs.io>`_ up to ``max_retries`` times with
exponential backoff and bounded, seeded jitter (``Retry-After`` is honoured when the
server sends it); other HTTP errors (400, 401, 404...) are not retried. No call and no
sleep passes ``max_total_seconds``.

Each HTTP call is bounded as a whole, not only per socket operation. The HTTP client's
timeouts limit each wait for the server (connect, one read...), so a server that
trickles its reply a byte at a time -- each byte sooner than the timeout -- would keep
a call alive for as long as it likes. So the call runs in a short-lived worker thread
("vidmem-judge-call") and the caller waits for it at most the call's timeout
(``timeout_seconds``, capped at the time left before ``max_total_seconds``). When
that passes, the call counts as timed out, and the connection it was reading from is
shut down so that the worker ends too: :func:`remember_socket`, an HTTP-client
response hook, records the socket once the reply's headers are in. (A worker still
waiting for the headers has nothing to cut yet; it ends at the client's own read
timeout, which is the same bound, at the latest.)
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, stop_any

from vidmem.models.backends.judge_common import Attempt, JudgeReply
from vidmem.models.backends.judge_openai_transport import (
    _RETRY_STATUS,
    JudgePing,
    SchemaRefused,
    _bounded,
    _OutOfTime,
    _refuses_schema,
    _retryable,
    _Transport,
    redact_url,
    remember_socket,
)

__all__ = ["ChatServerCalls", "JudgePing", "SchemaRefused", "redact_url", "remember_socket"]

class ChatServerCalls:
    """Mixin: calls to an OpenAI-compatible chat server (see the module docstring)."""

    name: str
    base_url: str
    model: str
    timeout_seconds: float
    max_retries: int
    backoff_base_seconds: float
    backoff_max_seconds: float
    max_total_seconds: float
    _openai: Any
    _client: Any
    _completion_type: Any  # openai.types.chat.ChatCompletion
    _rng: random.Random
    _lock: threading.Lock
    _log: logging.Logger
    _count: Callable[..., None]  # JudgeExchange's counters

    def _call_once(self, body: dict[str, Any], timeout: float) -> JudgeReply:
        """One HTTP call, over within ``timeout`` seconds however the server sends.
        Raises :class:`_Transport` for anything that is not a reply."""
        return _bounded(lambda: self._request(body, timeout), timeout, "reply")

    def _request(self, body: dict[str, Any], timeout: float) -> JudgeReply:
        """One HTTP call, bounded only by the client's per-operation ``timeout``."""
        openai = self._openai
        # The body is plain JSON already. chat.completions.create would first walk it
        # through the SDK's TypedDict transform, which cost about 2.6 ms per question (a
        # third of the client's time at 100 ms server latency); the same client's
        # low-level post sends it as is, with the same headers, errors and timeout.
        payload = {k: v for k, v in body.items() if k != "extra_body"}
        payload.update(body.get("extra_body") or {})
        try:
            response = self._client.post("/chat/completions", cast_to=self._completion_type,
                                         body=payload, options={"timeout": timeout})
        except openai.APITimeoutError:
            raise _Transport(f"no reply within {timeout:.3g} s", retryable=True) from None
        except openai.APIConnectionError as exc:
            raise _Transport(
                f"cannot reach {redact_url(self.base_url)}: {exc}", retryable=True
            ) from None
        except openai.APIStatusError as exc:
            status = exc.status_code
            retry_after = _retry_after_seconds(exc.response.headers.get("retry-after"))
            detail = str(exc.message)[:300]
            if _refuses_schema(body, status, detail):
                raise SchemaRefused(f"HTTP {status}: {detail}") from None
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
                f"HTTP {status}: {detail}{hint}",
                retryable=retryable,
                retry_after=retry_after,
                status=status,
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
        return JudgeReply(text if isinstance(text, str) else "", finish)

    def _call(self, body: dict[str, Any], deadline: float, item_id: str) -> Attempt:
        """Call with transport retries. Returns ``(reply or None, calls made, error)``.

        Raises:
            SchemaRefused: the server refused the body's ``response_format`` schema.
        """
        calls = 0
        last_error = "no call made"
        # Which deadline rule ended the retries; tenacity only re-raises the last error,
        # and the message should say why it stopped ("" = max_retries ran out).
        gave_up = ""

        def one_call() -> JudgeReply:
            nonlocal calls, last_error
            left = deadline - time.monotonic()
            if left <= 0:  # a follow-up call, or a sleep that overran, used it up
                raise _OutOfTime
            calls += 1
            self._count("calls")
            if calls > 1:
                self._count("retries")
            try:
                return self._call_once(body, min(self.timeout_seconds, left))
            except _Transport as exc:
                last_error = str(exc)
                raise

        def out_of_time(state: RetryCallState) -> bool:
            nonlocal gave_up
            if deadline - time.monotonic() > 0:
                return False
            gave_up = f"; gave up at max_total_seconds={self.max_total_seconds:g}"
            return True

        def sleep_passes_deadline(state: RetryCallState) -> bool:
            # tenacity (>= 8.3) runs ``wait`` before ``stop``, so the delay is known here:
            # giving up now beats sleeping into a deadline that leaves no time to call.
            nonlocal gave_up
            if state.upcoming_sleep < deadline - time.monotonic():
                return False
            gave_up = (
                f"; gave up after {calls} calls: the next retry would pass "
                f"max_total_seconds={self.max_total_seconds:g}"
            )
            return True

        def wait(state: RetryCallState) -> float:
            # tenacity asks for the wait even when a stop rule is about to end the
            # retries; drawing jitter then would shift the seeded sequence for every
            # later question, so no draw when the retries are over anyway.
            if state.attempt_number > self.max_retries or deadline - time.monotonic() <= 0:
                return 0.0
            exc = state.outcome.exception() if state.outcome is not None else None
            retry_after = exc.retry_after if isinstance(exc, _Transport) else None
            return self._backoff(state.attempt_number, retry_after)

        def log_retry(state: RetryCallState) -> None:
            self._log.info(
                "%s item %s: %s; retry %d in %.2f s",
                self.name,
                item_id,
                last_error,
                state.attempt_number,
                state.upcoming_sleep,
            )

        retrying = Retrying(
            retry=retry_if_exception(_retryable),
            # order matters: the first rule that fires names the reason in the error
            stop=stop_any(
                out_of_time, stop_after_attempt(self.max_retries + 1), sleep_passes_deadline
            ),
            wait=wait,
            before_sleep=log_retry,
            sleep=time.sleep,
            reraise=True,
        )
        try:
            return retrying(one_call), calls, None
        except _OutOfTime:
            return (
                None,
                calls,
                f"{last_error}; gave up at max_total_seconds={self.max_total_seconds:g}",
            )
        except _Transport as exc:
            if not exc.retryable:
                return None, calls, last_error
            if gave_up:
                return None, calls, last_error + gave_up
            return (
                None,
                calls,
                f"{last_error} (after {calls} calls, max_retries={self.max_retries})",
            )

    def _backoff(self, failures: int, retry_after: float | None = None) -> float:
        base = min(self.backoff_max_seconds, self.backoff_base_seconds * 2 ** (failures - 1))
        with self._lock:
            jitter = 0.5 + 0.5 * self._rng.random()
        delay = base * jitter
        if retry_after is not None:  # honour the server, within backoff_max_seconds
            delay = min(max(delay, retry_after), max(self.backoff_max_seconds, delay))
        return delay

    def ping(self, timeout_seconds: float = 5.0) -> JudgePing:
        """Check quickly (``GET {base_url}/models``, no retries) that the server answers
        and serves the configured model. Never raises; read ``ok`` and ``message``."""
        openai = self._openai
        where = redact_url(self.base_url)
        start = time.monotonic()
        wait = min(float(timeout_seconds), self.timeout_seconds)
        try:
            page = _bounded(lambda: self._client.models.list(timeout=wait), wait, "answer")
            models = tuple(str(getattr(m, "id", m)) for m in page.data)
        except (openai.APITimeoutError, _Transport):
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
            base_url=redact_url(self.base_url),
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
