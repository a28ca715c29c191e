"""The Track-B judge question: blinded seeded rosters, the prompt, reading the answer."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from vidmem.benchmarks.vmem_track_b.answers import read_answer, segment_answer_model
from vidmem.benchmarks.vmem_track_b.question import (
    PROTOCOL,
    clip_frames,
    segment_prompt,
    segment_request,
)
from vidmem.benchmarks.vmem_track_b.roster import APPEARANCE_CHARS, ROLES, build_roster
from vidmem.benchmarks.vmem_track_b.sim_build import build_track_b
from vidmem.errors import UserInputError
from vidmem.generators.protocol import GenerationRequest
from vidmem.generators.sim import SimGenerator
from vidmem.models.backends.judge_common import JudgeReply, read_reply
from vidmem.models.backends.judge_sim_cards import SimCardJudge
from vidmem.sim.cards import write_card_deck

SAMPLE = Path(__file__).parent / "data" / "vmem_track_b_sample" / "gt" / "0001_lighthouse_keeper.json"
FRAMES = np.zeros((80, 36, 48, 3), np.uint8)  # 5 s at 16 fps
PAYLOAD_KEYS = {"entity_id", "name", "kind", "appearance", "states", "count", "lookalike"}


@pytest.fixture(scope="module")
def gold() -> dict:
    return json.loads(SAMPLE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def sim_story(tmp_path_factory) -> tuple[Path, dict, dict]:
    root = tmp_path_factory.mktemp("trackb_story")
    build_track_b(root, seed=0, n_cases=1, n_segments=14, gap_long_threshold=8)
    sid = "0001_sim_s0"
    gt = json.loads((root / "gt" / f"{sid}.json").read_text("utf-8"))
    prompts = json.loads((root / "sut_prompts" / f"{sid}_name_anchored.json").read_text("utf-8"))
    return root, gt, prompts


def _strip_story_text(prompt: str, roster, plot: str) -> str:
    """The prompt without the story's own prose (appearances, cues, plot)."""
    prompt = prompt.replace(plot, " ")
    for line in roster.lines:
        for text in (line.state_cue, line.features, line.appearance, line.name):
            if text:
                prompt = prompt.replace(text, " ")
    return prompt


def _stories(gold, sim_story):
    return [gold, sim_story[1]]


def test_the_prompt_and_payload_are_blind(gold, sim_story):
    for story in _stories(gold, sim_story):
        eids = set(story["entities"])
        labels_of_states = {lab for e in story["entities"].values() for lab in e.get("states", {})}
        for k, seg in enumerate(story["segments"]):
            req, roster = segment_request(story, k, FRAMES, seed=3, condition="no_memory")
            text = req.prompt
            assert not [e for e in eids if re.search(rf"\b{e}\b", text)], seg["segment_id"]
            bare = _strip_story_text(text, roster, " ".join(seg.get("action", "").split()))
            for word in ("forbidden", "decoy", "false friend", "false_friend", "lookalike",
                         "destroyed", "deceased"):
                assert word not in bare.lower(), (seg["segment_id"], word)
            assert not [s for s in labels_of_states if re.search(rf"\b{s}\b", bare)]
            # the payload holds the lines as the card allows, with blind labels only
            lines = req.payload["roster"]
            assert set(req.payload) == {"roster"}
            assert [ln["entity_id"] for ln in lines] == list(roster.labels)
            for ln in lines:
                assert set(ln) <= PAYLOAD_KEYS
                assert ln.get("count", True) is True
                assert set(ln.get("states", {})) <= {"changed", "default"}
                assert ln.get("lookalike", roster.labels[0]) in roster.labels
                assert not eids & {v for v in ln.values() if isinstance(v, str)} - set(roster.labels)
            assert roster.labels == tuple(f"R{i + 1}" for i in range(len(lines)))


def test_roster_members_roles_decoys_and_appearance(gold, sim_story):
    for story in _stories(gold, sim_story):
        for k, seg in enumerate(story["segments"]):
            r = build_roster(story, k, seed=0)
            cast = {c["eid"] for c in seg["cast"]}
            forbidden = {f["eid"] for f in seg["forbidden"]}
            roles = {r.eid_of(lab): r.role_of(lab) for lab in r.labels}
            assert set(roles.values()) <= set(ROLES)
            assert {e for e, role in roles.items() if role in ("required", "location")} == cast
            assert {e for e, role in roles.items() if role == "forbidden"} == forbidden
            decoys = set(r.eids("decoy"))
            assert not decoys & (cast | forbidden)
            # 5 when the story has enough other entities; fewer than 3 only in tiny stories
            assert len(decoys) == min(5, r.decoy_pool)
            assert 3 <= len(decoys) <= 5 or r.decoy_pool < 3
            assert len(roles) == len(r.labels)  # each entity once
            assert all(len(line.appearance) <= APPEARANCE_CHARS for line in r.lines)
    # the false-friend target (old Petrel) joins the roster when a new boat is introduced
    seg40 = build_roster(gold, "seg_040", seed=0)
    assert "E5" in seg40.eids("false_friend_target")


def test_cues_follow_the_gold(gold):
    r = build_roster(gold, "seg_028", seed=0)  # ship's log persists salt-weathered
    log = r.line(r.label_of("E3"))
    assert log.state_cue and log.state_cue.startswith("The same ship's log salt-bleached")
    assert log.payload()["states"]["default"].startswith("A thick old ledger")
    r = build_roster(gold, "seg_002", seed=0)  # five spare oil lamps: count asked, not told
    lamps = r.line(r.label_of("E15"))
    assert lamps.count_cue and lamps.payload()["count"] is True
    r = build_roster(gold, "seg_018", seed=0)  # Lena on screen, twin Mara absent
    lena, mara = r.line(r.label_of("E6")), r.line(r.label_of("E2"))
    assert lena.lookalike == mara.label and mara.lookalike == lena.label and lena.features
    assert (min(lena.label, mara.label), max(lena.label, mara.label)) in {
        tuple(sorted(p)) for p in r.pairs}


def test_rosters_are_seeded_shuffled_and_independent_of_order(gold):
    n = len(gold["segments"])
    first = [build_roster(gold, k, seed=0).describe() for k in range(n)]
    backwards = [build_roster(gold, k, seed=0).describe() for k in reversed(range(n))][::-1]
    assert first == backwards
    other = [build_roster(gold, k, seed=1).describe() for k in range(n)]
    orders = sum([ln["eid"] for ln in a["lines"]] != [ln["eid"] for ln in b["lines"]]
                 for a, b in zip(first, other, strict=True))
    decoys = sum({ln["eid"] for ln in a["lines"] if ln["role"] == "decoy"}
                 != {ln["eid"] for ln in b["lines"] if ln["role"] == "decoy"}
                 for a, b in zip(first, other, strict=True))
    assert orders >= 0.9 * n and decoys >= 0.8 * n
    # shuffled: the cast is not listed first, and the gold ids are not in order
    cast_first = sum(all(ln["role"] in ("required", "location") for ln in d["lines"][:2])
                     for d in first)
    ordered = sum([ln["eid"] for ln in d["lines"]] == sorted(ln["eid"] for ln in d["lines"])
                  for d in first)
    assert cast_first < 0.5 * n and ordered <= 2


def test_bad_input_is_refused(gold):
    with pytest.raises(UserInputError, match="segment index"):
        build_roster(gold, 999, seed=0)
    with pytest.raises(UserInputError, match="no segment"):
        build_roster(gold, "seg_999", seed=0)
    with pytest.raises(UserInputError, match="seed"):
        build_roster(gold, 0, seed="0")
    broken = {**gold, "segments": [{"segment_id": "seg_001", "cast": [{"eid": "E99"}]}]}
    with pytest.raises(UserInputError, match="E99"):
        build_roster(broken, 0, seed=0)
    with pytest.raises(UserInputError, match="condition"):
        segment_request(gold, 0, FRAMES, seed=0, condition="")


def test_request_contract_frames_and_protocol(gold):
    req, r = segment_request(gold, "seg_005", FRAMES, seed=0, condition="last_seen",
                             plot="Elias polishes the lens.")
    assert req.item_id == "0001_lighthouse_keeper/last_seen/seg_005"
    assert req.contract == "vmem_track_b/segment@2" and req.required_keys == ("items",)
    assert len(req.images) == 10 and "Elias polishes the lens." in req.prompt
    schema = req.answer_model.model_json_schema()
    assert schema["$defs"]["SegmentItem"]["properties"]["entity_id"]["enum"] == sorted(r.labels)
    assert segment_prompt().describe()["contract"] == "vmem_track_b/segment@2"
    assert len(clip_frames(FRAMES, 4)) == 4
    for rule, entry in PROTOCOL.items():
        assert set(entry) == {"value", "reason", "source"} and all(v not in ("", None) for v in entry.values()), rule


def _items(r, present, **extra):
    return [{"entity_id": lab, "present": present(lab), **extra} for lab in r.labels]


def test_tolerant_parsing_and_abstain_accounting(gold):
    r = build_roster(gold, "seg_028", seed=0)
    model = segment_answer_model(r.labels)
    log, lens = r.label_of("E3"), r.label_of("E4")
    # prose, a code fence, single quotes and trailing commas: read by the judge layer
    body = ", ".join(f"{{'entity_id': '{lab}', 'present': {'true' if lab in (log, lens) else 'false'},"
                     f" 'state': {'changed' if lab == log else None!r},}}" for lab in r.labels)
    text = "Here you go:\n```json\n{'items': [" + body + \
        ",], 'extra': ['a gull',],}\n```"
    data, why = read_reply(JudgeReply(text.replace("None", "null"), "stop"), ("items",),
                           token_limit="max_tokens", answer_model=model)
    assert why == "", why
    j = read_answer(data, r)
    assert not j.flagged and j.n_abstain == 0 and j.n_missing == 0 and j.n_unknown == 0
    assert j.present() == {"E3", "E4"} and j.entities["E3"].state == "changed"
    assert j.entities["E4"].state is None  # no state cue on that line

    # missing entities abstain; unknown labels are ignored and counted; last duplicate wins
    items = _items(r, lambda lab: True)[:3] + [{"entity_id": "R99", "present": True},
                                               {"entity_id": r.labels[0], "present": False}]
    j = read_answer({"items": items}, r)
    assert j.n_missing == len(r.labels) - 3 and j.n_unknown == 1 and j.n_duplicate == 1
    assert j.n_abstain == len(r.labels) - 3 and not j.flagged
    assert j.entities[r.eid_of(r.labels[0])].present is False
    assert [e.present for e in j.entities.values()].count("abstain") == j.n_abstain

    # spelled booleans and counts from a judge without a schema
    j = read_answer({"items": [{"entity_id": r.labels[0], "present": "yes"},
                               {"entity_id": r.labels[1], "present": "maybe"}]}, r)
    assert j.entities[r.eid_of(r.labels[0])].present is True
    assert j.entities[r.eid_of(r.labels[1])].present == "abstain"

    # unusable: nothing parsed (after the retry), or no item -> every entity abstains, flagged
    data, why = read_reply(JudgeReply("I cannot tell.", "stop"), ("items",),
                           token_limit="max_tokens", answer_model=model)
    assert data is None and why
    for unusable in (None, {"items": []}, {"verdict": "x"}):
        j = read_answer(unusable, r)
        assert j.flagged and j.n_abstain == len(r.labels) and j.n_missing == 0
        assert {e.role for e in j.entities.values()} == {r.role_of(lab) for lab in r.labels}


def test_instance_match_and_count_are_read(gold):
    r = build_roster(gold, "seg_018", seed=0)
    lena, mara = r.label_of("E6"), r.label_of("E2")
    j = read_answer({"items": [{"entity_id": lena, "present": True, "instance_match": lena},
                               {"entity_id": mara, "present": False, "instance_match": True}]}, r)
    assert j.entities["E6"].instance_match == "E6" and j.entities["E2"].instance_match == "E2"
    j = read_answer({"items": [{"entity_id": lena, "present": True, "instance_match": False}]}, r)
    assert j.entities["E6"].instance_match == "E2"
    r = build_roster(gold, "seg_002", seed=0)
    lamps = r.label_of("E15")
    j = read_answer({"items": [{"entity_id": lamps, "present": True, "count": "5 lamps"}]}, r)
    assert j.entities["E15"].count == 5


@pytest.mark.slow  # renders ten sim segments and judges three (~10 s)
def test_sim_cards_answers_a_sim_segment(sim_story, tmp_path):
    root, gt, prompts = sim_story
    judge = SimCardJudge(weights=write_card_deck(tmp_path / "deck"))
    gen = SimGenerator(memory="perfect", seed=0)
    sid = gt["story_id"]
    judged = {}
    for k, (seg, p) in enumerate(zip(gt["segments"][:10], prompts["segments"], strict=False)):
        res = gen.generate(GenerationRequest(f"{sid}/{seg['segment_id']}", "vmem_track_b",
                                             p["prompt"], str(tmp_path / f"{seg['segment_id']}.mp4"),
                                             fps=4.0))
        assert res.status == "ok", res.error
        if seg["segment_id"] not in ("seg_001", "seg_009", "seg_010"):
            continue
        req, roster = segment_request(gt, k, res.video_path, seed=0, condition="perfect",
                                      plot=p["prompt"])
        assert len(req.images) == 10
        answer = judge.judge(req)
        assert answer.status == "ok", answer.error
        judged[seg["segment_id"]] = (seg, read_answer(answer.data, roster))
    wrong = []
    for seg_id, (_, j) in judged.items():
        assert not j.flagged and j.n_unknown == 0 and j.n_missing == 0, seg_id
        assert {e.role for e in j.entities.values()} >= {"required", "decoy"}
        # a perfect-memory clip: the cast is on screen, everything else is not
        wrong += [(seg_id, eid) for eid, e in j.entities.items()
                  if e.present is not (e.role in ("required", "location"))]
    assert len(wrong) <= 1, wrong
    one = judged["seg_001"][1]
    assert one.entities["E3"].count == 3  # three snake signs
    ten = judged["seg_010"][1]
    assert ten.entities["E2"].state == "changed"  # Greta painted pink in this segment
    assert ten.entities["E5"].instance_match == "E5"  # the rocket, not the shuttle
