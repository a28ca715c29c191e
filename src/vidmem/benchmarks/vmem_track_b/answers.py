"""The Track-B judge's answer (a pydantic model) and how it is read into per-entity values.

The answer is one JSON object ``{"items": [{entity_id, present, state, count,
instance_match}], "extra": [...]}`` keyed by the roster's blind labels
(:mod:`vidmem.benchmarks.vmem_track_b.roster`). :func:`segment_answer_model` narrows
the model to one roster: its JSON schema lists the labels as an ``enum`` and states
every field's type (so a server with guided decoding can only write a well-typed
object of roster labels), while validation admits any JSON value in an item's fields:
a stray label, ``present: "yes"``, ``count: "3 stones"`` or ``state: "Changed"`` from
a judge without guided decoding is read per entity by :func:`read_answer`, as the
reference reads it, instead of throwing the whole answer away.

An answer in which no item names a roster label (``{"items": []}``, or only foreign
ids) cannot be used: :func:`answer_problem` says so, and the question carries it as
``JudgeRequest.accept`` (a judge then asks its one "JSON only" follow-up, and the
answer cache never stores such an answer).

Parsing tolerance (outermost JSON object, trailing commas, single quotes, one "JSON
only" retry) is the judge layer's (:mod:`vidmem.models.json_extract`,
:mod:`vidmem.models.backends.judge_common`); non-finite numbers (NaN) are refused
there. :func:`read_answer` gets ``data=None`` when the answer stayed unusable, and
every entity is then ``"abstain"`` and the segment flagged. The rules are in
:data:`PROTOCOL`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    WithJsonSchema,
    create_model,
    field_validator,
    model_validator,
)

from vidmem.benchmarks.vmem_track_b.roster import Roster

__all__ = ["ABSTAIN", "PROTOCOL", "JudgedEntity", "SegmentAnswer", "SegmentItem",
           "SegmentJudgement", "answer_problem", "read_answer", "segment_answer_model"]

ABSTAIN = "abstain"
_REF = "Suchenl/VMem-Bench src/vmem_bench/scoring/end2end_coverage.py"

PROTOCOL: dict[str, dict[str, Any]] = {
    "answer_items": {
        "value": "items[{entity_id, present, state, count, instance_match}] + extra[]",
        "reason": "one item per roster label; extra = salient unlisted things (not scored)",
        "source": f"PROTOCOLS.md sec. 4 (Judge); {_REF} _build_prompt"},
    "unusable_answer": {
        "value": "an answer whose status is not ok after the one JSON-only retry, or in "
                 "which no item names a roster label ({'items': []}, or only foreign ids): "
                 "refused by the question's accept check (answers.answer_problem), so the "
                 "judge asks its follow-up and the answer cache never stores it; read as "
                 "every entity 'abstain', segment flagged",
        "reason": "a parse failure is recorded, never read as 'absent', and never cached as "
                  "an answer (issue 23)",
        "source": f"PROTOCOLS.md sec. 4; {_REF} score_segment (parse_error: no item with "
                  "an entity_id); vidmem adds the roster-label check"},
    "missing_entity": {"value": "'abstain'", "reason": "an unanswered line is not a 'no'",
                       "source": f"{_REF} _vote (default 'abstain')"},
    "unknown_label": {"value": "ignored and counted",
                      "reason": "only roster lines are scored",
                      "source": f"{_REF} _vote (reads roster ids only)"},
    "duplicate_label": {"value": "the last item wins; counted",
                        "reason": "as the reference's dict of items", "source": f"{_REF} score_segment"},
    "item_validation": {
        "value": "the JSON schema sent (guided decoding) is strict: labels as an enum, present "
                 "boolean|'abstain', state 'changed'|'default'|'abstain'|null, count "
                 "integer|'abstain'|null; validation is lenient: any JSON value in an item's "
                 "field, a missing present -> 'abstain', an item without entity_id or that is "
                 "not an object is skipped; each field is read per entity below",
        "reason": "one loosely typed field must abstain (or be read) for its entity only, "
                  "never cost the whole segment",
        "source": f"{_REF} score_segment (items keyed by str(entity_id), non-objects "
                  "skipped) and _vote"},
    "entity_id_values": {"value": "str(entity_id) (an integer 3 is '3', a foreign label)",
                         "reason": "as the reference keys its items",
                         "source": f"{_REF} score_segment (str(it['entity_id']))"},
    "present_values": {
        "value": "true|'true'|'yes'|'1'|1 -> true; false|'false'|'no'|'0'|0 -> false "
                 "(case and spaces ignored); anything else 'abstain'",
        "reason": "tolerate spelled booleans from judges without a schema",
        "source": f"{_REF} _norm_present"},
    "count_values": {"value": "an integer; else the first integer in the text ('3 stones' -> "
                              "3, 3.0 -> 3); a boolean, null or no digit -> none",
                     "reason": "tolerant count reading", "source": f"{_REF} _norm_count"},
    "state_values": {
        "value": "'changed' / 'default' in any case ('Changed' -> changed); anything else none",
        "reason": "a judge that capitalises still said changed",
        "source": f"{_REF} _tally compares state == 'changed' exactly (a 'Changed' counts "
                  "as not changed there); vidmem ignores case -- a deliberate difference"},
    "cued_fields_only": {
        "value": "state / count / instance_match are kept only for lines that asked them",
        "reason": "the reference scores them only where the gold expects them",
        "source": f"{_REF} _tally"},
    "instance_match": {
        "value": "a roster label -> its gold id; true -> the entity itself; false -> its "
                 "look-alike (judge/sim-cards' boolean form); anything else none. Scored: "
                 "the entity's own id -> correct, the pair's other member -> wrong, any "
                 "other id (a third entity) or none -> neither (still in the denominator)",
        "reason": "the reference asks for the id the instance resembles most, and counts "
                  "a wrong instance only when it is the other member of the pair",
        "source": f"{_REF} _build_prompt, _tally (im == eid: correct; elif im in pair: wrong)"},
    "votes": {"value": "one call, temperature 0 (the judge backend's setting)",
              "reason": "the card asks one call per segment (the reference allows k votes)",
              "source": "PROTOCOLS.md sec. 4"},
}


def _loose(schema: dict[str, Any]) -> Any:
    """A field whose JSON schema is ``schema`` (sent for guided decoding) but whose
    validation takes any JSON value: :func:`read_answer` reads it per entity, as the
    reference does, so one loosely typed value never costs the whole answer."""
    return Annotated[Any, WithJsonSchema(schema)]


_PRESENT = {"anyOf": [{"type": "boolean"}, {"const": "abstain", "type": "string"}]}
_STATE = {"anyOf": [{"enum": ["changed", "default", "abstain"], "type": "string"},
                    {"type": "null"}], "default": None}
_COUNT = {"anyOf": [{"type": "integer"}, {"const": "abstain", "type": "string"},
                    {"type": "null"}], "default": None}


class SegmentItem(BaseModel):
    """One roster line judged."""

    # The docstring is the schema's description (a judge may read it): the rules are
    # here. The JSON schema is strict (the types below); validation is not: any JSON
    # value is admitted and read_answer reads it (PROTOCOL), and a missing entity_id /
    # present is filled with None / "abstain" (that item is then skipped / abstains).
    model_config = ConfigDict(extra="ignore")
    #: the line's label as listed (a string)
    entity_id: _loose({"type": "string"})
    #: is it on screen: true, false or "abstain" (cannot tell)
    present: _loose(_PRESENT)
    #: for lines with a state check: "changed" or "default"
    state: _loose(_STATE) = None
    #: for lines with a count check: how many are visible (an integer)
    count: _loose(_COUNT) = None
    #: for look-alike pairs: the label of the entry the instance resembles most
    instance_match: _loose({"anyOf": [{"type": "string"}, {"type": "boolean"},
                                      {"type": "null"}], "default": None}) = None

    @model_validator(mode="before")
    @classmethod
    def _fill_missing(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            return {"entity_id": None, "present": ABSTAIN, **data}
        return data


class SegmentAnswer(BaseModel):
    """The ``vmem_track_b/segment`` answer; :func:`segment_answer_model` narrows it."""

    # items must be a list; an element that is not a JSON object is dropped (the
    # reference skips it); extra is admitted whatever it holds (it is not scored).
    model_config = ConfigDict(extra="ignore")
    items: list[SegmentItem]
    extra: _loose({"items": {"type": "string"}, "type": "array"}) = Field(default_factory=list)

    @field_validator("items", mode="before")
    @classmethod
    def _objects_only(cls, value: Any) -> Any:
        return [x for x in value if isinstance(x, Mapping)] if isinstance(value, list) else value


@functools.lru_cache(maxsize=4096)
def _narrowed(labels: tuple[str, ...]) -> type[SegmentAnswer]:
    enum = {"type": "string", "enum": list(labels)}
    item = create_model(
        "SegmentItem", __base__=SegmentItem,
        entity_id=(_loose(enum), ...),
        instance_match=(_loose({"anyOf": [enum, {"type": "null"}], "default": None}), None))
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


def _items_by_label(data: Any) -> tuple[dict[str, Mapping[str, Any]], int]:
    """The answer's items keyed by ``str(entity_id)`` (the last wins), and how many there
    were; items that are not objects or have no ``entity_id`` are skipped."""
    items: dict[str, Mapping[str, Any]] = {}
    n_items = 0
    raw = data.get("items") if isinstance(data, Mapping) else None
    for it in raw if isinstance(raw, list) else []:
        if isinstance(it, Mapping) and it.get("entity_id"):
            n_items += 1
            items[str(it["entity_id"])] = it
    return items, n_items


def answer_problem(data: Mapping[str, Any], labels: Sequence[str]) -> str:
    """Why an answer cannot be used for a roster with ``labels``; ``""`` when it can.

    Unusable: no item names one of ``labels`` (``{"items": []}``, or only foreign ids).
    The question's ``JudgeRequest.accept`` check (pass
    ``functools.partial(answer_problem, labels=tuple(labels))``: it pickles).

    Example:
        >>> answer_problem({"items": [{"entity_id": "R2", "present": True}]}, ("R1", "R2"))
        ''
        >>> answer_problem({"items": []}, ("R1", "R2"))
        'the answer holds no item with an entity_id'
        >>> answer_problem({"items": [{"entity_id": "E7", "present": True}]}, ("R1", "R2"))
        "no item names a roster label (ids given: ['E7']; the roster's labels: R1, R2)"
    """
    items, _ = _items_by_label(data)
    if not items:
        return "the answer holds no item with an entity_id"
    if not set(items) & set(labels):
        given = sorted(items)
        shown = given[:5] + (["..."] if len(given) > 5 else [])
        listed = list(labels)[:8]
        return (f"no item names a roster label (ids given: {shown}; the roster's labels: "
                f"{', '.join(listed)}{', ...' if len(labels) > 8 else ''})")
    return ""


def read_answer(data: Mapping[str, Any] | None, roster: Roster) -> SegmentJudgement:
    """Per-entity judged values of one answer (rules in :data:`PROTOCOL`).

    Each item is read as the reference reads it (``present: "yes"`` is true, ``count:
    "3 stones"`` is 3, ``state: "Changed"`` is changed); a value that cannot be read
    abstains (``present``) or is none (the other fields) for that entity only.

    Args:
        data: ``JudgeResult.data`` when ``status == "ok"``, else ``None``.
        roster: the roster the question was asked with.

    Example:
        >>> from vidmem.benchmarks.vmem_track_b.roster import Assignment, RosterLine
        >>> r = Roster("s", "seg_001", 0, (RosterLine("R1", "Ann", "character", "A woman."),
        ...     RosterLine("R2", "cup", "prop", "A cup.")), (),
        ...     {"R1": Assignment("E1", "required"), "R2": Assignment("E2", "decoy")})
        >>> j = read_answer({"items": [{"entity_id": "R1", "present": "yes"},
        ...                            {"entity_id": "R7", "present": True}]}, r)
        >>> j.entities["E1"].present, j.entities["E2"].present, j.n_unknown, j.flagged
        (True, 'abstain', 1, False)
        >>> read_answer(None, r).flagged, read_answer({"items": []}, r).n_abstain
        (True, 2)
    """
    items, n_items = _items_by_label(data)
    labels = set(roster.labels)
    flagged = data is None or bool(answer_problem(data, roster.labels))
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
