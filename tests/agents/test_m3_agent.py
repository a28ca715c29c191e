"""The M3-Agent loop with scripted judge and rewriter servers and a pixel-coded generator.

Each try's score is known from its prompt (:class:`agent_fakes.PixelGenerator`), the
diagnoser is ``judge/openai`` and the rewriter ``rewriter/openai``, each against its own
scripted server on 127.0.0.1, so every assertion is about what really went over the wire.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from agent_fakes import FAST, PixelGenerator, diagnosis, pixel_score

from vidmem.agents.m3 import AgentRun, M3Agent, TaskRecord
from vidmem.errors import UserInputError
from vidmem.generators.requests import GenerationRequest
from vidmem.models.backends.judge_openai import OpenAIJudge
from vidmem.models.backends.rewriter_openai import OpenAIRewriter

RECORD = {"actor": "the cat", "object": "snake sign", "binding": "snake sign in the red box",
          "operation": "count what is inside",
          "required_last_frame_evidence": "the open red box with two snake signs visible inside"}
SCENE = {"actor": "the cat", "container": {"noun": "red box", "colour": "red"},
         "objects": [{"noun": "snake sign", "plural": "snake signs"}],
         "target": {"contents": [{"noun": "snake sign", "count": 2}], "text": "two snake signs"}}
ORIGINAL = "The cat opens the red box."
HOLD = "The cat opens the red box and holds the lid open."
HOLD_LONG = "The cat opens the red box and holds the lid open; the inside stays visible."
SWAPPED = "The woman opens the red box and holds the lid open."


def request(**kw) -> GenerationRequest:
    return GenerationRequest(request_id="case-1", benchmark="test", prompt=ORIGINAL,
                             out_path="unused.mp4", seed=10,
                             extras={"shot": "reveal", "case_id": "case-1"}, **kw)


def agent(generator, judge_server, rewriter_server, **kw) -> M3Agent:
    judge = OpenAIJudge(base_url=judge_server.url, **FAST)
    rewriter = OpenAIRewriter(base_url=rewriter_server.url, **FAST)
    return M3Agent(generator, diagnoser=judge, rewriter=rewriter, **kw)


def answer(text: str) -> dict:
    return {"content": text}


def test_the_original_is_kept_when_every_rewrite_is_worse(tmp_path, judge_server, rewriter_server):
    gen = PixelGenerator({HOLD_LONG: 0.3, HOLD: 0.2, "default": 0.6})
    judge_server.default = diagnosis("no_action")
    rewriter_server.script = [answer(HOLD), answer(f'"{HOLD_LONG}"')]
    run = agent(gen, judge_server, rewriter_server, k=3).run(
        RECORD, request(), pixel_score, tmp_path, SCENE)
    assert [s.score for s in run.steps] == [0.6, 0.2, 0.3]
    assert [s.instruction for s in run.steps] == [ORIGINAL, HOLD, HOLD_LONG]
    assert run.best == 0 and run.running_best == [0.6, 0.6, 0.6]
    assert run.stopped == "k_reached" and run.failures() == []
    # the last try is diagnosed for the log but not rewritten
    assert len(judge_server.requests) == 3 and len(rewriter_server.requests) == 2
    assert run.steps[-1].rewrite is None and run.steps[0].rewrite["status"] == "ok"
    # seeds step per try, the try index travels in extras, clips are named per try
    assert [r.seed for r in gen.requests] == [10, 11, 12]
    assert [r.extras["try"] for r in gen.requests] == [0, 1, 2]
    assert all(r.extras["shot"] == "reveal" for r in gen.requests)
    assert [Path(s.clip).name for s in run.steps] == ["try_0.mp4", "try_1.mp4", "try_2.mp4"]
    assert all(Path(s.last_frame).is_file() for s in run.steps)


def test_a_better_rewrite_is_kept_and_ties_go_to_the_earlier_try(tmp_path, judge_server,
                                                                 rewriter_server):
    gen = PixelGenerator({HOLD_LONG: 0.7, HOLD: 0.7, "default": 0.1})
    judge_server.default = diagnosis("no_action")
    rewriter_server.script = [answer(HOLD), answer(HOLD_LONG)]
    run = agent(gen, judge_server, rewriter_server, k=3).run(
        RECORD, request(), pixel_score, tmp_path, SCENE)
    assert run.best == 1 and run.running_best == [0.1, 0.7, 0.7]


def test_the_diagnoser_reads_the_last_frame_with_the_record(tmp_path, judge_server,
                                                             rewriter_server):
    judge_server.default = diagnosis("success", "two snake signs are visible")
    run = agent(PixelGenerator(), judge_server, rewriter_server, k=2).run(
        RECORD, request(), pixel_score, tmp_path, SCENE)
    body = judge_server.requests[0]
    parts = body["messages"][0]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url"]  # the last frame only
    assert RECORD["required_last_frame_evidence"] in parts[0]["text"]
    assert ORIGINAL in parts[0]["text"] and "wrong_binding" in parts[0]["text"]
    assert body["response_format"]["type"] == "json_schema"
    assert run.steps[0].diagnosis == {"failure_mode": "success",
                                      "evidence": "two snake signs are visible", "status": "ok",
                                      "error": None, "judge": "judge/openai"}


def test_a_rewrite_that_changes_the_actor_is_rejected_and_retried(tmp_path, judge_server,
                                                                   rewriter_server):
    judge_server.default = diagnosis("no_action")
    rewriter_server.script = [answer(SWAPPED), answer(HOLD)]
    run = agent(PixelGenerator(), judge_server, rewriter_server, k=2).run(
        RECORD, request(), pixel_score, tmp_path, SCENE)
    rewrite = run.steps[0].rewrite
    assert rewrite["status"] == "ok" and rewrite["new"] == HOLD and rewrite["attempts"] == 2
    assert rewrite["rejected"] == [(SWAPPED, "drops the actor 'the cat'")]
    assert run.steps[1].instruction == HOLD
    # the retry tells the rewriter what was rejected and why
    second = rewriter_server.texts()[1]
    assert SWAPPED in second and "drops the actor" in second


def test_after_max_rejects_the_old_instruction_is_kept_and_logged(tmp_path, judge_server,
                                                                  rewriter_server):
    judge_server.default = diagnosis("no_action")
    rewriter_server.default = answer(SWAPPED)
    run = agent(PixelGenerator(), judge_server, rewriter_server, k=2, max_rejects=2).run(
        RECORD, request(), pixel_score, tmp_path, SCENE)
    rewrite = run.steps[0].rewrite
    assert rewrite["status"] == "rejected" and rewrite["new"] == ORIGINAL
    assert rewrite["attempts"] == 3 and len(rewriter_server.requests) == 3
    assert [r for r in rewrite["rejected"]] == [(SWAPPED, "drops the actor 'the cat'")] * 3
    assert run.steps[1].instruction == ORIGINAL
    assert run.failures() == []  # rejections are the check working, not failures


@pytest.mark.parametrize("handed_in", [False, True])
def test_k_bounds_the_generator_calls(tmp_path, judge_server, rewriter_server, handed_in):
    judge_server.default = diagnosis("no_action")
    rewriter_server.script = [answer(HOLD), answer(HOLD_LONG),
                              answer("The cat opens the red box and holds it open until the end.")]
    gen = PixelGenerator()
    original = None
    if handed_in:
        clip = tmp_path / "given" / "original.mp4"
        PixelGenerator().generate(dataclasses.replace(request(), out_path=str(clip)))
        original = (clip, 0.5)
    run = agent(gen, judge_server, rewriter_server, k=4).run(
        RECORD, request(), pixel_score, tmp_path / "run", SCENE, original=original)
    expected = 3 if handed_in else 4
    assert len(gen.requests) == run.generator_calls == expected
    assert len(run.steps) == 4
    assert sorted(p.name for p in (tmp_path / "run").glob("*.mp4")) == [
        f"try_{t}.mp4" for t in range(4 - expected, 4)]
    if handed_in:
        assert run.steps[0].generated is False and run.steps[0].score == 0.5
        assert run.steps[0].clip == str(clip)


def test_the_loop_stops_at_success(tmp_path, judge_server, rewriter_server):
    judge_server.script = [diagnosis("no_action"), diagnosis("success", "two signs inside")]
    rewriter_server.script = [answer(HOLD)]
    gen = PixelGenerator()
    run = agent(gen, judge_server, rewriter_server, k=5).run(
        RECORD, request(), pixel_score, tmp_path, SCENE)
    assert run.stopped == "success" and len(run.steps) == 2 and len(gen.requests) == 2
    assert len(rewriter_server.requests) == 1 and run.steps[1].rewrite is None
    assert run.best == 1 and run.running_best == [0.3, 0.8]


def test_a_withheld_target_is_enforced(tmp_path, judge_server, rewriter_server):
    judge_server.default = diagnosis("no_action", "the red box is closed; two snake signs?")
    leaky = "The cat opens the red box and holds the lid open: two snake signs lie inside."
    rewriter_server.script = [answer(leaky), answer(HOLD_LONG)]
    run = agent(PixelGenerator(), judge_server, rewriter_server, k=2).run(
        RECORD, request(), pixel_score, tmp_path, SCENE, withhold_target=True)
    rewrite = run.steps[0].rewrite
    assert rewrite["rejected"] == [(leaky, "states the withheld target: 'snake signs', 'two'")]
    assert rewrite["new"] == HOLD_LONG and run.withhold_target is True
    # the rewriter is never told the target it must not state
    for text in rewriter_server.texts():
        assert "[withheld]" in text
        assert "snake sign" not in text.lower() and " two " not in text.lower()


def test_a_withheld_target_needs_the_scene_target(tmp_path, judge_server, rewriter_server):
    scene = {k: v for k, v in SCENE.items() if k != "target"}
    with pytest.raises(UserInputError, match="withhold_target needs the target"):
        agent(PixelGenerator(), judge_server, rewriter_server).run(
            RECORD, request(), pixel_score, tmp_path, scene, withhold_target=True)


def test_an_unusable_diagnosis_keeps_the_instruction_and_is_a_failure(tmp_path, judge_server,
                                                                      rewriter_server):
    judge_server.script = [{"status": 400}, diagnosis("no_action")]
    run = agent(PixelGenerator(), judge_server, rewriter_server, k=2).run(
        RECORD, request(), pixel_score, tmp_path, SCENE)
    assert run.steps[0].diagnosis["status"] == "error"
    assert run.steps[0].rewrite["status"] == "skipped"
    assert run.steps[1].instruction == ORIGINAL and rewriter_server.requests == []
    assert len(run.failures()) == 1 and "diagnosis error" in run.failures()[0]


def test_a_failed_generation_stops_the_loop(tmp_path, judge_server, rewriter_server):
    judge_server.default = diagnosis("no_action")
    rewriter_server.script = [answer(HOLD)]
    run = agent(PixelGenerator(fail_on="holds"), judge_server, rewriter_server, k=4).run(
        RECORD, request(), pixel_score, tmp_path, SCENE)
    assert run.stopped == "generation_error" and len(run.steps) == 2
    assert run.steps[1].clip is None and "scripted failure" in run.steps[1].error
    assert run.best == 0 and run.failures() == ["try 1: generation failed: scripted failure"]


def test_the_run_log_is_json_and_reads_back(tmp_path, judge_server, rewriter_server):
    judge_server.default = diagnosis("no_action")
    rewriter_server.script = [answer(SWAPPED), answer(HOLD)]
    run = agent(PixelGenerator(), judge_server, rewriter_server, k=2).run(
        TaskRecord.from_mapping(RECORD), request(), pixel_score, tmp_path, SCENE)
    text = json.dumps(run.to_dict(), allow_nan=False)
    back = AgentRun.from_dict(json.loads(text))
    assert back.to_dict() == json.loads(text)
    assert back.steps[0].rewrite["rejected"] == [[SWAPPED, "drops the actor 'the cat'"]]
    assert back.oracle is True and "keep_best" in back.protocol["rules"]
    assert back.protocol["prompts"]["diagnose"]["contract"] == "m3_agent/m3_diagnose@1"
    assert back.backends["rewriter"]["name"] == "rewriter/openai"


@pytest.mark.parametrize(("kw", "match"), [({"k": 0}, "k must be an integer >= 1"),
                                           ({"max_rejects": -1}, "max_rejects must be"),
                                           ({"k": 2.5}, "k must be an integer")])
def test_bad_settings_are_refused(judge_server, rewriter_server, kw, match):
    with pytest.raises(UserInputError, match=match):
        agent(PixelGenerator(), judge_server, rewriter_server, **kw)
