"""Track-A against a local scripted OpenAI-compatible judge: what each question carries,
that every distinct question is asked once, the same-view pairs behind R_V, the cache."""

from __future__ import annotations

import base64
import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from vidmem.benchmarks.vmem_track_a import BENCHMARK
from vidmem.benchmarks.vmem_track_a.config import ScorerConfig
from vidmem.benchmarks.vmem_track_a.sim_build import build_track_a
from vidmem.runners.benchmark_run import open_run, score


class Judge:
    """Answers a reference question with the first id its schema allows; same_view: true."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        #: "ok"; "500": every post answers HTTP 500; "prose": the answer inside prose
        self.mode = "ok"
        lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with lock:
                    owner.bodies.append(body)
                if owner.mode == "500":
                    data = b'{"error": {"message": "internal server error", "type": "x"}}'
                    self.send_response(500)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                schema = body["response_format"]["json_schema"]["schema"]
                if "same_view" in schema["properties"]:
                    answer = {"same_view": True}
                else:
                    answer = {"entity_ids": schema["properties"]["entity_ids"]["items"]["enum"][:1]}
                content = json.dumps(answer)
                if owner.mode == "prose":  # the official v3 reader refuses anything around it
                    content = f"Here you go: {content}"
                data = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                                   "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                       "role": "assistant", "content": content}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        class Server(ThreadingHTTPServer):
            request_queue_size = 128  # judge_many opens 16 connections at once

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()


@pytest.fixture(scope="module")
def judge():
    import os

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        os.environ.pop(name, None)
    os.environ["NO_PROXY"] = "127.0.0.1,localhost"
    j = Judge()
    yield j
    j.httpd.shutdown()


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    base = tmp_path_factory.mktemp("track_a_sim_server")
    build_track_a(base, seed=0, n=1)
    return base


def _score(sim: Path, out: Path, judge: Judge, cache: Path, *, resume: bool = False) -> dict:
    base = ScorerConfig.from_preset("offline", lang="en", policies=("seg_uniform", "recency"),
                                    judge="judge/openai", same_view=True, budget=4)
    config = ScorerConfig.from_dict({**base.to_dict(), "backend_options": {
        "judge/openai": {"base_url": judge.url, "model": "m", "max_retries": 0,
                         "timeout_seconds": 30}}})
    ds = BENCHMARK.load(sim / "SimFilms")
    run = open_run(BENCHMARK, ds, out, config, {}, resume=resume, overwrite=False, argv=[])
    return score(BENCHMARK, ds, run, sim / "videos", config, quiet=True, judge_cache=cache)


def test_questions_carry_one_shrunk_image_and_the_roster_as_an_enum(sim, judge, tmp_path):
    summary = _score(sim, tmp_path / "run", judge, tmp_path / "a.sqlite")
    assert not summary["errors"]
    q = summary["judge_questions"]
    refs = [b for b in judge.bodies if "entity_ids" in b["response_format"]["json_schema"]["schema"]["properties"]]
    pairs = [b for b in judge.bodies if b not in refs]
    # identical questions (the same pixels and roster at two times) are sent once
    assert len(refs) <= q["asked"] and len(pairs) <= q["same_view_pairs"] and pairs
    assert summary["judge_answers"]["asked"] == len(judge.bodies)
    annotations = json.loads(next((sim / "SimFilms").glob("*/gold/chunk_annotations.json")).read_text())
    rosters = [sorted(c["present"]) for c in annotations["chunks"]]
    for body in refs:
        parts = body["messages"][0]["content"]
        images = [p for p in parts if p["type"] == "image_url"]
        assert len(images) == 1
        image = Image.open(io.BytesIO(base64.b64decode(images[0]["image_url"]["url"].split(",", 1)[1])))
        assert max(image.size) <= 384
        enum = body["response_format"]["json_schema"]["schema"]["properties"]["entity_ids"]["items"]["enum"]
        assert enum in rosters and all(e in parts[0]["text"] for e in enum)
    assert all(len([p for p in b["messages"][0]["content"] if p["type"] == "image_url"]) == 2 for b in pairs)
    # the prompt files' token limits: the reference scorer's 256 (v3) and 64 (same view)
    assert {b["max_tokens"] for b in refs} == {256} and {b["max_tokens"] for b in pairs} == {64}
    # every reference shows a present entity (the scripted answer), and every pair is one view
    overall = summary["overall"]["seg_uniform"]
    assert overall["precision"] == 1.0 and overall["r_v"] is not None and overall["r_v"] > 0
    assert overall["sel_eff"] is not None and overall["sel_eff"] < 1.0


def test_a_second_run_sends_the_server_nothing(sim, judge, tmp_path):
    cache = tmp_path / "a.sqlite"
    _score(sim, tmp_path / "one", judge, cache)
    before = len(judge.bodies)
    summary = _score(sim, tmp_path / "two", judge, cache)
    assert len(judge.bodies) == before
    assert summary["judge_answers"]["asked"] == 0 and summary["judge_answers"]["from_cache"] > 0


@pytest.fixture(scope="module")
def clean(sim, judge, tmp_path_factory):
    judge.mode = "ok"
    base = tmp_path_factory.mktemp("clean")
    return base / "run", _score(sim, base / "run", judge, base / "a.sqlite")


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["500", "prose"])
def test_a_failing_judge_fails_the_run_and_resume_equals_a_clean_run(sim, judge, clean, tmp_path,
                                                                     mode):
    """An unreachable judge fails the film; a judge whose replies the official reader
    refuses fails the run's judge health; either way nothing wrong is kept, and a resume
    against the healthy judge scores exactly what a clean run scores."""
    clean_run, clean_summary = clean
    judge.mode = mode
    out, cache = tmp_path / "run", tmp_path / "a.sqlite"
    try:
        failed = _score(sim, out, judge, cache)
    finally:
        judge.mode = "ok"
    assert json.loads((out / "run.json").read_text())["status"] == "failed"
    if mode == "500":
        (film, error), = failed["errors"]
        assert "JudgeUnavailableError" in error and "got no answer" in error
    else:
        health = failed["judge_health"]
        assert health["unparsable"] == health["answers"] > 0 and "Here you go" in health["sample"]
        assert "unusably" in health["failure"]
    again = _score(sim, out, judge, cache, resume=True)
    assert not again["errors"] and again["judge_health"]["failure"] is None
    assert json.loads((out / "run.json").read_text())["status"] == "complete"
    assert (out / "scores.jsonl").read_text() == (clean_run / "scores.jsonl").read_text()
    assert again["overall"] == clean_summary["overall"]
