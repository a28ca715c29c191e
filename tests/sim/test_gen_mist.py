"""The sim's container shots: setup from the card grammar, the world carried to gap and
reveal, the execution rule (measured against its closed form), memory and leaks, and
byte-identical output. Truth sidecars are the reference; judges are tested elsewhere."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from vidmem.benchmarks.mist.sim_build import build_mist, plan_card
from vidmem.generators.protocol import GenerationRequest
from vidmem.generators.sim import SimGenerator
from vidmem.io.video import probe, read_frames
from vidmem.metrics.mist_gates import REVEAL_POSITIONS
from vidmem.sim.gen_mist import PROTOCOL
from vidmem.sim.mist_grammar import parse_reveal
from vidmem.sim.mist_reveal import execution_probability

SMALL = {"width": 160, "height": 90, "fps": 4.0}  # the rules do not depend on the size


def _truth(result) -> dict:
    return json.loads(Path(result.extras["truth_path"]).read_text("utf-8"))


def _shot(gen, out: Path, card: dict, shot: str, prompt: str, *, start=None, arm=None,
          k=0, size=SMALL, name=None):
    name = name or f"{shot}_{arm or 'x'}_{k}"
    req = GenerationRequest(f"{card['case_id']}/{name}", "test", prompt, str(out / f"{name}.mp4"),
                            start_image=start, duration_seconds=5.0, seed=0,
                            extras={"shot": shot, "case_id": card["case_id"], "arm": arm,
                                    "try": k}, **size)
    result = gen.generate(req)
    assert result.status == "ok", result.error
    return result


def _locked(gen, out: Path, card: dict, size=SMALL):
    prompts = {s["shot"]: s["prompt"] for s in card["shots"]}
    setup = _shot(gen, out, card, "setup", prompts["setup"], size=size)
    gap = _shot(gen, out, card, "gap", prompts["gap"], start=setup.extras["last_frame_path"],
                size=size)
    return setup, gap


@pytest.fixture(scope="module")
def cards() -> list[dict]:
    return [plan_card(0, i) for i in range(6)]


def test_protocol_entries_say_rule_reason_source():
    assert PROTOCOL and all(set(v) == {"rule", "reason", "source"} for v in PROTOCOL.values())


def test_setup_draws_the_cards_history_and_ends_closed(tmp_path, cards):
    root = tmp_path / "cards"
    build_mist(root, seed=0, n_cases=6)
    gen = SimGenerator()
    for card in cards[:3]:
        truth_card = json.loads((root / "_truth" / f"{card['case_id']}.json").read_text("utf-8"))
        setup, _ = _locked(gen, tmp_path / card["case_id"], card)
        tr = _truth(setup)
        assert tr["shot"] == "setup" and tr["world_source"] == "setup prompt"
        want = {cid: sorted((x["asset"], x["count"]) for x in items)
                for cid, items in truth_card["final_contents"].items()}
        got = {cid: sorted((x["asset"], x["count"]) for x in items)
               for cid, items in tr["scene"]["contents"].items()}
        assert got == want, card["case_id"]
        first, last = tr["frames"][0]["containers"], tr["frames"][-1]["containers"]
        assert all(c["state"] == "open" for c in first.values())
        assert all(c["state"] == "closed" for c in last.values())
        assert probe(setup.video_path).n_frames == 20 and setup.extras["width"] == 160


def test_gap_and_reveal_continue_the_world_from_the_last_frame(tmp_path, cards):
    gen = SimGenerator()
    card = cards[1]  # R1: two containers, one object each
    setup, gap = _locked(gen, tmp_path, card)
    assert _truth(gap)["world_source"] == "start image metadata"
    assert _truth(gap)["scene"]["contents"] == _truth(setup)["scene"]["contents"]
    assert all(c["state"] == "closed" for f in _truth(gap)["frames"]
               for c in f["containers"].values())
    # a caller may write the last frame with any lossless writer, anywhere near the clips
    elsewhere = tmp_path / "frames" / "gap_last.png"
    elsewhere.parent.mkdir()
    Image.fromarray(read_frames(gap.video_path, [probe(gap.video_path).n_frames - 1])[0]).save(
        elsewhere)
    reveal = _shot(gen, tmp_path, card, "reveal", card["reveal_prompts"]["open_and_hold"],
                   start=str(elsewhere), arm="open_and_hold")
    tr = _truth(reveal)
    assert tr["world_source"] == "matched sim shot"
    assert tr["scene"]["contents"] == _truth(setup)["scene"]["contents"]


def test_a_start_image_from_no_sim_shot_is_refused_with_the_fix(tmp_path, cards):
    png = tmp_path / "stranger.png"
    Image.fromarray(np.full((90, 160, 3), 77, np.uint8)).save(png)
    req = GenerationRequest("c/gap", "test", cards[0]["shots"][1]["prompt"],
                            str(tmp_path / "gap.mp4"), start_image=str(png),
                            extras={"shot": "gap", "case_id": "c"})
    result = SimGenerator().generate(req)
    assert result.status == "error" and "matches the last frame of no sim shot" in result.error
    assert "fix:" in result.error


def test_bad_shot_and_prompt_name_the_problem(tmp_path):
    gen = SimGenerator()
    bad = gen.generate(GenerationRequest("c/x", "test", "The cat sits on the table.",
                                         str(tmp_path / "x.mp4"), extras={"shot": "setup"}))
    assert bad.status == "error" and "names no container" in bad.error
    assert "setup grammar" in bad.error
    none = gen.generate(GenerationRequest("c/y", "test", "A dog sits.", str(tmp_path / "y.mp4"),
                                          extras={"shot": "setup"}))
    assert none.status == "error" and "no known actor" in none.error
    gap = gen.generate(GenerationRequest("c/z", "test", "x", str(tmp_path / "z.mp4"),
                                         extras={"shot": "gap"}))
    assert gap.status == "error" and "needs a start image" in gap.error


def test_the_same_request_gives_the_same_bytes_and_tries_differ(tmp_path, cards):
    gen = SimGenerator(seed=3)
    card = cards[0]
    _, gap = _locked(gen, tmp_path, card)
    prompt = card["reveal_prompts"]["baseline"]
    start = gap.extras["last_frame_path"]
    a = _shot(gen, tmp_path / "a", card, "reveal", prompt, start=start, arm="baseline")
    b = _shot(gen, tmp_path / "b", card, "reveal", prompt, start=start, arm="baseline")
    assert Path(a.video_path).read_bytes() == Path(b.video_path).read_bytes()
    assert _truth(a)["move"] == _truth(b)["move"]
    draws = {json.dumps(_truth(_shot(gen, tmp_path / "t", card, "reveal", prompt, start=start,
                                     arm="baseline", k=k))["move"]["fired"]) for k in range(8)}
    assert len(draws) > 1


def _execution_rate(gen, out: Path, card: dict, arm: str, n: int) -> tuple[int, float]:
    _, gap = _locked(gen, out, card)
    prompt = card["reveal_prompts"][arm]
    done = sum(_truth(_shot(gen, out, card, "reveal", prompt, start=gap.extras["last_frame_path"],
                            arm=arm, k=k))["move"]["executed"] for k in range(n))
    clauses = parse_reveal(prompt, card["containers"]).clauses
    return done, execution_probability(clauses, len(card["containers"]))


def test_the_explicit_move_is_executed_far_more_often_than_the_baseline(tmp_path, cards):
    gen, n = SimGenerator(), 40
    base, p_base = _execution_rate(gen, tmp_path / "b", cards[0], "baseline", n)
    held, p_held = _execution_rate(gen, tmp_path / "h", cards[0], "open_and_hold", n)
    assert (round(p_base, 3), round(p_held, 3)) == (0.292, 0.885)  # one container (R0)
    for done, p in ((base, p_base), (held, p_held)):  # within 4 binomial s.d. of the rule
        assert abs(done - n * p) <= 4 * (n * p * (1 - p)) ** 0.5, (done, p)
    assert held - base >= 15, (base, held)


def test_every_reveal_reading_sees_one_settled_state(tmp_path, cards):
    gen = SimGenerator()
    card = cards[2]
    _, gap = _locked(gen, tmp_path, card)
    for k in range(6):
        tr = _truth(_shot(gen, tmp_path, card, "reveal", card["reveal_prompts"]["baseline"],
                          start=gap.extras["last_frame_path"], arm="baseline", k=k))
        n = len(tr["frames"])
        states = {json.dumps(tr["frames"][min(n - 1, int(p * n))]["containers"], sort_keys=True)
                  for p in REVEAL_POSITIONS}
        assert len(states) == 1, tr["move"]


def test_memory_knob_forgets_contents_and_leaks_them(tmp_path, cards):
    card = cards[0]  # R0: two snake signs in the red box
    prompt = "The cat opens the red box and holds it open so that the inside is clearly visible."
    forgetful = SimGenerator(memory="decay:0.5")
    _, gap = _locked(forgetful, tmp_path / "d", card)
    sources = set()
    for k in range(6):
        tr = _truth(_shot(forgetful, tmp_path / "d", card, "reveal", prompt,
                          start=gap.extras["last_frame_path"], arm="x", k=k))
        if tr["recall"]:
            sources.add(tr["recall"]["source"])
            assert tr["recall"]["fidelity"] < 1e-4 and tr["recall"]["how"] == "miscount"
            if tr["move"]["executed"]:
                assert tr["failure_mode"] == "wrong_binding"
    assert sources == {"forgotten"}
    stated = _truth(_shot(forgetful, tmp_path / "d", card, "reveal",
                          card["reveal_prompts"]["answer_only"],
                          start=gap.extras["last_frame_path"], arm="answer_only"))
    if stated["recall"]:  # a prompt that states the contents is copied, memory or not
        assert stated["recall"]["source"] == "prompt"
        assert stated["recall"]["shown"] == [{"asset": "logo", "count": 2}]
    leaky = SimGenerator(memory="leaky:1")
    _, leak_gap = _locked(leaky, tmp_path / "l", card)
    tr = _truth(leak_gap)
    assert tr["leak"] == {"container": "A", "contents": [{"asset": "logo", "count": 2}]}
    shown = [f["containers"]["A"] for f in tr["frames"] if f["containers"]["A"]["inside_visible"]]
    assert shown and all(c["contents"] == [{"asset": "logo", "count": 2}] for c in shown)
    assert tr["frames"][-1]["containers"]["A"]["state"] == "closed"
