"""The M3-Agent's task file (``vidmem agent m3 --task TASK.json``) and ``module:function`` scorers.

A task file is one JSON object::

    {
      "task_record": {"actor": "the cat", "object": "snake sign",
                      "binding": "snake sign in the red box",
                      "operation": "count what is inside",
                      "required_last_frame_evidence": "the open red box with two snake signs visible inside"},
      "instruction": "The cat opens the red box.",
      "request": {"request_id": "case-1", "start_image": "gap_last.png",
                  "duration_seconds": 5.0, "fps": 8, "width": 128, "height": 96, "seed": 0,
                  "extras": {"shot": "reveal", "case_id": "case-1"}},
      "scene": {"actor": "the cat", "container": {"noun": "red box", "colour": "red"},
                "objects": [{"noun": "snake sign", "plural": "snake signs"}],
                "target": {"contents": [{"noun": "snake sign", "count": 2}], "text": "two snake signs"}},
      "withhold_target": false
    }

Rules: ``task_record`` and ``instruction`` are required; ``request`` holds any
:class:`~vidmem.generators.requests.GenerationRequest` field but ``prompt`` (the
instruction is the prompt) and ``out_path`` (the agent names each try's clip);
``request_id`` defaults to the file's stem and ``benchmark`` to ``m3_agent``; a relative
``start_image`` or ``context_video`` is read relative to the task file. ``scene`` is
optional, but a withheld target needs ``scene.target``. Unknown top-level keys are
errors, so a misspelt key is never silently ignored.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from vidmem.agents.m3_records import TaskRecord
from vidmem.errors import UserInputError
from vidmem.generators.requests import GenerationRequest

__all__ = ["AgentTask", "load_scorer", "load_task"]


class _TaskFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_record: dict[str, Any]
    instruction: str = Field(min_length=1)
    request: dict[str, Any] = Field(default_factory=dict)
    scene: dict[str, Any] = Field(default_factory=dict)
    withhold_target: bool = False


@dataclass(frozen=True)
class AgentTask:
    """A loaded task file: the record, the original request (prompt = instruction), the
    scene block and whether the target is withheld."""

    record: TaskRecord
    request: GenerationRequest
    scene: dict[str, Any]
    withhold_target: bool

    @property
    def instruction(self) -> str:
        return self.request.prompt


def load_task(path: str | Path) -> AgentTask:
    """Read and check a task file (module docstring), naming the bad field."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserInputError(f"task file {path}: no such file") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserInputError(f"task file {path}: not valid JSON ({exc})") from None
    try:
        spec = _TaskFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "(the file)"
        raise UserInputError(f"task file {path}: {where}: {first['msg']}",
                             hint="keys: task_record, instruction, request, scene, "
                                  "withhold_target (see vidmem.agents.m3_task)") from None
    record = TaskRecord.from_mapping(spec.task_record, where=f"task file {path}: task_record")
    fields = dict(spec.request)
    for taken in ("prompt", "out_path"):
        if taken in fields:
            raise UserInputError(
                f"task file {path}: request.{taken} is set by the agent",
                hint="give the instruction as 'instruction'; clips go to --out" if taken ==
                "prompt" else "drop request.out_path; each try is written under --out")
    for key in ("start_image", "context_video"):
        if isinstance(fields.get(key), str) and not Path(fields[key]).is_absolute():
            fields[key] = str((path.parent / fields[key]).resolve())
    fields.setdefault("request_id", path.stem)
    fields.setdefault("benchmark", "m3_agent")
    request = GenerationRequest.from_dict(
        {**fields, "prompt": spec.instruction, "out_path": str(path.with_suffix(".mp4"))},
        where=f"task file {path}: request")
    return AgentTask(record=record, request=request, scene=dict(spec.scene),
                     withhold_target=spec.withhold_target)


def load_scorer(spec: str) -> Callable[[Path], Any]:
    """The callable ``module:function`` names (it takes a clip path, returns a float).

    Raises:
        UserInputError: not ``module:function``, the module cannot be imported, or the
            name is missing or not callable.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UserInputError(f"--score {spec!r} is neither 'judge-evidence' nor module:function",
                             hint="e.g. --score my_scores:reveal_score (importable from "
                                  "PYTHONPATH)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UserInputError(f"--score {spec!r}: cannot import module '{module_name}': {exc}",
                             hint="install the package or put it on PYTHONPATH") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise UserInputError(f"--score {spec!r}: module '{module_name}' has no callable '{attr}'")
    return fn
