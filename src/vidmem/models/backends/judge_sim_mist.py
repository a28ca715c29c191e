"""``judge/sim-cards`` on container shots: gate questions and the M3 diagnosis, offline.

``judge/sim-cards`` hands a request here when ``payload["task"]`` is ``mist_gate`` or
``m3_diagnose``. The answer comes from the frames and the payload only (the card words a
human judge reads), read with the deck's ``hidden_state`` cards
(:mod:`vidmem.models.backends.judge_sim_mist_read`); nothing else of the sim is seen.

**Gates** (``payload = {"task": "mist_gate", "gate", "actor", "container", "objects",
"target"?}``), answer ``{"answer": "yes" | "no" | "unsure", "reason"}``:

``setup``   yes when the actor and the container are both in view in at least half of
            the frames;
``leak``    yes when the container is open in any frame (its inside shown in the gap);
``reveal``  yes when the container is open and its inside readable in the majority of
            the frames (one frame per reading in the protocol);
``inside``  yes when, in addition, the objects seen inside equal ``target.contents``
            (noun and count; empty contents: nothing inside).

``unsure`` when the payload's container, actor or target objects are not in the deck,
or the gate is unknown.

**Diagnosis** (``payload = {"task": "m3_diagnose", "record", "instruction", "scene":
{"actor", "container", "objects"}}``; images in time order, the last frame last),
answer ``{"failure_mode", "evidence"}`` read on the last frame:

* the container open and readable: ``success`` when the objects inside are what the
  record's ``required_last_frame_evidence`` says (``with <NP> visible inside``; an
  evidence without a readable ``<NP>`` is not checked), else ``missing_departure``
  when the record's operation speaks of a move, else ``wrong_binding``;
* open but its inside hidden, or not in view at all: ``occluded_view``;
* closed: ``wrong_binding`` when another deck container is open, else
  ``return_to_intact`` when an earlier frame shows it open, else ``no_action``.

Answers are ``status="ok"`` with ``judge="judge/sim-cards"``; a request without frames,
or with a deck lacking the ``hidden_state`` cards, is ``status="error"``.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np

from vidmem.errors import VidmemError
from vidmem.models.backends.judge_sim_mist_read import ContainerReading, HiddenStateDeck
from vidmem.models.protocols import JudgeRequest, JudgeResult

__all__ = ["FAILURE_MODES", "GATES", "TASKS", "answer_hidden_state"]

TASKS = ("mist_gate", "m3_diagnose")
GATES = ("setup", "leak", "reveal", "inside")
#: the diagnosis vocabulary (the same tuple as vidmem.agents.m3.FAILURE_MODES)
FAILURE_MODES = ("no_action", "wrong_binding", "missing_departure", "return_to_intact",
                 "occluded_view", "success")
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_NOTHING = ("nothing", "no objects", "none", "empty")


def _frames(images: Any) -> list[np.ndarray]:
    return [np.ascontiguousarray(im, dtype=np.uint8) for im in images or ()
            if isinstance(im, np.ndarray) and im.ndim == 3 and im.shape[2] >= 3]


def _deck(judge: Any) -> HiddenStateDeck:
    deck = getattr(judge, "_hidden_state_deck", None)
    if deck is None:
        deck = HiddenStateDeck(judge.deck.root)
        judge._hidden_state_deck = deck
    return deck


def _noun(c: Any) -> str:
    return str(c.get("noun") if isinstance(c, dict) else c or "the container")


def _wanted(deck: HiddenStateDeck, target: Any,
            objects: list[Any]) -> dict[str, int] | None:
    """``{asset: count}`` of a payload target, or ``None`` when it cannot be read."""
    if not isinstance(target, dict) or not isinstance(target.get("contents"), list):
        return None
    nouns = {str(o.get("noun")): o for o in objects if isinstance(o, dict)}
    out: dict[str, int] = {}
    for item in target["contents"]:
        if not isinstance(item, dict):
            return None
        asset = deck.object_asset(nouns.get(str(item.get("noun")), item))
        count = item.get("count")
        if asset is None or not isinstance(count, int):
            return None
        if count > 0:
            out[asset] = out.get(asset, 0) + count
    return out


def _evidence_wanted(deck: HiddenStateDeck, text: Any,
                     objects: list[Any]) -> dict[str, int] | None:
    """Read ``... with <NP> visible inside`` of a record's required evidence."""
    m = re.search(r"\bwith\s+(.+?)\s+(?:visible\s+)?inside\b", str(text or ""), re.I)
    if not m:
        return None
    what = " ".join(m.group(1).lower().split())
    if what in _NOTHING:
        return {}
    head, _, rest = what.partition(" ")
    count = _COUNTS.get(head)
    if count is None:
        return None
    for o in objects:
        if isinstance(o, dict) and rest in (str(o.get("noun")), str(o.get("plural"))):
            asset = deck.object_asset(o)
            return {asset: count} if asset else None
    asset = deck.object_asset(rest)
    return {asset: count} if asset else None


def _seen(contents: dict[str, int]) -> str:
    return ", ".join(f"{n} x {a}" for a, n in sorted(contents.items())) or "nothing"


def _gate(deck: HiddenStateDeck, p: dict[str, Any], frames: list[np.ndarray]) -> dict[str, str]:
    gate, noun = p.get("gate"), _noun(p.get("container"))
    key = deck.container_key(p.get("container"))
    if gate not in GATES:
        return {"answer": "unsure", "reason": f"unknown gate {gate!r}"}
    if key is None:
        return {"answer": "unsure", "reason": f"{noun} is not a container I know"}
    objects = [o for o in p.get("objects") or [] if isinstance(o, dict)]
    assets = sorted({a for o in objects if (a := deck.object_asset(o))} |
                    set(deck.part["objects"]))
    readings = [deck.read(f, key, assets) for f in frames]
    if gate == "setup":
        actor = deck.actor_asset(p.get("actor"))
        if actor is None:
            return {"answer": "unsure", "reason": f"{p.get('actor')!r} is not an actor I know"}
        both = sum(r.found and deck.find_actor(f, actor)[0] for f, r in zip(frames, readings,
                                                                             strict=True))
        need = max(1, math.ceil(len(frames) / 2))
        return {"answer": "yes" if both >= need else "no",
                "reason": f"{p.get('actor')} and the {noun} in view in {both} of {len(frames)} "
                          "frames"}
    if gate == "leak":
        shown = sum(r.state == "open" for r in readings)
        return {"answer": "yes" if shown else "no",
                "reason": f"the {noun} is open in {shown} of {len(frames)} gap frames"}
    ok = [r for r in readings if r.state == "open" and r.readable]
    if gate == "reveal":
        return {"answer": "yes" if 2 * len(ok) > len(readings) else "no",
                "reason": _describe(readings[-1], noun)}
    wanted = _wanted(deck, p.get("target"), objects)
    if wanted is None:
        return {"answer": "unsure", "reason": "the target contents are not objects I know"}
    match = [r for r in ok if r.contents == wanted]
    return {"answer": "yes" if 2 * len(match) > len(readings) else "no",
            "reason": _describe(readings[-1], noun) + f"; wanted {_seen(wanted)}"}


def _describe(r: ContainerReading, noun: str) -> str:
    if not r.found:
        return f"the {noun} is not in view"
    if r.state != "open":
        return f"the {noun} is {'closed' if r.state == 'closed' else 'not readable'}"
    if not r.readable:
        return f"the {noun} is open but its inside is hidden"
    return f"the {noun} is open showing {_seen(r.contents)}"


def _diagnose(deck: HiddenStateDeck, p: dict[str, Any],
              frames: list[np.ndarray]) -> dict[str, str]:
    scene = p.get("scene") if isinstance(p.get("scene"), dict) else p
    container, record = scene.get("container"), p.get("record") or {}
    noun, key = _noun(container), deck.container_key(container)
    if key is None:
        return {"failure_mode": "occluded_view", "evidence": f"{noun} is not a container I know"}
    objects = [o for o in scene.get("objects") or [] if isinstance(o, dict)]
    last = deck.read(frames[-1], key)
    said = _describe(last, noun)
    if not last.found or last.state == "unreadable" or (last.state == "open"
                                                         and not last.readable):
        return {"failure_mode": "occluded_view", "evidence": said}
    if last.state == "open":
        wanted = _evidence_wanted(deck, record.get("required_last_frame_evidence"), objects)
        if wanted is None or wanted == last.contents:
            return {"failure_mode": "success", "evidence": said}
        moved = re.search(r"\bmov(?:e|es|ed|ing)\b", str(record.get("operation", "")), re.I)
        return {"failure_mode": "missing_departure" if moved else "wrong_binding",
                "evidence": f"{said}; the record wants {_seen(wanted)}"}
    for other in deck.container_keys():
        if other != key and (r := deck.read(frames[-1], other)).found and r.state == "open":
            name = deck.part["containers"][other]["noun"]
            return {"failure_mode": "wrong_binding",
                    "evidence": f"{said}; the {name} is open instead"}
    if any(deck.read(f, key).state == "open" for f in frames[:-1]):
        return {"failure_mode": "return_to_intact",
                "evidence": f"{said} at the end, after it was open earlier"}
    return {"failure_mode": "no_action", "evidence": f"{said}; it was never opened"}


def answer_hidden_state(judge: Any, request: JudgeRequest) -> JudgeResult:
    """Answer a ``mist_gate`` or ``m3_diagnose`` request (rules in the module docstring).

    Args:
        judge: the ``judge/sim-cards`` backend (its ``deck.root`` and ``name`` are used).
        request: the question.
    """
    name, payload = judge.name, dict(request.payload or {})
    frames = _frames(request.images)
    if not frames:
        return JudgeResult(request.item_id, "error", None, "", 0, name,
                           error=f"item {request.item_id}: no frames to judge")
    try:
        deck = _deck(judge)
        if payload.get("task") == "m3_diagnose":
            data = _diagnose(deck, payload, frames)
        else:
            data = _gate(deck, payload, frames)
    except VidmemError as exc:
        why = exc.message + (f" (fix: {exc.hint})" if exc.hint else "")
        return JudgeResult(request.item_id, "error", None, "", 1, name,
                           error=f"item {request.item_id}: {name}: {why}")
    except Exception as exc:  # a bug must not stop a run; it is reported per item
        return JudgeResult(request.item_id, "error", None, "", 1, name,
                           error=f"item {request.item_id}: {name} internal error: "
                           f"{type(exc).__name__}: {exc}")
    return JudgeResult(request.item_id, "ok", data, json.dumps(data, sort_keys=True), 1, name)
