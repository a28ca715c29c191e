"""The judge's answers in Track-A, as pydantic models (validated strictly), and how a
judged reference is read.

Two questions are asked (prompt files in ``prompts/``):

* ``reference``: one retrieved reference image and the revealed segment's roster (the
  entities its gold marks as present, descriptions cut at 70 characters): which of them
  does the reference show? As in the reference code's per-reference judge
  (visual-coverage 3.0) the segment enters through its gold roster only, without its
  frames or prompt, and the answer is a strict multi-label list of roster ids (the JSON
  schema enumerates them, so guided decoding cannot name another id). The reply is read
  as the reference's v3 parser reads it (``strict_json = true`` in the prompt file): the
  whole reply must be the one JSON object, else it is unparsable (counted).
* ``same_view``: two references judged to show the same entity: are they near-duplicate
  views of it? This gives R_V ("a reference repeating an already covered view of the same
  entity") pair by pair, so a pair judged once serves every budget K.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, create_model, field_validator

__all__ = ["ReferenceAnswer", "SameViewAnswer", "reference_answer_model", "reference_labels"]


class ReferenceAnswer(BaseModel):
    """The ``reference`` answer; :func:`reference_answer_model` narrows the ids to a roster."""

    model_config = ConfigDict(extra="forbid")
    #: ids of roster entities the reference image shows ([] for none), each once
    entity_ids: list[str]

    @field_validator("entity_ids")
    @classmethod
    def _each_once(cls, ids: list[str]) -> list[str]:
        if len(set(ids)) != len(ids):
            raise ValueError("each entity id at most once")
        return ids


@functools.lru_cache(maxsize=4096)
def _roster_model(roster: tuple[str, ...]) -> type[ReferenceAnswer]:
    if not roster:
        return ReferenceAnswer
    ids = Literal[roster]  # type: ignore[valid-type]
    return create_model("ReferenceAnswer", __base__=ReferenceAnswer, entity_ids=(list[ids], ...))


def reference_answer_model(roster: Sequence[str]) -> type[ReferenceAnswer]:
    """:class:`ReferenceAnswer` whose ids must come from ``roster`` (sorted, as a JSON
    schema ``enum``). An empty roster admits only ``[]`` in practice: no question is
    asked then (nothing could be shown).

    Example:
        >>> model = reference_answer_model(["loc_002", "char_001"])
        >>> model.model_json_schema()["properties"]["entity_ids"]["items"]["enum"]
        ['char_001', 'loc_002']
        >>> model.model_validate({"entity_ids": ["char_001"]}, strict=True).entity_ids
        ['char_001']
    """
    return _roster_model(tuple(sorted(set(roster))))


class SameViewAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: the two references are near-duplicate views of the entity (same angle, appearance)
    same_view: bool


def reference_labels(data: Mapping[str, Any], roster: set[str]) -> frozenset[str]:
    """The roster ids a ``reference`` answer says the image shows.

    Ids outside the roster are ignored (a judge naming an entity it was not asked
    about does not make a reference correct). ``judge/sim-cards`` answers the same
    question in its own shape (``{"items": [{"entity_id", "present"}]}``: the roster
    entities it finds in the image; ``"abstain"`` counts as not found).

    Example:
        >>> sorted(reference_labels({"entity_ids": ["char_001", "x"]}, {"char_001"}))
        ['char_001']
        >>> sorted(reference_labels({"items": [{"entity_id": "loc_002", "present": True},
        ...     {"entity_id": "char_001", "present": "abstain"}]}, {"char_001", "loc_002"}))
        ['loc_002']
    """
    if "items" in data and "entity_ids" not in data:
        return frozenset(str(i.get("entity_id")) for i in data["items"]
                         if isinstance(i, Mapping) and i.get("present") is True) & roster
    return frozenset(str(e) for e in data.get("entity_ids", ())) & roster
