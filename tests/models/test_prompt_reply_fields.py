"""Prompt files' optional ``strict_json`` and ``max_tokens``: checked, carried into every
request and into run.json; the shipped files hold the official scorers' values (issue 24
items 7 and 9)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vidmem.errors import UserInputError
from vidmem.models.prompt_files import load_prompt
from vidmem.models.protocols import JudgeRequest

GOOD = {
    "benchmark": '"demo"', "name": '"present"', "version": "1", "language": '"en"',
    "answer": '"vidmem.models.prompt_files:_Present"',
    "template": '"Is {{ who }} there? {{ answer_schema }}"',
}


def write(tmp_path: Path, **fields: str) -> Path:
    (tmp_path / "prompts").mkdir(exist_ok=True)
    (tmp_path / "prompts" / "present.toml").write_text(
        "".join(f"{k} = {v}\n" for k, v in {**GOOD, **fields}.items()))
    return tmp_path


def test_without_the_fields_a_request_reads_tolerantly_with_the_judges_limit(tmp_path):
    p = load_prompt(write(tmp_path), "present")
    req = p.request("x", who="the cat")
    assert (req.strict_json, req.max_tokens) == (False, None)
    assert p.describe()["max_tokens"] is None
    assert p.describe()["reply"].startswith("tolerant")


def test_the_fields_reach_the_request_and_run_json(tmp_path):
    p = load_prompt(write(tmp_path, strict_json="true", max_tokens="256"), "present")
    req = p.request("x", who="the cat")
    assert (req.strict_json, req.max_tokens) == (True, 256)
    described = p.describe()
    assert described["max_tokens"] == 256 and described["reply"].startswith("strict")


@pytest.mark.parametrize(("fields", "match"), [
    ({"strict_json": '"yes"'}, "strict_json' must be true or false"),
    ({"max_tokens": "0"}, "max_tokens' must be an integer >= 1"),
    ({"max_tokens": "2.5"}, "max_tokens' must be an integer >= 1"),
    ({"max_tokens": "true"}, "max_tokens' must be an integer >= 1"),
    ({"max_token": "5"}, "unknown fields"),
])
def test_bad_optional_fields_are_refused(tmp_path, fields, match):
    with pytest.raises(UserInputError, match=match):
        load_prompt(write(tmp_path, **fields), "present")


@pytest.mark.parametrize(("value", "match"), [(0, "max_tokens"), (True, "max_tokens"),
                                              (1.5, "max_tokens")])
def test_a_request_refuses_a_bad_limit(value, match):
    with pytest.raises(UserInputError, match=match):
        JudgeRequest("x", "q", max_tokens=value)


def test_a_request_refuses_a_non_boolean_strictness():
    with pytest.raises(UserInputError, match="strict_json"):
        JudgeRequest("x", "q", strict_json="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize(("package", "name", "strict", "tokens"), [
    # Suchenl/VMem-Bench visual_coverage.py: _parse_v3_reference = json.loads(raw.strip()),
    # _judge_v3_reference calls with max_tokens=256
    ("vidmem.benchmarks.vmem_track_a", "reference", True, 256),
    # visual_coverage.py 2.2 _distinct_views: regex reader, max_tokens=64
    ("vidmem.benchmarks.vmem_track_a", "same_view", False, 64),
    # end2end_coverage.py _judge_call(max_tokens=1536), reader _extract_json (tolerant)
    ("vidmem.benchmarks.vmem_track_b", "segment", False, 1536),
    # no official counterpart: the judge's own limit, tolerant reading
    ("vidmem.benchmarks.mist", "gates", False, None),
])
def test_shipped_prompts_hold_the_official_values(package, name, strict, tokens):
    p = load_prompt(package, name)
    assert (p.strict_json, p.max_tokens) == (strict, tokens)
