"""Track-A reference replies are read as the official v3 parser reads them (issue 24, item 7).

Every expected outcome below is derived by hand from Suchenl/VMem-Bench
``src/vmem_bench/scoring/visual_coverage.py`` ``_parse_v3_reference``:

    payload = json.loads(str(raw).strip())
    payload must be a dict whose keys are exactly {"entity_ids"}
    entity_ids must be a list of str, without repeats, each in the roster

(``str.strip`` removes Unicode whitespace but not a byte-order mark; ``json.loads``
refuses anything after the value and raw control characters inside strings, and keeps
the last of two equal keys). A reply the reference refuses is unparsable here: one
"JSON only" follow-up is asked (the scripted judge repeats itself), then counted.
"""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidmem.benchmarks.prompts import load_prompt
from vidmem.benchmarks.vmem_track_a.answers import reference_answer_model, reference_labels
from vidmem.models.backends.judge_common import JudgeExchange, JudgeReply, read_reply
from vidmem.models.protocols import JudgeRequest

ROSTER = ["char_001", "loc_001"]
ROWS = [{"entity_id": "char_001", "name": "Ada", "kind": "character", "description": "a girl"},
        {"entity_id": "loc_001", "name": "Pier", "kind": "location", "description": "a pier"}]

#: (reply, the ids the official parser returns, or None where it raises)
TABLE = [
    ('{"entity_ids": ["char_001"]}', {"char_001"}),
    ('{"entity_ids":["loc_001","char_001"]}', {"char_001", "loc_001"}),
    ('{"entity_ids": []}', set()),
    ('  \n{"entity_ids": []}\n\n', set()),                      # strip()
    ('\u3000{"entity_ids": ["loc_001"]}\u00a0', {"loc_001"}),    # str.strip: Unicode spaces
    ('{"entity_ids": ["char_001"], "entity_ids": []}', set()),   # json.loads: last key wins
    ('\ufeff{"entity_ids": []}', None),                          # BOM: not whitespace
    ('```json\n{"entity_ids": ["char_001"]}\n```', None),        # code fence
    ('{"entity_ids": ["char_001"]}\nThe girl is visible.', None),  # trailing text
    ('Answer: {"entity_ids": ["char_001"]}', None),              # leading text
    ("{'entity_ids': ['char_001']}", None),                      # single quotes
    ('{"entity_ids": ["char_001",]}', None),                     # trailing comma
    ('{"entity_ids": []} {"entity_ids": ["char_001"]}', None),   # two objects
    ('{"entity_ids": ["char_001"]}}', None),                     # a stray brace
    ('{"entity_ids": ["char_\n001"]}', None),                    # raw newline in a string
    ('["char_001"]', None),                                      # not an object
    ('{"entity_ids": "char_001"}', None),                        # not a list
    ('{"entity_ids": null}', None),
    ('{"entity_ids": [1]}', None),                               # not a string
    ('{"entity_ids": [NaN]}', None),
    ('{"entity_ids": ["char_001", "char_001"]}', None),          # repeated id
    ('{"entity_ids": ["char_999"]}', None),                      # outside the roster
    ('{"entity_ids": ["char_001"], "why": "seen"}', None),       # another key
    ('{"Entity_ids": ["char_001"]}', None),
    ('{"entity_ids": ["char_001"]', None),                       # cut short
]


class ScriptedJudge(JudgeExchange):
    """A judge whose model says ``text`` to every ask (first and follow-up)."""

    name = "judge/scripted"
    _log = logging.getLogger(__name__)
    _token_limit = "max_tokens"

    def __init__(self, text: str) -> None:
        self.text = text
        self._start_counters()

    def judge(self, request: JudgeRequest):
        user = {"role": "user", "content": [{"type": "text", "text": request.prompt}]}

        def ask(*_: object):
            self._count("calls")
            return JudgeReply(self.text, "stop"), 1, None

        return self._exchange(request, user, ask, ask)


def reference_request() -> JudgeRequest:
    prompt = load_prompt("vidmem.benchmarks.vmem_track_a", "reference")
    return prompt.request("film/segment-3/t1.000", [np.zeros((8, 8, 3), np.uint8)],
                          answer_model=reference_answer_model(ROSTER), roster=ROWS)


@pytest.mark.parametrize(("reply", "official"), TABLE, ids=[repr(r)[:40] for r, _ in TABLE])
def test_a_reference_reply_is_read_as_the_official_v3_parser_reads_it(reply, official):
    judge = ScriptedJudge(reply)
    result = judge.judge(reference_request())
    if official is None:
        assert result.status == "unparsable", result.data
        assert judge.stats()["unparsable"] == 1
    else:
        assert result.status == "ok", result.error
        assert reference_labels(result.data, set(ROSTER)) == official


def test_the_tolerant_reading_stays_for_requests_that_do_not_ask_for_strictness():
    """Track-B and MIST prompts keep the tolerant reader: the same fenced reply is read."""
    fenced = '```json\n{"present": true}\n``` That is all.'
    loose = JudgeRequest("x", "q", required_keys=("present",))
    strict = JudgeRequest("x", "q", required_keys=("present",), strict_json=True)
    assert ScriptedJudge(fenced).judge(loose).data == {"present": True}
    assert ScriptedJudge(fenced).judge(strict).status == "unparsable"


ids = st.lists(st.sampled_from(ROSTER), unique=True)


@settings(max_examples=60, deadline=None)
@given(ids=ids, indent=st.sampled_from([None, 0, 2]), pad=st.sampled_from(["", " ", "\n", "\t "]))
def test_strict_and_tolerant_reading_agree_on_every_valid_reply(ids, indent, pad):
    """A reply that is exactly one valid JSON answer is read the same by both readers."""
    text = pad + json.dumps({"entity_ids": ids}, indent=indent) + pad
    model = reference_answer_model(ROSTER)
    strict, why = read_reply(JudgeReply(text, "stop"), ("entity_ids",), token_limit="max_tokens",
                             answer_model=model, strict_json=True)
    loose, _ = read_reply(JudgeReply(text, "stop"), ("entity_ids",), token_limit="max_tokens",
                          answer_model=model)
    assert strict == loose == {"entity_ids": ids}, why
