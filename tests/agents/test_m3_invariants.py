"""check_rewrite: each invariant on hand-written instruction pairs."""

from __future__ import annotations

import pytest

from vidmem.agents.m3_invariants import EVENTS, check_rewrite, event_order, target_terms

RECORD = {"actor": "the woman", "object": "gold coin", "binding": "gold coin in the green box",
          "operation": "keep each object bound to its container",
          "required_last_frame_evidence": "the open green box with a gold coin visible inside"}
SCENE = {"container": {"noun": "green box"},
         "objects": [{"noun": "gold coin", "plural": "gold coins", "colour": "gold"},
                     {"noun": "mission patch", "plural": "mission patches"}],
         "target": {"contents": [{"noun": "gold coin", "count": 1}], "text": "a gold coin"}}
OLD = "The woman opens the green box."


@pytest.mark.parametrize(("new", "problems"), [
    ("The woman opens the green box and holds the lid open until the end.", []),
    ("", ["is empty"]),
    ("  the WOMAN opens the green box ", ["is the old instruction unchanged"]),
    ("The man opens the green box and holds it open.", ["drops the actor 'the woman'"]),
    ("The woman opens the yellow box and holds it open.", ["drops the container 'green box'"]),
    ("The woman opens the green-box and holds it open.", []),  # hyphen = space
    ("The woman opens the green box: three gold coins lie inside.",
     ["states another count than the target's: 'three gold coins'"]),
    ("The woman opens the green box; a gold coin lies inside, held in view.", []),
    ("The woman opens the green box; two shiny gold coins lie inside.",
     ["states another count than the target's: 'two shiny gold coins'"]),
])
def test_rules_on_a_rewrite_of_the_baseline(new, problems):
    assert check_rewrite(OLD, new, RECORD, scene=SCENE) == problems


def test_a_target_the_old_instruction_states_must_stay():
    old = "The woman opens the green box; a gold coin is inside."
    assert check_rewrite(old, "The woman opens the green box and holds it open.", RECORD,
                         scene=SCENE) == ["drops the object 'gold coin'",
                                          "drops the target term(s) 'gold', 'gold coin'"]


def test_withheld_forbids_every_target_noun_colour_and_count_but_not_the_container():
    leaks = {"The woman opens the green box and shows the gold coin.": "'gold', 'gold coin'",
             "The woman opens the green box; 1 thing is inside.": "'1'",
             "The woman opens the green box and holds one side open.": "'one'"}
    for new, terms in leaks.items():
        assert check_rewrite(OLD, new, RECORD, scene=SCENE, withhold_target=True) == [
            f"states the withheld target: {terms}"], new
    fine = "The woman opens the green box and holds it open; the inside stays visible."
    assert check_rewrite(OLD, fine, RECORD, scene=SCENE, withhold_target=True) == []


def test_withheld_wins_over_keeping_an_object_that_is_the_target():
    old = "The woman opens the green box where the gold coin is."
    new = "The woman opens the green box and holds it open."
    assert check_rewrite(old, new, RECORD, scene=SCENE, withhold_target=True) == []
    assert "drops the object 'gold coin'" in check_rewrite(old, new, RECORD, scene=SCENE)


def test_an_empty_target_has_its_own_words():
    scene = {**SCENE, "target": {"contents": [], "text": "nothing"}}
    assert target_terms(scene) == ("empty", "nothing", "none", "zero", "0")
    assert check_rewrite(OLD, "The woman opens the green box: it is empty.", RECORD,
                         scene=scene, withhold_target=True) == [
        "states the withheld target: 'empty'"]


def test_the_order_of_events_both_texts_name_is_kept():
    old = "The woman puts the gold coin in the green box, then opens it."
    assert check_rewrite(old, "The woman opens the green box, then puts the gold coin in it.",
                         RECORD, scene=SCENE) == [
        "changes the order of events: put, open before; open, put now"]
    # adding an event (hold) or dropping one is allowed: that is the rewrite's job
    assert check_rewrite(old, "The woman puts the gold coin in the green box, opens it and "
                         "holds the lid open.", RECORD, scene=SCENE) == []
    # the record's own operation words count as events too
    rec = {**RECORD, "operation": "stack the cups, then topple them"}
    assert check_rewrite("The woman stacks the cups, then topples them.",
                         "The woman topples the cups, then stacks them.", rec) == [
        "changes the order of events: stack, cups, topple before; topple, cups, stack now"]


def test_event_forms():
    assert event_order("He dropped it, was holding it, then shut it and came back.", EVENTS) == [
        "put", "hold", "close", "return"]
