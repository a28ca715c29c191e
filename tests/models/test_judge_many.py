"""judge_many: many questions in flight, answers in order, one bad question fails alone.

A local OpenAI-compatible echo server on 127.0.0.1 answers each chat request with the
question it was asked, after a delay the question names, and counts how many requests it
holds at once.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from vidmem.errors import UserInputError
from vidmem.models.backends.judge_openai import OpenAIJudge
from vidmem.models.protocols import JudgeRequest

MODEL = "echo-vlm"


class EchoServer:
    def __init__(self) -> None:
        self.in_flight = 0
        self.most_in_flight = 0
        self.posts = 0
        self.stop = threading.Event()
        lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                text = body["messages"][-1]["content"][-1]["text"]
                with lock:
                    owner.posts += 1
                    owner.in_flight += 1
                    owner.most_in_flight = max(owner.most_in_flight, owner.in_flight)
                try:
                    owner.stop.wait(float(re.search(r"wait=([0-9.]+)", text).group(1)))
                    reply = {"id": "x", "object": "chat.completion", "created": 0, "model": MODEL,
                             "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                 "role": "assistant", "content": json.dumps({"echo": text})}}]}
                    data = json.dumps(reply).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up on a hanging question
                finally:
                    with lock:
                        owner.in_flight -= 1

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02},
                         daemon=True).start()

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    s = EchoServer()
    yield s
    s.close()


def _judge(server: EchoServer, **kw: Any) -> OpenAIJudge:
    return OpenAIJudge(base_url=server.url, model=MODEL, backoff_base_seconds=0.01,
                       backoff_max_seconds=0.05, **kw)


def _ask(k: int, wait: float) -> JudgeRequest:
    return JudgeRequest(item_id=f"q{k}", prompt=f"question {k} wait={wait} answer as JSON",
                        required_keys=("echo",))


def test_answers_come_back_in_order_with_at_most_concurrency_in_flight(server):
    judge = _judge(server, concurrency=8)
    # later questions answer sooner, so completion order is not request order
    requests = [_ask(k, 0.05 + 0.1 * ((23 - k) % 4)) for k in range(24)]
    start = time.monotonic()
    results = judge.judge_many(requests)
    took = time.monotonic() - start
    assert [r.item_id for r in results] == [f"q{k}" for k in range(24)]
    assert all(r.status == "ok" and r.data["echo"].startswith(f"question {k} ")
               for k, r in enumerate(results))
    assert 2 <= server.most_in_flight <= 8 and server.posts == 24
    assert took < sum(0.05 + 0.1 * ((23 - k) % 4) for k in range(24)) / 2  # not one at a time


def test_one_hanging_question_does_not_hold_up_the_others(server):
    judge = _judge(server, concurrency=4, timeout_seconds=0.5, max_retries=0, max_total_seconds=1.0)
    requests = [_ask(k, 30.0 if k == 2 else 0.05) for k in range(8)]
    start = time.monotonic()
    results = judge.judge_many(requests)
    assert time.monotonic() - start < 4.0  # bounded by the hanging call's own deadline
    assert [r.status for r in results] == ["ok", "ok", "error", "ok", "ok", "ok", "ok", "ok"]


def test_a_question_refused_as_bad_input_fails_alone(server):
    judge = _judge(server, concurrency=3)
    requests = [_ask(0, 0.01), JudgeRequest(item_id="blank", prompt="  "), _ask(2, 0.01)]
    results = judge.judge_many(requests)
    assert [r.status for r in results] == ["ok", "error", "ok"]
    assert results[1].item_id == "blank" and "prompt is empty" in results[1].error


def test_concurrency_is_checked():
    with pytest.raises(UserInputError, match="concurrency must be an integer >= 1"):
        OpenAIJudge(base_url="http://127.0.0.1:9/v1", model=MODEL, concurrency=0)
