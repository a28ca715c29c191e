"""judge_many throughput against a local OpenAI-compatible server (127.0.0.1 only).

The server answers every chat request after a fixed latency. With latency L and
concurrency C the ceiling is C / L requests per second; the target is 0.8 of it
(512 requests, C = 32, L = 100 ms: at least 256 req/s). With L = 0 the time per request
is the client's own overhead (target: under 5 ms). The server runs in its own process,
as a real one does, so that it does not compete with the client for the GIL.

Then the answer cache: how many cached questions per second ``CachedJudge`` answers
(key hashing included), for text-only questions and for questions with four 512 x 512
frames, whose pixels are hashed.

Last, cached re-scoring as a benchmark does it, per question: the request is built from
its prompt file (the Jinja template rendered with the answer model's JSON schema, the
model narrowed to the question's roster) and answered from the cache (its key holds that
schema too). Track-A's ``reference`` and Track-B's ``segment`` prompts, with rosters
drawn from a pool of 8 (as within a film, where rosters repeat), and no images, so that
the number is the per-question work beside the pixel hashing measured above.

    python benchmarks/bench_judge.py [--requests 512] [--concurrency 32] [--latency 0.1]
        [--cache-questions 20000] [--frame-questions 2000] [--rescore-questions 2000]
    python benchmarks/bench_judge.py --tiny   (a few of each: a smoke run)
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
        return [JudgeResult(r.item_id, "ok", _ANSWERS.get(r.contract, {"present": True}), "{}", 1,
                            self.name) for r in requests]


#: a valid answer per prompt contract (the cache re-checks stored answers against it)
_ANSWERS = {"vmem_track_a/reference@1": {"entity_ids": []}, "vmem_track_b/segment@2": {"items": []}}


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


def _track_a_request(k: int, roster: list[dict[str, str]]) -> JudgeRequest:
    from vidmem.benchmarks.prompts import load_prompt
    from vidmem.benchmarks.vmem_track_a.answers import reference_answer_model

    prompt = _PROMPTS.setdefault("a", load_prompt("vidmem.benchmarks.vmem_track_a", "reference"))
    return prompt.request(f"film/segment-{k}/t{k}.000", answer_model=reference_answer_model(
        [e["entity_id"] for e in roster]), roster=roster)


def _track_b_request(k: int, roster: list[dict[str, str]]) -> JudgeRequest:
    from vidmem.benchmarks.vmem_track_b.answers import segment_answer_model
    from vidmem.benchmarks.vmem_track_b.question import segment_prompt

    lines = [{"label": e["entity_id"], "name": e["name"], "kind": e["kind"],
              "appearance": e["description"], "state_cue": None, "count_cue": None,
              "features": None} for e in roster]
    # segment_prompt() per question, as Track-B's segment_request calls it
    return segment_prompt().request(
        f"story/cond/segment-{k}", answer_model=segment_answer_model([e["entity_id"] for e in roster]),
        roster=lines, pairs=[], plot="someone walks in", n_frames=8)


_PROMPTS: dict[str, Any] = {}
_BUILDERS = {"track_a_reference": _track_a_request, "track_b_segment": _track_b_request}


def rescore_rate(n: int, which: str) -> dict[str, Any]:
    """Per question: build the request from its prompt file, then answer it from the cache."""
    rng = np.random.default_rng(0)
    rosters = [[{"entity_id": f"char_{i:03d}", "name": f"Person {i}", "kind": "character",
                 "description": "a tall person in a red coat"}
                for i in sorted(rng.choice(40, size=int(rng.integers(2, 7)), replace=False))]
               for _ in range(8)]
    build = _BUILDERS[which]
    with tempfile.TemporaryDirectory() as tmp:
        judge = CachedJudge(_Stored(), AnswerCache(Path(tmp) / "answers.sqlite"))
        judge.judge_many([build(k, rosters[k % 8]) for k in range(n)])  # fill (and warm up)
        # process CPU time: the per-question work, steadier than wall time on a shared box
        start, wall = time.process_time(), time.perf_counter()
        requests = [build(k, rosters[k % 8]) for k in range(n)]
        built = time.process_time()
        results = judge.judge_many(requests)
        seconds, wall = time.process_time() - start, time.perf_counter() - wall
    assert all(r.cached for r in results)
    return {"cached_rescoring": which, "questions": n, "wall_seconds": round(wall, 3),
            "cpu_ms_per_question": round(1000 * seconds / n, 3),
            "cpu_ms_build_request": round(1000 * (built - start) / n, 3),
            "cpu_ms_cached_answer": round(1000 * (seconds - (built - start)) / n, 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=512)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--cache-questions", type=int, default=20000, help="text-only cached lookups")
    ap.add_argument("--frame-questions", type=int, default=2000, help="cached lookups with 4 frames")
    ap.add_argument("--rescore-questions", type=int, default=2000,
                    help="cached re-scoring questions per prompt")
    ap.add_argument("--tiny", action="store_true", help="a few of each (smoke run)")
    args = ap.parse_args()
    if args.tiny:
        args.requests, args.concurrency, args.latency = 16, 4, 0.01
        args.cache_questions, args.frame_questions, args.rescore_questions = 100, 10, 50
    loaded = measure(args.requests, args.concurrency, args.latency)
    ceiling = args.concurrency / args.latency if args.latency else float("inf")
    print(json.dumps({**loaded, "target_per_second": round(0.8 * ceiling, 1)}))
    bare = measure(args.requests, 1, 0.0)
    print(json.dumps({**bare, "note": "latency 0, one at a time: the client's own overhead"}))
    print(json.dumps(cache_rate(args.cache_questions, 0)))
    print(json.dumps(cache_rate(args.frame_questions, 4)))
    for which in _BUILDERS:
        print(json.dumps(rescore_rate(args.rescore_questions, which)))


if __name__ == "__main__":
    main()
