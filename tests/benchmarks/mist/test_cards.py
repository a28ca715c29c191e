"""MIST case cards: the sim builder's cards load; broken copies report every problem."""

from __future__ import annotations

import copy
import json

import pytest

from vidmem.benchmarks.mist.cards import load_cards, validate_cards, yaml_available
from vidmem.benchmarks.mist.schema import Card
from vidmem.errors import UserInputError
from vidmem.runners.sim_build import build


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    root = tmp_path_factory.mktemp("mist_cards")
    build("mist", root, seed=0, n_cases=9)
    rows = [json.loads(x) for x in (root / "cases.jsonl").read_text("utf-8").splitlines()]
    return root, rows


def _write(root, rows):
    root.mkdir(parents=True, exist_ok=True)
    (root / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return root


def _fields(report):
    return {(p.where, p.field, p.severity) for p in report.problems}


def test_sim_cards_load_clean(sim):
    root, rows = sim
    report = validate_cards(root)
    assert report.ok and not report.problems, report.format()
    assert report.n_rows == 9 and [c.case_id for c in report.cards] == [r["case_id"] for r in rows]
    cards = load_cards(root)
    assert {c.family for c in cards} == {"R0", "R1", "R2"}
    assert cards[0].arm_prompts()["baseline"] == rows[0]["shots"][2]["prompt"]
    assert cards[0].operations == [] or cards[0].operations[0].from_ is None


def test_json_list_and_single_file(sim, tmp_path):
    _, rows = sim
    (tmp_path / "a.json").write_text(json.dumps(rows[:2]), "utf-8")
    (tmp_path / "b.json").write_text(json.dumps({"cases": rows[2:4]}), "utf-8")
    (tmp_path / "c.json").write_text(json.dumps(rows[4]), "utf-8")
    (tmp_path / "_skip").mkdir()
    (tmp_path / "_skip" / "x.json").write_text("not json", "utf-8")
    report = validate_cards(tmp_path)
    assert report.ok and len(report.cards) == 5
    assert len(validate_cards(tmp_path / "c.json").cards) == 1


def test_another_benchmarks_json_beside_the_cards_is_one_clear_error_per_file(sim, tmp_path):
    # a Track-B build in the same folder: gold stories and prompts, none a MIST card
    _, rows = sim
    root = _write(tmp_path / "SIM", rows[:2])
    (root / "gt").mkdir()
    (root / "gt" / "0001_sim_s0.json").write_text(json.dumps({"story_id": "s", "segments": []}))
    (root / "sut_prompts").mkdir()
    (root / "sut_prompts" / "0001.json").write_text(json.dumps([{"segment_id": "seg_001"}]))
    report = validate_cards(root)
    assert not report.ok
    assert _fields(report) == {("gt/0001_sim_s0.json", "", "error"),
                               ("sut_prompts/0001.json", "", "error")}
    assert all("not a MIST card file" in p.message and "a folder of their own" in p.message
               for p in report.problems)
    # a card with a field wrong is still a card: its errors are the card's own
    broken = {k: v for k, v in rows[0].items() if k != "shots"}
    (root / "gt" / "0001_sim_s0.json").write_text(json.dumps(broken))
    assert ("gt/0001_sim_s0.json [" + rows[0]["case_id"] + "]", "shots", "error") in \
        _fields(validate_cards(root))


@pytest.mark.skipif(not yaml_available(), reason="PyYAML not installed")
def test_yaml_cards(sim, tmp_path):
    import yaml

    _, rows = sim
    (tmp_path / "cards.yaml").write_text(yaml.safe_dump(rows[:3]), "utf-8")
    report = validate_cards(tmp_path)
    assert report.ok and len(report.cards) == 3


def test_yaml_without_pyyaml_is_an_error(sim, tmp_path, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_yaml(name, *a, **k):
        if name == "yaml":
            raise ImportError("no yaml")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_yaml)
    (tmp_path / "cards.yml").write_text("case_id: x\n", "utf-8")
    report = validate_cards(tmp_path)
    assert not report.ok and "PyYAML is not installed" in report.problems[0].message
    assert not yaml_available()


def test_broken_copies_report_every_problem_by_file_and_field(sim, tmp_path):
    _, rows = sim
    bad = copy.deepcopy(rows[:6])
    r0 = next(r for r in bad if r["family"] == "R0" and r["operations"])
    r1 = next(r for r in bad if r["family"] == "R1")
    r2 = next(r for r in bad if r["family"] == "R2")
    del r0["actor"]                                   # missing field
    r0["target"]["contents"][0]["count"] += 1         # s* disagrees with the history
    r1["shots"] = [r1["shots"][1], r1["shots"][0], r1["shots"][2]]  # wrong order
    r1["operations"][0]["to"] = "Z"                   # unknown container
    r1["family_name"] = "history_update"
    r2["operations"][1]["from"] = None                # a move without from
    r2["reveal_prompts"]["answer_onyl"] = "typo arm"  # unknown arm: warning
    r2["shots"][0]["duration_sec"] = 4.0              # warning
    bad[5]["case_id"] = bad[4]["case_id"]             # duplicate id
    report = validate_cards(_write(tmp_path / "bad", bad))
    got = _fields(report)
    w = {r["case_id"]: f"cases.jsonl [{r['case_id']}]" for r in bad}
    assert (w[r0["case_id"]], "actor", "error") in got
    assert (w[r1["case_id"]], "shots", "error") in got
    assert (w[r1["case_id"]], "operations[0].to", "error") in got
    assert (w[r1["case_id"]], "family_name", "error") in got
    assert (w[r2["case_id"]], "operations[1].from", "error") in got
    assert (w[r2["case_id"]], "reveal_prompts.answer_onyl", "warning") in got
    assert (w[r2["case_id"]], "shots[0].duration_sec", "warning") in got
    assert (w[bad[5]["case_id"]], "case_id", "error") in got
    msg = next(p.message for p in report.problems if p.field == "reveal_prompts.answer_onyl")
    assert "did you mean 'answer_only'" in msg
    assert not report.cards and report.n_rows == 6
    lines = {p.line for p in report.problems}
    assert lines <= set(range(1, 7))
    with pytest.raises(UserInputError, match="do not load"):
        load_cards(tmp_path / "bad")


def test_target_must_follow_from_history(sim, tmp_path):
    _, rows = sim
    card = copy.deepcopy(next(r for r in rows if r["family"] == "R0" and r["operations"]))
    card["target"]["contents"][0]["count"] += 1
    report = validate_cards(_write(tmp_path / "t", [card]))
    p = next(p for p in report.problems if p.field == "target.contents")
    assert p.severity == "error" and "the operations leave" in p.message


def test_unparseable_lines_and_empty_root(tmp_path):
    root = tmp_path / "x"
    root.mkdir()
    assert not validate_cards(root).ok
    (root / "cases.jsonl").write_text('{"case_id": "a"}\nnot json\n[1]\n', "utf-8")
    report = validate_cards(root)
    where = {(p.where, p.line) for p in report.problems}
    assert ("cases.jsonl [line 2]", 2) in where and ("cases.jsonl [line 3]", 3) in where
    assert any(p.where == "cases.jsonl [a]" and p.field == "family" for p in report.problems)


def test_unknown_field_warns(sim, tmp_path):
    _, rows = sim
    card = copy.deepcopy(rows[0])
    card["targte"] = {}
    card["objects"][0]["colur"] = "red"
    report = validate_cards(_write(tmp_path / "u", [card]))
    assert report.ok
    assert {p.field for p in report.warnings} == {"targte", "objects[0].colur"}


def test_schema_round_trip(sim):
    _, rows = sim
    card = Card.model_validate(rows[1])
    dumped = card.model_dump(by_alias=True)
    assert "from" in dumped["operations"][0] and dumped["operations"][0]["from"] is None
    assert Card.model_validate(dumped) == card
