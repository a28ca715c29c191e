"""A recording fake generator, a scripted judge and tiny clips for the MIST tests.

The fake generator writes a 5 s, 4 fps, 32x32 clip whose flat colour is a hash of the
prompt, the seed and the start image's bytes, so equal requests give equal bytes and
the tests can tell which request made a clip. A prompt containing ``CUT`` switches to a
far brighter colour halfway (one hard cut). The scripted judge answers each gate
request from a function of its item id and payload.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vidmem.generators.requests import GenerationRequest, GenerationResult
from vidmem.io.video import write_video
from vidmem.models.protocols import BackendInfo, JudgeRequest, JudgeResult

FPS = 4.0
SIZE = 32


def write_clip(path: Path, colour: Sequence[int], *, cut: bool = False, n: int = 20) -> Path:
    """A flat clip of ``n`` frames; with ``cut`` the second half is much brighter."""
    frames = np.empty((n, SIZE, SIZE, 3), np.uint8)
    frames[:] = np.asarray(colour, np.uint8)
    if cut:
        frames[n // 2:] = np.clip(np.asarray(colour, int) + 120, 0, 255).astype(np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_video(path, frames, FPS, crf=10)
    return path


class FakeGenerator:
    """Writes a clip per request (module docstring) and records every request."""

    name = "fake"

    def __init__(self, fail_on: str | None = None) -> None:
        self.requests: list[GenerationRequest] = []
        self.fail_on = fail_on

    def info(self) -> dict[str, Any]:
        return {"name": self.name, "version": "1"}

    def generate(self, request: GenerationRequest) -> GenerationResult:
        if self.fail_on is not None and self.fail_on in request.request_id:
            return GenerationResult(request.request_id, "error", None, 0.0, error="killed")
        self.requests.append(request)
        h = hashlib.sha256(f"{request.prompt}|{request.seed}".encode())
        if request.start_image:
            h.update(Path(request.start_image).read_bytes())
        colour = [40 + b % 120 for b in h.digest()[:3]]
        n = int(round((request.duration_seconds or 5.0) * FPS))
        write_clip(Path(request.out_path), colour, cut="CUT" in request.prompt, n=n)
        return GenerationResult(request.request_id, "ok", request.out_path, 0.0)


Answer = str | None  # "yes" / "no" / "unsure", or None for an unparsable answer


class ScriptedJudge:
    """Answers gate requests with ``script(item_id, payload) -> answer`` and M3-Agent's
    diagnosis questions with ``diagnose(item_id, payload) -> failure mode``; counts calls."""

    def __init__(self, script: Callable[[str, dict[str, Any]], Answer],
                 diagnose: Callable[[str, dict[str, Any]], str] | None = None) -> None:
        self.script = script
        self.diagnose = diagnose or (lambda item_id, payload: "no_action")
        self.calls = 0
        self.asked: list[str] = []

    def info(self) -> BackendInfo:
        return BackendInfo(name="judge/scripted")

    def judge(self, request: JudgeRequest) -> JudgeResult:
        return self.judge_many([request])[0]

    def judge_many(self, requests: Sequence[JudgeRequest], *,
                   concurrency: int | None = None) -> list[JudgeResult]:
        self.calls += 1
        out = []
        for r in requests:
            self.asked.append(r.item_id)
            if r.payload.get("task") == "m3_diagnose":
                mode = self.diagnose(r.item_id, dict(r.payload))
                out.append(JudgeResult(r.item_id, "ok", {"failure_mode": mode,
                                                         "evidence": "scripted"}, "{}", 1,
                                       "judge/scripted"))
                continue
            a = self.script(r.item_id, dict(r.payload))
            if a is None:
                out.append(JudgeResult(r.item_id, "unparsable", None, "?", 1, "judge/scripted",
                                       error="no JSON"))
            else:
                out.append(JudgeResult(r.item_id, "ok", {"answer": a, "reason": "scripted"},
                                       "{}", 1, "judge/scripted"))
        return out


class ScriptedRewriter:
    """Appends the explicit move to the instruction (what the sim grammar's rewrite says)."""

    CLAUSE = " and holds the lid open; the inside stays visible until the end."

    def __init__(self) -> None:
        self.requests: list[Any] = []

    def info(self) -> BackendInfo:
        return BackendInfo(name="rewriter/scripted")

    def rewrite(self, request: Any) -> Any:
        from vidmem.models.protocols import RewriteResult

        self.requests.append(request)
        text = request.instruction.rstrip(".").split(" and holds")[0] + self.CLAUSE
        return RewriteResult("ok", text)
