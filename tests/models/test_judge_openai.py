"""judge/openai against a real HTTP server on 127.0.0.1 that replays scripted behaviours.

The fake server speaks just enough of the OpenAI protocol (``POST /v1/chat/completions``
returning a ``chat.completion`` object, ``GET /v1/models``) for the official client.
Each POST takes the next behaviour from a script (then repeats ``default``) and is
recorded, so tests can check what the judge sent. Only loopback traffic.
"""

from __future__ import annotations

import base64
import io
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest
from PIL import Image
from pydantic import BaseModel

from vidmem.errors import UserInputError
from vidmem.models.backends.judge_openai import (
    JSON_ONLY_INSTRUCTION,
    OpenAIJudge,
    clip_frame_indices,
    encode_image_data_url,
    sample_clip_frames,
)
from vidmem.models.protocols import Judge, JudgeRequest

MODEL = "test-vlm"
FAST = {"timeout_seconds": 0.5, "backoff_base_seconds": 0.01, "backoff_max_seconds": 0.05}


class FakeServer:
    """Scripted OpenAI-compatible server. Behaviours are dicts:

    ``{"content": str | None}`` a chat completion; ``{"status": int, "headers": {...}}``
    an HTTP error; ``{"delay": s, ...}`` wait first; ``{"raw": bytes}`` a 200 with that
    body; ``{"trickle": s, "pad": n, "content": ...}`` a chat completion whose body starts
    with ``n`` spaces (valid JSON whitespace) sent one byte every ``s`` seconds, the rest
    at once. ``trickle_ends`` records when each trickle stopped (finished or cut off).
    """

    def __init__(self) -> None:
        self.script: list[dict[str, Any]] = []
        self.default: dict[str, Any] = {"status": 500}
        self.requests: list[dict[str, Any]] = []
        self.gets: list[str] = []
        self.models = [MODEL]
        self.trickle_ends: list[float] = []
        self.stop = threading.Event()
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(
                self, status: int, body: bytes, headers: dict[str, str] | None = None
            ) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout) before we answered

            def _trickle(self, body: bytes, pad: int, every: float) -> None:
                data = b" " * pad + body
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.flush()
                    for k in range(pad):
                        if owner.stop.wait(every):
                            return
                        self.wfile.write(data[k : k + 1])
                        self.wfile.flush()
                    self.wfile.write(data[pad:])
                    self.wfile.flush()
                except OSError:
                    pass  # the client cut the connection
                finally:
                    owner.trickle_ends.append(time.monotonic())

            def do_GET(self) -> None:
                owner.gets.append(self.path)
                if self.path.rstrip("/") != "/v1/models":
                    self._send(404, b'{"error": {"message": "not found"}}')
                    return
                data = [
                    {"id": m, "object": "model", "created": 0, "owned_by": "test"}
                    for m in owner.models
                ]
                self._send(200, json.dumps({"object": "list", "data": data}).encode())

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                behaviour = owner.next(self.path, body)
                if behaviour.get("delay"):
                    owner.stop.wait(behaviour["delay"])
                if self.path != "/v1/chat/completions":
                    self._send(404, b'{"error": {"message": "not found"}}')
                elif "raw" in behaviour:
                    self._send(200, behaviour["raw"])
                elif "trickle" in behaviour:
                    body_bytes = json.dumps(completion(body, behaviour)).encode()
                    self._trickle(body_bytes, behaviour["pad"], behaviour["trickle"])
                elif "status" in behaviour:
                    err = {"error": {"message": behaviour.get("message", f"scripted {behaviour['status']}"),
                                     "type": "x"}}
                    self._send(
                        behaviour["status"], json.dumps(err).encode(), behaviour.get("headers")
                    )
                else:
                    self._send(200, json.dumps(completion(body, behaviour)).encode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def next(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.requests.append({"path": path, "body": body})
            return self.script.pop(0) if self.script else self.default

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def completion(body: dict[str, Any], behaviour: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", MODEL),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": behaviour.get("content")},
                "finish_reason": behaviour.get("finish_reason", "stop"),
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch):
    """No proxies, no judge settings leaking in from the developer's shell."""
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "VIDMEM_JUDGE_URL",
        "OPENAI_BASE_URL",
        "VIDMEM_JUDGE_MODEL",
        "VIDMEM_JUDGE_API_KEY",
        "OPENAI_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def server():
    s = FakeServer()
    yield s
    s.close()


def make_judge(server: FakeServer, **kw: Any) -> OpenAIJudge:
    settings = {"base_url": server.url, "model": MODEL, **FAST, **kw}
    return OpenAIJudge(**settings)


def req(
    prompt: str = 'Answer as JSON: {"present": bool}', *, images=(), keys=("present",)
) -> JudgeRequest:
    return JudgeRequest(item_id="item-1", prompt=prompt, images=tuple(images), required_keys=keys)


def decode_data_url(url: str) -> Image.Image:
    head, _, payload = url.partition(",")
    assert head in ("data:image/jpeg;base64", "data:image/png;base64")
    return Image.open(io.BytesIO(base64.b64decode(payload)))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------ happy paths


def test_valid_json_and_what_is_sent(server):
    server.script = [{"content": '{"present": true, "count": 2}'}]
    judge = make_judge(server, max_image_side=32)
    img = np.zeros((48, 64, 3), np.uint8)
    img[:, :32] = 255
    result = judge.judge(req(images=[img, img[:20, :10]]))
    assert result.status == "ok"
    assert result.data == {"present": True, "count": 2}
    assert result.attempts == 1 and result.error is None
    assert result.judge == "judge/openai" and result.item_id == "item-1"
    assert result.raw == '{"present": true, "count": 2}'

    (sent,) = server.requests
    body = sent["body"]
    assert sent["path"] == "/v1/chat/completions"
    assert body["model"] == MODEL
    assert body["temperature"] == 0
    assert body["seed"] == 0 and body["max_tokens"] == 1024
    assert "response_format" not in body
    (message,) = body["messages"]
    assert message["role"] == "user"
    parts = message["content"]
    assert parts[0] == {"type": "text", "text": req().prompt}
    assert [p["type"] for p in parts[1:]] == ["image_url", "image_url"]
    urls = [p["image_url"]["url"] for p in parts[1:]]
    assert all(u.startswith("data:image/jpeg;base64,") for u in urls)
    first, second = (decode_data_url(u) for u in urls)
    assert first.format == "JPEG" and first.size == (32, 24)  # longer side capped at 32
    assert second.size == (10, 20)  # already small: untouched


def test_png_images_are_lossless(server):
    server.script = [{"content": '{"present": false}'}]
    judge = make_judge(server, image_format="png", max_image_side=None)
    img = np.random.default_rng(0).integers(0, 256, size=(7, 5, 3), dtype=np.uint8)
    assert judge.judge(req(images=[img])).status == "ok"
    url = server.requests[0]["body"]["messages"][0]["content"][1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    np.testing.assert_array_equal(np.asarray(decode_data_url(url).convert("RGB")), img)


@pytest.mark.parametrize(
    "content, expected",
    [
        (
            'Looking at the frames, the cat is there.\n{"present": true}\nLet me know!',
            {"present": True},
        ),
        (
            "```json\n{'present': 'abstain', 'ids': [1, 2,],}\n```",
            {"present": "abstain", "ids": [1, 2]},
        ),
        ("{'present': False, 'why': None}", {"present": False, "why": None}),
    ],
    ids=["prose", "fence-trailing-comma-single-quotes", "python-literals"],
)
def test_tolerant_parsing_needs_one_call(server, content, expected):
    server.script = [{"content": content}]
    result = make_judge(server).judge(req())
    assert result.status == "ok" and result.data == expected
    assert result.attempts == 1 and result.raw == content


# ------------------------------------------------------------- JSON-only retry


def test_broken_then_valid_on_json_only_retry(server):
    broken = "The entity is present, confidence high."
    server.script = [{"content": broken}, {"content": '{"present": true}'}]
    judge = make_judge(server)
    result = judge.judge(req())
    assert result.status == "ok" and result.data == {"present": True}
    assert result.attempts == 2
    first, second = (r["body"] for r in server.requests)
    assert second["temperature"] == 0
    msgs = second["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    assert msgs[0] == first["messages"][0]  # same question, same images
    assert msgs[1]["content"] == broken
    assert JSON_ONLY_INSTRUCTION in msgs[2]["content"]
    assert "Reply with only the JSON object" in msgs[2]["content"]
    assert "present" in msgs[2]["content"]
    assert judge.stats()["format_retries"] == 1


def test_broken_twice_is_unparsable_without_a_default(server):
    server.script = [{"content": "yes"}, {"content": '{"present": tru'}]
    judge = make_judge(server)
    result = judge.judge(req())
    assert result.status == "unparsable"
    assert result.data is None
    assert result.raw == '{"present": tru'
    assert result.attempts == 2
    assert "no JSON object" in result.error
    assert len(server.requests) == 2
    assert judge.stats()["unparsable"] == 1


def test_missing_required_key_triggers_retry(server):
    server.script = [{"content": '{"count": 3}'}, {"content": '{"count": 3, "present": true}'}]
    result = make_judge(server).judge(req(keys=("present", "count")))
    assert result.status == "ok" and result.data == {"count": 3, "present": True}
    assert result.attempts == 2
    follow_up = server.requests[1]["body"]["messages"][2]["content"]
    assert "['present']" in follow_up and JSON_ONLY_INSTRUCTION in follow_up


@pytest.mark.parametrize(
    "bad",
    [
        '{"present": true, "score": NaN}',
        '{"present": true, "score": -Infinity}',
        '{"present": true, "score": 1e999}',
        '{"present": true, "scores": [1, Infinity]}',
    ],
    ids=["nan", "minus-infinity", "overflow", "nested-infinity"],
)
def test_non_finite_numbers_are_unparsable(server, bad):
    server.script = [{"content": bad}, {"content": bad}]
    judge = make_judge(server)
    result = judge.judge(req())
    assert result.status == "unparsable" and result.data is None
    assert result.raw == bad and result.attempts == 2
    assert "non-finite number" in result.error
    follow_up = server.requests[1]["body"]["messages"][2]["content"]
    assert "non-finite number" in follow_up and JSON_ONLY_INSTRUCTION in follow_up
    assert judge.stats()["unparsable"] == 1 and judge.stats()["ok"] == 0


def test_non_finite_then_finite_on_retry_is_ok(server):
    server.script = [
        {"content": '{"present": true, "score": NaN}'},
        {"content": '{"present": true, "score": 0.25}'},
    ]
    result = make_judge(server).judge(req())
    assert result.status == "ok" and result.data == {"present": True, "score": 0.25}
    assert result.attempts == 2


def typed_req(**key_types: Any) -> JudgeRequest:
    return JudgeRequest(
        item_id="item-1",
        prompt='Answer as JSON: {"present": bool, "count": int}',
        required_keys=("present",),
        key_types=key_types,
    )


@pytest.mark.parametrize(
    "bad, why",
    [
        ('{"present": "true", "count": 2}', "'present' is a string, expected boolean"),
        ('{"present": 1, "count": 2}', "'present' is an integer, expected boolean"),
        ('{"present": true, "count": 2.5}', "'count' is a number, expected integer"),
        ('{"present": true, "count": true}', "'count' is a boolean, expected integer"),
        ('{"present": null}', "'present' is null, expected boolean"),
        ('{"present": true, "count": [2]}', "'count' is an array, expected integer"),
    ],
)
def test_wrong_value_types_are_unparsable(server, bad, why):
    server.script = [{"content": bad}, {"content": bad}]
    judge = make_judge(server)
    result = judge.judge(typed_req(present="boolean", count="integer"))
    assert result.status == "unparsable" and result.data is None  # never coerced
    assert result.raw == bad and result.attempts == 2
    assert why in result.error
    assert why in server.requests[1]["body"]["messages"][2]["content"]


def test_right_value_types_are_ok(server):
    server.script = [
        {"content": '{"present": "yes"}'},
        {"content": '{"present": "abstain", "count": 3, "score": 1}'},
    ]
    judge = make_judge(server)
    result = judge.judge(
        typed_req(present=("boolean", "string"), count="integer", score="number", why="string")
    )
    # an absent optional key is fine; "number" takes integers too
    assert result.status == "ok" and result.attempts == 1
    assert result.data == {"present": "yes"}
    result = judge.judge(
        typed_req(present=("boolean", "string"), count="integer", score="number", why="string")
    )
    assert result.status == "ok" and result.data["count"] == 3


def test_unknown_value_type_is_a_user_error():
    with pytest.raises(UserInputError, match="key_types.*'present'.*'bool'"):
        typed_req(present="bool")
    with pytest.raises(UserInputError, match="key_types"):
        typed_req(present=())
    with pytest.raises(UserInputError, match="key_types.*'present'.*bool"):
        typed_req(present=bool)
    stored = typed_req(present="boolean", why=["string", "null"]).key_types
    assert stored == {"present": ("boolean",), "why": ("string", "null")}


def test_missing_key_twice_is_unparsable(server):
    server.script = [{"content": '{"count": 3}'}, {"content": '{"count": 4}'}]
    result = make_judge(server).judge(req())
    assert result.status == "unparsable" and result.data is None
    assert "lacks the required keys ['present']" in result.error
    assert result.raw == '{"count": 4}'


def test_null_content_and_truncation_are_unparsable(server):
    server.script = [{"content": None}, {"content": '{"present": tr', "finish_reason": "length"}]
    result = make_judge(server).judge(req())
    assert result.status == "unparsable" and result.attempts == 2
    assert "max_tokens" in result.error
    # nothing to replay: the instruction is appended to the one user message
    (message,) = server.requests[1]["body"]["messages"]
    assert message["role"] == "user"
    assert message["content"][:-1] == server.requests[0]["body"]["messages"][0]["content"]
    assert JSON_ONLY_INSTRUCTION in message["content"][-1]["text"]


# ---------------------------------------------------------- transport failures


def test_http_500_then_success(server):
    server.script = [{"status": 500}, {"content": '{"present": true}'}]
    judge = make_judge(server)
    result = judge.judge(req())
    assert result.status == "ok" and result.attempts == 2
    assert judge.stats() == {
        "requests": 1,
        "calls": 2,
        "retries": 1,
        "format_retries": 0,
        "ok": 1,
        "unparsable": 0,
        "errors": 0,
    }


def test_always_500_is_error_with_bounded_attempts(server):
    server.default = {"status": 500}
    judge = make_judge(server, max_retries=3)
    result = judge.judge(req())
    assert result.status == "error" and result.data is None and result.raw == ""
    assert result.attempts == 4 == len(server.requests)
    assert "HTTP 500" in result.error and "max_retries=3" in result.error
    assert judge.stats()["errors"] == 1 and judge.stats()["retries"] == 3


def test_429_with_retry_after_is_retried(server):
    server.script = [
        {"status": 429, "headers": {"Retry-After": "0"}},
        {"content": '{"present": 1}'},
    ]
    result = make_judge(server).judge(req())
    assert result.status == "ok" and result.attempts == 2


def test_client_errors_are_not_retried(server):
    server.default = {"status": 400}
    result = make_judge(server, max_retries=5).judge(req())
    assert result.status == "error" and result.attempts == 1
    assert "HTTP 400" in result.error


def test_non_json_200_is_an_error_not_an_exception(server):
    server.default = {"raw": b"<html>gateway</html>"}
    result = make_judge(server, max_retries=1).judge(req())
    assert result.status == "error" and result.attempts == 1
    assert "not JSON" in result.error


def test_slow_reply_times_out_then_retry_succeeds(server):
    server.script = [
        {"delay": 2.0, "content": '{"present": false}'},
        {"content": '{"present": true}'},
    ]
    judge = make_judge(server, timeout_seconds=0.3)
    t0 = time.monotonic()
    result = judge.judge(req())
    elapsed = time.monotonic() - t0
    assert result.status == "ok" and result.data == {"present": True}
    assert result.attempts == 2
    assert 0.25 <= elapsed < 1.5


def test_always_slow_gives_error_within_max_total_seconds(server):
    server.default = {"delay": 5.0, "content": '{"present": true}'}
    judge = make_judge(server, timeout_seconds=0.3, max_retries=50, max_total_seconds=1.0)
    t0 = time.monotonic()
    result = judge.judge(req())
    elapsed = time.monotonic() - t0
    assert result.status == "error"
    assert "max_total_seconds=1" in result.error
    assert elapsed < 1.0 + 0.3  # the hard bound, plus scheduling slack
    assert 2 <= result.attempts <= 5


def _judge_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("vidmem-judge-call")]


def test_trickling_reply_is_cut_at_max_total_seconds(server):
    # One byte every 0.4 s: each read waits well under timeout_seconds, so per-read
    # timeouts never fire; only a deadline over the whole call stops it (25 bytes of
    # padding = 10 s of trickle before the reply would be complete).
    server.default = {"trickle": 0.4, "pad": 25, "content": '{"present": true}'}
    judge = make_judge(server, timeout_seconds=30.0, max_retries=0, max_total_seconds=2.0)
    t0 = time.monotonic()
    result = judge.judge(req())
    elapsed = time.monotonic() - t0
    assert result.status == "error" and result.data is None
    assert "max_total_seconds=2" in result.error
    assert result.attempts == 1
    assert 1.9 <= elapsed < 2.0 + 1.5
    # the connection was cut, not left trickling in the background
    t1 = time.monotonic()
    while (not server.trickle_ends or _judge_threads()) and time.monotonic() - t1 < 2.0:
        time.sleep(0.02)
    assert server.trickle_ends and server.trickle_ends[0] - t0 < 2.0 + 1.5
    assert _judge_threads() == []


def test_trickling_reply_each_call_bounded_by_timeout_seconds(server):
    # With retries allowed, each call is cut at timeout_seconds and retried, and the
    # whole judge() call still ends at max_total_seconds.
    server.default = {"trickle": 0.4, "pad": 25, "content": '{"present": true}'}
    judge = make_judge(server, timeout_seconds=0.9, max_retries=5, max_total_seconds=2.0)
    t0 = time.monotonic()
    result = judge.judge(req())
    elapsed = time.monotonic() - t0
    assert result.status == "error" and "max_total_seconds=2" in result.error
    assert 2 <= result.attempts <= 4
    assert elapsed < 2.0 + 1.5


def test_fast_trickle_within_the_deadline_is_a_reply(server):
    server.script = [{"trickle": 0.02, "pad": 10, "content": '{"present": true}'}]
    result = make_judge(server, timeout_seconds=5.0, max_total_seconds=5.0).judge(req())
    assert result.status == "ok" and result.data == {"present": True}
    assert result.attempts == 1


def test_unreachable_server_is_an_error(server):
    judge = OpenAIJudge(
        base_url=f"http://127.0.0.1:{free_port()}/v1", model=MODEL, max_retries=2, **FAST
    )
    result = judge.judge(req())
    assert result.status == "error" and result.attempts == 3
    assert "cannot reach" in result.error


# ------------------------------------------------------------------ settings


def test_optional_request_fields(server):
    server.script = [{"content": '{"present": true}'}]
    judge = make_judge(
        server,
        response_format_json=True,
        seed=None,
        max_tokens=None,
        temperature=0.0,
        extra_body={"chat_template_kwargs": {"enable_thinking": False}},
    )
    judge.judge(req())
    body = server.requests[0]["body"]
    assert body["response_format"] == {"type": "json_object"}
    assert "seed" not in body and "max_tokens" not in body
    assert body["chat_template_kwargs"] == {"enable_thinking": False}


def test_each_question_gets_its_own_token_limit_unless_one_is_set(server):
    """Issue 24 item 9: the prompt file's max_tokens (Track-A 256) reaches the server; a
    question without one gets 1024; an explicit max_tokens option applies to all."""
    server.script = [{"content": '{"present": true}'}] * 4
    track_a = JudgeRequest("a", "q", required_keys=("present",), max_tokens=256)
    judge = make_judge(server)
    assert judge.info().settings["max_tokens"] == "per_question"
    judge.judge(track_a)
    judge.judge(req())
    explicit = make_judge(server, max_tokens=2048)
    explicit.judge(track_a)
    explicit.judge(req())
    assert [r["body"]["max_tokens"] for r in server.requests] == [256, 1024, 2048, 2048]


def test_the_follow_up_keeps_the_questions_token_limit(server):
    server.script = [{"content": "no json"}, {"content": '{"present": true}'}]
    make_judge(server).judge(JudgeRequest("a", "q", required_keys=("present",), max_tokens=64))
    assert [r["body"]["max_tokens"] for r in server.requests] == [64, 64]


def test_info_records_model_but_never_the_key(server):
    judge = make_judge(server, api_key="sk-secret", official=True)
    info = judge.info()
    assert info.name == "judge/openai" and info.official is True
    assert info.settings["model"] == MODEL
    assert info.settings["base_url"] == server.url
    assert info.settings["temperature"] == 0.0
    assert "sk-secret" not in json.dumps(info.to_dict())
    assert make_judge(server).info().official is False
    assert isinstance(judge, Judge)


def test_numbers_given_as_strings_are_accepted():
    judge = OpenAIJudge(base_url="http://x/v1", model=MODEL, timeout_seconds="2.5", max_retries="1")
    assert judge.timeout_seconds == 2.5 and judge.max_retries == 1


def test_environment_defaults(server, monkeypatch):
    monkeypatch.setenv("VIDMEM_JUDGE_URL", server.url)
    monkeypatch.setenv("VIDMEM_JUDGE_MODEL", MODEL)
    judge = OpenAIJudge(**FAST)
    assert judge.base_url == server.url and judge.model == MODEL
    server.script = [{"content": '{"present": true}'}]
    assert judge.judge(req()).status == "ok"


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"model": MODEL}, "no server URL.*VIDMEM_JUDGE_URL"),
        ({"base_url": "http://127.0.0.1:1/v1"}, "no model name.*VIDMEM_JUDGE_MODEL"),
        ({"base_url": "127.0.0.1:8000", "model": MODEL}, "must start with http"),
        ({"base_url": "http://x/v1", "model": MODEL, "image_format": "gif"}, "image_format"),
        ({"base_url": "http://x/v1", "model": MODEL, "timeout_seconds": 0}, "timeout_seconds"),
        ({"base_url": "http://x/v1", "model": MODEL, "max_retries": -1}, "max_retries"),
        ({"base_url": "http://x/v1", "model": "a", "weights": "b"}, "model='a' and weights='b'"),
        (
            {"base_url": "http://x/v1", "model": MODEL, "timeout_seconds": "soon"},
            "must be a number",
        ),
        ({"base_url": "http://x/v1", "model": MODEL, "max_tokens": 0.5}, "max_tokens"),
    ],
)
def test_misconfiguration_raises_with_a_fix(kwargs, match):
    with pytest.raises(UserInputError, match=match) as err:
        OpenAIJudge(**kwargs)
    if "no " in match:
        assert "fix:" in str(err.value)


def test_bad_input_raises(server):
    judge = make_judge(server)
    with pytest.raises(UserInputError, match="image 0.*uint8"):
        judge.judge(req(images=[np.zeros((4, 4, 3), np.float32)]))
    with pytest.raises(UserInputError, match="prompt is empty"):
        judge.judge(req(prompt="  "))
    assert server.requests == [] and judge.stats()["requests"] == 0


# ----------------------------------------------------------------------- ping


def test_ping(server):
    judge = make_judge(server)
    ping = judge.ping()
    assert ping.ok and ping.models == (MODEL,) and ping.latency_seconds < 2
    assert server.gets == ["/v1/models"]
    server.models = ["other-model"]
    ping = judge.ping()
    assert not ping.ok and "does not serve 'test-vlm'" in ping.message


def test_ping_dead_server_and_wrong_prefix(server):
    dead = OpenAIJudge(base_url=f"http://127.0.0.1:{free_port()}/v1", model=MODEL, **FAST)
    ping = dead.ping(timeout_seconds=0.5)
    assert not ping.ok and "cannot reach" in ping.message
    no_prefix = OpenAIJudge(base_url=server.url[: -len("/v1")], model=MODEL, **FAST)
    ping = no_prefix.ping()
    assert not ping.ok and "/v1" in ping.message


# ---------------------------------------------------------------- clip frames


def test_sample_clip_frames_from_array():
    clip = np.arange(101, dtype=np.uint8)[:, None, None, None].repeat(3, axis=3)
    picked = sample_clip_frames(clip, 3, positions=(0.15, 0.5, 0.85))
    assert [int(f[0, 0, 0]) for f in picked] == [15, 50, 85]
    assert all(f.shape == (1, 1, 3) for f in picked)
    assert len(sample_clip_frames(clip[:2], 8)) == 2
    assert clip_frame_indices(1000, 6, [0.90, 0.93, 0.95, 0.97, 0.99, 0.995]) == [
        899,
        929,
        949,
        969,
        989,
        994,
    ]
    with pytest.raises(UserInputError, match=r"\[0, 1\]"):
        sample_clip_frames(clip, 1, positions=[1.5])
    with pytest.raises(UserInputError, match=r"\(T, H, W, 3\)"):
        sample_clip_frames(clip[0], 1)


def test_sample_clip_frames_from_path(tmp_path):
    video = pytest.importorskip("vidmem.io.video")
    frames = np.zeros((12, 16, 16, 3), np.uint8)
    for k in range(12):
        frames[k] = k * 20
    path = tmp_path / "clip.mp4"
    video.write_video(path, frames, fps=12)
    picked = sample_clip_frames(path, 3)
    assert len(picked) == 3 and picked[0].shape == (16, 16, 3)
    means = [float(f.mean()) for f in picked]
    expected = [float(frames[i].mean()) for i in clip_frame_indices(12, 3)]
    np.testing.assert_allclose(means, expected, atol=6)


def test_encode_rejects_bad_format():
    with pytest.raises(UserInputError, match="image_format"):
        encode_image_data_url(np.zeros((2, 2, 3), np.uint8), image_format="bmp")


# --------------------------------------------------------- schema-constrained answers


class PresentAnswer(BaseModel):
    present: bool
    count: int


def schema_req(item_id: str = "clip-1") -> JudgeRequest:
    return JudgeRequest(item_id, 'Answer as JSON: {"present": bool, "count": int}',
                        required_keys=("present", "count"), answer_model=PresentAnswer)


def test_the_answer_schema_goes_out_as_response_format(server):
    server.script = [{"content": '{"present": true, "count": 2}'}]
    r = make_judge(server).judge(schema_req())
    assert r.status == "ok" and r.data == {"present": True, "count": 2}
    fmt = server.requests[0]["body"]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "PresentAnswer"
    assert fmt["json_schema"]["schema"] == PresentAnswer.model_json_schema()


def test_no_schema_is_sent_when_switched_off_or_not_asked(server):
    server.default = {"content": '{"present": true, "count": 2}'}
    make_judge(server, json_schema=False).judge(schema_req())
    make_judge(server).judge(req())
    assert all("response_format" not in r["body"] for r in server.requests)


@pytest.mark.parametrize("bad", ['{"present": "true", "count": 2}', '{"present": true, "count": 2.5}',
                                 '{"present": true, "count": "2"}'])
def test_answers_failing_the_schema_are_never_coerced(server, bad):
    server.default = {"content": bad}
    r = make_judge(server).judge(schema_req())
    assert r.status == "unparsable" and r.data is None
    assert "does not match the answer schema" in r.error and len(server.requests) == 2


def test_a_server_refusing_the_schema_is_asked_prompt_only_and_says_so_once(server, caplog):
    refusal = {"status": 400, "message": "response_format type json_schema is not supported"}
    server.script = [refusal, {"content": '{"present": false, "count": 0}'}]
    server.default = {"content": '{"present": true, "count": 1}'}
    judge = make_judge(server)
    with caplog.at_level("WARNING"):
        first = judge.judge(schema_req("clip-1"))
        second = judge.judge(schema_req("clip-2"))
    assert first.status == "ok" and first.data == {"present": False, "count": 0}
    assert first.attempts == 2 and second.status == "ok"
    sent = [r["body"].get("response_format") for r in server.requests]
    assert sent[0]["type"] == "json_schema" and sent[1:] == [None, None]
    assert "json_schema is not supported" in judge.schema_refused
    assert sum("refused response_format json_schema" in m for m in caplog.messages) == 1


def test_another_bad_request_is_an_error_not_a_fallback(server):
    server.default = {"status": 400, "message": "messages: too many images"}
    r = make_judge(server).judge(schema_req())
    assert r.status == "error" and "too many images" in r.error
    assert len(server.requests) == 1 and make_judge(server).schema_refused is None


def test_check_schema_tells_accepting_ignoring_and_refusing_servers_apart(server):
    server.script = [{"content": '{"ok": true}'}, {"content": "Sure! ok"},
                     {"status": 400, "message": "guided decoding (json_schema) is not enabled"}]
    judge = make_judge(server)
    assert judge.check_schema() == (True, "accepts response_format json_schema (guided decoding)")
    ok, why = judge.check_schema()
    assert ok is True and "may ignore the schema" in why
    ok, why = judge.check_schema()
    assert ok is False and "guided decoding" in why
    server.default = {"status": 500}
    ok, why = make_judge(server, max_retries=0).check_schema()
    assert ok is None and "HTTP 500" in why
    assert all(r["body"]["response_format"]["type"] == "json_schema" for r in server.requests)


def test_doctor_reports_the_schema_check(server):
    from vidmem.runners.doctor import _judge_status

    server.default = {"content": '{"ok": true}'}
    status = _judge_status(server.url, MODEL)
    assert status["answers"] is True and status["json_schema"] is True
