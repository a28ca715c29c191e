"""judge_many throughput against a local OpenAI-compatible server (127.0.0.1 only).

The server answers every chat request after a fixed latency. With latency L and
concurrency C the ceiling is C / L requests per second; the target is 0.8 of it
(512 requests, C = 32, L = 100 ms: at least 256 req/s). With L = 0 the time per request
is the client's own overhead (target: under 5 ms). The server runs in its own process,
as a real one does, so that it does not compete with the client for the GIL.

Then the answer cache: how many cached questions per second ``CachedJudge`` answers
(key hashing included), for text-only questions and for questions with four 512 x 512
frames, whose pixels are hashed.

    python benchmarks/bench_judge.py [--requests 512] [--concurrency 32] [--latency 0.1]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

from vidmem.models.backends.judge_openai import OpenAIJudge
from vidmem.models.protocols import BackendInfo, JudgeRequest, JudgeResult
from vidmem.runners.judge_cache import AnswerCache, CachedJudge

MODEL = "bench-vlm"


def serve(latency: float, port_out: Any) -> None:
    reply = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": MODEL,
                        "choices": [{"index": 0, "finish_reason": "stop", "message": {
                            "role": "assistant", "content": '{"present": true}'}}]}).encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as vLLM and SGLang serve
        disable_nagle_algorithm = True  # else headers and body wait on delayed ACKs (40 ms)

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            if latency:
                time.sleep(latency)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    httpd.request_queue_size = 128
    port_out.put(httpd.server_address[1])
    httpd.serve_forever()


def measure(n: int, concurrency: int, latency: float) -> dict[str, float]:
    ports: Any = multiprocessing.Queue()
    server = multiprocessing.Process(target=serve, args=(latency, ports), daemon=True)
    server.start()
    try:
        judge = OpenAIJudge(base_url=f"http://127.0.0.1:{ports.get(timeout=30)}/v1",
                            model=MODEL, concurrency=concurrency)
        requests = [JudgeRequest(item_id=f"q{k}", prompt=f"Is it there? ({k}) Answer as JSON.",
                                 required_keys=("present",)) for k in range(n)]
        judge.judge_many(requests[: min(n, concurrency)])  # connections and threads warm up
        start = time.perf_counter()
        results = judge.judge_many(requests)
        seconds = time.perf_counter() - start
    finally:
        server.terminate()
        server.join()
    ok = sum(r.status == "ok" for r in results)
    return {"requests": n, "ok": ok, "concurrency": concurrency, "latency_s": latency,
            "seconds": round(seconds, 3), "per_second": round(n / seconds, 1),
            "ms_per_request": round(1000 * seconds / n, 2)}


class _Stored:
    """A judge whose answers are all in the cache already (never asked in the timing)."""

    name = "judge/bench"

    def info(self) -> BackendInfo:
        return BackendInfo(self.name, settings={"temperature": 0.0})

    def judge_many(self, requests: Any, *, concurrency: Any = None) -> list[JudgeResult]:
        return [JudgeResult(r.item_id, "ok", {"present": True}, "{}", 1, self.name) for r in requests]


def cache_rate(n: int, frames: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    images = [tuple(rng.integers(0, 256, (512, 512, 3), dtype=np.uint8) for _ in range(frames))
              for _ in range(min(n, 64))]
    requests = [JudgeRequest(f"q{k}", f"Is entity {k} there? Answer as JSON.",
                             images=images[k % len(images)] if frames else ()) for k in range(n)]
    with tempfile.TemporaryDirectory() as tmp:
        judge = CachedJudge(_Stored(), AnswerCache(Path(tmp) / "answers.sqlite"))
        judge.judge_many(requests)  # fill
        start = time.perf_counter()
        results = judge.judge_many(requests)
        seconds = time.perf_counter() - start
    assert all(r.cached for r in results)
    return {"cached_lookups": n, "frames_per_question": frames, "seconds": round(seconds, 3),
            "lookups_per_second": round(n / seconds, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=512)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--latency", type=float, default=0.1)
    args = ap.parse_args()
    loaded = measure(args.requests, args.concurrency, args.latency)
    ceiling = args.concurrency / args.latency if args.latency else float("inf")
    print(json.dumps({**loaded, "target_per_second": round(0.8 * ceiling, 1)}))
    bare = measure(args.requests, 1, 0.0)
    print(json.dumps({**bare, "note": "latency 0, one at a time: the client's own overhead"}))
    print(json.dumps(cache_rate(20000, 0)))
    print(json.dumps(cache_rate(2000, 4)))


if __name__ == "__main__":
    main()
