"""The Track-B judge's answer (a pydantic model) and how it is read into per-entity values.

The answer is one JSON object ``{"items": [{entity_id, present, state, count,
instance_match}], "extra": [...]}`` keyed by the roster's blind labels
(:mod:`vidmem.benchmarks.vmem_track_b.roster`). :func:`segment_answer_model` narrows
the model to one roster: its JSON schema lists the labels as an ``enum`` (so a server
with guided decoding can only write roster labels), while validation still admits any
string, so that one stray label from a judge without guided decoding is ignored and
counted by :func:`read_answer` instead of throwing the whole answer away.

Parsing tolerance (outermost JSON object, trailing commas, single quotes, one "JSON
only" retry) is the judge layer's (:mod:`vidmem.models.json_extract`,
:mod:`vidmem.models.backends.judge_common`); :func:`read_answer` gets ``data=None``
when the answer stayed unusable, and every entity is then ``"abstain"`` and the
segment flagged. The rules are in :data:`PROTOCOL`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, create_model

from vidmem.benchmarks.vmem_track_b.roster import Roster

__all__ = ["ABSTAIN", "PROTOCOL", "JudgedEntity", "SegmentAnswer", "SegmentItem",
           "SegmentJudgement", "read_answer", "segment_answer_model"]

ABSTAIN = "abstain"
_REF = "Suchenl/VMem-Bench src/vmem_bench/scoring/end2end_coverage.py"

PROTOCOL: dict[str, dict[str, Any]] = {
    "answer_items": {
        "value": "items[{entity_id, present, state, count, instance_match}] + extra[]",
        "reason": "one item per roster label; extra = salient unlisted things (not scored)",
        "source": f"PROTOCOLS.md sec. 4 (Judge); {_REF} _build_prompt"},
    "unusable_answer": {
        "value": "no usable item (status != ok after the one JSON-only retry, or no item with "
                 "an entity_id): every entity 'abstain', segment flagged",
        "reason": "a parse failure is recorded, never read as 'absent'",
        "source": f"PROTOCOLS.md sec. 4; {_REF} score_segment (parse_error)"},
    "missing_entity": {"value": "'abstain'", "reason": "an unanswered line is not a 'no'",
                       "source": f"{_REF} _vote (default 'abstain')"},
    "unknown_label": {"value": "ignored and counted",
                      "reason": "only roster lines are scored",
                      "source": f"{_REF} _vote (reads roster ids only)"},
    "duplicate_label": {"value": "the last item wins; counted",
                        "reason": "as the reference's dict of items", "source": f"{_REF} score_segment"},
    "present_values": {
        "value": "true|'true'|'yes'|'1' -> true; false|'false'|'no'|'0' -> false; else 'abstain'",
        "reason": "tolerate spelled booleans from judges without a schema",
        "source": f"{_REF} _norm_present"},
    "count_values": {"value": "an integer, else the first integer in the text, else none",
                     "reason": "tolerant count reading", "source": f"{_REF} _norm_count"},
    "cued_fields_only": {
        "value": "state / count / instance_match are kept only for lines that asked them",
        "reason": "the reference scores them only where the gold expects them",
        "source": f"{_REF} _tally"},
    "instance_match": {
        "value": "a roster label -> its gold id; true -> the entity itself; false -> its "
                 "look-alike (judge/sim-cards' boolean form)",
        "reason": "the reference asks for the id the instance resembles most",
        "source": f"{_REF} _build_prompt, _tally"},
    "votes": {"value": "one call, temperature 0 (the judge backend's setting)",
              "reason": "the card asks one call per segment (the reference allows k votes)",
              "source": "PROTOCOLS.md sec. 4"},
}


class SegmentItem(BaseModel):
    """One roster line judged."""

    model_config = ConfigDict(extra="ignore")
    #: the line's label as listed
    entity_id: str
    #: is it on screen ("abstain": cannot tell)
    present: bool | Literal["abstain"]
    #: for lines with a state check: "changed" or "default"
    state: Literal["changed", "default", "abstain"] | None = None
    #: for lines with a count check: how many are visible
    count: int | Literal["abstain"] | None = None
    #: for look-alike pairs: the label of the entry the instance resembles most
    instance_match: str | bool | None = None


class SegmentAnswer(BaseModel):
    """The ``vmem_track_b/segment`` answer; :func:`segment_answer_model` narrows it."""

    model_config = ConfigDict(extra="ignore")
    items: list[SegmentItem]
    extra: list[str] = Field(default_factory=list)


@functools.lru_cache(maxsize=4096)
def _narrowed(labels: tuple[str, ...]) -> type[SegmentAnswer]:
    enum = {"type": "string", "enum": list(labels)}
    item = create_model(
        "SegmentItem", __base__=SegmentItem,
        entity_id=(Annotated[str, WithJsonSchema(enum)], ...),
        instance_match=(Annotated[str | bool | None, WithJsonSchema(
            {"anyOf": [enum, {"type": "null"}], "default": None})], None))
    return create_model("SegmentAnswer", __base__=SegmentAnswer, items=(list[item], ...))


def segment_answer_model(labels: Sequence[str]) -> type[SegmentAnswer]:
    """:class:`SegmentAnswer` whose schema enumerates ``labels`` (sorted) as entity ids.

    Example:
        >>> m = segment_answer_model(["R2", "R1"])
        >>> schema = m.model_json_schema()
        >>> schema["$defs"]["SegmentItem"]["properties"]["entity_id"]["enum"]
        ['R1', 'R2']
        >>> m.model_validate({"items": [{"entity_id": "R9", "present": True}]}, strict=True).items[0].present
        True
    """
    return _narrowed(tuple(sorted(set(labels))))


@dataclass(frozen=True)
class JudgedEntity:
    """What the judge said about one roster line, with its gold side.

    ``present`` is ``True``, ``False`` or ``"abstain"``; ``state`` is ``"changed"`` /
    ``"default"`` / ``None``; ``instance_match`` is the gold id the instance resembles
    most (or ``None``); ``answered``: the answer held an item for this line.
    """

    label: str
    eid: str
    role: str
    kind: str
    present: bool | str
    state: str | None = None
    count: int | None = None
    instance_match: str | None = None
    answered: bool = False


@dataclass(frozen=True)
class SegmentJudgement:
    """One segment's answer, read. ``entities`` is keyed by gold id, in roster order."""

    story_id: str
    segment_id: str
    entities: dict[str, JudgedEntity]
    flagged: bool
    n_unknown: int = 0
    n_missing: int = 0
    n_duplicate: int = 0

    @property
    def n_abstain(self) -> int:
        return sum(e.present == ABSTAIN for e in self.entities.values())

    def present(self) -> set[str]:
        """Gold ids judged present."""
        return {eid for eid, e in self.entities.items() if e.present is True}


def _present(value: Any) -> bool | str:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    return True if text in ("true", "yes", "1") else False if text in ("false", "no", "0") \
        else ABSTAIN


def _count(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    found = re.search(r"-?\d+", str(value))
    return int(found.group(0)) if found else None


def _state(value: Any) -> str | None:
    text = str(value).strip().lower() if isinstance(value, str) else ""
    return text if text in ("changed", "default") else None


def read_answer(data: Mapping[str, Any] | None, roster: Roster) -> SegmentJudgement:
    """Per-entity judged values of one answer (rules in :data:`PROTOCOL`).

    Args:
        data: ``JudgeResult.data`` when ``status == "ok"``, else ``None``.
        roster: the roster the question was asked with.

    Example:
        >>> from vidmem.benchmarks.vmem_track_b.roster import Assignment, RosterLine
        >>> r = Roster("s", "seg_001", 0, (RosterLine("R1", "Ann", "character", "A woman."),
        ...     RosterLine("R2", "cup", "prop", "A cup.")), (),
        ...     {"R1": Assignment("E1", "required"), "R2": Assignment("E2", "decoy")})
        >>> j = read_answer({"items": [{"entity_id": "R1", "present": True},
        ...                            {"entity_id": "R7", "present": True}]}, r)
        >>> j.entities["E1"].present, j.entities["E2"].present, j.n_unknown, j.flagged
        (True, 'abstain', 1, False)
        >>> read_answer(None, r).flagged, read_answer(None, r).n_abstain
        (True, 2)
    """
    items: dict[str, Mapping[str, Any]] = {}
    n_items = 0
    raw = data.get("items") if isinstance(data, Mapping) else None
    for it in raw if isinstance(raw, list) else []:
        if isinstance(it, Mapping) and it.get("entity_id"):
            n_items += 1
            items[str(it["entity_id"])] = it
    labels = set(roster.labels)
    flagged = not items
    out: dict[str, JudgedEntity] = {}
    for line in roster.lines:
        gold = roster.private[line.label]
        it = None if flagged else items.get(line.label)
        if it is None:
            out[gold.eid] = JudgedEntity(line.label, gold.eid, gold.role, line.kind, ABSTAIN)
            continue
        match = it.get("instance_match")
        if line.features or line.lookalike:
            if match is True:
                match = gold.eid
            elif match is False:
                match = roster.eid_of(line.lookalike) if line.lookalike else None
            else:
                match = roster.eid_of(str(match)) if str(match) in labels else None
        else:
            match = None
        out[gold.eid] = JudgedEntity(
            line.label, gold.eid, gold.role, line.kind, _present(it.get("present", ABSTAIN)),
            state=_state(it.get("state")) if line.state_cue else None,
            count=_count(it.get("count")) if line.count_cue else None,
            instance_match=match, answered=True)
    known = labels & set(items)
    return SegmentJudgement(
        roster.story_id, roster.segment_id, out, flagged,
        n_unknown=len(set(items) - labels),
        n_missing=0 if flagged else len(labels - known),
        n_duplicate=n_items - len(items))
