"""The MIST gate questions: one judge request per (clip, gate reading).

Per case (PROTOCOLS.md section 5; interface section 2):

* **setup** -- one request showing ``setup_frames`` evenly spaced frames of the first
  (locked) shot: is the scene set?
* **leak** -- one request showing ``leak_frames`` evenly spaced frames of the gap
  (locked) shot: does it show the target?
* per reveal clip, **reveal** and **inside** at each of the six
  :data:`~vidmem.metrics.mist_gates.REVEAL_POSITIONS`, one frame each: is the
  container open and its inside readable; does it hold exactly s*?

Frames: evenly spaced means the middle of each of n equal parts
(:func:`~vidmem.models.backends.judge_frames.clip_frame_indices`); position ``p`` of
the reveal shot is the frame on screen at ``p`` times its duration, index
``min(n - 1, floor(p * n))`` for a clip of ``n`` frames (:func:`position_index`).

Each request renders ``prompts/gates.toml`` (one file, the gate a variable) and carries
the same question as data in ``payload`` for judges that are not VLMs:
``{"task": "mist_gate", "gate", "actor", "container", "objects", "target"?}`` --
``target`` (s*'s contents and text) only for ``inside`` and ``leak``, the two gates that
compare with it. Nothing else of the card (operations, truth) is shown.

The answer (:class:`GateAnswer`) is ``{"answer": "yes" | "no" | "unsure", "reason"}``,
read strictly (:func:`read_answer`): ``yes`` -> 1.0, ``no`` -> 0.0, ``unsure`` or any
answer whose status is not ``ok`` -> ``None`` (unreadable, left out of the factor's
mean). Every rule is in :data:`PROTOCOL`.
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from vidmem.benchmarks.mist.schema import Card
from vidmem.benchmarks.prompts import PromptTemplate, load_prompt
from vidmem.metrics.mist_gates import REVEAL_POSITIONS
from vidmem.models.protocols import JudgeRequest, JudgeResult

__all__ = ["GATES", "PROMPT_NAME", "PROTOCOL", "GateAnswer", "clip_id", "gate_payload",
           "gate_prompt", "locked_requests", "position_index", "read_answer",
           "reveal_requests", "scene_block"]

PACKAGE = "vidmem.benchmarks.mist"
PROMPT_NAME = "gates"
GATES = ("setup", "leak", "reveal", "inside")
_READING = {"yes": 1.0, "no": 0.0, "unsure": None}

PROTOCOL: dict[str, dict[str, str]] = {
    "setup_question": {
        "rule": "one request per case: evenly spaced frames of the locked first shot "
                "(setup_frames, default 3); yes = the scene is set",
        "reason": "setup checks the first shot; one reading per case, shared by every arm "
                  "because every arm reuses the locked shot",
        "source": "PROTOCOLS.md section 5; seed 001 section 3; frame count decided here",
    },
    "leak_question": {
        "rule": "one request per case: evenly spaced frames of the locked gap shot "
                "(leak_frames, default 4); yes = a frame shows s*",
        "reason": "the gap must not show the target; the question names s* so the judge "
                  "knows what would count as a leak",
        "source": "PROTOCOLS.md section 5; frame count decided here",
    },
    "reveal_positions": {
        "rule": "reveal and inside: one request each at 0.90, 0.93, 0.95, 0.97, 0.99, 0.995 "
                "of the reveal shot; the frame on screen at p x duration, index "
                "min(n - 1, floor(p * n))",
        "reason": "the protocol's six judge positions, frozen across arms",
        "source": "PROTOCOLS.md section 5; seed 001 Table 7 text; frame rule decided here",
    },
    "payload": {
        "rule": "payload = task mist_gate, gate, actor, the revealed container, the objects; "
                "target only for inside and leak",
        "reason": "the judge answers from the frames and the card fields a human judge reads, "
                  "never from operations or truth",
        "source": "interface section 2 (issue 16)",
    },
    "answers": {
        "rule": "yes -> 1, no -> 0, unsure -> unreadable (None); a status other than ok -> "
                "unreadable, counted; unreadable readings are left out of the means",
        "reason": "read strictly; the judge may say it cannot read a frame",
        "source": "decided here; mist_gates.PROTOCOL reveal_factor",
    },
    "prompt": {
        "rule": "one prompt file prompts/gates.toml, frozen across arms; temperature 0 is "
                "the judge backend's",
        "reason": "the judge's prompt and parsing stay frozen across arms",
        "source": "seed 001 Table 7 text",
    },
}


class GateAnswer(BaseModel):
    """The judge's answer to one gate question."""

    model_config = ConfigDict(extra="ignore")

    answer: Literal["yes", "no", "unsure"]
    reason: str


@functools.cache
def gate_prompt() -> PromptTemplate:
    """The ``mist/gates`` prompt file (read once per process)."""
    return load_prompt(PACKAGE, PROMPT_NAME)


def clip_id(case_id: str, arm: str, try_index: int) -> str:
    """``<case>/<arm>/try_<k>``: the clip's name in item ids and stored rows."""
    return f"{case_id}/{arm}/try_{int(try_index)}"


def position_index(n_frames: int, position: float) -> int:
    """Frame index of a reveal position: the frame on screen at ``position`` x duration.

    Example:
        >>> [position_index(40, p) for p in (0.90, 0.93, 0.95, 0.97, 0.99, 0.995)]
        [36, 37, 38, 38, 39, 39]
        >>> position_index(120, 0.995)
        119
    """
    if n_frames < 1:
        raise ValueError(f"n_frames: expected >= 1, found {n_frames}")
    return min(n_frames - 1, math.floor(float(position) * n_frames + 1e-9))


def scene_block(card: Card) -> dict[str, Any]:
    """The card fields a human judge reads: actor, the revealed container, the objects.

    Example:
        >>> from vidmem.benchmarks.mist.sim_build import plan_card
        >>> b = scene_block(Card.model_validate(plan_card(0, 0)))
        >>> sorted(b), b["container"]["noun"] == b["container"]["noun"].strip()
        (['actor', 'container', 'objects'], True)
    """
    box = next(c for c in card.containers if c.id == card.reveal)
    return {
        "actor": card.actor.noun,
        "container": {"noun": box.noun, "colour": box.colour, "kind": box.kind,
                      "asset": box.asset},
        "objects": [{"noun": o.noun, "plural": o.plural or f"{o.noun}s", "asset": o.asset,
                     "colour": o.colour} for o in card.objects],
    }


def gate_payload(card: Card, gate: str) -> dict[str, Any]:
    """``payload`` of one gate request (module docstring)."""
    if gate not in GATES:
        raise ValueError(f"gate: expected one of {GATES}, found {gate!r}")
    out = {"task": "mist_gate", "gate": gate, **scene_block(card)}
    if gate in ("inside", "leak"):
        out["target"] = {"contents": [{"noun": c.noun, "count": c.count}
                                      for c in card.target.contents],
                         "text": card.target.text}
    return out


#: rendered questions by their text values: every clip of a case asks the same twelve
#: texts (Jinja compiles a template on each render, which dominated small runs)
_RENDERED: dict[str, JudgeRequest] = {}


def _request(prompt: PromptTemplate, card: Card, gate: str, item_id: str,
             images: Sequence[np.ndarray], position: float | None = None) -> JudgeRequest:
    payload = gate_payload(card, gate)
    values = {"gate": gate, "actor": payload["actor"], "container": payload["container"],
              "objects": payload["objects"], "n_frames": len(images),
              "position": position if position is not None else 0.0,
              "target": payload.get("target", {"text": "", "contents": []})}
    key = json.dumps([prompt.sha256, values], sort_keys=True, default=str)
    if key not in _RENDERED:
        if len(_RENDERED) > 4096:
            _RENDERED.clear()
        _RENDERED[key] = prompt.request("", (), **values)
    if position is not None:
        payload["position"] = position
    return replace(_RENDERED[key], item_id=item_id, images=tuple(images), payload=payload,
                   key_types={"answer": "string", "reason": "string"})


def _frames(clip: str | os.PathLike[str] | np.ndarray, indices: Sequence[int]
            ) -> tuple[np.ndarray, ...]:
    if isinstance(clip, np.ndarray):
        return tuple(clip[i] for i in indices)
    from vidmem.io.video import read_frames

    batch = read_frames(clip, list(indices))
    return tuple(batch[k] for k in range(len(indices)))


def _n_frames(clip: str | os.PathLike[str] | np.ndarray) -> int:
    if isinstance(clip, np.ndarray):
        return int(clip.shape[0])
    from vidmem.io.video import probe

    return int(probe(clip).n_frames)


def locked_requests(card: Card, setup_clip: str | os.PathLike[str] | np.ndarray,
                    gap_clip: str | os.PathLike[str] | np.ndarray, *, setup_frames: int = 3,
                    leak_frames: int = 4) -> list[JudgeRequest]:
    """The setup and leak requests of one case (item ids ``<case>/locked/setup|leak``)."""
    from vidmem.models.backends.judge_frames import clip_frame_indices

    prompt = gate_prompt()
    out = []
    for gate, clip, n in (("setup", setup_clip, setup_frames), ("leak", gap_clip, leak_frames)):
        idx = clip_frame_indices(_n_frames(clip), n)
        out.append(_request(prompt, card, gate, f"{card.case_id}/locked/{gate}",
                            _frames(clip, idx)))
    return out


def reveal_requests(card: Card, clip: str | os.PathLike[str] | np.ndarray, name: str
                    ) -> list[JudgeRequest]:
    """The twelve requests of one reveal clip: reveal at the six positions, then inside.

    Args:
        card: the case.
        clip: the reveal clip (or its uint8 ``(T, H, W, 3)`` frames).
        name: the clip's :func:`clip_id`; item ids are ``<name>/<gate>@<position>``.
    """
    prompt = gate_prompt()
    n = _n_frames(clip)
    idx = [position_index(n, p) for p in REVEAL_POSITIONS]
    frames = _frames(clip, sorted(set(idx)))
    by_index = dict(zip(sorted(set(idx)), frames, strict=True))
    return [_request(prompt, card, gate, f"{name}/{gate}@{p:g}", (by_index[i],), position=p)
            for gate in ("reveal", "inside") for p, i in zip(REVEAL_POSITIONS, idx, strict=True)]


def read_answer(result: JudgeResult | Mapping[str, Any]) -> dict[str, Any]:
    """One judge result as ``{"status", "answer", "reading", "reason"}`` (strict).

    Accepts a :class:`JudgeResult` or its stored form (``status``, ``data``).

    Example:
        >>> read_answer({"status": "ok", "data": {"answer": "yes", "reason": "open"}})["reading"]
        1.0
        >>> read_answer({"status": "ok", "data": {"answer": "unsure", "reason": ""}})["reading"]
        >>> read_answer({"status": "ok", "data": {"answer": "YES", "reason": ""}})["answer"]
        >>> read_answer({"status": "error", "data": None})["status"]
        'error'
    """
    if isinstance(result, JudgeResult):
        status, data = result.status, result.data
    else:
        status, data = result.get("status"), result.get("data")
    answer = data.get("answer") if status == "ok" and isinstance(data, Mapping) else None
    reason = data.get("reason") if isinstance(data, Mapping) else None
    if answer not in _READING:
        answer = None
    return {"status": str(status), "answer": answer,
            "reading": _READING[answer] if answer is not None else None,
            "reason": reason if isinstance(reason, str) else None}
