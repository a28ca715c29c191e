"""The judge answer cache: what makes two questions the same, what is stored, what is not."""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest
from pydantic import BaseModel

from vidmem.errors import JudgeUnavailableError
from vidmem.models.backends.judge_common import ManyJudging
from vidmem.models.protocols import BackendInfo, JudgeRequest, JudgeResult
from vidmem.runners.judge_cache import AnswerCache, CachedJudge, answer_key, judge_identity


class Counting(ManyJudging):
    """Answers {"n": k} for the k-th question it is asked; ``status`` by prompt."""

    name = "judge/counting"

    def __init__(self, **settings):
        self.asked: list[str] = []
        self.settings = settings
        self._lock = threading.Lock()

    def info(self):
        return BackendInfo(self.name, settings=self.settings)

    def judge(self, r):
        with self._lock:
            self.asked.append(r.item_id)
            n = len(self.asked)
        status = "unparsable" if "garble" in r.prompt else "error" if "fail" in r.prompt else "ok"
        return JudgeResult(r.item_id, status, {"n": n} if status == "ok" else None, "raw", 1, self.name)


class Present(BaseModel):
    present: bool


class PresentWhy(BaseModel):
    present: bool
    why: str


IMG = np.zeros((4, 4, 3), np.uint8)


def key(req, **settings):
    return answer_key(judge_identity(BackendInfo("judge/x", settings=settings).to_dict()), req)


def test_the_key_follows_everything_that_changes_an_answer():
    base = JudgeRequest("a", "Is it red?", images=(IMG,), required_keys=("present",))
    same = [
        JudgeRequest("b", "Is it red?", images=(IMG.copy(),), required_keys=("present",)),
    ]
    other = [
        JudgeRequest("a", "Is it blue?", images=(IMG,), required_keys=("present",)),
        JudgeRequest("a", "Is it red?", images=(IMG + 1,), required_keys=("present",)),
        JudgeRequest("a", "Is it red?", images=(IMG[:, :3],), required_keys=("present",)),
        JudgeRequest("a", "Is it red?", images=(IMG, IMG), required_keys=("present",)),
        JudgeRequest("a", "Is it red?", images=(IMG,), required_keys=("present", "why")),
        JudgeRequest("a", "Is it red?", images=(IMG,), required_keys=("present",), key_types={"present": "boolean"}),
        JudgeRequest("a", "Is it red?", images=(IMG,), required_keys=("present",), answer_model=Present),
        JudgeRequest("a", "Is it red?", images=(IMG,), required_keys=("present",), answer_model=PresentWhy),
        JudgeRequest("a", "Is it red?", images=(IMG,), required_keys=("present",), contract="b/p@2"),
        JudgeRequest("a", "Is it red?", images=(IMG,), required_keys=("present",), payload={"roster": [1]}),
        JudgeRequest("a", "Is it red?", images=(IMG,), required_keys=("present",), strict_json=True),
        JudgeRequest("a", "Is it red?", images=(IMG,), required_keys=("present",), max_tokens=256),
    ]
    k = key(base, temperature=0.0)
    assert all(key(r, temperature=0.0) == k for r in same)
    keys = [key(r, temperature=0.0) for r in other]
    assert k not in keys and len(set(keys)) == len(keys)
    # decoding settings are part of the judge; where the server is, is not
    assert key(base, temperature=0.7) != k
    assert key(base, temperature=0.0, base_url="http://elsewhere/v1", timeout_seconds=9) == k


def test_weights_hash_not_path_names_a_local_model():
    a = judge_identity(BackendInfo("judge/transformers", weights="/a/qwen", weights_sha256="f00").to_dict())
    b = judge_identity(BackendInfo("judge/transformers", weights="/b/qwen", weights_sha256="f00").to_dict())
    c = judge_identity(BackendInfo("judge/transformers", weights="/a/qwen", weights_sha256="ba5").to_dict())
    d = judge_identity(BackendInfo("judge/transformers", weights="/a/qwen", dtype="bfloat16", weights_sha256="f00").to_dict())
    assert a == b and a != c and a != d


def test_cached_judge_asks_only_what_it_has_not_answered(tmp_path):
    inner = Counting(temperature=0.0)
    judge = CachedJudge(inner, AnswerCache(tmp_path / "a.sqlite"))
    qs = [JudgeRequest(f"q{i}", f"question {i}") for i in range(4)]
    first = judge.judge_many(qs)
    assert [r.data["n"] for r in first] == [1, 2, 3, 4] and not any(r.cached for r in first)
    again = judge.judge_many([qs[2], JudgeRequest("new", "question 9"), JudgeRequest("other-id", "question 0")])
    assert inner.asked == ["q0", "q1", "q2", "q3", "new"]
    assert [(r.item_id, r.data["n"], r.cached, r.attempts) for r in again] == [
        ("q2", 3, True, 0), ("new", 5, False, 1), ("other-id", 1, True, 0)]
    assert judge.answer_counts() == {"from_cache": 2, "asked": 5, "unparsable": 0, "errors": 0}


def test_identical_questions_in_one_batch_are_asked_once(tmp_path):
    inner = Counting()
    judge = CachedJudge(inner, AnswerCache(tmp_path / "a.sqlite"))
    out = judge.judge_many([JudgeRequest("x", "same"), JudgeRequest("y", "same")])
    assert inner.asked == ["x"] and [r.item_id for r in out] == ["x", "y"]
    assert out[0].data == out[1].data


def test_unusable_results_are_not_stored(tmp_path):
    inner = Counting()
    cache = AnswerCache(tmp_path / "a.sqlite")
    judge = CachedJudge(inner, cache)
    qs = [JudgeRequest("g", "garble"), JudgeRequest("o", "fine")]
    assert [r.status for r in judge.judge_many(qs)] == ["unparsable", "ok"]
    assert len(cache) == 1
    assert [r.status for r in judge.judge_many(qs)] == ["unparsable", "ok"]
    assert inner.asked == ["g", "o", "g"]
    assert judge.answer_counts() == {"from_cache": 1, "asked": 3, "unparsable": 2, "errors": 0}
    assert judge.unparsable_sample() == "raw"


def test_a_question_without_an_answer_fails_the_call_after_storing_the_others(tmp_path):
    inner = Counting()
    cache = AnswerCache(tmp_path / "a.sqlite")
    qs = [JudgeRequest("o1", "fine 1"), JudgeRequest("f", "fail"), JudgeRequest("o2", "fine 2")]
    with pytest.raises(JudgeUnavailableError, match=r"1 of 3 judge questions got no answer \(first: f"):
        CachedJudge(inner, cache).judge_many(qs)
    assert len(cache) == 2  # what was answered is kept
    again = Counting()
    with pytest.raises(JudgeUnavailableError):
        CachedJudge(again, cache).judge_many(qs)
    assert again.asked == ["f"]  # only the unanswered question is asked again
    with pytest.raises(JudgeUnavailableError):  # an error is never a result, cache or not
        CachedJudge(Counting(), None).judge_many(qs)


def _labels_named(data, labels=("A", "B")):
    ids = [i.get("id") for i in data.get("items", []) if isinstance(i, dict)]
    return "" if any(i in labels for i in ids) else "no item names a listed label"


class Scripted(ManyJudging):
    """Answers each question with the next scripted data (``ok``)."""

    name = "judge/scripted"

    def __init__(self, *answers):
        self.answers, self.asked = list(answers), []

    def info(self):
        return BackendInfo(self.name)

    def judge(self, r):
        self.asked.append(r.item_id)
        return JudgeResult(r.item_id, "ok", self.answers.pop(0), "raw", 1, self.name)


def test_an_answer_the_question_refuses_is_unparsable_and_never_stored(tmp_path):
    cache = AnswerCache(tmp_path / "a.sqlite")
    q = JudgeRequest("q", "who is there?", accept=_labels_named)
    for refused in ({"items": []}, {"items": [{"id": "Z"}]}):
        r = CachedJudge(Scripted(refused), cache).judge(q)
        assert r.status == "unparsable" and r.data is None and "no item names" in r.error
    assert len(cache) == 0
    good = CachedJudge(Scripted({"items": [{"id": "A"}]}), cache).judge(q)
    assert good.status == "ok" and len(cache) == 1


def test_a_stored_answer_that_fails_its_question_now_is_a_miss(tmp_path):
    cache = AnswerCache(tmp_path / "a.sqlite")
    q = JudgeRequest("q", "who is there?", accept=_labels_named)
    CachedJudge(Scripted({"items": [{"id": "A"}]}), cache).judge(q)
    # tamper with the stored row: it now names no listed label, then garbage
    for data in ('{"items": [{"id": "Z"}]}', "{not json"):
        cache._conn.execute("UPDATE answers SET data = ?", (data,))
        fresh = Scripted({"items": [{"id": "B"}]})
        r = CachedJudge(fresh, cache).judge(q)
        assert fresh.asked == ["q"] and r.data == {"items": [{"id": "B"}]} and not r.cached
        cache._conn.execute("DELETE FROM answers")
        CachedJudge(Scripted({"items": [{"id": "A"}]}), cache).judge(q)


class DiesAfter(ManyJudging):
    """Answers ``n`` questions, then the process 'dies' (an exception out of judge)."""

    name, concurrency = "judge/dies", 1

    def __init__(self, n):
        self.n, self.asked = n, []

    def info(self):
        return BackendInfo(self.name)

    def judge(self, r):
        if len(self.asked) == self.n:
            raise KeyboardInterrupt
        self.asked.append(r.item_id)
        return JudgeResult(r.item_id, "ok", {"n": len(self.asked)}, "raw", 1, self.name)


def test_answers_are_stored_as_they_arrive_so_a_kill_keeps_them(tmp_path):
    cache = AnswerCache(tmp_path / "a.sqlite")
    qs = [JudgeRequest(f"q{i}", f"question {i}") for i in range(5)]
    with pytest.raises(KeyboardInterrupt):
        CachedJudge(DiesAfter(3), cache).judge_many(qs)
    assert len(cache) == 3
    rest = DiesAfter(99)  # the same judge, started again
    CachedJudge(rest, cache).judge_many(qs)
    assert rest.asked == ["q3", "q4"]


def test_a_full_disk_fails_the_call_but_every_question_is_answered(tmp_path, monkeypatch):
    from vidmem.errors import StoreError

    cache = AnswerCache(tmp_path / "a.sqlite")
    calls = []

    def full(entries):
        calls.append(list(entries))
        raise StoreError("judge answer cache x: writing failed (database or disk is full)")

    monkeypatch.setattr(cache, "put_many", full)
    inner = Counting()
    qs = [JudgeRequest(f"q{i}", f"question {i}") for i in range(3)]
    with pytest.raises(StoreError, match="disk is full"):
        CachedJudge(inner, cache).judge_many(qs)
    assert inner.asked == ["q0", "q1", "q2"] and sum(len(c) for c in calls) == 3


def test_another_judge_does_not_get_these_answers(tmp_path):
    cache = AnswerCache(tmp_path / "a.sqlite")
    q = [JudgeRequest("q", "question")]
    CachedJudge(Counting(model="qwen-a"), cache).judge_many(q)
    other = Counting(model="qwen-b")
    CachedJudge(other, cache).judge_many(q)
    assert other.asked == ["q"]


def test_the_cache_survives_reopening_and_pickling(tmp_path):
    path = tmp_path / "sub" / "a.sqlite"
    CachedJudge(Counting(), AnswerCache(path)).judge_many([JudgeRequest("q", "question")])
    reopened = pickle.loads(pickle.dumps(AnswerCache(path)))
    inner = Counting()
    r = CachedJudge(inner, reopened).judge(JudgeRequest("q", "question"))
    assert r.cached and r.data == {"n": 1} and inner.asked == []


def test_an_unwritable_cache_is_a_clear_error(tmp_path):
    from vidmem.errors import StoreError

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError, match="--judge-cache"):
        AnswerCache(blocker / "a.sqlite")


class PayloadReader(Scripted):
    """A judge that answers from the payload in its own shape (like judge/sim-cards)."""

    name = "judge/payload"
    answers_from_payload = True


def test_a_payload_judge_answers_in_its_own_shape_but_the_question_still_decides(tmp_path):
    cache = AnswerCache(tmp_path / "a.sqlite")
    schema_bound = JudgeRequest("q", "who?", required_keys=("entity_ids",), answer_model=Present,
                                accept=_labels_named)
    own_shape = {"items": [{"id": "A"}], "evidence": "card 3"}
    # its own shape lacks the prompt schema's keys: kept, since the question's rule passes
    assert CachedJudge(PayloadReader(own_shape), cache).judge(schema_bound).status == "ok"
    refused = CachedJudge(PayloadReader({"items": [{"id": "Z"}]}), None).judge(schema_bound)
    assert refused.status == "unparsable"
    # any other judge's answer must pass the schema too
    assert CachedJudge(Scripted(own_shape), None).judge(schema_bound).status == "unparsable"
