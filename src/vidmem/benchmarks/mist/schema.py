"""The MIST case card: one hidden-state task, its three shots and its arm prompts.

A **card** (PROTOCOLS.md section 5; seed 001 section 3) names an actor, the objects and
the containers of a scene, the hidden history of operations, the container the reveal
opens and the hidden **target state** s* (what that container holds at the end). The
format is the one :mod:`vidmem.benchmarks.mist.sim_build` writes, so every sim card
loads unchanged. Fields (``?`` = optional):

``case_id``          non-empty id, unique over the root
``family``           ``R0`` presence/count, ``R1`` binding, ``R2`` history update
``family_name?``     ``presence_count`` / ``binding`` / ``history_update`` (must agree)
``actor``            ``{"noun", "asset"?}`` -- who acts (``the woman``)
``objects``          ``[{"id", "noun", "plural"?, "asset"?, "colour"?, "aliases"?}]``
                     (``plural`` defaults to ``noun + "s"``; ``colour`` and ``aliases``
                     add words to the target vocabulary of the audit)
``containers``       ``[{"id", "noun", "kind"?, "asset"?, "colour"?}]``
``operations``       the hidden history, in order: ``{"op": "put" | "move", "object",
                     "count" >= 0, "from", "to"}`` (``from`` is ``null`` for ``put``, a
                     container id for ``move``)
``reveal``           the id of the container the reveal shot opens
``target``           s*: ``{"container", "contents": [{"object", "noun", "count"}],
                     "text"}``; ``contents`` empty means the container is empty
``shots``            exactly three, in order: ``{"shot": "setup" | "gap" | "reveal",
                     "duration_sec", "prompt"}`` (5-second shots in the protocol). The
                     reveal shot's prompt is the baseline arm's.
``reveal_prompts``   the reveal prompt per arm (:data:`ARMS`): ``baseline``,
                     ``answer_only``, ``open_and_hold``, ``same_sentence_resample``,
                     ``diagnosis_rewrite``, ``target_withheld_rewrite``. Only ``baseline``
                     is required; the rewrite arms are written by the M3-Agent loop later.
``task_record?``     for the M3-Agent loop: ``{"actor", "object", "binding",
                     "operation", "required_last_frame_evidence"}``
``audit?``           the sim builder's own audit, kept as data and not trusted: the
                     loader's audit is :func:`vidmem.benchmarks.mist.audit.audit_cards`

Only the shape of each field is checked here (pydantic); the rules between fields (ids
resolve, s* follows from the history, shots in order) are in
:mod:`vidmem.benchmarks.mist.cards`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ARMS", "ARMS_NAMING_TARGET", "ARMS_WITHOUT_TARGET", "FAMILIES", "MAX_CARDS",
           "MAX_COUNT", "MAX_ITEMS", "MAX_SHOT_SECONDS", "SHOTS", "Actor", "Card", "Container",
           "ContentItem", "Obj", "Operation", "Shot", "Target", "TaskRecord"]

#: operation family -> its long name (the sim builder's spelling)
FAMILIES = {"R0": "presence_count", "R1": "binding", "R2": "history_update"}
#: the three shots, in order
SHOTS = ("setup", "gap", "reveal")
#: every arm of the reveal shot, in report order
ARMS = ("baseline", "answer_only", "open_and_hold", "same_sentence_resample",
        "diagnosis_rewrite", "target_withheld_rewrite")
#: arms whose reveal prompt may (and should) state s* -- marked by the audit, not errors
ARMS_NAMING_TARGET = ("answer_only", "same_sentence_resample", "diagnosis_rewrite")
#: arms whose reveal prompt must not state s* -- a mention is an error
ARMS_WITHOUT_TARGET = ("baseline", "open_and_hold", "target_withheld_rewrite")


# Input limits (errors, checked by the schema): a card is one small scene, and each shot
# is one generator call whose clip vidmem decodes; a value far outside what any case can
# mean is a typo or a hostile file, and would start hours of encoding.
#: a shot's longest duration, seconds: the protocol's shots are 5 s (other lengths warn);
#: a minute is past every TI2V generator's clip and keeps one case's encode bounded
MAX_SHOT_SECONDS = 60.0
#: the largest count an operation or s* may hold: a reveal's count is read off one frame
#: (the sim cards count 0-3), so a hundred is already more than a frame shows
MAX_COUNT = 100
#: the most objects, containers or operations one card may list (the sim cards: 1-2
#: objects, 1-2 containers, 0-2 operations)
MAX_ITEMS = 100
#: the most cards under one root (the protocol's case set is tens of cards)
MAX_CARDS = 10_000


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Actor(_Model):
    noun: str = Field(min_length=1)
    asset: str | None = None


class Obj(_Model):
    id: str = Field(min_length=1)
    noun: str = Field(min_length=1)
    plural: str | None = None
    asset: str | None = None
    colour: str | None = None
    aliases: list[str] = Field(default_factory=list)


class Container(_Model):
    id: str = Field(min_length=1)
    noun: str = Field(min_length=1)
    kind: str | None = None
    asset: str | None = None
    colour: str | None = None


class Operation(_Model):
    op: Literal["put", "move"]
    object: str = Field(min_length=1)
    count: int = Field(ge=0, le=MAX_COUNT)
    from_: str | None = Field(default=None, alias="from")
    to: str = Field(min_length=1)


class ContentItem(_Model):
    object: str = Field(min_length=1)
    noun: str = Field(min_length=1)
    count: int = Field(ge=0, le=MAX_COUNT)


class Target(_Model):
    container: str = Field(min_length=1)
    contents: list[ContentItem] = Field(max_length=MAX_ITEMS)
    text: str = Field(min_length=1)


class Shot(_Model):
    shot: Literal["setup", "gap", "reveal"]
    duration_sec: float = Field(gt=0, le=MAX_SHOT_SECONDS, allow_inf_nan=False)
    prompt: str = Field(min_length=1)


class TaskRecord(_Model):
    actor: str
    object: str
    binding: str
    operation: str
    required_last_frame_evidence: str


class Card(_Model):
    """One MIST case card (fields in the module docstring)."""

    case_id: str = Field(min_length=1)
    family: Literal["R0", "R1", "R2"]
    family_name: str | None = None
    actor: Actor
    objects: list[Obj] = Field(min_length=1, max_length=MAX_ITEMS)
    containers: list[Container] = Field(min_length=1, max_length=MAX_ITEMS)
    operations: list[Operation] = Field(max_length=MAX_ITEMS)
    reveal: str = Field(min_length=1)
    target: Target
    shots: list[Shot]
    reveal_prompts: dict[str, str] = Field(default_factory=dict)
    task_record: TaskRecord | None = None
    audit: dict[str, Any] | None = None

    def shot_prompt(self, shot: str) -> str:
        """The prompt of shot ``setup``, ``gap`` or ``reveal`` (first such shot)."""
        return next(s.prompt for s in self.shots if s.shot == shot)

    def arm_prompts(self) -> dict[str, str]:
        """The reveal prompt of every arm on the card, ``baseline`` first.

        ``baseline`` is the reveal shot's prompt when ``reveal_prompts`` has none (the
        two are joined by a newline should they differ, so an edit to either is seen).
        """
        shot = self.shot_prompt("reveal")
        arms = dict(self.reveal_prompts)
        base = arms.pop("baseline", shot)
        out = {"baseline": shot if base == shot else f"{shot}\n{base}"}
        out.update({a: arms.pop(a) for a in ARMS if a in arms})
        out.update(sorted(arms.items()))
        return out
