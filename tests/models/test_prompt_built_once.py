"""A judge question's answer schema and its prompt's Jinja template are built once.

Each question needs the answer model's JSON schema in its prompt, its answer-cache key
and the OpenAI request body; pydantic rebuilds the schema on every call and Jinja
recompiles a template on every ``from_string``. These tests count both across many
questions, and check that the cached schema changes no cache key.
"""

from __future__ import annotations

import dataclasses

import jinja2
from pydantic import BaseModel

from vidmem.benchmarks.prompts import load_prompt
from vidmem.benchmarks.vmem_track_a.answers import reference_answer_model
from vidmem.io.hashing import content_hash
from vidmem.models.backends.judge_openai import OpenAIJudge
from vidmem.models.prompt_files import answer_schema
from vidmem.models.protocols import JudgeRequest
from vidmem.runners.judge_cache import ANSWER_CACHE_FORMAT, answer_key

WHO = {"name": "judge/x", "settings": {"temperature": 0.0}}
ROSTER = [{"entity_id": "char_001", "name": "Ann", "kind": "character", "description": "tall"}]


class _Counted(BaseModel):
    """An answer model whose schema builds are counted (by the test's patch)."""

    entity_ids: list[str]


def test_schema_built_once_for_prompt_cache_key_and_body(monkeypatch) -> None:
    builds = []
    schema = _Counted.model_json_schema

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        builds.append(1)
        return schema(*args, **kwargs)

    monkeypatch.setattr(_Counted, "model_json_schema", counting)
    answer_schema.cache_clear()
    judge = OpenAIJudge(base_url="http://127.0.0.1:9/v1", model="m")
    prompt = load_prompt("vidmem.benchmarks.vmem_track_a", "reference")
    narrowed = reference_answer_model(["char_001"])
    for k in range(20):
        answer_key(WHO, JudgeRequest(f"q{k}", f"Is {k} there?", answer_model=_Counted))
        body = judge._body([{"role": "user", "content": "x"}], _Counted)
        prompt.request(f"q{k}", roster=ROSTER, answer_model=narrowed)
    # the old code built it twice per question (cache key and body): 40 times
    assert len(builds) == 1
    assert body["response_format"]["json_schema"]["schema"] == schema()


def test_template_compiled_once_per_prompt_file(monkeypatch) -> None:
    compiled = []
    from_string = jinja2.Environment.from_string

    def counting(self, source, *args, **kwargs):  # type: ignore[no-untyped-def]
        compiled.append(source)
        return from_string(self, source, *args, **kwargs)

    monkeypatch.setattr(jinja2.Environment, "from_string", counting)
    prompt = load_prompt("vidmem.benchmarks.vmem_track_a", "same_view")
    # a template source this process has not compiled yet, so the count starts at 0
    fresh = dataclasses.replace(prompt, template=prompt.template + "\n{# fresh #}")
    texts = [fresh.render(entity_name=f"Ann {k}", entity_kind="character",
                          entity_description="tall") for k in range(10)]
    assert compiled == [fresh.template]  # the old code compiled it 10 times
    assert texts[3].startswith(prompt.render(entity_name="Ann 3", entity_kind="character",
                                             entity_description="tall")[:40])
    assert "Ann 7" in texts[7] and "Ann 7" not in texts[6]


def test_cached_schema_keeps_the_answer_key() -> None:
    # keys stored by earlier runs stay valid: the key is the same content hash as with
    # a schema built afresh by pydantic
    model = reference_answer_model(["char_001", "loc_002"])
    prompt = load_prompt("vidmem.benchmarks.vmem_track_a", "reference")
    req = prompt.request("q", roster=ROSTER, answer_model=model)
    fresh = content_hash({
        "format": ANSWER_CACHE_FORMAT, "judge": WHO, "prompt": req.prompt, "images": [],
        "required_keys": list(req.required_keys), "key_types": {},
        "answer_schema": model.model_json_schema(), "payload": req.payload,
        "contract": req.contract, "strict_json": req.strict_json, "max_tokens": req.max_tokens,
    }, length=64)
    assert answer_key(WHO, req) == fresh


def test_describe_hands_out_a_copy() -> None:
    prompt = load_prompt("vidmem.benchmarks.vmem_track_a", "reference")
    prompt.describe()["answer_schema"]["title"] = "changed"
    assert prompt.answer_schema.get("title") != "changed"
    assert answer_schema(prompt.answer_model).get("title") != "changed"
