"""Track-A gold records: pydantic models of the three official files, and the loaded film.

The official gold of one film (VMem-Bench release, CC BY 4.0) is three JSON files under
``<film>/gold/`` (see :mod:`vidmem.benchmarks.vmem_track_a.layout` for where they lie):

* ``chunk_index.json``: ``chunks[]`` with ``chunk_id`` and ``seconds_span`` (the release
  says only the spans are meaningful here);
* ``chunk_annotations.json``: ``chunks[]`` with ``chunk_id``, ``seconds_span``, ``prompt``,
  ``present[]``, ``first_appearances[]``, ``gold_instructions[]`` (``entity_id``,
  ``requirement``, ``note``), ``forbidden[]`` and ``scenario_tags[]``;
* ``entity_registry.json``: ``entities[]`` with ``entity_id``, ``kind``
  (character|prop|location), ``name``, ``description``, ``first_chunk``,
  ``presence_spans`` and ``state_events[]``.

Only the fields the protocol uses are checked, strictly (no coercion: ``"3"`` is not a
chunk id); every other field, and any field a later release adds, is allowed and kept in
``model_extra``. A ``forbidden`` entry is a representation id (``prop_001@c003``), an
entity id, or an object with ``representation_id`` or ``entity_id`` (the release's schema
document shows ``{"representation_id", "reason"}``); the sample films have none.

The models check one file at a time; what spans several files (chunk ids of the index
against the annotations, entity ids against the registry) is checked by
:mod:`vidmem.benchmarks.vmem_track_a.validate`. A validated film is returned as the plain
frozen dataclasses :class:`Film`, :class:`Segment` and :class:`Entity`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    field_validator,
    model_validator,
)

__all__ = [
    "ENTITY_KINDS",
    "FILES",
    "LANGS",
    "MAX_FILM_SECONDS",
    "MAX_ITEMS",
    "REQUIREMENTS",
    "SCENARIO_TAGS",
    "AnnotationChunk",
    "AnnotationsFile",
    "Entity",
    "Film",
    "ForbiddenRef",
    "GoldInstruction",
    "IndexChunk",
    "Instruction",
    "IndexFile",
    "RegistryEntity",
    "RegistryFile",
    "Segment",
    "StateEvent",
    "forbidden_entity_id",
]

INDEX_FILE = "chunk_index.json"
ANNOTATIONS_FILE = "chunk_annotations.json"
REGISTRY_FILE = "entity_registry.json"
#: the three gold files of a film, in reading order
FILES = (INDEX_FILE, ANNOTATIONS_FILE, REGISTRY_FILE)
#: gold languages: ``zh`` reads ``gold/``, ``en`` reads ``gold/variants/en/`` first
LANGS = ("zh", "en")
ENTITY_KINDS = ("character", "prop", "location")
#: requirement values of the release (others load, with a warning)
REQUIREMENTS = ("introduce", "continuity")
#: scenario tags of the release's schema document (others load, with a warning)
SCENARIO_TAGS = ("none", "re-appearance", "multi-instance", "scene-return", "state-change")

# Input limits (errors): a film is at most a feature film, and vidmem decodes the frames the
# gold's spans name; a time or a list far past any film is a typo or a hostile file.
#: the latest time a gold file may name, seconds: six hours is past every feature film the
#: release draws on (the sample films end at 463 s and 144 s; LSMDC films run 1.5-3 h)
MAX_FILM_SECONDS = 6 * 3600.0
#: the most chunks (or registry entities) one gold file may list: a 6-hour film in chunks
#: of 5 s or more (the sample: 44 chunks over 463 s) has under 5,000
MAX_ITEMS = 5_000

Seconds = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, le=MAX_FILM_SECONDS)]
ChunkId = Annotated[StrictInt, Field(ge=0)]
Id = Annotated[StrictStr, Field(min_length=1)]


class _Gold(BaseModel):
    """Unknown fields are allowed and kept, so that a later release still loads."""

    model_config = ConfigDict(extra="allow")


def _check_span(value: list[float]) -> list[float]:
    if len(value) != 2:
        raise ValueError(f"expected [start, end] (2 numbers), found {len(value)} number(s)")
    if not value[1] > value[0]:
        raise ValueError(f"expected end > start, found start {value[0]} and end {value[1]}")
    return value


class IndexChunk(_Gold):
    """One chunk of ``chunk_index.json``: its id and time span in seconds."""

    chunk_id: ChunkId
    seconds_span: list[Seconds]

    @field_validator("seconds_span")
    @classmethod
    def _span(cls, value: list[float]) -> list[float]:
        return _check_span(value)


class IndexFile(_Gold):
    chunks: list[dict]  # each checked as an IndexChunk on its own


class GoldInstruction(_Gold):
    """What the gold says of one entity in one chunk (``requirement``: introduce|continuity)."""

    entity_id: Id
    requirement: Id
    note: StrictStr = ""


class ForbiddenRef(_Gold):
    """An object entry of ``forbidden[]``: a representation (or entity) not to reuse."""

    representation_id: Id | None = None
    entity_id: Id | None = None
    reason: StrictStr = ""

    @model_validator(mode="after")
    def _names_one(self) -> ForbiddenRef:
        if self.representation_id is None and self.entity_id is None:
            raise ValueError("expected a representation_id (e.g. 'prop_001@c003') or an entity_id")
        return self


class AnnotationChunk(IndexChunk):
    """One chunk of ``chunk_annotations.json``."""

    prompt: StrictStr
    present: list[Id]
    first_appearances: list[Id]
    gold_instructions: list[GoldInstruction]
    forbidden: list[Id | ForbiddenRef]
    scenario_tags: list[Id]


class AnnotationsFile(_Gold):
    chunks: list[dict]


class StateEvent(_Gold):
    """A change of an entity's state in one chunk (``destroyed: ...``, ``acquired: ...``)."""

    event_id: Id
    chunk_id: ChunkId
    description: StrictStr = ""
    seconds: Seconds | None = None


class RegistryEntity(_Gold):
    """One entity of ``entity_registry.json``."""

    entity_id: Id
    kind: Literal["character", "prop", "location"]
    name: Id
    description: StrictStr
    first_chunk: ChunkId
    presence_spans: list[list[Seconds]]
    state_events: list[StateEvent]

    @field_validator("presence_spans")
    @classmethod
    def _spans(cls, value: list[list[float]]) -> list[list[float]]:
        for span in value:
            if len(span) != 2 or span[1] < span[0]:
                raise ValueError(f"expected [start, end] pairs with end >= start, found {span}")
        return value


class RegistryFile(_Gold):
    entities: list[dict]


def forbidden_entity_id(entry: str | ForbiddenRef) -> str:
    """The entity a ``forbidden`` entry names: the part of a representation id before ``@``.

    Example:
        >>> forbidden_entity_id("prop_001@c003"), forbidden_entity_id("char_002")
        ('prop_001', 'char_002')
    """
    if isinstance(entry, ForbiddenRef):
        entry = entry.entity_id or entry.representation_id or ""
    return entry.split("@", 1)[0]


# --------------------------------------------------------------------------- loaded film


@dataclass(frozen=True)
class Instruction:
    """One ``gold_instructions`` entry: ``requirement`` is ``introduce`` or ``continuity``."""

    entity_id: str
    requirement: str
    note: str = ""


@dataclass(frozen=True)
class Segment:
    """One segment (a gold chunk) of a film, in time order.

    Attributes:
        film_id: the film (its folder name).
        index: 0-based position in the film's time order.
        chunk_id: the release's ``chunk_id``.
        start_seconds: start of the segment in the source film, seconds.
        end_seconds: end, seconds (> ``start_seconds``).
        prompt: the instruction text of the segment (Chinese in ``gold/``).
        present: entity ids on screen.
        first_appearances: entity ids seen for the first time here (a subset of ``present``).
        gold_instructions: what the gold asks of each entity.
        forbidden: representation or entity ids not to reuse here, as written.
        scenario_tags: slice labels (``none``, ``re-appearance`` ...).
    """

    film_id: str
    index: int
    chunk_id: int
    start_seconds: float
    end_seconds: float
    prompt: str = ""
    present: tuple[str, ...] = ()
    first_appearances: tuple[str, ...] = ()
    gold_instructions: tuple[Instruction, ...] = ()
    forbidden: tuple[str, ...] = ()
    scenario_tags: tuple[str, ...] = ()

    @property
    def duration_seconds(self) -> float:
        """``end_seconds - start_seconds``."""
        return self.end_seconds - self.start_seconds


@dataclass(frozen=True)
class Entity:
    """One registry entity of a film.

    Attributes:
        entity_id: e.g. ``char_001``.
        kind: ``character``, ``prop`` or ``location``.
        name: its name in the film's language.
        description: its appearance, in words.
        first_chunk: the chunk id it first appears in.
        presence_spans: ``(start, end)`` seconds it is on screen.
        state_events: ``(event_id, chunk_id, description)`` of each state change.
    """

    entity_id: str
    kind: str
    name: str
    description: str = ""
    first_chunk: int = 0
    presence_spans: tuple[tuple[float, float], ...] = ()
    state_events: tuple[tuple[str, int, str], ...] = ()


@dataclass(frozen=True)
class Film:
    """One validated film of Track-A gold.

    Attributes:
        film_id: the film folder's name (unique across datasets).
        dataset: the folder that holds the film folder (``BlenderOpenMovies``, ``LSMDC``).
        segments: in time order.
        entities: by entity id.
        lang: ``zh`` or ``en``.
        gold_dir: the film's ``gold/`` folder.
        files: each gold file name -> the file read (for ``en``, a ``variants/en/`` file or
            the ``gold/`` one it fell back to; see :attr:`fallbacks`).
        sha256: each gold file name -> SHA-256 of the file read.
    """

    film_id: str
    dataset: str
    segments: tuple[Segment, ...]
    entities: Mapping[str, Entity]
    lang: str = "zh"
    gold_dir: Path = Path("gold")
    files: Mapping[str, Path] = field(default_factory=dict)
    sha256: Mapping[str, str] = field(default_factory=dict)

    @property
    def fallbacks(self) -> tuple[str, ...]:
        """Gold files read from ``gold/`` although ``lang`` is ``en`` (the variant lacks them)."""
        if self.lang == "zh":
            return ()
        return tuple(name for name, path in self.files.items() if path.parent == self.gold_dir)

    @property
    def end_seconds(self) -> float:
        """End of the last segment: how long the source video must be at least."""
        return max((s.end_seconds for s in self.segments), default=0.0)
