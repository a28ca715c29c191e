"""rewriter/sim-grammar: only the failed operation and its evidence clause change; actor,
object and container survive; a withheld target is never stated; the sim reads the new
clause as the move it fixes. The invariant check of the M3-Agent is the referee."""

from __future__ import annotations

import re

import pytest

from vidmem.benchmarks.mist.sim_build import plan_card
from vidmem.errors import UserInputError
from vidmem.models.backends.rewriter_sim_grammar import CLAUSES, SimGrammarRewriter
from vidmem.models.loading import load_backend
from vidmem.models.protocols import RewriteRequest
from vidmem.sim.mist_grammar import parse_reveal
from vidmem.sim.mist_reveal import execution_probability

MODES = tuple(CLAUSES)
#: the sim's move part each failure mode's rewrite must name (vidmem.sim.mist_reveal)
FIXES = {"no_action": "open", "return_to_intact": "hold", "occluded_view": "view",
         "wrong_binding": "bind"}


@pytest.fixture(scope="module")
def rewriter():
    return load_backend("rewriter/sim-grammar", role="rewriter")


def _scene(card: dict) -> dict:
    box = next(c for c in card["containers"] if c["id"] == card["reveal"])
    return {"container": {"noun": box["noun"]}, "objects": card["objects"],
            "target": {"contents": [{"noun": c["noun"], "count": c["count"]}
                                    for c in card["target"]["contents"]]}}


def _words(text: str, terms) -> list[str]:
    return [t for t in terms if re.search(rf"(?<!\w){re.escape(t)}(?!\w)", text, re.I)]


def test_loads_as_a_rewriter_and_refuses_weights(rewriter):
    info = rewriter.info()
    assert info.name == "rewriter/sim-grammar" and info.official is False
    with pytest.raises(UserInputError, match="no weights"):
        SimGrammarRewriter(weights="/some/model")


@pytest.mark.parametrize("withhold", [False, True])
def test_rewrites_keep_actor_object_container_and_the_invariants(rewriter, withhold):
    m3 = pytest.importorskip("vidmem.agents.m3_invariants")
    for index in range(9):
        card = plan_card(0, index)
        scene, box = _scene(card), _scene(card)["container"]["noun"]
        terms = m3.target_terms(scene)
        for start in ("baseline", "open_and_hold"):
            text = card["reveal_prompts"][start]
            for mode in MODES:
                res = rewriter.rewrite(RewriteRequest(text, card["task_record"], mode,
                                                      "the cup is open instead", withhold))
                assert res.status == "ok" and res.text and res.text != text, res
                new = res.text
                assert m3.check_rewrite(text, new, card["task_record"], scene=scene,
                                        withhold_target=withhold) == [], (mode, new)
                assert new.startswith(card["reveal_prompts"]["baseline"].rstrip("."))
                assert _words(new, [card["actor"]["noun"], box]) == [card["actor"]["noun"], box]
                if withhold:
                    assert _words(new, terms) == [], (mode, new)
                kept = [w for w in _words(text, [card["task_record"]["object"]])]
                assert _words(new, kept) == kept
                assert parse_reveal(new, card["containers"]).container == card["reveal"]


def test_the_new_clause_names_the_failed_move_so_the_sim_executes_more(rewriter):
    card = plan_card(0, 1)  # two containers: every move part counts
    base = card["reveal_prompts"]["baseline"]
    p0 = execution_probability(parse_reveal(base, card["containers"]).clauses, 2)
    for mode, part in FIXES.items():
        new = rewriter.rewrite(RewriteRequest(base, card["task_record"], mode, "", True)).text
        clauses = parse_reveal(new, card["containers"]).clauses
        assert part in clauses, (mode, new, clauses)
        assert execution_probability(clauses, 2) > p0
    # fixes add up: a second failure keeps the first fix
    once = rewriter.rewrite(RewriteRequest(base, card["task_record"], "no_action", "", True)).text
    twice = rewriter.rewrite(RewriteRequest(once, card["task_record"], "wrong_binding",
                                            "the cup is open instead", True)).text
    head, *evidence = once.rstrip(".").split("; ")
    assert twice.startswith(head) and all(e in twice for e in evidence)
    assert {"open", "bind"} <= set(parse_reveal(twice, card["containers"]).clauses)


def test_the_target_is_stated_only_when_not_withheld(rewriter):
    card = plan_card(0, 0)  # R0: two snake signs in the red box
    base = card["reveal_prompts"]["baseline"]
    said = rewriter.rewrite(RewriteRequest(base, card["task_record"], "wrong_binding", "")).text
    assert "two snake signs" in said
    assert parse_reveal(said, card["containers"]).stated == [{"asset": "logo", "count": 2}]
    quiet = rewriter.rewrite(RewriteRequest(base, card["task_record"], "wrong_binding", "",
                                            withhold_target=True)).text
    assert not _words(quiet, ["two", "snake sign", "snake signs", "2"])
    # an old instruction that states the target loses that clause when it is withheld
    loud = card["reveal_prompts"]["answer_only"]
    res = rewriter.rewrite(RewriteRequest(loud, card["task_record"], "no_action", "", True))
    assert res.status == "ok" and not _words(res.text, ["two", "snake signs"])
    assert res.text.startswith("The cat opens the red box")


def test_attempts_rejections_success_and_unknown_modes(rewriter):
    card = plan_card(0, 2)
    base, rec = card["reveal_prompts"]["baseline"], card["task_record"]
    first = rewriter.rewrite(RewriteRequest(base, rec, "occluded_view", "", attempt=1)).text
    second = rewriter.rewrite(RewriteRequest(base, rec, "occluded_view", "", attempt=2)).text
    assert first != second
    again = rewriter.rewrite(RewriteRequest(base, rec, "occluded_view", "", attempt=1,
                                            rejected=[first])).text
    assert again != first
    assert rewriter.rewrite(RewriteRequest(base, rec, "success", "")).text == base
    bad = rewriter.rewrite(RewriteRequest(base, rec, "bored", ""))
    assert bad.status == "error" and "unknown failure mode" in bad.error
    same = rewriter.rewrite(RewriteRequest(first, rec, "occluded_view", ""))
    assert same.status == "ok" and same.text != first  # the next variant, not the same text
