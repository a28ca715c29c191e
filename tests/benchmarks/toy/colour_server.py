"""A scripted OpenAI-compatible judge on 127.0.0.1 that reports an image's mean colour.

It counts every chat request it receives (``posts``), can refuse ``response_format``
``json_schema`` the way a server without guided decoding does (``refuse_schema``), and
answers prose instead of JSON to prompts naming a frame in ``garble_frames``.
"""

from __future__ import annotations

import base64
import io
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
from PIL import Image

MODEL = "colour-vlm"


class ColourServer:
    def __init__(self, *, refuse_schema: bool = False) -> None:
        self.posts = 0
        self.bodies: list[dict[str, Any]] = []
        self.refuse_schema = refuse_schema
        self.garble_frames: set[int] = set()
        self.offset = 0  # added to every channel: a "second judge" that sees colours differently
        lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._send(200, {"object": "list", "data": [
                    {"id": MODEL, "object": "model", "created": 0, "owned_by": "test"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with lock:
                    owner.posts += 1
                    owner.bodies.append(body)
                fmt = body.get("response_format") or {}
                if owner.refuse_schema and fmt.get("type") == "json_schema":
                    self._send(400, {"error": {"message": "response_format json_schema is not "
                                               "supported by this server", "type": "BadRequest"}})
                    return
                parts = body["messages"][0]["content"]
                text = parts[0]["text"]
                url = next(p["image_url"]["url"] for p in parts if p["type"] == "image_url")
                pixels = np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))))
                rgb = [int(round(v)) + owner.offset for v in pixels.reshape(-1, 3).mean(axis=0)]
                frame = int(re.search(r"frame (\d+)", text).group(1))
                content = (f"It looks like {rgb}." if frame in owner.garble_frames
                           else json.dumps({"rgb": [min(255, max(0, v)) for v in rgb]}))
                self._send(200, {"id": "x", "object": "chat.completion", "created": 0,
                                 "model": MODEL, "choices": [{
                                     "index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": content}}]})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02},
                         daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
