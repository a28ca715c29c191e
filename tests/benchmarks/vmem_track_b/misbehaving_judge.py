"""An OpenAI-compatible chat server on 127.0.0.1 that misbehaves on purpose, counting posts.

``mode`` decides every answer to ``POST /v1/chat/completions``:

========================  ===========================================================
``healthy``               a usable answer, a pure function of the question (below)
``500``                   HTTP 500 every time
``429``                   HTTP 429 with ``Retry-After: 0`` every time
``hang``                  never answers within the client's timeout
``trickle``               a chat completion sent one byte every 0.5 s
``html``                  a 200 whose body is an HTML error page
``broken_json``           prose around a JSON object that does not close
``nan``                   ``{"present": NaN}``-style: a non-finite number in the JSON
``foreign_ids``           a well-formed answer naming only ids outside the roster
``empty_items``           ``{"items": []}``
``one_in_three``          every third post (1st, 4th, 7th ...) answers HTTP 500,
                          the others as ``healthy``
========================  ===========================================================

The healthy answer reads the roster labels from the answer schema the client sends
(``response_format.json_schema``: the entity-id ``enum``) and calls a label present
when the SHA-256 of (label, prompt, image bytes) is even: deterministic, so a clean
run and a resumed one can be compared byte for byte, and varied, so they are not
trivially equal.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "misbehaving-vlm"


def _labels(body: dict[str, Any]) -> list[str]:
    """The entity-id enum of the request's answer schema (Track-B), else ``[]``."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("enum"), list) and all(isinstance(x, str) for x in node["enum"]):
                found.extend(x for x in node["enum"] if x not in found)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk((body.get("response_format") or {}).get("json_schema"))
    return found


def healthy_answer(body: dict[str, Any]) -> str:
    """The usable answer to a Track-B segment question (see the module docstring)."""
    seen = json.dumps(body.get("messages", []), sort_keys=True).encode()
    items = []
    for label in _labels(body):
        digest = hashlib.sha256(label.encode() + b"|" + seen).digest()
        items.append({"entity_id": label, "present": digest[0] % 2 == 0})
    return json.dumps({"items": items, "extra": []})


def _completion(content: str) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion", "created": 0, "model": MODEL,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


class MisbehavingJudge:
    """The server; ``posts`` counts chat posts since the last :meth:`set_mode`."""

    def __init__(self, mode: str = "healthy") -> None:
        self.mode = mode
        self.posts = 0
        self._lock = threading.Lock()
        self.stop = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: bytes, ctype: str = "application/json",
                      headers: dict[str, str] | None = None) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(body)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass  # the client gave up first

            def do_GET(self) -> None:
                data = [{"id": MODEL, "object": "model", "created": 0, "owned_by": "test"}]
                self._send(200, json.dumps({"object": "list", "data": data}).encode())

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                with owner._lock:
                    owner.posts += 1
                    n = owner.posts
                owner.answer(self, body, n)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever,
                                        kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()

    def set_mode(self, mode: str) -> None:
        with self._lock:
            self.mode, self.posts = mode, 0

    def answer(self, h: Any, body: dict[str, Any], n: int) -> None:
        mode = self.mode
        ok = lambda content: h._send(200, json.dumps(_completion(content)).encode())  # noqa: E731
        if mode == "healthy" or (mode == "one_in_three" and n % 3 != 1):
            ok(healthy_answer(body))
        elif mode in ("500", "one_in_three"):
            h._send(500, b'{"error": {"message": "internal server error", "type": "x"}}')
        elif mode == "429":
            h._send(429, b'{"error": {"message": "rate limited", "type": "x"}}',
                    headers={"Retry-After": "0"})
        elif mode == "hang":
            self.stop.wait(5.0)
            ok(healthy_answer(body))
        elif mode == "trickle":
            data = json.dumps(_completion(healthy_answer(body))).encode()
            try:
                h.send_response(200)
                h.send_header("Content-Type", "application/json")
                h.send_header("Content-Length", str(len(data)))
                h.end_headers()
                for k in range(len(data)):
                    if self.stop.wait(0.5):
                        return
                    h.wfile.write(data[k:k + 1])
                    h.wfile.flush()
            except OSError:
                pass
        elif mode == "html":
            h._send(200, b"<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html")
        elif mode == "broken_json":
            ok('Sure! Here is what I see: {"items": [{"entity_id": "E1", "present": true')
        elif mode == "nan":
            labels = _labels(body)
            ok('{"items": [' + ", ".join(f'{{"entity_id": "{x}", "present": NaN}}' for x in labels) + "]}")
        elif mode == "foreign_ids":
            ok(json.dumps({"items": [{"entity_id": "ZZ9", "present": True}], "extra": []}))
        elif mode == "empty_items":
            ok('{"items": [], "extra": []}')
        else:
            raise ValueError(f"unknown mode {mode!r}")

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()
