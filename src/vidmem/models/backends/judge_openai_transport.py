"""The transport pieces of ``judge/openai``'s HTTP calls (see :mod:`.judge_openai_http`).

What a failed call is (transport vs HTTP status, a refused answer schema), whether it is
retried, and how one call is bounded as a whole: a worker thread waited for at most the
call's timeout, the connection shut down when that passes (:func:`remember_socket`
records the socket from the HTTP client's response hook).
"""

from __future__ import annotations

import contextlib
import contextvars
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = ["JudgePing", "SchemaRefused", "redact_url", "remember_socket"]

_RETRY_STATUS = frozenset({408, 409, 429})


def redact_url(url: str) -> str:
    """Drop any ``user:password@`` part of a URL before it is logged or recorded."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


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


class SchemaRefused(Exception):
    """The server refused ``response_format`` ``json_schema`` (no guided decoding there);
    the caller asks again without it. ``message`` is the server's reason."""


#: words of a 400 that refuses the answer schema rather than the request
_SCHEMA_WORDS = ("response_format", "json_schema", "guided", "grammar", "structured", "schema")


def _refuses_schema(body: dict[str, Any], status: int, detail: str) -> bool:
    """Whether an HTTP error answers a request with a JSON schema by refusing the schema.

    Example:
        >>> body = {"response_format": {"type": "json_schema"}}
        >>> _refuses_schema(body, 400, "response_format json_schema is not supported")
        True
        >>> _refuses_schema(body, 400, "messages: image too large"), _refuses_schema({}, 400, "schema")
        (False, False)
    """
    fmt = body.get("response_format") or {}
    return (fmt.get("type") == "json_schema" and status in (400, 422, 501)
            and any(w in detail.lower() for w in _SCHEMA_WORDS))


class _Transport(Exception):
    """Internal: one call failed; ``retryable`` and ``retry_after`` steer the retries.

    ``status`` is the HTTP status when the server answered with an error, else ``None``.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        retry_after: float | None = None,
        status: int | None = None,
    ):
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, _Transport) and exc.retryable


class _OutOfTime(Exception):
    """Internal: the time left before ``max_total_seconds`` was gone before a call began."""


class _CallWatch:
    """The sockets one bounded call reads from, so that its caller can cut them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._cut = False
        self._finished = False

    def add(self, sock: socket.socket) -> None:
        with self._lock:
            if not self._cut:
                self._sockets.append(sock)
                return
        _shutdown(sock)  # the caller already gave up

    def finish(self) -> None:
        with self._lock:
            self._finished = True
            self._sockets.clear()

    def cut(self) -> bool:
        """Shut the call's sockets down; ``False`` if the call had already finished."""
        with self._lock:
            if self._finished:
                return False
            self._cut = True
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            _shutdown(sock)
        return True


_current = threading.local()  # .watch: the _CallWatch of the call this thread runs


def _shutdown(sock: socket.socket) -> None:
    # socket.socket's own shutdown, also for an ssl.SSLSocket (whose override drops its
    # SSL object under the reader's feet); it wakes a reader blocked on the socket.
    with contextlib.suppress(OSError, ValueError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


def remember_socket(response: Any) -> None:
    """HTTP-client ``response`` event hook: note the socket the reply comes on.

    Called once the headers are in, before the body is read; the bounded call
    (see the module docstring) running in this thread can then cut that socket
    at its deadline. Does nothing outside a bounded call, or when the transport does not
    expose its socket (the ``network_stream`` response extension).
    """
    watch = getattr(_current, "watch", None)
    if watch is None:
        return
    stream = getattr(response, "extensions", {}).get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if isinstance(sock, socket.socket):
        watch.add(sock)


def _bounded(fn: Callable[[], Any], seconds: float, what: str) -> Any:
    """Run ``fn()`` and return what it returns (or raise what it raises), waiting at most
    ``seconds``; past that, cut its connection and raise a retryable :class:`_Transport`.
    """
    watch = _CallWatch()
    outcome: list[tuple[bool, Any]] = []
    done = threading.Event()
    context = contextvars.copy_context()

    def work() -> None:
        _current.watch = watch
        try:
            outcome.append((True, context.run(fn)))
        except BaseException as exc:  # handed to the caller
            outcome.append((False, exc))
        finally:
            watch.finish()
            _current.watch = None
            done.set()

    threading.Thread(target=work, name="vidmem-judge-call", daemon=True).start()
    if not done.wait(max(seconds, 0.0)) and watch.cut():
        raise _Transport(f"no complete {what} within {seconds:.3g} s", retryable=True)
    done.wait()  # finished just now: the outcome is there
    ok, value = outcome[0]
    if not ok:
        raise value
    return value
