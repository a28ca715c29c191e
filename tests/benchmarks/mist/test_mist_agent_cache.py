"""MIST's M3-Agent arms ask their judge through the run's answer cache.

Two sim cases (the baseline succeeds in the first, so its agent keeps the original; it
fails in the second, so each agent generates one more try), the baseline and both M3
arms, K = 2, judged by judge/sim-cards. Every
question that reaches the judge is recorded (the judge class is spied on), and every
question put to the cache wrapper, so the tests check the cache against what was really
asked: the agent's questions are in the cache after generation, scoring is served the
agent's clips' reveal questions (``from_cache`` counts exactly those), the scores are
the bytes of a run with ``--judge-cache off``, and a resumed or repeated run asks the
judge nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vidmem.benchmarks.mist.sim_build import build_mist
from vidmem.cli import main
from vidmem.models.backends.judge_sim_cards import SimCardJudge
from vidmem.runners.item_store import ItemStore
from vidmem.runners.judge_cache import AnswerCache, CachedJudge, answer_key, judge_identity

ARMS = "baseline,diagnosis_rewrite,target_withheld_rewrite"

pytestmark = pytest.mark.slow  # five sim runs of two cases (~25 s)


def _agent_asked(item_id: str) -> bool:
    # the agent names its questions <case>/<arm>/keep/<clip>/... and .../diagnose
    return "/keep/" in item_id or item_id.endswith("/diagnose")


class Spy:
    """What reached the judge (``asked``) and what was put to a cache (``calls``)."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []  # (item id, answer key)
        self.calls: list[list[tuple[str, str]]] = []  # one per CachedJudge.judge_many

    def install(self, mp: pytest.MonkeyPatch) -> None:
        judge, many = SimCardJudge.judge, CachedJudge.judge_many
        spy = self

        def judged(self: Any, request: Any) -> Any:
            who = judge_identity(self.info().to_dict())
            spy.asked.append((request.item_id, answer_key(who, request)))
            return judge(self, request)

        def cached_many(self: Any, requests: Any, **kw: Any) -> Any:
            if self.cache is not None:  # every judge goes through CachedJudge; off: no cache
                spy.calls.append([(r.item_id, answer_key(self._identity, r)) for r in requests])
            return many(self, requests, **kw)

        mp.setattr(SimCardJudge, "judge", judged)
        mp.setattr(CachedJudge, "judge_many", cached_many)

    def take(self) -> dict[str, list]:
        out = {"asked": list(self.asked), "calls": [list(c) for c in self.calls]}
        self.asked.clear()
        self.calls.clear()
        return out


def _run(root: Path, out: Path, cache: str, *extra: str) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["run", "mist", "--root", str(root), "--generator", "sim", "--out", str(out),
              "--arms", ARMS, "--k", "2", "--judge-cache", cache, "--quiet", *extra])
    assert exc.value.code in (0, None)


def _summary(run: Path) -> dict[str, Any]:
    return json.loads((run / "summary.json").read_text("utf-8"))


def _without_counts(run: Path) -> dict[str, Any]:
    data = _summary(run)
    data.pop("judge_answers")
    health = data.pop("judge_health")  # how answers were obtained differs with a cache
    assert health["unparsable"] == 0 and health["failure"] is None
    return data


def _rollout_responses(run: Path) -> list[dict[str, Any]]:
    with ItemStore(run / "items.sqlite") as store:
        return [s.response for s in store.iter_items(kind="generate")]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Any]:
    """Run A (fresh cache), B (``--judge-cache off``), A resumed with the cache and with
    none, and C (a new run directory on A's cache): the spy's records after each."""
    base = tmp_path_factory.mktemp("mist_agent_cache")
    root, cache = base / "sim", base / "answers.sqlite"
    build_mist(root, seed=0, n_cases=2)
    spy = Spy()
    seen: dict[str, Any] = {"base": base, "cache": cache}
    with pytest.MonkeyPatch.context() as mp:
        spy.install(mp)
        _run(root, base / "A", str(cache))
        seen["A"] = spy.take()
        seen["A_scores"] = (base / "A" / "scores.jsonl").read_bytes()
        seen["A_summary"] = _summary(base / "A")
        seen["A_rollouts"] = _rollout_responses(base / "A")
        _run(root, base / "B", "off")
        seen["B"] = spy.take()
        _run(root, base / "A", str(cache), "--resume")
        seen["A_resumed"] = spy.take()
        seen["A_resumed_summary"] = _summary(base / "A")
        _run(root, base / "A", "off", "--resume")
        seen["A_resumed_off"] = spy.take()
        seen["A_resumed_off_summary"] = _summary(base / "A")
        _run(root, base / "C", str(cache))
        seen["C"] = spy.take()
    return seen


def _keys(pairs: list[tuple[str, str]]) -> set[str]:
    return {key for _, key in pairs}


def test_the_agents_questions_are_in_the_cache_and_scoring_is_served_them(runs):
    a = runs["A"]
    agent_calls = [c for c in a["calls"] if all(_agent_asked(i) for i, _ in c)]
    scoring_calls = [c for c in a["calls"] if not any(_agent_asked(i) for i, _ in c)]
    assert agent_calls and len(scoring_calls) == 2  # one judge_many call per case
    assert len(agent_calls) + len(scoring_calls) == len(a["calls"])  # no mixed call
    agent_keys = _keys([q for c in agent_calls for q in c])
    assert any(i.endswith("/diagnose") for c in agent_calls for i, _ in c)
    # every question the agent put to the cache is stored there (sim-cards answers ok)
    cache = AnswerCache(runs["cache"])
    assert set(cache.get_many(agent_keys)) == agent_keys
    # scoring asked the judge none of them: they came from the cache
    asked_by_scoring = [(i, k) for i, k in a["asked"] if not _agent_asked(i)]
    assert not _keys(asked_by_scoring) & agent_keys
    # every reveal clip of these arms is one the agent scored (the baseline's is the
    # original): scoring asks the judge the locked shots' questions only
    assert sorted(i.split("/", 1)[1] for i, _ in asked_by_scoring) == [
        "locked/leak"] * 2 + ["locked/setup"] * 2
    served = [k for c in scoring_calls for _, k in c if k in agent_keys]
    # 12 reveal questions per distinct clip: the original in case 0; in case 1 the
    # original and each agent's new try
    assert len(served) == 12 * (1 + 3)
    counts = runs["A_summary"]["judge_answers"]
    assert counts["from_cache"] == len(served)
    assert counts["asked"] == len(asked_by_scoring) == 2 * 2
    assert counts["items_scored_now"] == 2
    # what the agent asked is the arms' counts in the stored rollouts
    arms = [arm for r in runs["A_rollouts"] for arm in r["agent"].values()]
    assert sum(arm["judge_answers"]["asked"] for arm in arms) == len(
        [q for q in a["asked"] if _agent_asked(q[0])]) > 0
    # the second arm scores the same original clip: served from the first arm's answers
    for r in runs["A_rollouts"]:
        assert r["agent"]["target_withheld_rewrite"]["judge_answers"]["from_cache"] >= 12


def test_the_cache_changes_no_byte_of_the_scores(runs):
    base = runs["base"]
    assert runs["A_scores"] == (base / "B" / "scores.jsonl").read_bytes()
    a = dict(runs["A_summary"])
    a.pop("judge_answers")
    assert a.pop("judge_health")["failure"] is None
    assert a == _without_counts(base / "B")
    # without a cache every question reaches the judge, the agent's twice where scoring
    # asks them again
    assert len(runs["B"]["asked"]) > len(runs["A"]["asked"])
    assert runs["B"]["calls"] == []


def test_a_resumed_or_repeated_run_asks_nothing_new(runs):
    base = runs["base"]
    for name in ("A_resumed", "A_resumed_off"):
        assert runs[name]["asked"] == [], name
        summary = runs[f"{name}_summary"]
        assert summary["execution"]["computed"] == 0, name
        assert summary["judge_answers"]["asked"] == 0
        assert summary["judge_answers"]["items_scored_now"] == 0
    assert (base / "A" / "scores.jsonl").read_bytes() == runs["A_scores"]
    # a new run directory on the same cache: the agent and scoring are answered by it
    assert runs["C"]["asked"] == []
    assert (base / "C" / "scores.jsonl").read_bytes() == runs["A_scores"]
    c = _summary(base / "C")["judge_answers"]
    scoring_questions = sum(len(c) for c in runs["A"]["calls"]
                            if not any(_agent_asked(i) for i, _ in c))
    assert c["asked"] == 0 and c["from_cache"] == scoring_questions
