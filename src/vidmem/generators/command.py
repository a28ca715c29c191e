"""The `command` generator: any model run as a shell command template.

The template is split like a shell line (``shlex``) and each placeholder is filled in
per request, so a prompt with spaces or quotes stays one argument and nothing is
interpreted by a shell. Placeholders:

``{id}`` request id, ``{prompt}``, ``{out}`` output MP4 path, ``{context}`` context
video, ``{start_image}``, ``{references}`` comma-separated reference image paths,
``{request}`` path of a JSON file holding the whole request, ``{seed}``,
``{duration}``, ``{fps}``, ``{width}``, ``{height}``.

A placeholder whose value a request does not have (``{references}`` for a segment
without references, ``{start_image}`` for a shot made from text, ``{context}`` for a
request without a context video, ``{width}`` when the benchmark leaves the size to the
model) expands to the empty string: ``--refs {references}`` gives ``--refs ''`` and
``--refs={references}`` gives ``--refs=``, so one template serves every request of a
benchmark, and the script decides what an empty value means. ``{request}`` always has
the whole request as JSON (docs/generators.md lists its fields).
"""

from __future__ import annotations

import json
import shlex
import string
import subprocess
import time
from pathlib import Path
from typing import Any

from vidmem.errors import UserInputError, VidmemError
from vidmem.generators.protocol import GenerationRequest, GenerationResult

PLACEHOLDERS = (
    "id", "prompt", "out", "context", "start_image", "references", "request",
    "seed", "duration", "fps", "width", "height",
)
_STDERR_TAIL = 2000


def _fields(template: str) -> set[str]:
    try:
        names = {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as exc:
        raise UserInputError(f"command template {template!r}: {exc}",
                             hint="write a literal brace as {{ or }}") from None
    unknown = sorted(n for n in names if n not in PLACEHOLDERS)
    if unknown:
        raise UserInputError(
            f"command template: unknown placeholder(s) {', '.join('{' + n + '}' for n in unknown)}",
            hint="use only " + ", ".join("{" + p + "}" for p in PLACEHOLDERS),
        )
    return names


class CommandGenerator:
    """Run ``template`` once per request and check that it wrote a readable video."""

    name = "command"

    def __init__(self, template: str, *, timeout_seconds: float = 3600.0, cwd: str | None = None) -> None:
        if not template or not template.strip():
            raise UserInputError("command generator: empty template",
                                 hint='e.g. --generator-opt template="python gen.py --prompt {prompt} --out {out}"')
        self.template = template
        self.fields = _fields(template)
        if "out" not in self.fields and "request" not in self.fields:
            raise UserInputError(
                "command template never says where to write the video",
                hint="include {out} (or {request}, whose JSON holds out_path)",
            )
        self.tokens = shlex.split(template)
        self.timeout_seconds = float(timeout_seconds)
        self.cwd = cwd

    def info(self) -> dict[str, Any]:
        return {"name": self.name, "template": self.template, "timeout_seconds": self.timeout_seconds}

    def _values(self, req: GenerationRequest, request_json: Path) -> dict[str, str | None]:
        def text(v: Any) -> str | None:
            return None if v is None else str(v)

        return {
            "id": req.request_id, "prompt": req.prompt, "out": req.out_path,
            "context": req.context_video, "start_image": req.start_image,
            "references": ",".join(r.path for r in req.references) if req.references else None,
            "request": str(request_json), "seed": str(req.seed), "duration": text(req.duration_seconds),
            "fps": text(req.fps), "width": text(req.width), "height": text(req.height),
        }

    def argv(self, req: GenerationRequest, request_json: Path) -> list[str]:
        """The argument list for ``req`` (public so users can dry-run their template); a
        placeholder without a value is the empty string (see the module docstring)."""
        values = {k: "" if v is None else v for k, v in self._values(req, request_json).items()}
        return [tok.format(**values) for tok in self.tokens]

    def generate(self, request: GenerationRequest) -> GenerationResult:
        out = Path(request.out_path)
        out.parent.mkdir(parents=True, exist_ok=True)
        request_json = out.with_name(out.name + ".request.json")
        request_json.write_text(json.dumps(request.to_dict(), indent=2))
        argv = self.argv(request, request_json)
        out.unlink(missing_ok=True)  # an old file must not pass for this run's output
        start = time.perf_counter()
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout_seconds,
                                  cwd=self.cwd, check=False)
        except FileNotFoundError:
            return self._fail(request, start, f"program not found: {argv[0]!r}")
        except subprocess.TimeoutExpired:
            return self._fail(request, start, f"timed out after {self.timeout_seconds:g} s")
        seconds = time.perf_counter() - start
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout or "")[-_STDERR_TAIL:].strip()
            return self._fail(request, start, f"exit code {proc.returncode}: {tail}", seconds)
        if not out.is_file():
            return self._fail(request, start, f"the command exited 0 but wrote no file at {out}", seconds)
        from vidmem.io.video import probe

        try:
            info = probe(out)
        except VidmemError as exc:
            return self._fail(request, start, f"the written file is not a readable video: {exc.message}", seconds)
        return GenerationResult(request.request_id, "ok", str(out), seconds,
                                extras={"n_frames": info.n_frames, "fps": info.fps})

    def _fail(self, req: GenerationRequest, start: float, why: str, seconds: float | None = None) -> GenerationResult:
        return GenerationResult(
            req.request_id, "error", None,
            seconds if seconds is not None else time.perf_counter() - start,
            error=f"request {req.request_id}: command generator failed: {why}",
        )
