"""The blinded roster of one Track-B segment: which entities the judge is asked about.

A segment's roster mixes, in a seeded shuffle and with nothing that says which is
which, the segment's cast (what must be on screen), its forbidden entries (what must
not be), the absent targets of false friends (the old look-alike a new entity could be
confused with) and 3-5 seeded decoys (other entities of the story, clearly absent).
Each line carries a **blind label** (``R1``, ``R2``... in roster order; never the gold
id), the name, the kind, an appearance text cut at 120 characters and, where the gold
asks for it, a state, count or look-alike cue. The gold side -- label -> (gold id,
role) -- stays in :attr:`Roster.private` and never reaches a prompt or payload.

Rules (each with its reason and source) are in :data:`PROTOCOL`. The gold is read as
the raw ``gt/<story_id>.json`` dict of the official format (``trackB-gt-2.0``).

Example:
    >>> gold = {"story_id": "s", "entities": {
    ...     "E1": {"name": "Ann", "kind": "character", "appearance": "A woman."},
    ...     "E2": {"name": "Hall", "kind": "location", "appearance": "A brick wall."},
    ...     "E3": {"name": "cup", "kind": "prop", "appearance": "A cup."},
    ...     "E4": {"name": "bell", "kind": "prop", "appearance": "A bell."}},
    ...   "segments": [{"segment_id": "seg_001", "cast": [{"eid": "E1", "op": "introduce"}],
    ...                 "forbidden": [{"eid": "E3", "reason": "destroyed"}]}]}
    >>> r = build_roster(gold, 0, seed=0)
    >>> sorted(r.role_of(label) for label in r.labels)
    ['decoy', 'decoy', 'forbidden', 'required']
    >>> r.labels
    ('R1', 'R2', 'R3', 'R4')
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from vidmem.benchmarks.vmem_track_b.gold_view import (
    eids_of,
    entity_of,
    look_of,
    segment_of,
    state_history,
)
from vidmem.errors import UserInputError

__all__ = ["APPEARANCE_CHARS", "DECOY_MAX", "DECOY_MIN", "PROTOCOL", "ROLES", "Assignment",
           "Roster", "RosterLine", "build_roster"]

DECOY_MIN, DECOY_MAX = 3, 5
APPEARANCE_CHARS = 120
ROLES = ("required", "location", "forbidden", "false_friend_target", "decoy")
_REF = "Suchenl/VMem-Bench src/vmem_bench/scoring/end2end_coverage.py"

#: every roster rule: value, one-line reason, source.
PROTOCOL: dict[str, dict[str, Any]] = {
    "roster_members": {
        "value": "cast | forbidden | absent false-friend targets | decoys",
        "reason": "precision and avoidance are only measurable when absent entities are asked too",
        "source": f"PROTOCOLS.md sec. 4 (Judge); {_REF} _prep_segment"},
    "false_friend_targets": {
        "value": "confusable_with of cast entries with op == introduce, minus the cast",
        "reason": "catches the old look-alike drawn in place of the new entity",
        "source": f"{_REF} _prep_segment"},
    "decoy_pool": {
        "value": "every story entity (any kind) not in cast, forbidden or false-friend targets",
        "reason": "decoys are clearly absent entities of the same story, a noise floor",
        "source": f"{_REF} _prep_segment"},
    "decoy_count": {
        "value": f"min({DECOY_MAX}, pool size); fewer than {DECOY_MIN} only when the pool is smaller",
        "reason": "the reference samples DECOY_MAX=5 and tops up to DECOY_MIN=3",
        "source": f"PROTOCOLS.md sec. 4 (3-5 decoys); {_REF} DECOY_MIN, DECOY_MAX"},
    "decoy_sampling": {
        "value": "pool sorted, random.Random(md5('<seed>:<story>:<segment>:decoys')[:8]) shuffle, "
                 "first k",
        "reason": "reproducible on any machine (hashlib, not hash()) and independent of order",
        "source": f"{_REF} _seeded_sample (vidmem adds the run seed to the salt)"},
    "roster_order": {
        "value": "sorted ids, shuffled by random.Random(md5('<seed>:<story>:<segment>:roster')[:8])",
        "reason": "the position of a line must not reveal its role",
        "source": f"{_REF} _prep_segment (vidmem adds the run seed to the salt)"},
    "blind_labels": {
        "value": "R1..Rn in roster order (another letter if the story's ids look like that)",
        "reason": "gold ids are ordered by introduction; a blind label reveals nothing",
        "source": "vidmem (the reference shows gold ids)"},
    "appearance": {
        "value": f"cast: the segment's state look (else its current state); others: the "
                 f"initial-state look; cut to the first {APPEARANCE_CHARS} characters",
        "reason": "one state, one look; a removed entity is shown as it was, not as removed",
        "source": f"PROTOCOLS.md sec. 4 (<= 120 chars); {_REF} _seg_appearance, _roster_text"},
    "state_cue": {
        "value": "cast entries with a gold state that is not a flashback (any op): the full "
                 "state look; answer 'changed' if shown so, else 'default'",
        "reason": "every such state is scored (transform -> state change, any other op -> "
                  "persistent state), so the judge is asked it; flashback looks are judged "
                  "for presence only",
        "source": f"{_REF} _tally (scores every non-flashback state); _prep_segment asks "
                  "the state only for op transform|persist, so a state on another op is "
                  "scored there without being asked (the release's compiler writes none) -- "
                  "vidmem asks it: a deliberate difference"},
    "state_default_look": {
        "value": "payload only: the look before the entity's latest change",
        "reason": "a card judge needs the other candidate look to choose between them",
        "source": "vidmem (judge/sim-cards reads 'states')"},
    "count_cue": {"value": "cast entries with a count: ask for a count (the number is not shown)",
                  "reason": "count memory", "source": f"{_REF} _roster_text"},
    "lookalike_cue": {
        "value": "entities of the segment's lookalike_active features: their telling features; "
                 "pairs with both members in the roster are named by label",
        "reason": "instance_match is asked for the members of a look-alike pair",
        "source": f"{_REF} _roster_text, _build_prompt"},
}


class Assignment(NamedTuple):
    """The gold side of one roster line (private; never shown to a judge)."""

    eid: str
    role: str


@dataclass(frozen=True)
class RosterLine:
    """One line as the judge sees it; ``label`` is blind, nothing here is gold-only."""

    label: str
    name: str
    kind: str
    appearance: str
    state_cue: str | None = None
    default_look: str | None = None
    count_cue: bool = False
    features: str | None = None
    lookalike: str | None = None

    def payload(self) -> dict[str, Any]:
        """The line in ``judge/sim-cards``' roster format (its module docstring)."""
        out: dict[str, Any] = {"entity_id": self.label, "name": self.name, "kind": self.kind,
                               "appearance": self.appearance}
        if self.state_cue and self.default_look:
            out["states"] = {"changed": self.state_cue, "default": self.default_look}
        if self.count_cue:
            out["count"] = True
        if self.lookalike:
            out["lookalike"] = self.lookalike
        return out


@dataclass(frozen=True)
class Roster:
    """The blinded roster of one segment (see the module docstring).

    Attributes:
        story_id, segment_id, seed: what it was built for.
        lines: the lines in the order shown.
        pairs: look-alike pairs, as label pairs, both members in the roster.
        private: label -> :class:`Assignment` (gold id, role); for scoring only.
        decoy_pool: how many entities the decoys were drawn from.
    """

    story_id: str
    segment_id: str
    seed: int
    lines: tuple[RosterLine, ...]
    pairs: tuple[tuple[str, str], ...]
    private: Mapping[str, Assignment] = field(repr=False)
    decoy_pool: int = 0

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(line.label for line in self.lines)

    def line(self, label: str) -> RosterLine:
        return self.lines[self.labels.index(label)]

    def eid_of(self, label: str) -> str:
        return self.private[label].eid

    def role_of(self, label: str) -> str:
        return self.private[label].role

    def label_of(self, eid: str) -> str:
        return next(lab for lab, a in self.private.items() if a.eid == eid)

    def eids(self, role: str) -> list[str]:
        """Gold ids of the lines with ``role``, in roster order."""
        return [self.private[lab].eid for lab in self.labels if self.private[lab].role == role]

    def payload(self) -> list[dict[str, Any]]:
        """The roster for ``JudgeRequest.payload["roster"]``."""
        return [line.payload() for line in self.lines]

    def describe(self) -> dict[str, Any]:
        """For the run log (holds the private mapping: never give it to a judge)."""
        return {"story_id": self.story_id, "segment_id": self.segment_id, "seed": self.seed,
                "decoy_pool": self.decoy_pool,
                "lines": [{**line.payload(), "eid": self.private[line.label].eid,
                           "role": self.private[line.label].role} for line in self.lines]}


def _rng(seed: int, story_id: str, segment_id: str, purpose: str) -> random.Random:
    salt = f"{seed}:{story_id}:{segment_id}:{purpose}".encode()
    return random.Random(int.from_bytes(hashlib.md5(salt, usedforsecurity=False).digest()[:8],
                                        "big"))


def _prefix(eids: Sequence[str]) -> str:
    for p in "RQXZ":
        if not any(re.fullmatch(p + r"\d+", e) for e in eids):
            return p
    return "L_"


def build_roster(story_gold: Mapping[str, Any], segment_index: int | str, *,
                 seed: int) -> Roster:
    """The blinded, seeded-shuffled roster of one segment (rules in :data:`PROTOCOL`).

    Args:
        story_gold: the parsed ``gt/<story_id>.json``.
        segment_index: position in ``story_gold["segments"]`` (0 is ``seg_001``), or a
            segment id such as ``"seg_001"``.
        seed: run seed; decoys and order depend only on (seed, story id, segment id).

    Raises:
        UserInputError: the gold lacks segments or entities, the segment does not
            exist, or a cast / forbidden id is not a well-formed entity.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise UserInputError(f"Track-B roster: seed must be an integer, found {seed!r}")
    index, seg = segment_of(story_gold, segment_index)
    story_id, seg_id = str(story_gold.get("story_id", "")), str(seg.get("segment_id", index + 1))
    where = f"segment {seg_id}"
    ents = story_gold["entities"]
    cast = dict(zip(eids_of(story_gold, seg.get("cast"), f"{where} cast"), seg.get("cast") or [],
                    strict=True))
    forbidden = set(eids_of(story_gold, seg.get("forbidden"), f"{where} forbidden"))
    ff = {str(c["confusable_with"]) for c in cast.values()
          if c.get("confusable_with") and c.get("op") == "introduce"} - set(cast)
    for eid in [*cast, *forbidden, *ff]:
        entity_of(story_gold, eid, where)
    pool = sorted(set(ents) - set(cast) - forbidden - ff)
    drawn = list(pool)
    _rng(seed, story_id, seg_id, "decoys").shuffle(drawn)
    decoys = set(drawn[:min(DECOY_MAX, len(drawn))])
    ids = sorted(set(cast) | forbidden | ff | decoys)
    _rng(seed, story_id, seg_id, "roster").shuffle(ids)
    prefix = _prefix(list(ents))
    label = {eid: f"{prefix}{k + 1}" for k, eid in enumerate(ids)}

    current, before = state_history(story_gold["segments"], index, story_gold)
    feats: dict[str, str] = {}
    mates: dict[str, str] = {}
    pairs: list[tuple[str, str]] = []
    for la in seg.get("lookalike_active") or []:
        feats.update({str(k): str(v) for k, v in (la.get("features") or {}).items()})
        pair = [str(x) for x in la.get("pair") or []]
        a, b = (pair + ["", ""])[:2]
        if a in label and b in label:
            mates[a], mates[b] = label[b], label[a]
            pairs.append((label[a], label[b]))
    private: dict[str, Assignment] = {}
    lines = []
    for eid in ids:
        e = entity_of(story_gold, eid, where)
        c = cast.get(eid)
        state_cue = default = None
        if c is not None:
            role = "location" if e["kind"] == "location" else "required"
            st = c.get("state") if isinstance(c.get("state"), dict) else None
            look = str(st.get("appearance") or look_of(e, st.get("label"))) if st else \
                look_of(e, current.get(eid))
            if st and not st.get("flashback"):  # scored: transform -> change, else persist
                state_cue = look
                new = str(st.get("label"))
                old = current.get(eid) if current.get(eid) != new else before.get(eid)
                if old is None and new != e.get("initial_state"):
                    old = e.get("initial_state")
                default = look_of(e, old) if old and old != new else None
        else:
            role = "forbidden" if eid in forbidden else (
                "false_friend_target" if eid in ff else "decoy")
            look = look_of(e, None)
        private[label[eid]] = Assignment(eid, role)
        lines.append(RosterLine(
            label=label[eid], name=str(e["name"]), kind=str(e["kind"]),
            appearance=look[:APPEARANCE_CHARS], state_cue=state_cue, default_look=default,
            count_cue=c is not None and c.get("count") is not None,
            features=feats.get(eid), lookalike=mates.get(eid)))
    return Roster(story_id, seg_id, seed, tuple(lines), tuple(pairs), private, len(pool))
