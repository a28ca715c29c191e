"""judge/sim-cards: presence, state and count from pixels, checked against the sim's truth.

The judge (:mod:`vidmem.models.backends.judge_sim_cards`) knows the sim only through the
card deck written by :func:`vidmem.sim.cards.write_card_deck`, passed as its weights.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from vidmem.benchmarks.vmem_track_b.sim_build import build_track_b
from vidmem.errors import MissingDependencyError, UserInputError
from vidmem.generators.protocol import GenerationRequest
from vidmem.generators.sim import SimGenerator
from vidmem.io.video import probe, read_frames
from vidmem.models.backends.judge_sim_cards import SimCardJudge
from vidmem.models.loading import load_backend
from vidmem.models.protocols import Judge, JudgeRequest
from vidmem.registry import BACKENDS
from vidmem.sim.cards import card_image, place_image, write_card_deck
from vidmem.sim.story_grammar import appearance_phrases

N_SEGMENTS = 14
FRAME_POSITIONS = (0.2, 0.5, 0.8)


def _roster(gt: dict, seg: dict, current: dict[str, str], rng: np.random.Generator) -> list[dict]:
    """What a Track-B judge prompt lists: cast + forbidden + one seeded decoy, shuffled."""
    ids = [c["eid"] for c in seg["cast"]] + [f["eid"] for f in seg["forbidden"]]
    rest = sorted(set(gt["entities"]) - set(ids))
    ids += [rest[int(rng.integers(len(rest)))]] if rest else []
    lookalike = {m: p for pair in gt["lookalike_pairs"] for m, p in
                 zip(pair["pair"], pair["pair"][::-1], strict=True)}
    counts = {c["eid"]: c["count"] for c in seg["cast"] if "count" in c}
    lines = []
    for eid in ids:
        e = gt["entities"][eid]
        line = {"entity_id": eid, "name": e["name"], "kind": e["kind"]}
        if "states" in e:
            line.update(state=current[eid], states=e["states"], appearance=e["states"][current[eid]])
        else:
            line["appearance"] = e["appearance"]
        if eid in counts:
            line["count"] = counts[eid]
        if eid in lookalike:
            line["lookalike"] = lookalike[eid]
        lines.append(line)
    return [lines[int(i)] for i in rng.permutation(len(lines))]


@pytest.fixture(scope="module")
def deck(tmp_path_factory) -> Path:
    """The sim's card deck: the judge's weights."""
    return write_card_deck(tmp_path_factory.mktemp("card_deck"))


@pytest.fixture(scope="module")
def judged(tmp_path_factory, deck):
    """Perfect- and no-memory rollouts of a 14-segment sim story, each segment judged."""
    root = tmp_path_factory.mktemp("judge_story")
    build_track_b(root, seed=0, n_cases=1, n_segments=N_SEGMENTS, gap_long_threshold=8)
    sid = "0001_sim_s0"
    gt = json.loads((root / "gt" / f"{sid}.json").read_text("utf-8"))
    prompts = json.loads((root / "sut_prompts" / f"{sid}_name_anchored.json").read_text("utf-8"))
    truth = json.loads((root / "_truth" / f"{sid}.json").read_text("utf-8"))
    judge = SimCardJudge(weights=deck, max_frames=len(FRAME_POSITIONS))
    rows = []
    for memory in ("perfect", "none"):
        gen = SimGenerator(memory=memory, seed=0)
        folder = root / memory
        current = {eid: e["initial_state"] for eid, e in gt["entities"].items() if "states" in e}
        rng = np.random.default_rng(5)
        for seg, p in zip(gt["segments"], prompts["segments"], strict=True):
            for c in seg["cast"]:
                if "state" in c and not c["state"].get("flashback"):
                    current[c["eid"]] = c["state"]["label"]
            res = gen.generate(GenerationRequest(f"{sid}/{seg['segment_id']}", "vmem_track_b",
                                                 p["prompt"], str(folder / f"{seg['segment_id']}.mp4"),
                                                 fps=4.0))
            assert res.status == "ok", res.error
            n = probe(res.video_path).n_frames
            frames = read_frames(res.video_path, [int(f * (n - 1)) for f in FRAME_POSITIONS])
            roster = _roster(gt, seg, current, rng)
            answer = judge.judge(JudgeRequest(f"{memory}/{seg['segment_id']}", "(roster prompt)",
                                              tuple(frames), ("items",), {"roster": roster}))
            side = json.loads(Path(res.extras["truth_path"]).read_text("utf-8"))
            rows.append((memory, seg, roster, answer, side))
    return truth, rows


def _truth_of(entity: dict, side: dict) -> tuple[bool, str | None, int]:
    """Is the entity's look on screen (any state), in which sim state, how many copies."""
    if "place" in entity:
        return side["location"]["place"] == entity["place"], "base", 1
    drawn = [e for e in side["entities"] if e["asset"] == entity["asset"] and e["track_ids"]]
    return bool(drawn), drawn[0]["state"] if drawn else None, sum(len(e["track_ids"]) for e in drawn)


@pytest.mark.slow  # the `judged` story takes ~14 s to generate and judge
def test_presence_state_and_count_match_the_truth(judged):
    truth, rows = judged
    tally = {"tp": 0, "tn": 0, "fp": 0, "fn": 0}
    states, counts = [], []
    for _, _, roster, answer, side in rows:
        assert answer.status == "ok" and answer.judge == "judge/sim-cards"
        items = {it["entity_id"]: it for it in answer.data["items"]}
        assert list(items) == [line["entity_id"] for line in roster]
        for line in roster:
            ent, it = truth["entities"][line["entity_id"]], items[line["entity_id"]]
            present, state, count = _truth_of(ent, side)
            assert it["present"] in (True, False)
            tally[("t" if it["present"] == present else "f") + ("p" if it["present"] else "n")] += 1
            if present and it["present"] and "states" in line:
                label = {v: k for k, v in ent["states"].items()}[state]
                states.append(it["state"] == label)
            if present and it["present"] and "count" in line:
                counts.append(it["count"] == count)
    n = sum(tally.values())
    accuracy = (tally["tp"] + tally["tn"]) / n
    # Both classes are well represented: impostors, forbidden entries and decoys are absent.
    assert tally["tp"] + tally["fn"] >= 40 and tally["tn"] + tally["fp"] >= 30
    assert accuracy >= 0.85, tally
    assert tally["fp"] <= 2, tally  # confusions: an absent entity judged present
    assert len(states) >= 10 and np.mean(states) >= 0.85
    assert len(counts) >= 4 and np.mean(counts) >= 0.75


@pytest.mark.slow  # the `judged` story takes ~14 s to generate and judge
def test_no_memory_recalls_are_judged_absent(judged):
    truth, rows = judged
    misses = [it for memory, seg, _, answer, side in rows if memory == "none"
              for it in answer.data["items"]
              for c in seg["cast"] if c["eid"] == it["entity_id"] and c["op"] == "recall"
              and truth["entities"][c["eid"]]["kind"] != "location"
              and not _truth_of(truth["entities"][c["eid"]], side)[0]]
    assert len(misses) >= 10
    assert sum(it["present"] is False for it in misses) >= 0.9 * len(misses)


def test_unknown_text_abstains_and_bad_payloads_are_errors(deck):
    judge = SimCardJudge(weights=deck)
    assert isinstance(judge, Judge) and isinstance(BACKENDS.load("judge/sim-cards")(weights=deck), Judge)
    assert judge.info().name == "judge/sim-cards" and judge.info().official is False
    assert judge.info().weights == str(deck) and judge.info().weights_sha256
    frame = np.full((270, 480, 3), 120, np.uint8)
    roster = [{"entity_id": "E1", "name": "Mara", "kind": "character", "count": 2,
               "appearance": "A tall steady fisherwoman in her twenties."},
              {"entity_id": "E2", "name": "Ada", "kind": "character", "appearance": "A cat."}]
    res = judge.judge(JudgeRequest("x", "", (frame,), payload={"roster": roster}))
    assert res.status == "ok" and json.loads(res.raw) == res.data
    assert res.data["items"][0] == {"entity_id": "E1", "present": "abstain", "state": "abstain",
                                    "count": "abstain", "instance_match": None}
    assert res.data["items"][1]["present"] is False
    for payload, images in (({}, (frame,)), ({"roster": [{"name": "x"}]}, (frame,)),
                            ({"roster": roster}, ())):
        bad = judge.judge(JudgeRequest("item-9", "", images, payload=payload))
        assert bad.status == "error" and "item-9" in bad.error and bad.judge == "judge/sim-cards"


def test_the_deck_holds_the_sim_grammar_and_its_cards(deck):
    judge = load_backend("judge/sim-cards", {"weights": str(deck)}, role="judge")
    phrases = appearance_phrases()
    for key, look in phrases.items():
        got = judge.deck.parse(key.upper() + ". ")
        assert (got.asset, got.state, got.count, got.place) == (
            look.asset, look.state, look.count, look.place), key
        if look.asset is not None:
            assert np.array_equal(judge.deck.card(look.asset, look.state),
                                  card_image(look.asset, look.state))
    assert judge.deck.parse("A tall steady fisherwoman.") is None and judge.deck.parse(3) is None
    assert set(judge.deck.place_hists) == {lk.place for lk in phrases.values() if lk.place}
    assert np.asarray(place_image("lawn")).dtype == np.uint8
    again = write_card_deck(deck.parent / "again")
    assert (again / "deck.json").read_bytes() == (deck / "deck.json").read_bytes()


def test_the_judge_refuses_a_missing_or_edited_deck(deck, tmp_path):
    with pytest.raises(UserInputError, match="card deck as weights"):
        SimCardJudge()
    with pytest.raises(MissingDependencyError, match="deck.json: not found"):
        SimCardJudge(weights=tmp_path)
    (tmp_path / "deck.json").write_text('{"format": "other"}', encoding="utf-8")
    with pytest.raises(UserInputError, match="expected format 'vidmem-card-deck'"):
        SimCardJudge(weights=tmp_path)
    edited = tmp_path / "edited"
    shutil.copytree(deck, edited)
    card = edited / "cards" / "cat.base.png"
    card.write_bytes(card.read_bytes() + b"\0")
    judge = SimCardJudge(weights=edited)
    frame = np.full((270, 480, 3), 120, np.uint8)
    res = judge.judge(JudgeRequest("e", "", (frame,), payload={"roster": [
        {"entity_id": "E", "name": "Ada", "kind": "character", "appearance": "A cat."}]}))
    assert res.status == "error" and "does not match its SHA-256" in res.error
    assert "internal error" not in res.error
