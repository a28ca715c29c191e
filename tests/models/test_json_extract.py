"""extract_json_object / missing_keys: the slips real judges make, and what is refused."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidmem.models.json_extract import extract_json_object, missing_keys


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"a": 1}', {"a": 1}),
        ("  \n{}\n", {}),
        ('Here you go:\n{"a": {"b": [1, {"c": 2}]}}\nThanks.', {"a": {"b": [1, {"c": 2}]}}),
        ('```json\n{"present": true}\n```', {"present": True}),
        ('```\n{"present": true}\n```\nI hope that helps', {"present": True}),
        ('{"a": [1, 2, ], "b": {"c": 1, }, }', {"a": [1, 2], "b": {"c": 1}}),
        ("{'a': 'x', 'b': ['y', 'z']}", {"a": "x", "b": ["y", "z"]}),
        ("{'quote': 'she said \"hi\"'}", {"quote": 'she said "hi"'}),
        ("{'a': 'it\\'s'}", {"a": "it's"}),
        ('{"a": "it\'s fine", "b": "{not a brace}"}', {"a": "it's fine", "b": "{not a brace}"}),
        (
            "{'ok': True, 'no': False, 'n': None, 's': 'True'}",
            {"ok": True, "no": False, "n": None, "s": "True"},
        ),
        ("{\u201ca\u201d: \u201cb\u201d}", {"a": "b"}),
        ("{\u2018a\u2019: \u2018b\u2019}", {"a": "b"}),
        ('{"curly": "\u201cquoted\u201d"}', {"curly": "\u201cquoted\u201d"}),
        ('{entity_id: "E1", present: true}', {"entity_id": "E1", "present": True}),
        ('{"n": -1.5e3, "m": 2}', {"n": -1500.0, "m": 2}),
        ('{"a": "line\nbreak"}', {"a": "line\nbreak"}),
        ('{"a": "back\\\\slash"}', {"a": "back\\slash"}),
        ('use {braces} like {this}, then {"a": 1}', {"a": 1}),
        ('{"a": 1} and later {"b": 2}', {"a": 1}),
        ('[{"a": 1}]', {"a": 1}),
    ],
)
def test_extracts(text, expected):
    assert extract_json_object(text) == expected


@pytest.mark.parametrize(
    "text",
    [None, "", "no json", "[1, 2]", '"{a}"x', '{"a": 1', "{'a': }", "{a b c}", "{,}", "}{"],
)
def test_nothing_usable_is_none(text):
    assert extract_json_object(text) is None


def test_truncated_outer_object_may_yield_inner_one():
    # Documented: the scan resumes after an unusable "{", so required keys decide.
    text = '{"verdict": {"score": 1}, "reason": "cut he'
    assert extract_json_object(text) == {"score": 1}
    assert missing_keys(extract_json_object(text), ["verdict"]) == ["verdict"]


def test_deep_nesting_does_not_crash():
    text = "{" * 5000 + "}" * 5000
    assert extract_json_object(text) is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=150, deadline=None)
@given(
    obj=st.dictionaries(st.text(max_size=6), json_values, max_size=4),
    before=st.text(alphabet=st.characters(blacklist_characters="{"), max_size=20),
    after=st.text(max_size=20),
    indent=st.sampled_from([None, 2]),
)
def test_any_object_is_recovered_from_prose(obj, before, after, indent):
    text = before + json.dumps(obj, indent=indent, ensure_ascii=False) + after
    assert extract_json_object(text) == obj


def test_missing_keys():
    assert missing_keys({"a": 1}, ["a", "b", "c"]) == ["b", "c"]
    assert missing_keys({"a": None}, ("a",)) == []
    assert missing_keys(None, ["a", "b"]) == ["a", "b"]
