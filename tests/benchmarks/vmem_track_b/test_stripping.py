"""Appearance stripping removes exactly the bracketed spans: on the sample story every
stripped prompt equals its gold ``action`` (the text the release built the prompt
from), the default selection is the long-gap character returns read off the gold by
hand, and malformed brackets are errors naming the segment."""

from __future__ import annotations

from pathlib import Path

import pytest

from vidmem.benchmarks.vmem_track_b.stories import CastEntry, Entity, Segment, Story, load_stories
from vidmem.benchmarks.vmem_track_b.stripping import (
    appearance_spans,
    long_gap_character_returns,
    strip_appearance,
    strip_targets,
)
from vidmem.errors import UserInputError

SAMPLE = Path(__file__).parent / "data" / "vmem_track_b_sample"


@pytest.fixture(scope="module")
def story() -> Story:
    return load_stories(SAMPLE)[0]


def test_every_sample_prompt_strips_to_its_gold_action(story):
    for seg in story.segments:
        assert strip_appearance(seg.prompt) == seg.action, seg.segment_id


def test_exact_strings_on_sample_prompts(story):
    assert strip_appearance(story.segments[0].prompt) == (
        "At dusk, lighthouse keeper Elias climbs the spiral iron stair into the lantern "
        "room and lights the central Fresnel lens.")
    # a span at a possessive and one just before the full stop
    assert strip_appearance(story.segments[72].prompt) == (
        "Elias's breath fades; at last he closes his eyes and passes away.")
    assert strip_appearance(story.segments[44].prompt) == (
        "Thunder cracks; a glaring crack bursts across the Fresnel lens.")
    # three spans, one before a comma
    assert strip_appearance(story.segments[11].prompt) == (
        "On the morning rocky shore, Elias greets young Mara as she poles the indigo "
        "Petrel to shore.")
    # a prompt without brackets is unchanged
    assert strip_appearance(story.segments[3].prompt) == story.segments[3].prompt


def test_spans_count_the_reveals(story):
    # the release reveals an appearance at every introduce and transform entry
    for seg in story.segments:
        reveals = sum(c.op in ("introduce", "transform") for c in seg.cast)
        assert len(appearance_spans(seg.prompt)) == reveals, seg.segment_id


def test_default_selection_is_the_long_gap_character_returns(story):
    # by hand from gt/0001: character entries with gap >= 30 are E2 at seg_070 (gap 44)
    # and E6 at seg_077 (gap 51); the long-gap props (E15, E16, E12, E3) are not chosen
    assert long_gap_character_returns(story) == [(70, "E2", 44), (77, "E6", 51)]
    targets = strip_targets(story)
    assert [(t.segment_id, t.eids, t.gaps) for t in targets] == [(70, ("E2",), (44,)),
                                                                  (77, ("E6",), (51,))]
    t70 = targets[0]
    assert t70.stripped == ("By day, adult Mara returns along the shore and hurries toward "
                            "the lighthouse.")
    assert t70.removed == ("Adult Mara: a tall steady fisherwoman in her twenties, still in "
                           "that deep-blue headscarf and coarse cotton fishing clothes, eyes "
                           "bright and firm",)
    assert t70.had_text and t70.prompt == story.segments[69].prompt


def test_chosen_segments_and_bad_ids(story):
    (t,) = strip_targets(story, [4])
    assert (t.eids, t.had_text, t.stripped) == ((), False, story.segments[3].prompt)
    assert [t.segment_id for t in strip_targets(story, [2, 1, 2])] == [1, 2]
    with pytest.raises(UserInputError, match=r"0001_lighthouse_keeper.*\[0, 88\]"):
        strip_targets(story, [0, 5, 88])


@pytest.mark.parametrize("text, expected", [
    ("Ada （a cat） waits.", "Ada waits."),
    ("Ada （a cat）, then Zed.", "Ada, then Zed."),
    ("Ada （a cat）.", "Ada."),
    ("Ada （a cat）", "Ada"),
    ("（Dusk.） Ada waits.", "Ada waits."),
    ("  （Dusk.）  Ada", "Ada"),
    ("Ada（a cat）（a hat） waits", "Ada waits"),
    ("Ada (a cat) waits（calm）.", "Ada (a cat) waits."),
    ("Ada（a cat）'s hat", "Ada's hat"),
    ("Ada  waits", "Ada  waits"),  # whitespace away from any span is never touched
    ("", ""),
])
def test_edge_cases(text, expected):
    assert strip_appearance(text) == expected


@pytest.mark.parametrize("text, what", [
    ("Ada（a cat（big） waits）", "nested"),
    ("Ada（a cat waits", "never closed"),
    ("Ada a cat） waits", "closes no appearance"),
])
def test_malformed_brackets_name_the_segment(text, what):
    with pytest.raises(UserInputError, match=f"story 0001_x, segment seg_012.*{what}"):
        strip_appearance(text, story_id="0001_x", segment=12)


def test_malformed_prompt_in_a_story_names_its_segment():
    seg = Segment("0009_toy", 1, "S1", 5.0, "cut", "Ada waits.", "Ada（a cat waits.",
                  cast=(CastEntry("E1", "introduce"),))
    story = Story("0009_toy", 9, "t", (seg,), {"E1": Entity("E1", "character", "Ada", "")})
    with pytest.raises(UserInputError, match="story 0009_toy, segment seg_001"):
        strip_targets(story, [1])
