"""Identity units from the sample story equal counts made by hand from its gold JSON.

The module finds previous appearances by scanning cast lists; the checks here read the
raw JSON's own ``gap`` / ``last_seen`` labels instead (a different route to the same
answer), and the return-after-absence list is written out by hand from the story's
cast table (kind character/prop, gap >= 1).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from vidmem.benchmarks.vmem_track_b.identity_units import (
    FAMILIES,
    cohort_identity_units,
    family_counts,
    identity_units,
)
from vidmem.benchmarks.vmem_track_b.stories import (
    CastEntry,
    Entity,
    Segment,
    Story,
    load_stories,
)
from vidmem.errors import UserInputError

SAMPLE = Path(__file__).parent / "data" / "vmem_track_b_sample"
GOLD = json.loads((SAMPLE / "gt" / "0001_lighthouse_keeper.json").read_text(encoding="utf-8"))

#: read off the cast table of gt/0001 by hand: (segment, eid) of every character/prop
#: entry with gap >= 1 (locations E7-E10 left out)
HAND_RETURNS = {
    (4, "E4"), (7, "E1"), (12, "E1"), (14, "E1"), (16, "E1"), (17, "E5"), (22, "E2"),
    (26, "E1"), (26, "E4"), (26, "E3"), (31, "E1"), (37, "E5"), (39, "E1"), (39, "E12"),
    (41, "E1"), (43, "E4"), (46, "E5"), (48, "E1"), (48, "E4"), (53, "E15"), (54, "E4"),
    (55, "E1"), (57, "E4"), (61, "E1"), (62, "E13"), (65, "E1"), (68, "E16"), (70, "E2"),
    (71, "E1"), (77, "E6"), (81, "E4"), (82, "E6"), (83, "E15"), (85, "E2"), (85, "E3"),
    (86, "E12"), (87, "E2"), (87, "E4"),
}
#: the two characters whose look changed while away >= 30 segments (youth -> adult)
HAND_CHANGED = {(70, "E2", 44, "youth", "adult"), (77, "E6", 51, "youth", "adult")}


@pytest.fixture(scope="module")
def story() -> Story:
    return load_stories(SAMPLE)[0]


def _raw_entries():
    """(segment number, cast entry dict, kind) from the raw JSON."""
    kinds = {eid: e["kind"] for eid, e in GOLD["entities"].items()}
    for seg in GOLD["segments"]:
        n = int(seg["segment_id"].removeprefix("seg_"))
        for c in seg["cast"]:
            yield n, c, kinds[c["eid"]]


def test_returns_after_absence_equal_the_hand_list(story):
    units = [u for u in identity_units(story) if u.family == "return_after_absence"]
    assert {(u.segment_id, u.eid) for u in units} == HAND_RETURNS
    assert len(units) == len(HAND_RETURNS) == 38
    # the gold's own labels agree with the cast-list scan, unit by unit
    raw = {(n, c["eid"]): c for n, c, _ in _raw_entries()}
    for u in units:
        c = raw[(u.segment_id, u.eid)]
        assert (u.gap, u.previous_segment_id) == (c["gap"],
                                                 int(c["last_seen"].removeprefix("seg_")))


def test_recent_sample_is_twenty_percent_of_the_gap0_pool(story):
    pool = {(n, c["eid"]) for n, c, kind in _raw_entries()
            if kind in ("character", "prop") and c["op"] != "introduce" and c["gap"] == 0}
    assert len(pool) == 96  # counted from the JSON's gap labels
    units = [u for u in identity_units(story, seed=0) if u.family == "recent_return_sample"]
    assert len(units) == math.floor(0.2 * 96 + 0.5) == 19
    assert {(u.segment_id, u.eid) for u in units} <= pool
    assert all(u.gap == 0 and u.previous_segment_id == u.segment_id - 1 for u in units)
    # seeded: the same seed gives the same sample, another seed another one
    again = [u for u in identity_units(story, seed=0) if u.family == "recent_return_sample"]
    other = [u for u in identity_units(story, seed=1) if u.family == "recent_return_sample"]
    assert again == units
    assert len(other) == 19 and other != units
    everything = identity_units(story, sample_share=1.0)
    assert {(u.segment_id, u.eid) for u in everything
            if u.family == "recent_return_sample"} == pool


def test_changed_long_gap_returns_are_the_two_grown_up_sisters(story):
    units = [u for u in identity_units(story) if u.family == "changed_long_gap"]
    assert {(u.segment_id, u.eid, u.gap, u.previous_state, u.state) for u in units} \
        == HAND_CHANGED
    mara = next(u for u in units if u.eid == "E2")
    assert mara.previous_segment_id == 25 and mara.kind == "character"
    assert mara.previous_appearance.startswith("Young Mara")
    assert mara.appearance.startswith("Adult Mara")
    # props that return after >= 30 segments are not "changed characters"
    assert not any(u.eid in ("E3", "E12", "E15", "E16") for u in units)


def test_family_counts_and_cohort(story):
    units = identity_units(story)
    assert family_counts(units) == {"return_after_absence": 38, "recent_return_sample": 19,
                                    "changed_long_gap": 2}
    assert [u.family for u in units] == sorted((u.family for u in units), key=FAMILIES.index)
    assert cohort_identity_units([story, story]) == units + units
    assert len({u.key for u in units}) == len(units)
    assert units[0].to_dict()["family"] == "return_after_absence"


def _toy(*cast_per_segment, states=None) -> Story:
    segs = tuple(Segment("toy", i + 1, "S1", 5.0, "continue", "", "", cast=tuple(c))
                 for i, c in enumerate(cast_per_segment))
    ent = Entity("E1", "character", "Ada", "A cat.", states or {},
                 next(iter(states)) if states else None)
    return Story("toy", 1, "t", segs, {"E1": ent, "E2": Entity("E2", "location", "Hall", "")})


def test_shown_state_follows_flashbacks_and_persists():
    states = {"young": "Young Ada.", "old": "Old Ada."}
    far = [[]] * 31
    story = _toy([CastEntry("E1", "introduce")], *far,
                 [CastEntry("E1", "recall", 31, 1, state="young", flashback=True)],  # seg 33
                 *far,
                 [CastEntry("E1", "transform", 31, 33, state="old")],  # seg 65: changed
                 *far,
                 [CastEntry("E1", "recall", 31, 65)],  # seg 97: still old, not changed
                 states=states)
    units = identity_units(story)
    changed = [(u.segment_id, u.previous_state, u.state) for u in units
               if u.family == "changed_long_gap"]
    assert changed == [(65, "young", "old")]
    assert [u.segment_id for u in units if u.family == "return_after_absence"] == [33, 65, 97]


def test_locations_only_when_asked():
    story = _toy([CastEntry("E2", "introduce")], [], [CastEntry("E2", "recall", 1, 1)])
    assert identity_units(story) == []
    (u,) = identity_units(story, kinds=("location",))
    assert (u.eid, u.kind, u.gap) == ("E2", "location", 1)


@pytest.mark.parametrize("kw, word", [({"seed": "0"}, "seed"), ({"sample_share": 1.5}, "share"),
                                      ({"changed_min_gap": 0}, "changed_min_gap"),
                                      ({"kinds": ("group",)}, "kinds")])
def test_bad_arguments_are_named(story, kw, word):
    with pytest.raises(UserInputError, match=word):
        identity_units(story, **kw)
