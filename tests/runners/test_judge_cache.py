"""The judge answer cache: what makes two questions the same, what is stored, what is not."""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest
from pydantic import BaseModel

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
    assert judge.answer_counts() == {"from_cache": 2, "asked": 5}


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
    qs = [JudgeRequest("g", "garble"), JudgeRequest("f", "fail"), JudgeRequest("o", "fine")]
    assert [r.status for r in judge.judge_many(qs)] == ["unparsable", "error", "ok"]
    assert len(cache) == 1
    assert [r.status for r in judge.judge_many(qs)] == ["unparsable", "error", "ok"]
    assert inner.asked == ["g", "f", "o", "g", "f"]


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
