"""Judge prompt files: loaded, checked, rendered strictly, versioned into every request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vidmem.benchmarks.prompts import load_prompt
from vidmem.errors import UserInputError

GOOD = {
    "benchmark": '"demo"', "name": '"present"', "version": "3", "language": '"en"',
    "answer": '"vidmem.benchmarks.prompts:_Present"',
    "template": '"Is {{ who }} there? Schema: {{ answer_schema }}"',
}


def write(tmp_path: Path, **fields: str | None) -> Path:
    values = {**GOOD, **fields}
    (tmp_path / "prompts").mkdir(exist_ok=True)
    (tmp_path / "prompts" / "present.toml").write_text(
        "".join(f"{k} = {v}\n" for k, v in values.items() if v is not None))
    return tmp_path


def test_a_good_file_renders_and_versions_its_requests(tmp_path):
    p = load_prompt(write(tmp_path), "present")
    req = p.request("clip-7", who="the red car")
    assert req.prompt.startswith("Is the red car there? Schema: {")
    schema = json.loads(req.prompt.split("Schema: ", 1)[1])
    assert schema["required"] == ["present"] and schema["properties"]["present"]["type"] == "boolean"
    assert req.contract == "demo/present@3" and req.required_keys == ("present",)
    assert req.answer_model is p.answer_model
    described = p.describe()
    assert described["contract"] == "demo/present@3" and len(described["sha256"]) == 64


def test_any_edit_changes_the_recorded_hash(tmp_path):
    a = load_prompt(write(tmp_path), "present").sha256
    b = load_prompt(write(tmp_path, template='"Is {{ who }} here? {{ answer_schema }}"'), "present").sha256
    assert a != b


def test_a_misspelt_variable_is_an_error_not_an_empty_string(tmp_path):
    p = load_prompt(write(tmp_path), "present")
    with pytest.raises(UserInputError, match="cannot render"):
        p.render(whom="the cat")


@pytest.mark.parametrize(("fields", "match"), [
    ({"version": None}, "field 'version'"),
    ({"version": '"1"'}, "field 'version'"),
    ({"version": "0"}, "version must be >= 1"),
    ({"language": '"de"'}, "language must be 'en'"),
    ({"name": '"other"'}, "the file's own name"),
    ({"answer": '"vidmem.benchmarks.prompts:Nope"'}, "cannot be imported"),
    ({"answer": '"vidmem.benchmarks.prompts:load_prompt"'}, "not a pydantic model"),
    ({"extra": '"x"'}, "unknown fields"),
])
def test_bad_files_are_refused_naming_the_file_and_field(tmp_path, fields, match):
    with pytest.raises(UserInputError, match=match) as exc:
        load_prompt(write(tmp_path, **fields), "present")
    assert "present.toml" in exc.value.message


def test_a_missing_file_and_broken_toml_are_clear(tmp_path):
    with pytest.raises(UserInputError, match="no such file"):
        load_prompt(tmp_path, "absent")
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "present.toml").write_text("name = ")
    with pytest.raises(UserInputError, match="not valid TOML"):
        load_prompt(tmp_path, "present")


def test_every_shipped_prompt_loads():
    root = Path(__import__("vidmem").__file__).parent / "benchmarks"
    for path in sorted(root.glob("*/prompts/*.toml")):
        p = load_prompt(f"vidmem.benchmarks.{path.parent.parent.name}", path.stem)
        assert p.benchmark == path.parent.parent.name, path


def test_a_request_may_narrow_the_answer_model_but_not_swap_it(tmp_path):
    from typing import Literal

    from pydantic import BaseModel, create_model

    p = load_prompt(write(tmp_path), "present")
    only_true = create_model("OnlyTrue", __base__=p.answer_model, present=(Literal[True], ...))
    req = p.request("clip-1", answer_model=only_true, who="the cat")
    assert req.answer_model is only_true
    assert json.loads(req.prompt.split("Schema: ", 1)[1])["properties"]["present"]["const"] is True

    class Other(BaseModel):
        present: bool

    with pytest.raises(UserInputError, match="not a subclass"):
        p.request("clip-1", answer_model=Other, who="the cat")
