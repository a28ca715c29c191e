"""MIST prompt-channel audit: a planted gap leak is found, a clean card passes."""

from __future__ import annotations

import copy

import pytest

from vidmem.benchmarks.mist.audit import audit_card, audit_cards, find_terms, target_terms
from vidmem.benchmarks.mist.schema import ARMS, Card
from vidmem.benchmarks.mist.sim_build import plan_card


@pytest.fixture
def cards():
    return [plan_card(0, i) for i in range(12)]


def test_clean_sim_cards_pass(cards):
    report = audit_cards(cards)
    assert report.ok and not report.problems
    for a, raw in zip(report.cards, cards, strict=True):
        verdicts = {(r.arm, r.shot): r.verdict for r in a.rows}
        assert verdicts[("baseline", "gap")] == "clean"
        assert verdicts[("baseline", "reveal")] == "clean"
        assert verdicts[("open_and_hold", "reveal")] == "clean"
        assert verdicts[("answer_only", "reveal")] == "names_target"
        assert {r.arm for r in a.rows} == set(raw["reveal_prompts"])
        assert {r.shot for r in a.rows} == {"setup", "gap", "reveal"}


def test_planted_gap_leak_is_an_error(cards):
    raw = copy.deepcopy(cards[0])           # R0: target 'two snake signs'
    raw["shots"][1]["prompt"] += " Inside, TWO Snake-Signs wait."
    report = audit_cards([raw, cards[1]])
    assert not report.ok
    errors = [p for p in report.problems if p.severity == "error"]
    assert [(p.where, p.field) for p in errors] == [(raw["case_id"], "shots.gap")]
    gap_rows = [r for r in report.cards[0].rows if r.shot == "gap"]
    assert all(r.verdict == "leak" for r in gap_rows) and len(gap_rows) == 3
    assert set(gap_rows[0].terms) == {"two", "snake signs"}
    assert report.cards[1].ok


def test_baseline_and_answer_free_arms_must_not_name_target(cards):
    raw = copy.deepcopy(cards[0])
    raw["shots"][2]["prompt"] = "The cat opens the red box to show 2 snake signs."
    raw["reveal_prompts"]["baseline"] = raw["shots"][2]["prompt"]
    raw["reveal_prompts"]["target_withheld_rewrite"] = "The cat lifts the lid; two things."
    raw["reveal_prompts"]["same_sentence_resample"] = "The open red box shows two snake signs."
    raw["reveal_prompts"]["diagnosis_rewrite"] = "The cat lifts the lid and holds it up."
    report = audit_cards([raw])
    fields = {(p.field, p.severity) for p in report.problems}
    assert ("reveal_prompts.baseline", "error") in fields
    assert ("reveal_prompts.target_withheld_rewrite", "error") in fields
    assert ("reveal_prompts.diagnosis_rewrite", "warning") in fields   # should name it
    verdicts = {(r.arm, r.shot): r.verdict for r in report.cards[0].rows}
    assert verdicts[("same_sentence_resample", "reveal")] == "names_target"
    assert [r.arm for r in report.cards[0].rows][::3] == list(ARMS)


def test_setup_mentions_are_listed_not_errors(cards):
    raw = cards[0]
    a = audit_card(raw)
    setup = [r for r in a.rows if r.shot == "setup"]
    assert setup[0].verdict == "setup" and "two" in setup[0].terms and a.ok


def test_vocabulary_and_matching():
    raw = copy.deepcopy(plan_card(0, 0))
    raw["objects"][0]["colour"] = "teal"
    raw["objects"][0]["aliases"] = ["serpent badge"]
    terms = target_terms(Card.model_validate(raw))
    assert terms == ("2", "serpent badge", "snake sign", "snake signs", "teal", "two")
    assert find_terms("a stone, someone, twofold", ["one", "two"]) == ()
    assert find_terms("ONE. (two)", ["one", "two"]) == ("one", "two")
    assert find_terms("a teal-coloured lid", ["teal"]) == ("teal",)
    empty = next(plan_card(0, i) for i in range(30) if not plan_card(0, i)["target"]["contents"])
    assert target_terms(Card.model_validate(empty)) == ("empty", "nothing", "none", "zero", "0")


def test_unknown_arm_is_a_warning(cards):
    raw = copy.deepcopy(cards[1])
    raw["reveal_prompts"]["my_arm"] = "The lid opens."
    report = audit_cards([raw])
    assert report.ok
    assert [(p.field, p.severity) for p in report.problems] == [("reveal_prompts.my_arm",
                                                                 "warning")]
    assert report.to_dict()["cards"][0]["rows"][-1]["verdict"] == "unknown_arm"
