"""MIST container cards: well formed, every family, their prompt audit catches target leaks."""

from __future__ import annotations

import copy
import json

import pytest

from vidmem.benchmarks.mist.sim_build import CLEAN_PROMPTS, FAMILIES, audit_card, card_prompts
from vidmem.runners.sim_build import build

CARD_KEYS = {"case_id", "family", "family_name", "actor", "objects", "containers", "operations",
             "reveal", "target", "shots", "reveal_prompts", "task_record", "audit"}


@pytest.fixture(scope="module")
def mist(tmp_path_factory):
    root = tmp_path_factory.mktemp("sim_mist")
    summary = build("mist", root, seed=0, n_cases=9)
    rows = [json.loads(x) for x in (root / "cases.jsonl").read_text("utf-8").splitlines()]
    return root, summary, rows


def test_cards_are_well_formed(mist):
    root, summary, rows = mist
    assert summary.extras["families"] == {"R0": 3, "R1": 3, "R2": 3} and summary.n_items == 9
    assert [r["case_id"] for r in rows] == [f"mist_s0_{k:03d}" for k in range(9)]
    for r in rows:
        assert set(r) == CARD_KEYS and FAMILIES[r["family"]] == r["family_name"]
        assert [(s["shot"], s["duration_sec"]) for s in r["shots"]] == [
            ("setup", 5.0), ("gap", 5.0), ("reveal", 5.0)]
        assert r["shots"][2]["prompt"] == r["reveal_prompts"]["baseline"]
        assert set(r["reveal_prompts"]) == {"baseline", "answer_only", "open_and_hold"}
        ids = {c["id"] for c in r["containers"]}
        assert r["reveal"] in ids and r["target"]["container"] == r["reveal"]
        for c in r["containers"]:
            assert c["kind"] in ("sim_asset", "drawn_box")
            assert c.get("asset") in ("cup", "blue_cup") if c["kind"] == "sim_asset" else c["colour"]
        objects = {o["id"] for o in r["objects"]}
        assert all(op["object"] in objects and op["to"] in ids for op in r["operations"])
        assert set(r["task_record"]) == {"actor", "object", "binding", "operation",
                                         "required_last_frame_evidence"}
        assert r["audit"]["ok"] and r["audit"]["violations"] == []
        assert r["audit"]["must_not_mention"] == list(CLEAN_PROMPTS)
        # The truth's final contents are the card's target.
        truth = json.loads((root / "_truth" / f"{r['case_id']}.json").read_text("utf-8"))
        inside = truth["final_contents"][r["reveal"]]
        assert [(truth["objects"][c["object"]], c["count"]) for c in r["target"]["contents"]] == [
            (x["asset"], x["count"]) for x in inside]
    by_family = {f: [r for r in rows if r["family"] == f] for f in FAMILIES}
    assert all(len(r["containers"]) == 1 for r in by_family["R0"])
    assert all(len(r["objects"]) == 2 and len(r["containers"]) == 2 for r in by_family["R1"])
    assert all([op["op"] for op in r["operations"]] == ["put", "move"] for r in by_family["R2"])


def test_the_audit_catches_a_leaked_target_word(mist):
    _, _, rows = mist
    for r in rows:
        terms = r["audit"]["target_terms"]
        assert terms and r["audit"]["answer_states_target"]
        assert all(not r["audit"]["mentions"][p] for p in CLEAN_PROMPTS)
        for place, leak in (("gap", f" Inside sits {terms[-1].upper()}."),
                            ("reveal_baseline", f" It holds {terms[0]}.")):
            bad = copy.deepcopy(r)
            if place == "gap":
                bad["shots"][1]["prompt"] += leak
            else:
                bad["reveal_prompts"]["baseline"] += leak
            audit = audit_card(bad)
            assert not audit["ok"] and audit["violations"] == [place], (r["case_id"], audit)
        # Words that merely contain a target term do not count ("once" is not "one").
        near = copy.deepcopy(r)
        near["shots"][1]["prompt"] += " The camera waits once more, nothingness aside."
        assert audit_card(near)["ok"]
    names = card_prompts(rows[0])
    assert list(names) == ["setup", "gap", "reveal_baseline", "reveal_answer_only",
                           "reveal_open_and_hold"]


def test_same_seed_same_bytes(tmp_path, mist):
    root, _, _ = mist
    build("mist", tmp_path / "a", seed=0, n_cases=9)
    assert (tmp_path / "a" / "cases.jsonl").read_bytes() == (root / "cases.jsonl").read_bytes()
    build("mist", tmp_path / "b", seed=1, n_cases=9)
    assert (tmp_path / "b" / "cases.jsonl").read_bytes() != (root / "cases.jsonl").read_bytes()
