"""Load Track-B stories into frozen :class:`Story` values.

:func:`load_stories` reads the selected stories under a story root (the folder holding
``gt/``, ``gt_source/`` and ``sut_prompts/``, :mod:`~vidmem.benchmarks.vmem_track_b.schema`),
validates them first (:mod:`~vidmem.benchmarks.vmem_track_b.validate`) and refuses
stories with errors, listing them all. Segment ids are the ints 1..n everywhere
(``seg_068`` is 68: :attr:`Segment.segment_id`, :attr:`CastEntry.last_seen`,
:attr:`ForbiddenEntry.grounded_by`); :func:`~vidmem.benchmarks.vmem_track_b.schema.segment_id`
spells one back. Each segment carries its gold next to :attr:`Segment.prompt`, the text of
``sut_prompts/`` -- the only thing a system may be given.

A story's id is the leading number of its file stem (``0001_lighthouse_keeper`` -> 1);
the cohort selector :func:`parse_cohort` reads ``"0001-0030"`` or ``"0001,0003"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vidmem.benchmarks.jsonl_dataset import raise_on_load_errors
from vidmem.benchmarks.vmem_track_b.schema import (
    OFFICIAL_COHORT,
    CastItem,
    ForbiddenItem,
    format_cohort,
    parse_cohort,
    segment_number,
)
from vidmem.benchmarks.vmem_track_b.validate import CheckedStory, TrackBValidation, check_stories

__all__ = ["OFFICIAL_COHORT", "Anchor", "CastEntry", "Entity", "ForbiddenEntry",
           "LookalikeActive", "Segment", "Story", "format_cohort", "load_stories",
           "parse_cohort"]


@dataclass(frozen=True)
class Anchor:
    """A name-free mention of a past entity (``type`` is ``temporal`` in the release)."""

    type: str
    phrase: str
    resolves_to: str | None = None


@dataclass(frozen=True)
class CastEntry:
    """One entity the gold requires in a segment.

    Attributes:
        eid: the entity (``E1``).
        op: ``introduce``, ``recall``, ``recall_after_gap``, ``transform`` or ``persist``.
        gap: segments between its last appearance and this one (previous segment: 0);
            ``None`` at an introduction.
        last_seen: the segment (1..n) it last appeared in; ``None`` at an introduction.
        state: the state label it must show (transform, persist, flashback), if any.
        state_appearance: that state's appearance text.
        flashback: the state is a past one shown again (the current state is unchanged).
        count: how many instances must be visible, if the gold says.
        confusable_with: the entity it may be mistaken for (a false friend), if any.
        anchor: the name-free mention that refers to it, if any.
    """

    eid: str
    op: str
    gap: int | None = None
    last_seen: int | None = None
    state: str | None = None
    state_appearance: str | None = None
    flashback: bool = False
    count: int | None = None
    confusable_with: str | None = None
    anchor: Anchor | None = None


@dataclass(frozen=True)
class ForbiddenEntry:
    """One entity that must stay absent from a segment.

    Attributes:
        eid: the entity.
        reason: ``destroyed``, ``deceased`` or ``lookalike_absent``.
        grounded_by: the segment (1..n) of the removal (destroyed, deceased), else ``None``.
        lookalike_pair: the active pair an absent look-alike belongs to, else ``None``.
        reference_indirect: the segment's text names the removed entity (it must still
            not be drawn).
    """

    eid: str
    reason: str
    grounded_by: int | None = None
    lookalike_pair: tuple[str, ...] | None = None
    reference_indirect: bool = False


@dataclass(frozen=True)
class LookalikeActive:
    """A look-alike pair in play in a segment, and which members are on screen."""

    pair: tuple[str, str]
    present_members: tuple[str, ...]
    features: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Segment:
    """One five-second segment of a story, in order.

    Attributes:
        story_id: the story's file stem (``0001_lighthouse_keeper``).
        segment_id: 1..n.
        scene_id: the authored scene (``S1``).
        duration_seconds: the segment's length (5 s in the release).
        transition: ``cut`` (first segment of a scene) or ``continue``.
        action: the gold's text of the segment (never shown to a system).
        prompt: the ``sut_prompts`` text: the only input a system gets.
        memory_probes: the release's labels of the segment.
        cast: the entities required on screen.
        forbidden: the entities that must stay absent.
        lookalike_active: the look-alike pairs in play.
    """

    story_id: str
    segment_id: int
    scene_id: str
    duration_seconds: float
    transition: str
    action: str
    prompt: str
    memory_probes: tuple[str, ...] = ()
    cast: tuple[CastEntry, ...] = ()
    forbidden: tuple[ForbiddenEntry, ...] = ()
    lookalike_active: tuple[LookalikeActive, ...] = ()


@dataclass(frozen=True)
class Entity:
    """One entity of a story.

    Attributes:
        eid: ``E1`` ...
        kind: ``character``, ``prop`` or ``location``.
        name: its name in the story's text.
        appearance: its look at first sight (a stateful entity: its initial state's text).
        states: state label -> appearance text, in state-machine order (empty: stateless).
        initial_state: the first state's label (``None``: stateless).
    """

    eid: str
    kind: str
    name: str
    appearance: str
    states: Mapping[str, str] = field(default_factory=dict)
    initial_state: str | None = None


@dataclass(frozen=True)
class Story:
    """One validated Track-B story.

    Attributes:
        story_id: the file stem (``0001_lighthouse_keeper``).
        number: the story id, the stem's leading number (1).
        title: the release's title (human context only).
        segments: in order, ids 1..n.
        entities: by eid.
        state_machines: eid -> its state labels in order.
        lookalike_pairs: the declared look-alike pairs.
        segment_seconds: ``params.segment_sec``.
        gap_long_threshold: the gap (segments) from which a return counts as long.
        avoidance_probe_window: segments after a removal the release tags as deprecation.
        summary: the gold's own ``summary`` block, as written (``{}`` when absent).
        warnings: the release's compiler warnings, as written.
        files: folder (``gt``, ``gt_source``, ``sut_prompts``) -> the file read.
        sha256: folder -> SHA-256 of that file.
    """

    story_id: str
    number: int
    title: str
    segments: tuple[Segment, ...]
    entities: Mapping[str, Entity]
    state_machines: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    lookalike_pairs: tuple[tuple[str, str], ...] = ()
    segment_seconds: float = 5.0
    gap_long_threshold: int = 30
    avoidance_probe_window: int = 4
    summary: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    files: Mapping[str, Path] = field(default_factory=dict)
    sha256: Mapping[str, str] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        """The summed segment durations."""
        return sum(s.duration_seconds for s in self.segments)


def _cast(item: CastItem) -> CastEntry:
    anchor = item.anchor
    return CastEntry(
        eid=item.eid, op=item.op, gap=item.gap, last_seen=segment_number(item.last_seen),
        state=item.state.label if item.state else None,
        state_appearance=item.state.appearance if item.state else None,
        flashback=bool(item.state and item.state.flashback), count=item.count,
        confusable_with=item.confusable_with,
        anchor=Anchor(anchor.type, anchor.phrase, anchor.resolves_to) if anchor else None)


def _forbidden(item: ForbiddenItem) -> ForbiddenEntry:
    pair = None
    if item.grounded_by.startswith("lookalike:"):
        pair = tuple(item.grounded_by.removeprefix("lookalike:").split("/"))
    return ForbiddenEntry(item.eid, item.reason, segment_number(item.grounded_by), pair,
                          item.reference_indirect)


def _story(c: CheckedStory) -> Story:
    gt, sid = c.gt, c.stem
    if gt is None:  # cannot happen: a story without errors has its gold parsed
        raise RuntimeError(f"Track-B story {sid}: gold not parsed although it has no errors")
    prompts = {p.segment_id: p.prompt for _, p in c.prompt_segments}
    segments = tuple(
        Segment(story_id=sid, segment_id=i + 1, scene_id=s.scene_id,
                duration_seconds=float(s.duration_sec), transition=s.transition,
                action=s.action, prompt=prompts[s.segment_id],
                memory_probes=tuple(s.memory_probes), cast=tuple(_cast(x) for x in s.cast),
                forbidden=tuple(_forbidden(x) for x in s.forbidden),
                lookalike_active=tuple(
                    LookalikeActive((a.pair[0], a.pair[1]), tuple(a.present_members),
                                    dict(a.features)) for a in s.lookalike_active))
        for i, s in c.segments)
    entities = {}
    for eid, e in c.entities.items():
        states = dict(e.states or {})
        initial = (e.initial_state or (gt.state_machines.get(eid) or list(states) or [None])[0]
                   if states else None)
        look = states[initial] if initial is not None else (e.appearance or "")
        entities[eid] = Entity(eid, e.kind, e.name, look, states, initial)
    return Story(
        story_id=sid, number=c.number, title=gt.title, segments=segments, entities=entities,
        state_machines={k: tuple(v) for k, v in gt.state_machines.items()},
        lookalike_pairs=tuple((p.pair[0], p.pair[1]) for p in gt.lookalike_pairs),
        segment_seconds=float(gt.params.segment_sec),
        gap_long_threshold=gt.params.gap_long_threshold,
        avoidance_probe_window=gt.params.avoidance_probe_window,
        summary=dict(gt.summary or {}), warnings=tuple(gt.warnings), files=dict(c.files),
        sha256=dict(c.sha256))


def load_stories(root: str | Path, stories: Any = None) -> list[Story]:
    """Load and validate the selected Track-B stories, in story-id order.

    Args:
        root: the folder holding ``gt/``, ``gt_source/`` and ``sut_prompts/`` (the
            release's ``trackB/en/``; a folder holding ``en/`` is read as ``en/``).
        stories: a cohort selector, e.g. :data:`OFFICIAL_COHORT` (``"0001-0030"``),
            ``"0001,0003"``, an int or a list; ``None``: every story under ``root``.

    Raises:
        UserInputError: a selector that does not parse; no stories; or any error in the
            selected stories (all listed at once; warnings do not block).
    """
    base, checked, problems = check_stories(root, stories)
    for c in checked:
        problems += c.problems
    selector = "" if stories is None else f", stories={stories!r}"
    report = TrackBValidation(base, tuple(problems), n_stories=len(checked))
    raise_on_load_errors(report, dataset="Track-B",
                         hint=f"run validate_stories({str(root)!r}{selector}) (or vidmem "
                         "validate) to see every problem, with the warnings")
    return [_story(c) for c in checked]
