"""The judge questions of the ``attribution`` analysis: what each reference image shows,
and (optionally) what a second judge sees in a clip.

Rules:

* **Reference question** (``prompts/attribution_reference.toml``): one question per
  reference PNG the loop handed over (``seg_NNN.ref<k>.png``), listing the segment's own
  blinded roster (the lines, labels and seed of the segment question, so decoys are
  there too and the judge learns nothing about roles); the answer is the labels the
  image shows (``{"entity_ids": [...]}``; ``judge/sim-cards`` answers in its own
  ``{"items": [{entity_id, present}]}`` shape, read the same way, ``abstain`` = not
  shown). Labels become gold ids through the roster; unknown labels are ignored.
* **Second judge**: the segment question itself (:func:`.question.segment_request`,
  same roster, frames and plot hint), asked to the second judge; it sees an entity when
  its answer says ``present: true``.
* A question whose answer is not ``ok`` gives ``None`` (unjudged), never a guess.
  Answers go through the answer cache when the analysis has one.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
from PIL import Image
from pydantic import BaseModel, ConfigDict, create_model, field_validator

from vidmem.benchmarks.prompts import PromptTemplate, load_prompt
from vidmem.benchmarks.vmem_track_b.roster import Roster, build_roster
from vidmem.errors import UserInputError
from vidmem.models.protocols import JudgeRequest

__all__ = ["PROMPT_NAME", "ReferenceShows", "load_judge", "reference_prompt",
           "reference_request", "reference_shows", "second_sees"]

PROMPT_NAME = "attribution_reference"
_PACKAGE = "vidmem.benchmarks.vmem_track_b"


class ReferenceShows(BaseModel):
    """The reference answer: roster labels the image shows, each once ([] for none)."""

    model_config = ConfigDict(extra="forbid")
    entity_ids: list[str]

    @field_validator("entity_ids")
    @classmethod
    def _each_once(cls, ids: list[str]) -> list[str]:
        if len(set(ids)) != len(ids):
            raise ValueError("each entity id at most once")
        return ids


@functools.lru_cache(maxsize=1024)
def _narrowed(labels: tuple[str, ...]) -> type[ReferenceShows]:
    ids = Literal[labels]  # type: ignore[valid-type]
    return create_model("ReferenceShows", __base__=ReferenceShows, entity_ids=(list[ids], ...))


@functools.lru_cache(maxsize=1)
def reference_prompt() -> PromptTemplate:
    """The ``vmem_track_b/attribution_reference`` prompt file."""
    return load_prompt(_PACKAGE, PROMPT_NAME)


def _png(path: Path, where: str) -> np.ndarray:
    try:
        with Image.open(path) as im:
            return np.asarray(im.convert("RGB"), dtype=np.uint8)
    except OSError as exc:
        raise UserInputError(f"{where}: reference image {path} unreadable ({exc})",
                             hint="the rollout folder was changed after the run; rerun the "
                             "rollout or delete its progress.json (references unknown)") from None


def reference_request(gold: Mapping[str, Any], segment_index: int, png: Path, *, seed: int,
                      item_id: str) -> tuple[JudgeRequest, Roster]:
    """The reference question of one PNG, with the segment's roster."""
    r = build_roster(gold, segment_index, seed=seed)
    lines = [{"label": ln.label, "name": ln.name, "kind": ln.kind, "appearance": ln.appearance}
             for ln in r.lines]
    req = reference_prompt().request(item_id, [_png(png, item_id)],
                                     answer_model=_narrowed(tuple(r.labels)), roster=lines)
    return replace(req, payload={"roster": r.payload()}), r


def reference_shows(data: Mapping[str, Any] | None, roster: Roster) -> list[str] | None:
    """Gold ids an answer says the image shows (``None``: no usable answer).

    Example:
        >>> from vidmem.benchmarks.vmem_track_b.roster import Assignment, RosterLine
        >>> r = Roster("s", "seg_002", 0, (RosterLine("R1", "Ann", "character", "A woman."),
        ...     RosterLine("R2", "cup", "prop", "A cup.")), (),
        ...     {"R1": Assignment("E1", "required"), "R2": Assignment("E2", "decoy")})
        >>> reference_shows({"entity_ids": ["R2", "R9"]}, r)
        ['E2']
        >>> reference_shows({"items": [{"entity_id": "R1", "present": True},
        ...                            {"entity_id": "R2", "present": "abstain"}]}, r)
        ['E1']
        >>> reference_shows(None, r) is None
        True
    """
    if not isinstance(data, Mapping):
        return None
    labels = set(roster.labels)
    if "items" in data and "entity_ids" not in data:
        items = data["items"] if isinstance(data["items"], list) else []
        got = [str(i.get("entity_id")) for i in items
               if isinstance(i, Mapping) and i.get("present") is True]
    elif isinstance(data.get("entity_ids"), list):
        got = [str(x) for x in data["entity_ids"]]
    else:
        return None
    return sorted({roster.eid_of(x) for x in got if x in labels})


def second_sees(data: Mapping[str, Any] | None, roster: Roster) -> list[str] | None:
    """Gold ids the second judge's segment answer says are present (``None``: unusable)."""
    from vidmem.benchmarks.vmem_track_b.answers import read_answer

    if data is None:
        return None
    j = read_answer(data, roster)
    if j.flagged:
        return None
    return sorted(eid for eid, v in j.entities.items() if v.present is True)


def load_judge(name: str, options: Mapping[str, Any] | None, cache: str | None) -> Any:
    """A judge backend, asked through the answer cache file ``cache`` (``None``: none);
    a question without an answer raises either way."""
    from vidmem.models.loading import load_backend
    from vidmem.runners.judge_cache import asked_through_cache

    return asked_through_cache(load_backend(name, dict(options or {}), role="judge"), cache)


def ask(judge: Any, requests: Sequence[JudgeRequest]) -> list[Mapping[str, Any] | None]:
    """``judge_many`` answers' data (``None`` where the status is not ``ok``)."""
    if not requests:
        return []
    results = judge.judge_many(list(requests))
    return [r.data if r.status == "ok" else None for r in results]
