"""extract_json_object / missing_keys: the slips real judges make, and what is refused."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidmem.models.json_extract import (
    NO_OBJECT,
    NON_FINITE,
    extract_json_object,
    find_json_object,
    missing_keys,
    wrong_types,
)


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


@pytest.mark.parametrize(
    "text",
    [
        '{"present": true, "score": NaN}',
        '{"present": true, "score": -Infinity}',
        '{"present": true, "score": Infinity}',
        '{"present": true, "score": 1e999}',
        '{"present": true, "score": -1E+999}',
        '{"present": true, "scores": [0.5, [NaN]]}',
        '{"present": true, "box": {"x0": 1e400}}',
        "{'present': True, 'score': NaN}",  # Python-flavoured: repaired, still refused
        "{present: true, score: Infinity,}",
        '{"present": true, "n": 1' + "0" * 400 + "}",  # an integer no float can hold
        'Result: {"present": true, "score": NaN} (confidence unknown)',
    ],
)
def test_non_finite_numbers_are_refused(text):
    # json.loads alone accepts all of these (NaN, Infinity, and 1e999 -> inf)
    assert extract_json_object(text) is None


def test_non_finite_object_does_not_yield_its_inner_object():
    # the model's answer is the outer object; a nested part of it is not an answer
    assert extract_json_object('{"verdict": {"present": true}, "score": NaN}') is None
    # a later, separate object is still found
    text = 'first {"score": NaN}, corrected: {"score": 0.5}'
    assert extract_json_object(text) == {"score": 0.5}


def test_finite_extremes_and_strings_are_kept():
    text = '{"big": 1.7e308, "tiny": 5e-324, "neg": -0.0, "s": "NaN", "t": "Infinity"}'
    got = extract_json_object(text)
    assert got == {"big": 1.7e308, "tiny": 5e-324, "neg": -0.0, "s": "NaN", "t": "Infinity"}
    assert all(math.isfinite(v) for v in (got["big"], got["tiny"], got["neg"]))


def test_find_json_object_says_why():
    assert find_json_object('{"a": 1}') == ({"a": 1}, "")
    assert find_json_object('{"a": NaN}') == (None, NON_FINITE)
    assert find_json_object("{'a': [1e999]}") == (None, NON_FINITE)
    assert find_json_object("no json") == (None, NO_OBJECT)
    assert find_json_object(None) == (None, NO_OBJECT)
    assert find_json_object('{"a": NaN} {"b": 2}') == ({"b": 2}, "")


def test_wrong_types():
    obj = {"b": True, "i": 3, "f": 2.0, "s": "x", "n": None, "l": [], "o": {}}
    ok = {
        "b": "boolean",
        "i": ("integer",),
        "f": "number",
        "s": "string",
        "n": ("string", "null"),
        "l": "array",
        "o": "object",
        "absent": "integer",
    }
    assert wrong_types(obj, ok) == []
    assert wrong_types(obj, {"i": "number"}) == []  # an integer is a number
    assert wrong_types(obj, {"f": "integer", "b": "integer", "s": "boolean", "n": "number"}) == [
        "'f' is a number, expected integer",
        "'b' is a boolean, expected integer",
        "'s' is a string, expected boolean",
        "'n' is null, expected number",
    ]
    assert wrong_types(None, {"a": "string"}) == []
    with pytest.raises(ValueError, match="unknown JSON type"):
        wrong_types(obj, {"b": "bool"})


def test_truncated_outer_object_may_yield_inner_one():
    # Documented: the scan resumes after an unusable "{", so required keys decide.
    text = '{"verdict": {"score": 1}, "reason": "cut he'
    assert extract_json_object(text) == {"score": 1}
    assert missing_keys(extract_json_object(text), ["verdict"]) == ["verdict"]


def test_deep_nesting_does_not_crash():
    text = "{" * 5000 + "}" * 5000
    assert extract_json_object(text) is None


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
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
