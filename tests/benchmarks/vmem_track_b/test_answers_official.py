"""Track-B answers read and tallied as the official scorer does (issue 24 items 1-3, issue 23 item 2).

The expected numbers are computed by hand from the official rules
(Suchenl/VMem-Bench src/vmem_bench/scoring/end2end_coverage.py: ``_norm_present``,
``_norm_count``, ``_vote`` and ``_tally``), never from vidmem's output.
"""

from __future__ import annotations

import functools
import pickle
import random
from typing import Literal

import numpy as np
import pytest
from pydantic import BaseModel, ConfigDict, Field

from vidmem.benchmarks.vmem_track_b.answers import (
    answer_problem,
    read_answer,
    segment_answer_model,
)
from vidmem.benchmarks.vmem_track_b.question import segment_request
from vidmem.benchmarks.vmem_track_b.roster import build_roster
from vidmem.benchmarks.vmem_track_b.scorer import segment_verdict
from vidmem.benchmarks.vmem_track_b.stories import (
    CastEntry,
    Entity,
    LookalikeActive,
    Segment,
    Story,
)
from vidmem.metrics import track_b as tb
from vidmem.models.backends.judge_common import JudgeReply, read_reply, request_problem

FRAMES = np.zeros((16, 8, 8, 3), np.uint8)
SID = "0009_twins"

ENTITIES = {
    "E1": {"name": "Mara", "kind": "character", "appearance": "A woman with a red scarf."},
    "E2": {"name": "Lena", "kind": "character", "appearance": "A woman with a blue scarf."},
    "E3": {"name": "Tom", "kind": "character", "appearance": "A bearded fisherman."},
    "E4": {"name": "lamp", "kind": "prop", "states": {"dark": "An unlit brass lamp.",
                                                       "lit": "A brass lamp, burning."},
           "initial_state": "dark"},
    "E5": {"name": "stones", "kind": "prop", "appearance": "Grey round stones."},
    "E6": {"name": "bell", "kind": "prop", "appearance": "A ship's bell."},
    "E7": {"name": "net", "kind": "prop", "appearance": "A fishing net."},
    "E8": {"name": "Harbour", "kind": "location", "appearance": "A small stone harbour."},
}
FEATURES = {"E1": "red scarf", "E2": "blue scarf"}


def _gold(cast: list[dict], lookalike: bool = True) -> dict:
    seg = {"segment_id": "seg_001", "cast": cast, "forbidden": []}
    if lookalike:
        seg["lookalike_active"] = [{"pair": ["E1", "E2"], "features": FEATURES,
                                    "present_members": ["E1", "E2"]}]
    return {"story_id": SID, "entities": ENTITIES, "segments": [seg]}


def _story(gold: dict) -> tuple[Story, Segment]:
    seg = gold["segments"][0]
    cast = tuple(CastEntry(c["eid"], c["op"], state=(c.get("state") or {}).get("label"),
                           state_appearance=(c.get("state") or {}).get("appearance"),
                           flashback=bool((c.get("state") or {}).get("flashback")),
                           count=c.get("count")) for c in seg["cast"])
    active = tuple(LookalikeActive(tuple(a["pair"]), tuple(a["present_members"]),
                                   a["features"]) for a in seg.get("lookalike_active", []))
    segment = Segment(SID, 1, "S1", 5.0, "cut", "", "", cast=cast, lookalike_active=active)
    ents = {eid: Entity(eid, e["kind"], e["name"], e.get("appearance", ""),
                        e.get("states", {}), e.get("initial_state"))
            for eid, e in ENTITIES.items()}
    return Story(SID, 9, "", (segment,), ents), segment


TWINS = [{"eid": "E1", "op": "introduce"}, {"eid": "E2", "op": "introduce"},
         {"eid": "E3", "op": "introduce"}]


def _verdict(gold: dict, answer: dict) -> tb.SegmentVerdict:
    story, segment = _story(gold)
    r = build_roster(gold, 0, seed=0)
    return segment_verdict(story, segment, r, read_answer(answer, r))


def _answer(r, picks: dict[str, object], **fields) -> dict:
    """Every cast twin present, instance_match = the label of the picked gold id."""
    items = []
    for lab in r.labels:
        eid = r.eid_of(lab)
        item = {"entity_id": lab, "present": eid in ("E1", "E2", "E3"), **fields.get(eid, {})}
        if eid in picks:
            pick = picks[eid]
            item["instance_match"] = r.label_of(pick) if isinstance(pick, str) else pick
        items.append(item)
    return {"items": items}


# ------------------------------------------------------------------ item 1: look-alike


@pytest.mark.parametrize(("picks", "correct", "wrong"), [
    # official _tally: im == eid -> correct; elif im in pair -> wrong; else neither.
    # E1 names the third entity E3 (neither), E2 names its twin E1 (wrong): 0/2, 1/2
    ({"E1": "E3", "E2": "E1"}, 0.0, 0.5),
    # E1 names itself (correct), E2 names E3 (neither): 1/2 correct, 0/2 wrong
    ({"E1": "E1", "E2": "E3"}, 0.5, 0.0),
    # both name the third entity: 0/2 and 0/2 (vidmem counted 2/2 wrong before)
    ({"E1": "E3", "E2": "E3"}, 0.0, 0.0),
    # boolean form: false is the look-alike (wrong), true the entity itself: 1/2, 1/2
    ({"E1": False, "E2": True}, 0.5, 0.5),
])
def test_a_third_entity_is_not_the_wrong_instance(picks, correct, wrong):
    gold = _gold(TWINS)
    r = build_roster(gold, 0, seed=0)
    fam = tb.family_rates([_verdict(gold, _answer(r, picks))])["lookalike"].rates
    assert fam["correct_instance_rate"].denominator == 2
    assert fam["correct_instance_rate"].value == correct
    assert fam["wrong_instance_rate"].value == wrong


def _official_lookalike(answer: dict, r, pair=("E1", "E2")) -> tuple[int, int, int]:
    """The official tally of cap.lookalike on one voted answer (gold ids)."""
    by_eid = {r.eid_of(it["entity_id"]): it for it in answer["items"]}
    tot = correct = wrong = 0
    for eid in pair:  # both present members
        it = by_eid.get(eid, {})
        if it.get("present") is True:
            tot += 1
            im = it.get("instance_match")
            im = r.eid_of(im) if isinstance(im, str) else im
            if im == eid:
                correct += 1
            elif im in pair:
                wrong += 1
    return tot, correct, wrong


def test_lookalike_rates_equal_the_official_tally_on_random_answers():
    gold = _gold(TWINS)
    r = build_roster(gold, 0, seed=0)
    rng = random.Random(24)
    differ_from_old_rule = 0
    for _ in range(120):
        picks = {e: rng.choice([*r.labels, None]) for e in ("E1", "E2")}
        answer = {"items": [{"entity_id": lab, "present": rng.choice([True, True, False]),
                             **({"instance_match": picks[r.eid_of(lab)]}
                                if r.eid_of(lab) in picks and picks[r.eid_of(lab)] else {})}
                            for lab in r.labels]}
        tot, correct, wrong = _official_lookalike(answer, r)
        fam = tb.family_rates([_verdict(gold, answer)])["lookalike"].rates
        assert (fam["correct_instance_rate"].numerator, fam["wrong_instance_rate"].numerator,
                fam["wrong_instance_rate"].denominator) == (correct, wrong, tot)
        old_wrong = sum(1 for it in answer["items"] if r.eid_of(it["entity_id"]) in ("E1", "E2")
                        and it["present"] is True and it.get("instance_match")
                        and r.eid_of(it["instance_match"]) != r.eid_of(it["entity_id"]))
        differ_from_old_rule += old_wrong != wrong
    assert differ_from_old_rule > 20  # the sets do tell the two rules apart


# ------------------------------------------------------------------ item 2: every state


@pytest.mark.parametrize(("op", "family"), [("introduce", "persistent_state"),
                                            ("recall", "persistent_state"),
                                            ("recall_after_gap", "persistent_state"),
                                            ("transform", "state_change"),
                                            ("persist", "persistent_state")])
def test_every_non_flashback_state_is_asked_and_scored(op, family):
    state = {"label": "lit", "appearance": "A brass lamp, burning."}
    gold = _gold([{"eid": "E4", "op": op, "state": state}], lookalike=False)
    r = build_roster(gold, 0, seed=0)
    assert r.line(r.label_of("E4")).state_cue == "A brass lamp, burning."
    answer = {"items": [{"entity_id": lab, "present": r.eid_of(lab) == "E4",
                         "state": "changed" if r.eid_of(lab) == "E4" else None}
                        for lab in r.labels]}
    fam = tb.family_rates([_verdict(gold, answer)])
    # official _tally: a non-flashback state judged present -> tot 1, 'changed' -> ok 1
    assert (fam[family].headline.numerator, fam[family].headline.denominator) == (1, 1)
    other = "state_change" if family == "persistent_state" else "persistent_state"
    assert fam[other].headline.denominator == 0


def test_a_flashback_state_is_presence_only():
    state = {"label": "dark", "appearance": "An unlit brass lamp.", "flashback": True}
    gold = _gold([{"eid": "E4", "op": "recall", "state": state}], lookalike=False)
    r = build_roster(gold, 0, seed=0)
    assert r.line(r.label_of("E4")).state_cue is None
    fam = tb.family_rates([_verdict(gold, {"items": [{"entity_id": r.label_of("E4"),
                                                       "present": True, "state": "changed"}]})])
    assert fam["persistent_state"].headline.denominator == 0
    assert fam["state_change"].headline.denominator == 0


# ------------------------------------------------------------------ item 3: tolerant items


def _request(gold: dict):
    return segment_request(gold, 0, FRAMES, seed=0, condition="none", plot="x", n_frames=1)


def test_one_loosely_typed_field_costs_only_its_entity():
    cast = [*TWINS, {"eid": "E5", "op": "introduce", "count": 3},
            {"eid": "E4", "op": "transform", "state": {"label": "lit", "appearance": "A lamp."}}]
    gold = _gold(cast)
    req, r = _request(gold)
    loose = {"E1": {"present": "yes"}, "E2": {"present": 1}, "E3": {"present": " TRUE "},
             "E5": {"present": "true", "count": "3 stones"},
             "E4": {"present": "1", "state": "Changed"}}
    items = [{"entity_id": lab, "present": False, **loose.get(r.eid_of(lab), {})}
             for lab in r.labels]
    items.append({"entity_id": 7, "present": "maybe"})  # an integer id: foreign, counted
    items.append("R1 is there")  # not an object: skipped, as the reference does
    data = {"items": items, "extra": [3]}
    assert request_problem(req, data) == ""  # the judge layer keeps the answer
    j = read_answer(data, r)
    assert not j.flagged and j.n_unknown == 1
    assert {e for e in ("E1", "E2", "E3", "E4", "E5") if j.entities[e].present is True} == \
        {"E1", "E2", "E3", "E4", "E5"}  # _norm_present: yes / 1 / ' TRUE ' / 'true' / '1'
    assert j.entities["E5"].count == 3  # _norm_count('3 stones')
    assert j.entities["E4"].state == "changed"
    # a field the reference cannot read abstains that entity only
    data = {"items": [{"entity_id": r.label_of("E1"), "present": "perhaps"},
                      {"entity_id": r.label_of("E2"), "present": True},
                      {"entity_id": r.label_of("E5"), "present": True, "count": 3.0},
                      {"entity_id": r.label_of("E3"), "present": True, "count": [1]}]}
    assert request_problem(req, data) == ""
    j = read_answer(data, r)
    assert j.entities["E1"].present == "abstain" and j.entities["E2"].present is True
    assert j.entities["E5"].count == 3  # _norm_count(3.0): the first integer of '3.0'
    assert not j.flagged


def test_nan_is_still_refused():
    gold = _gold(TWINS)
    req, r = _request(gold)
    text = '{"items": [{"entity_id": "' + r.labels[0] + '", "present": true, "count": NaN}]}'
    data, why = read_reply(JudgeReply(text, "stop"), ("items",), token_limit="max_tokens",
                           answer_model=req.answer_model, accept=req.accept)
    assert data is None and why


def test_the_schema_sent_stays_strict():
    schema = segment_answer_model(["R2", "R1"]).model_json_schema()
    item = schema["$defs"]["SegmentItem"]
    assert item["required"] == ["entity_id", "present"]
    assert item["properties"]["entity_id"] == {"enum": ["R1", "R2"], "title": "Entity Id",
                                               "type": "string"}
    assert item["properties"]["present"]["anyOf"] == [{"type": "boolean"},
                                                      {"const": "abstain", "type": "string"}]
    assert item["properties"]["count"]["anyOf"][0] == {"type": "integer"}
    assert item["properties"]["state"]["anyOf"][0]["enum"] == ["changed", "default", "abstain"]
    assert schema["properties"]["extra"]["items"] == {"type": "string"}


class _StrictItem(BaseModel):
    """The answer item as its JSON schema states it (the pre-issue-24 validation)."""

    model_config = ConfigDict(extra="ignore")
    entity_id: str
    present: bool | Literal["abstain"]
    state: Literal["changed", "default", "abstain"] | None = None
    count: int | Literal["abstain"] | None = None
    instance_match: str | bool | None = None


class _StrictAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")
    items: list[_StrictItem]
    extra: list[str] = Field(default_factory=list)


def _random_valid_answer(rng: random.Random, labels: tuple[str, ...]) -> dict:
    items = []
    for lab in rng.sample(labels, rng.randint(1, len(labels))):
        item: dict = {"entity_id": lab, "present": rng.choice([True, False, "abstain"])}
        for key, values in (("state", ["changed", "default", "abstain", None]),
                            ("count", [0, 1, 2, 3, 7, "abstain", None]),
                            ("instance_match", [*labels, None, True, False])):
            if rng.random() < 0.6:
                item[key] = rng.choice(values)
        items.append(item)
    answer: dict = {"items": items}
    if rng.random() < 0.5:
        answer["extra"] = rng.sample(["a gull", "a boat", "rain"], rng.randint(0, 2))
    return answer


def _strict_reading(data: dict, r) -> dict[str, tuple]:
    """What a valid answer says per entity, read with no tolerance at all."""
    by_label = {it["entity_id"]: it for it in data["items"]}
    out = {}
    for line in r.lines:
        eid = r.eid_of(line.label)
        it = by_label.get(line.label)
        if it is None:
            out[eid] = ("abstain", None, None, None)
            continue
        state = it.get("state") if line.state_cue and it.get("state") != "abstain" else None
        count = it.get("count") if line.count_cue and isinstance(it.get("count"), int) else None
        im = it.get("instance_match") if (line.features or line.lookalike) else None
        im = (eid if im is True else r.eid_of(line.lookalike) if im is False and line.lookalike
              else r.eid_of(im) if isinstance(im, str) else None)
        out[eid] = (it["present"], state, count, im)
    return out


def test_tolerant_reading_never_changes_a_valid_answer():
    cast = [*TWINS, {"eid": "E5", "op": "recall", "count": 3},
            {"eid": "E4", "op": "persist", "state": {"label": "lit", "appearance": "A lamp."}}]
    gold = _gold(cast)
    req, r = _request(gold)
    rng = random.Random(20260924)
    for _ in range(400):
        data = _random_valid_answer(rng, r.labels)
        _StrictAnswer.model_validate(data, strict=True)  # valid by the strict rules
        assert request_problem(req, data) == ""
        lenient = req.answer_model.model_validate(data, strict=True)
        assert lenient.model_dump(include={"items"}, exclude_unset=True) == \
            {"items": data["items"]}  # nothing coerced
        j = read_answer(data, r)
        assert not j.flagged
        got = {eid: (e.present, e.state, e.count, e.instance_match)
               for eid, e in j.entities.items()}
        assert got == _strict_reading(data, r)


# ------------------------------------------------------------------ issue 23 item 2


def test_an_answer_naming_no_roster_label_is_unusable():
    gold = _gold(TWINS)
    req, r = _request(gold)
    assert req.accept is not None and req.contract == "vmem_track_b/segment@2"
    for data in ({"items": []},
                 {"items": [{"entity_id": "E1", "present": True},
                            {"entity_id": "char_001", "present": False}]},
                 {"items": [{"present": True}]}):
        assert request_problem(req, data) != "", data
        assert read_answer(data, r).flagged
    ok = {"items": [{"entity_id": r.labels[0], "present": True},
                    {"entity_id": "E1", "present": True}]}
    assert request_problem(req, ok) == "" and not read_answer(ok, r).flagged
    # the check travels to worker processes
    accept = pickle.loads(pickle.dumps(req.accept))
    assert isinstance(accept, functools.partial) and accept({"items": []}) != ""
    assert accept(ok) == "" and answer_problem(ok, r.labels) == ""
