"""Appearance stripping: remove the bracketed appearance text from Track-B prompts.

Long-gap returns can score well without memory because the prompt itself describes the
returning look. The stripping analysis reruns the no-memory condition on the chosen
segments with that text removed and compares presence with and without it. This module
is the pure part: which segments, and what their prompts become.

Rules (each in :data:`PROTOCOL` with its reason and source):

* **The span.** The release writes an appearance in full-width brackets ``（...）``
  right after the entity's name, at an introduction or a state change, and nowhere else.
  Stripping removes exactly each ``（...）`` span, brackets included. ASCII ``(...)`` is
  ordinary text and stays.
* **What a span leaves behind.** The release inserts ``（...）`` with no space around
  it, so removing it gives back the gold ``action`` exactly. For text written otherwise:
  the whitespace run just before a span goes too when the span is followed by
  whitespace, closing punctuation or the end (``"Ada （a cat）, here"`` -> ``"Ada,
  here"``), and a span at the very start takes the whitespace after it. Nothing else
  is touched.
* **Malformed brackets** (nested, unclosed or a stray closing bracket) are an error
  naming the segment and the character position; never guessed.
* **Default selection**: the segments with a long-gap character return, a character
  cast entry (not an introduction) with gold gap >= 30. A segment is selected once
  with every such character; a selected segment without brackets is kept (its prompt
  is unchanged) and counted, so the report can say how many had text to remove.

Example:
    >>> strip_appearance("At dusk, Elias（A keeper, gray beard） climbs the stair.")
    'At dusk, Elias climbs the stair.'
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from vidmem.benchmarks.vmem_track_b.schema import segment_id as spell_segment
from vidmem.benchmarks.vmem_track_b.stories import Story
from vidmem.errors import UserInputError
from vidmem.metrics.track_b.vocabulary import LONG_GAP

__all__ = ["CLOSE", "OPEN", "PROTOCOL", "StripTarget", "appearance_spans",
           "long_gap_character_returns", "strip_appearance", "strip_targets"]

OPEN, CLOSE = "\uff08", "\uff09"
#: punctuation that may follow a span and takes no space before it
_CLOSING = ",.;:!?)]}\u3001\u3002\uff0c\uff0e\uff1b\uff1a\uff01\uff1f\u300d\u300f\u201d\u2019"

#: every rule this module applies: what it is, why, and where it comes from
PROTOCOL: dict[str, dict[str, str]] = {
    "span": {
        "rule": "remove exactly each full-width bracket span （...）, brackets included; "
                "ASCII (...) stays",
        "reason": "the release writes appearance text only in full-width brackets",
        "source": "PROTOCOLS.md section 4 ('Appearance text appears in full-width "
                  "brackets'); Suchenl/VMem-Bench assets/trackB/scripts/get_sut_prompts.py "
                  "(inserts f'（{desc}）' right after the name)",
    },
    "whitespace": {
        "rule": "the whitespace run before a span goes too when the span is followed by "
                "whitespace, closing punctuation or the end; a span at the start takes the "
                "whitespace after it; nothing else changes",
        "reason": "no double space or space before a comma is left behind; on release "
                  "prompts (no space around spans) the stripped prompt is the gold action",
        "source": "decided here; checked on the sample story (all 87 stripped prompts equal "
                  "their gold action)",
    },
    "malformed": {
        "rule": "a nested, unclosed or stray bracket is an error naming story, segment and "
                "character position",
        "reason": "guessing where an appearance ends could strip story text",
        "source": "decided here",
    },
    "selection": {
        "rule": f"default: segments with a character cast entry, op != introduce, gap >= "
                f"{LONG_GAP}; every such character of the segment is reported; segments "
                "without brackets are kept and counted",
        "reason": "the paper's stripping subset is the long-gap character returns",
        "source": "PROTOCOLS.md section 4 (Appearance-stripping analysis); seed 000 "
                  "section 4.2 (62 long-gap character returns)",
    },
    "condition": {
        "rule": "only the no-memory condition is rerun on the stripped segments",
        "reason": "no-memory reads no earlier clip, so each segment reruns alone",
        "source": "PROTOCOLS.md section 4; seed 000 Table 4b",
    },
}


def _where(story_id: str | None, segment: int | str | None) -> str:
    seg = spell_segment(segment) if isinstance(segment, int) else segment
    parts = [p for p in (f"story {story_id}" if story_id else None,
                         f"segment {seg}" if seg else None) if p]
    return "Track-B prompt" + (f" ({', '.join(parts)})" if parts else "")


def appearance_spans(prompt: str, *, story_id: str | None = None,
                     segment: int | str | None = None) -> list[tuple[int, int]]:
    """``(start, end)`` of every ``（...）`` span, brackets included, in order.

    Raises:
        UserInputError: a nested, unclosed or stray bracket (story, segment and position
            named).

    Example:
        >>> appearance_spans("Ada（a cat） and Zed（a dog）")
        [(3, 10), (18, 25)]
    """
    spans: list[tuple[int, int]] = []
    start: int | None = None
    for i, ch in enumerate(prompt):
        if ch == OPEN:
            if start is not None:
                raise UserInputError(
                    f"{_where(story_id, segment)}: nested {OPEN} at character {i} inside the "
                    f"appearance opened at {start}: {prompt[start:i + 1]!r}",
                    hint=f"close the first appearance with {CLOSE} before opening another")
            start = i
        elif ch == CLOSE:
            if start is None:
                raise UserInputError(
                    f"{_where(story_id, segment)}: {CLOSE} at character {i} closes no "
                    f"appearance: {prompt[max(0, i - 20):i + 1]!r}",
                    hint=f"open the appearance with {OPEN} or remove the stray {CLOSE}")
            spans.append((start, i + 1))
            start = None
    if start is not None:
        raise UserInputError(
            f"{_where(story_id, segment)}: the appearance opened at character {start} is "
            f"never closed: {prompt[start:start + 40]!r}",
            hint=f"close it with {CLOSE}")
    return spans


def strip_appearance(prompt: str, *, story_id: str | None = None,
                     segment: int | str | None = None) -> str:
    """The prompt without its bracketed appearance text (rules in :data:`PROTOCOL`).

    Example:
        >>> strip_appearance("Ada （a cat）, here （now） and (ASCII) stays")
        'Ada, here and (ASCII) stays'
        >>> strip_appearance("（Dusk.） Ada waits（calm）.")
        'Ada waits.'
    """
    out = ""
    rest_from = 0
    for a, b in appearance_spans(prompt, story_id=story_id, segment=segment):
        out += prompt[rest_from:a]
        after = prompt[b:]
        if not out.strip():
            out, rest_from = "", b + len(after) - len(after.lstrip())
            continue
        if out[-1].isspace() and (not after or after[0].isspace() or after[0] in _CLOSING):
            out = out.rstrip()
        rest_from = b
    return out + prompt[rest_from:]


@dataclass(frozen=True)
class StripTarget:
    """One segment of the stripping analysis.

    Attributes:
        story_id, segment_id: the segment.
        eids: the characters it is selected for (their presence is compared).
        gaps: their gold gaps, in ``eids`` order.
        prompt: the ``sut_prompts`` text.
        stripped: the prompt without its appearance spans.
        removed: the removed spans' text, brackets excluded, in order.
    """

    story_id: str
    segment_id: int
    eids: tuple[str, ...]
    gaps: tuple[int, ...]
    prompt: str
    stripped: str
    removed: tuple[str, ...]

    @property
    def had_text(self) -> bool:
        """Whether stripping changed the prompt."""
        return bool(self.removed)


def long_gap_character_returns(story: Story, *,
                               min_gap: int = LONG_GAP) -> list[tuple[int, str, int]]:
    """``(segment_id, eid, gap)`` of every character cast entry with gap >= ``min_gap``
    (introductions have no gap), in segment and cast order."""
    return [(seg.segment_id, c.eid, c.gap) for seg in story.segments for c in seg.cast
            if c.op != "introduce" and c.gap is not None and c.gap >= min_gap
            and story.entities[c.eid].kind == "character"]


def strip_targets(story: Story, segment_ids: Iterable[int] | None = None, *,
                  min_gap: int = LONG_GAP) -> list[StripTarget]:
    """The stripping analysis' segments of one story with their stripped prompts.

    Args:
        story: a loaded story.
        segment_ids: the segments to strip (1..n); ``None``: the default selection, the
            segments with a long-gap character return (``eids`` empty for a chosen
            segment without one).
        min_gap: the long-gap threshold of the default selection (30).

    Raises:
        UserInputError: a segment id outside the story, or malformed brackets.
    """
    returns: dict[int, list[tuple[str, int]]] = {}
    for seg_id, eid, gap in long_gap_character_returns(story, min_gap=min_gap):
        returns.setdefault(seg_id, []).append((eid, gap))
    n = len(story.segments)
    if segment_ids is None:
        chosen = sorted(returns)
    else:
        chosen = sorted(set(segment_ids))
        bad = [s for s in chosen if isinstance(s, bool) or not isinstance(s, int)
               or not 1 <= s <= n]
        if bad:
            raise UserInputError(f"Track-B stripping, story {story.story_id}: segment ids "
                                 f"{bad!r} are not in 1..{n}",
                                 hint="segment ids are 1-indexed (seg_001 is 1)")
    out = []
    for seg_id in chosen:
        seg = story.segments[seg_id - 1]
        spans = appearance_spans(seg.prompt, story_id=story.story_id, segment=seg_id)
        hits = returns.get(seg_id, [])
        out.append(StripTarget(
            story_id=story.story_id, segment_id=seg_id, eids=tuple(e for e, _ in hits),
            gaps=tuple(g for _, g in hits), prompt=seg.prompt,
            stripped=strip_appearance(seg.prompt, story_id=story.story_id, segment=seg_id),
            removed=tuple(seg.prompt[a + 1:b - 1] for a, b in spans)))
    return out
