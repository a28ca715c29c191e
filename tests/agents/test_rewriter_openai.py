"""rewriter/openai against a scripted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import pytest
from agent_fakes import FAST, MODEL

from vidmem.errors import UserInputError
from vidmem.models.backends.rewriter_openai import OpenAIRewriter, clean_instruction
from vidmem.models.loading import load_backend
from vidmem.models.protocols import Rewriter, RewriteRequest

REQ = RewriteRequest(instruction="The cat opens the red box.", record={"actor": "the cat"},
                     failure_mode="no_action", evidence="closed", prompt="Rewrite it, please.")


def rewriter(server, **kw) -> OpenAIRewriter:
    return OpenAIRewriter(base_url=server.url, **{**FAST, **kw})


def test_it_is_loaded_by_role_and_sends_the_prompt_at_temperature_zero(rewriter_server):
    rewriter_server.script = [{"content": "The cat opens the red box and holds it open."}]
    rw = load_backend("rewriter/openai", {"base_url": rewriter_server.url, **FAST},
                      role="rewriter")
    assert isinstance(rw, Rewriter)
    result = rw.rewrite(REQ)
    assert (result.status, result.text) == ("ok", "The cat opens the red box and holds it open.")
    body = rewriter_server.requests[0]
    assert body["model"] == MODEL and body["temperature"] == 0.0
    assert body["messages"] == [{"role": "user", "content": "Rewrite it, please."}]
    info = rw.info()
    assert info.name == "rewriter/openai" and info.settings["model"] == MODEL
    assert "api_key" not in info.settings


def test_a_judge_is_not_a_rewriter():
    with pytest.raises(UserInputError, match="not 'rewriter'") as exc:
        load_backend("judge/openai", role="rewriter")
    assert "rewriter/openai" in exc.value.hint


@pytest.mark.parametrize(("raw", "text"), [
    ('Here is the rewritten instruction:\n\n"The cat opens the box."', "The cat opens the box."),
    ("**New instruction:** The cat opens the box.", "The cat opens the box."),
    ("```text\nThe cat opens the box\nand holds it open.\n```",
     "The cat opens the box and holds it open."),
    ("<think>\nno_action means...\n</think>\n\u201cThe cat opens the box.\u201d",
     "The cat opens the box."),
    ("- The cat opens the box.", "The cat opens the box."),
])
def test_answers_are_stripped_of_quotes_labels_and_markdown(rewriter_server, raw, text):
    rewriter_server.script = [{"content": raw}]
    assert rewriter(rewriter_server).rewrite(REQ).text == text
    assert clean_instruction(raw) == text


def test_5xx_is_retried_then_answered(rewriter_server):
    rewriter_server.script = [{"status": 500}, {"status": 503}, {"content": "'The cat opens it.'"}]
    rw = rewriter(rewriter_server)
    result = rw.rewrite(REQ)
    assert (result.status, result.text, result.raw) == ("ok", "The cat opens it.",
                                                        "'The cat opens it.'")
    assert rw.stats() == {"requests": 1, "calls": 3, "retries": 2, "ok": 1, "errors": 0}


def test_retries_are_bounded_and_end_in_an_error_result(rewriter_server):
    rewriter_server.default = {"status": 502}
    rw = rewriter(rewriter_server, max_retries=2)
    result = rw.rewrite(REQ)
    assert result.status == "error" and result.text is None
    assert "HTTP 502" in result.error and "after 3 calls" in result.error
    assert len(rewriter_server.requests) == 3


def test_a_client_error_is_not_retried(rewriter_server):
    rewriter_server.script = [{"status": 400}]
    result = rewriter(rewriter_server).rewrite(REQ)
    assert result.status == "error" and "HTTP 400" in result.error
    assert len(rewriter_server.requests) == 1


def test_an_empty_answer_is_an_error_not_a_rewrite(rewriter_server):
    rewriter_server.script = [{"content": '  ""  '}]
    result = rewriter(rewriter_server).rewrite(REQ)
    assert result.status == "error" and "no instruction" in result.error


def test_a_request_without_a_prompt_is_refused(rewriter_server):
    with pytest.raises(UserInputError, match="has no prompt"):
        rewriter(rewriter_server).rewrite(RewriteRequest("x", {}, "no_action", ""))


@pytest.mark.parametrize(("kw", "match"), [
    ({"base_url": None}, "expected a server URL"),
    ({"base_url": "127.0.0.1:8000"}, "expected a server URL"),
    ({"model": None}, "no model name"),
    ({"max_retries": -1}, "max_retries must be"),
    ({"temperature": "hot"}, "temperature must be a number"),
])
def test_bad_settings_are_refused(kw, match):
    settings = {"base_url": "http://127.0.0.1:9/v1", **FAST, **kw}
    settings = {k: v for k, v in settings.items() if v is not None}
    with pytest.raises(UserInputError, match=match):
        OpenAIRewriter(**settings)


def test_settings_come_from_the_environment(monkeypatch, rewriter_server):
    monkeypatch.setenv("VIDMEM_REWRITER_URL", rewriter_server.url)
    monkeypatch.setenv("VIDMEM_REWRITER_MODEL", "env-model")
    rewriter_server.script = [{"content": "The cat opens it."}]
    rw = OpenAIRewriter(timeout_seconds=2.0)
    assert rw.rewrite(REQ).status == "ok"
    assert rewriter_server.requests[0]["model"] == "env-model"
