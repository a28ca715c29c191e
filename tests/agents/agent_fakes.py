"""Fakes for the M3-Agent tests: a scripted OpenAI-compatible chat server on 127.0.0.1,
a deterministic generator whose clips encode a score in their pixels, and scorers.

The **generator** (:class:`PixelGenerator`) writes a 4-frame 32x32 clip whose last frame
is one grey level, ``round(200 * quality)`` (quality in tenths, which survive the encoding), where ``quality`` is looked up in a table
by the first key that the prompt contains (``default`` otherwise). :func:`pixel_score`
reads it back from the last frame's pixels, so a test knows each try's score from the
prompt alone. Every request is recorded.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

from vidmem.generators.requests import GenerationRequest, GenerationResult

MODEL = "test-llm"

#: the table the CLI tests' generator uses (module:Class takes no arguments there)
CLI_QUALITY = {"holds the lid open": 0.8, "default": 0.3}


class PixelGenerator:
    """Deterministic generator: the clip's grey level encodes the prompt's quality."""

    name = "test/pixel"

    def __init__(self, quality: Mapping[str, float] | None = None, fail_on: str | None = None):
        self.quality = dict(quality or CLI_QUALITY)
        self.fail_on = fail_on
        self.requests: list[GenerationRequest] = []

    def info(self) -> dict[str, Any]:
        return {"name": self.name, "quality": self.quality}

    def level(self, prompt: str) -> float:
        for key, value in self.quality.items():
            if key != "default" and key in prompt:
                return value
        return self.quality.get("default", 0.0)

    def generate(self, request: GenerationRequest) -> GenerationResult:
        from vidmem.io.video import write_video

        self.requests.append(request)
        if self.fail_on is not None and self.fail_on in request.prompt:
            return GenerationResult(request.request_id, "error", None, 0.0, error="scripted failure")
        grey = int(round(200 * self.level(request.prompt)))
        frames = [np.full((32, 32, 3), 40, np.uint8)] * 3 + [np.full((32, 32, 3), grey, np.uint8)]
        Path(request.out_path).parent.mkdir(parents=True, exist_ok=True)
        write_video(request.out_path, frames, 4)
        return GenerationResult(request.request_id, "ok", request.out_path, 0.01)


def pixel_score(clip: Path) -> float:
    """The quality a :class:`PixelGenerator` clip encodes (its last frame's grey / 200)."""
    from vidmem.io.video import probe, read_frames

    info = probe(clip)
    return round(float(read_frames(clip, [info.n_frames - 1])[0].mean()) / 200, 1)


def diagnosis(mode: str, evidence: str = "the red box is closed") -> dict[str, Any]:
    return {"content": json.dumps({"failure_mode": mode, "evidence": evidence})}


class ChatServer:
    """Scripted ``POST /v1/chat/completions``: each call takes the next behaviour from
    :attr:`script` (then repeats :attr:`default`) and is recorded in :attr:`requests`.

    Behaviours: ``{"content": str}`` a completion; ``{"status": int}`` an HTTP error.
    """

    def __init__(self) -> None:
        self.script: list[dict[str, Any]] = []
        self.default: dict[str, Any] = {"status": 500}
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with owner._lock:
                    owner.requests.append(body)
                    behaviour = owner.script.pop(0) if owner.script else owner.default
                if "status" in behaviour:
                    self._send(behaviour["status"], {"error": {"message": "scripted", "type": "x"}})
                    return
                self._send(200, {
                    "id": "chatcmpl-test", "object": "chat.completion", "created": 0,
                    "model": body.get("model", MODEL),
                    "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                                 "message": {"role": "assistant",
                                             "content": behaviour["content"]}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever,
                                        kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()

    def texts(self) -> list[str]:
        """The text of each request's user message (the prompt), in call order."""
        out = []
        for body in self.requests:
            content = body["messages"][-1]["content"]
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content if p.get("type") == "text")
            out.append(content)
        return out

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


FAST = {"model": MODEL, "timeout_seconds": 2.0, "backoff_base_seconds": 0.01,
        "backoff_max_seconds": 0.02}
