"""judge_many throughput against a local OpenAI-compatible server (127.0.0.1 only).

The server answers every chat request after a fixed latency. With latency L and
concurrency C the ceiling is C / L requests per second; the target is 0.8 of it
(512 requests, C = 32, L = 100 ms: at least 256 req/s). With L = 0 the time per request
is the client's own overhead (target: under 5 ms).

    python benchmarks/bench_judge.py [--requests 512] [--concurrency 32] [--latency 0.1]
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from vidmem.models.backends.judge_openai import OpenAIJudge
from vidmem.models.protocols import JudgeRequest

MODEL = "bench-vlm"


def serve(latency: float) -> ThreadingHTTPServer:
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
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def measure(n: int, concurrency: int, latency: float) -> dict[str, float]:
    httpd = serve(latency)
    try:
        judge = OpenAIJudge(base_url=f"http://127.0.0.1:{httpd.server_address[1]}/v1",
                            model=MODEL, concurrency=concurrency)
        requests = [JudgeRequest(item_id=f"q{k}", prompt=f"Is it there? ({k}) Answer as JSON.",
                                 required_keys=("present",)) for k in range(n)]
        judge.judge_many(requests[: min(n, concurrency)])  # connections and threads warm up
        start = time.perf_counter()
        results = judge.judge_many(requests)
        seconds = time.perf_counter() - start
    finally:
        httpd.shutdown()
        httpd.server_close()
    ok = sum(r.status == "ok" for r in results)
    return {"requests": n, "ok": ok, "concurrency": concurrency, "latency_s": latency,
            "seconds": round(seconds, 3), "per_second": round(n / seconds, 1),
            "ms_per_request": round(1000 * seconds / n, 2)}


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


if __name__ == "__main__":
    main()
