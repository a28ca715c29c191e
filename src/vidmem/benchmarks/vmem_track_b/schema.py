"""Track-B story files: pydantic models of ``gt/``, ``gt_source/`` and ``sut_prompts/``,
the names of the release's labels, and the cohort selector.

One story of the VMem-Bench release (CC BY 4.0) is three JSON files under a story root
(the release's ``assets/trackB/en/``), named by the story's stem ``NNNN_name``:

* ``gt/<stem>.json``, the compiled gold: ``story_id``, ``params`` (``segment_sec``,
  ``gap_long_threshold``, ``avoidance_probe_window``), ``entities`` (eid -> ``name``,
  ``kind`` character|prop|location, and ``appearance`` or ``states`` {label: text} with
  ``initial_state``), ``state_machines`` (eid -> state labels in order),
  ``lookalike_pairs[]`` (``pair``, ``features``), ``segments[]`` and a ``summary`` block
  (``n_segments``, ``n_scenes``, ``n_entities``, ``kind_counts``, ``n_state_threads``,
  ``n_removals``, ``op_counts``, ``probe_counts``, ``hard_probe_balance``,
  ``gap_histogram``, ``longest_gap``) and the compiler's ``warnings[]``. A segment has
  ``segment_id`` (1-indexed, ``seg_001``), ``scene_id``, ``duration_sec``, ``transition``
  (cut|continue), ``action``, ``memory_probes[]``, ``cast[]`` (``eid``, ``op``
  introduce|recall|recall_after_gap|transform|persist, ``gap``, ``last_seen``, ``state``
  {``label``, ``appearance``, ``flashback``}, ``count``, ``confusable_with``, ``anchor``
  {``type``, ``phrase``, ``resolves_to``}), ``forbidden[]`` (``eid``, ``reason``
  destroyed|deceased|lookalike_absent, ``grounded_by`` ``seg_NNN`` or ``lookalike:A/B``,
  ``reference_indirect``) and, where a look-alike pair is on screen, ``lookalike_active[]``
  (``pair``, ``features``, ``present_members``);
* ``gt_source/<stem>.json``, the authored skeleton: ``entities``, ``state_machines``,
  ``lookalike_pairs`` and ``scenes[]`` (``id``, ``setting``, ``present``, ``actions[]``: a
  string or ``{action, present?, events?}``, one action per segment);
* ``sut_prompts/<stem>_name_anchored.json``: ``story_id``, ``register``, ``n_segments``
  and ``segments[]`` (``segment_id``, ``duration_sec``, ``transition``, ``prompt``) -- the
  only thing a system sees.

``gap`` counts the segments between an entity's last appearance and this one (seen in
the previous segment: 0). The models check one file (or one item) at a time, strictly
(``"3"`` is not a count); unknown fields are allowed and kept. What spans items or
files is checked by :mod:`vidmem.benchmarks.vmem_track_b.validate`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    model_validator,
)

from vidmem.errors import UserInputError

__all__ = [
    "CONTROL_PROBES", "ENTITY_KINDS", "FOLDERS", "FORBIDDEN_REASONS", "GT_DIR", "HARD_PROBES",
    "MAX_COUNT", "MAX_ENTITIES", "MAX_SEGMENTS", "MAX_SEGMENT_SECONDS",
    "OFFICIAL_COHORT", "OFFICIAL_SEGMENTS", "OPS", "PROBES", "PROMPTS_DIR", "REGISTER",
    "REMOVAL_REASONS", "SOURCE_DIR", "STRESS_FAMILIES", "CastItem", "EntityDef",
    "ForbiddenItem", "GtFile", "GtSegment", "PromptSegment", "PromptsFile", "SourceFile",
    "SourceScene", "format_cohort", "parse_cohort", "segment_id", "segment_number",
    "story_number",
]

GT_DIR, SOURCE_DIR, PROMPTS_DIR = "gt", "gt_source", "sut_prompts"
#: the three folders of a story root, in reading order
FOLDERS = (GT_DIR, SOURCE_DIR, PROMPTS_DIR)
#: the prompt register the protocol reads: ``sut_prompts/<stem>_name_anchored.json``
REGISTER = "name_anchored"
ENTITY_KINDS = ("character", "prop", "location")
OPS = ("introduce", "recall", "recall_after_gap", "transform", "persist")
FORBIDDEN_REASONS = ("destroyed", "deceased", "lookalike_absent")
#: forbidden reasons that mean a permanent removal (the deprecation family)
REMOVAL_REASONS = ("destroyed", "deceased")
#: the nine stress families of PROTOCOLS.md section 4 -> the release's ``memory_probes``
#: label (the names of the release's README and ``summary.probe_counts``)
STRESS_FAMILIES = {
    "long_gap_return": "long_gap_reappearance",
    "temporal_reference": "temporal_reference",
    "state_change": "state_change",
    "persistent_state": "persist_state",
    "count": "count_memory",
    "look_alike": "lookalike_disambiguation",
    "false_friend": "false_friend",
    "deprecation": "deprecation_avoidance",
    "reference_indirect": "reference_indirect",
}
#: the two abundant control labels (first sight, plain recall)
CONTROL_PROBES = ("first_appearance", "continuity")
PROBES = CONTROL_PROBES + tuple(STRESS_FAMILIES.values())
#: the labels ``summary.hard_probe_balance`` counts (every family but persistent state)
HARD_PROBES = ("long_gap_reappearance", "state_change", "lookalike_disambiguation",
               "reference_indirect", "deprecation_avoidance", "count_memory", "false_friend",
               "temporal_reference")
#: the evaluated cohort of the protocol and its size
OFFICIAL_COHORT = "0001-0030"
OFFICIAL_SEGMENTS = 2824

_SEG = re.compile(r"^seg_(\d{3,})$")
_STEM = re.compile(r"^(\d+)(?:_|$)")

# Input limits (errors): every story is a sequence of short generator calls that vidmem
# asks a judge about; a value far past anything a story can mean is a typo or a hostile
# file (a duration of 1e308 s, a count of 1e30), and is refused rather than warned about.
#: a segment's longest duration, seconds: the release's segments are 5 s
#: (params.segment_sec; others warn); a minute is past every generator's clip
MAX_SEGMENT_SECONDS = 60.0
#: the most segments one story may hold: the release's 30 stories hold 2,824 (the sample
#: story 87); a thousand 5-s segments is over an hour of video
MAX_SEGMENTS = 1_000
#: the largest count an entity may be asked for: the sample story's counts are 2-5 and a judge
#: reads a count off one clip
MAX_COUNT = 100
#: the most entities one story may define (and list in one segment's cast or forbidden):
#: the sample story has 19; every entity is a line of the judge's roster
MAX_ENTITIES = 500

Text = StrictStr
Name = Annotated[StrictStr, Field(min_length=1)]
SegId = Annotated[StrictStr, Field(pattern=r"^seg_\d{3,}$")]
Seconds = Annotated[float, Field(strict=True, gt=0, le=MAX_SEGMENT_SECONDS,
                                 allow_inf_nan=False)]
Gap = Annotated[StrictInt, Field(ge=0, le=MAX_SEGMENTS)]
Count = Annotated[StrictInt, Field(ge=1, le=MAX_COUNT)]


def segment_id(number: int) -> str:
    """The release's spelling of segment ``number`` (1-indexed).

    Example:
        >>> segment_id(1), segment_id(87), segment_id(1234)
        ('seg_001', 'seg_087', 'seg_1234')
    """
    return f"seg_{number:03d}"


def segment_number(value: object) -> int | None:
    """The number of a ``seg_NNN`` id, or ``None`` when ``value`` is not one.

    Example:
        >>> segment_number("seg_068"), segment_number("seg_000"), segment_number("68")
        (68, 0, None)
    """
    match = _SEG.match(value) if isinstance(value, str) else None
    return int(match.group(1)) if match else None


def story_number(stem: str) -> int | None:
    """The story id of a file stem: its leading number (``0001_lighthouse_keeper`` -> 1).

    Example:
        >>> story_number("0001_lighthouse_keeper"), story_number("lighthouse")
        (1, None)
    """
    match = _STEM.match(stem)
    return int(match.group(1)) if match else None


def parse_cohort(spec: str | int | Iterable[str | int] | None) -> frozenset[int] | None:
    """The story ids a cohort selector names (``None``: every story).

    A selector is comma-separated story ids and inclusive ranges, written with or without
    leading zeros: ``"0001-0030"``, ``"0001,0003"``, ``"1-5,9"``; or an int, or a list of
    those.

    Raises:
        UserInputError: a part that is not an id or a range, or a range that runs backwards.

    Example:
        >>> sorted(parse_cohort("0001-0003,0007"))
        [1, 2, 3, 7]
        >>> parse_cohort(None) is None
        True
    """
    if spec is None:
        return None
    parts = ([str(spec)] if isinstance(spec, (str, int)) else [str(s) for s in spec])
    chosen: set[int] = set()
    for part in (p.strip() for chunk in parts for p in chunk.split(",")):
        match = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", part)
        if not match:
            raise UserInputError(
                f"story selector {_spec(spec)}: part {part!r} is not a story id or range",
                hint="write story ids as in the file names, e.g. '0001-0030' or "
                     "'0001,0003,0010-0012'")
        first, last = int(match.group(1)), int(match.group(2) or match.group(1))
        if last < first:
            raise UserInputError(
                f"story selector {_spec(spec)}: range {part!r} runs backwards",
                hint=f"write the smaller id first: '{match.group(2)}-{match.group(1)}'")
        chosen.update(range(first, last + 1))
    if not chosen:
        raise UserInputError(f"story selector {_spec(spec)} names no story",
                             hint="omit it to read every story, or write e.g. '0001-0030'")
    return frozenset(chosen)


def format_cohort(ids: Iterable[int]) -> str:
    """A cohort selector naming exactly ``ids`` (the inverse of :func:`parse_cohort`).

    Example:
        >>> format_cohort([1, 2, 3, 7, 9, 10])
        '0001-0003,0007,0009-0010'
    """
    runs: list[list[int]] = []
    for n in sorted(set(ids)):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ",".join(f"{a:04d}" if a == b else f"{a:04d}-{b:04d}" for a, b in runs)


def _spec(spec: object) -> str:
    text = repr(spec)
    return text if len(text) <= 60 else f"{text[:60]}..."


# --------------------------------------------------------------------------- models


class _Item(BaseModel):
    """Unknown fields are allowed and kept, so that a later release still loads."""

    model_config = ConfigDict(extra="allow")


class EntityDef(_Item):
    """One entity: stateless (``appearance``) or stateful (``states``, ``initial_state``)."""

    name: Name
    kind: Literal["character", "prop", "location"]
    appearance: Text | None = None
    states: dict[StrictStr, Text] | None = None
    initial_state: StrictStr | None = None

    @model_validator(mode="after")
    def _look(self) -> EntityDef:
        if self.states is None and self.appearance is None:
            raise ValueError("expected an 'appearance' text or a 'states' object "
                             "{label: appearance}; found neither")
        if self.states is not None and not self.states:
            raise ValueError("expected at least one state in 'states', found none")
        if self.initial_state is not None and self.initial_state not in (self.states or {}):
            raise ValueError(f"initial_state {self.initial_state!r} is not one of its states "
                             f"{sorted(self.states or {})}")
        return self


class StatePayload(_Item):
    label: Name
    appearance: Text = ""
    flashback: StrictBool = False


class Anchor(_Item):
    type: Name
    phrase: Text = ""
    resolves_to: Name | None = None


class CastItem(_Item):
    eid: Name
    op: Literal["introduce", "recall", "recall_after_gap", "transform", "persist"]
    gap: Gap | None = None
    last_seen: SegId | None = None
    state: StatePayload | None = None
    count: Count | None = None
    confusable_with: Name | None = None
    anchor: Anchor | None = None


class ForbiddenItem(_Item):
    eid: Name
    reason: Literal["destroyed", "deceased", "lookalike_absent"]
    grounded_by: Text = ""
    reference_indirect: StrictBool = False


class LookalikeActive(_Item):
    pair: Annotated[list[Name], Field(min_length=2, max_length=2)]
    features: dict[StrictStr, Text] = {}
    present_members: list[Name] = []


class GtSegment(_Item):
    segment_id: SegId
    scene_id: Text = ""
    duration_sec: Seconds
    transition: Text = ""
    action: Text
    memory_probes: list[Name]
    cast: Annotated[list[CastItem], Field(max_length=MAX_ENTITIES)]
    forbidden: Annotated[list[ForbiddenItem], Field(max_length=MAX_ENTITIES)]
    lookalike_active: list[LookalikeActive] = []


class Params(_Item):
    segment_sec: Seconds
    gap_long_threshold: Annotated[StrictInt, Field(ge=1, le=MAX_SEGMENTS)]
    avoidance_probe_window: Annotated[StrictInt, Field(ge=0, le=MAX_SEGMENTS)]


class LookalikePair(_Item):
    pair: Annotated[list[Name], Field(min_length=2, max_length=2)]
    features: dict[StrictStr, Text] = {}


class GtFile(_Item):
    """``gt/<stem>.json``; ``entities`` and ``segments`` are checked one item at a time."""

    story_id: Name
    gt_version: Text = ""
    title: Text = ""
    params: Params
    entities: Annotated[dict[StrictStr, Any], Field(max_length=MAX_ENTITIES)]
    state_machines: dict[StrictStr, list[Name]] = {}
    lookalike_pairs: list[LookalikePair] = []
    segments: Annotated[list[Any], Field(max_length=MAX_SEGMENTS)]
    summary: dict[StrictStr, Any] | None = None
    warnings: list[Text] = []


class SourceAction(_Item):
    action: Text
    present: list[Any] | None = None
    events: list[dict[StrictStr, Any]] = []


class SourceScene(_Item):
    id: Name
    setting: Text = ""
    present: list[Any] = []
    actions: Annotated[list[Text | SourceAction], Field(min_length=1)]


class SourceFile(_Item):
    """``gt_source/<stem>.json``; ``scenes`` are checked one at a time."""

    story_id: Name
    entities: dict[StrictStr, Any]
    state_machines: dict[StrictStr, list[Name]] = {}
    scenes: Annotated[list[Any], Field(max_length=MAX_SEGMENTS)]


class PromptSegment(_Item):
    segment_id: SegId
    prompt: Text
    duration_sec: Seconds | None = None
    transition: Text | None = None


class PromptsFile(_Item):
    """``sut_prompts/<stem>_name_anchored.json``; ``segments`` are checked one at a time."""

    story_id: Name
    #: the file's ``register`` (``BaseModel`` already has a ``register`` attribute)
    prompt_register: Text = Field(REGISTER, alias="register")
    n_segments: StrictInt | None = None
    segments: Annotated[list[Any], Field(max_length=MAX_SEGMENTS)]
    warnings: list[Any] = []
