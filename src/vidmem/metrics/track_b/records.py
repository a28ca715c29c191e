"""Track-B input records: the judge's verdict per roster entry and per segment.

Part of :mod:`vidmem.metrics.track_b` (the overview is there).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import numpy as np

from vidmem.errors import UserInputError
from vidmem.metrics.track_b.vocabulary import (
    ABSTAIN,
    CAST_ROLES,
    FORBIDDEN_REASONS,
    KINDS,
    OPS,
    RECALL_KINDS,
    ROLES,
    Present,
)


def _fail(where: str, expected: str, found: object, fix: str) -> UserInputError:
    return UserInputError(f"{where}: expected {expected}, found {found!r}", hint=fix)


def _is_int(v: object) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


@dataclass(frozen=True)
class EntryVerdict:
    """The judge's verdict on one roster entity of one segment, with its gold fields.

    One per (story, condition, segment, roster entity); the condition is implicit (one
    arm is a list of one condition's segments).

    Attributes:
        story_id: the story, e.g. ``"0001_lighthouse_keeper"``.
        segment_id: the segment number, 1-based (``seg_001`` is 1).
        eid: the entity id, e.g. ``"E5"``.
        kind: ``"character"``, ``"prop"`` or ``"location"``.
        role: the entry's role in this segment's roster: ``"required"`` (a cast character
            or prop the segment must show, introductions included), ``"location"`` (a
            cast location), ``"forbidden"``, ``"false_friend_target"`` (the look-alike an
            introduced entity can be confused with, on the roster because it is not in
            the cast) or ``"decoy"``. An entity that is both forbidden and a false-friend
            target is one ``"forbidden"`` entry.
        present: the judge's answer: ``True``, ``False`` or ``"abstain"``.
        gap: cast only: segments since the entity was last on screen (gold ``gap``);
            ``None`` for a first appearance.
        op: cast only (required there): ``introduce``, ``recall``, ``recall_after_gap``,
            ``transform`` or ``persist``.
        anchor: cast only: the prompt refers to the entity name-free, by a temporal
            reference (gold ``anchor.type == "temporal"``).
        flashback: cast only: the gold state is a past look, judged for presence only.
        expected_state: cast only: the gold state label the segment must show, or ``None``.
        judged_state: the judge's state answer: ``"changed"`` when the clip shows the
            state the roster line describes, ``"default"`` otherwise, ``None`` if absent.
        expected_count: cast only: how many the segment must show (gold ``count``).
        judged_count: the judge's count, or ``None``.
        lookalike: cast only: a look-alike pair member is active here (gold
            ``lookalike_active[].present_members``), so the instance choice matters.
        instance_match: the judge's instance choice: ``True`` when it names this entity,
            ``False`` when it names the other member of the pair, ``None`` otherwise.
        confusable_with: cast only: the false-friend target's eid (gold
            ``confusable_with``), or ``None``.
        reason: forbidden only (required there): ``destroyed``, ``deceased`` or
            ``lookalike_absent``.
        reference_indirect: forbidden destroyed/deceased only: the prompt refers to the
            removed entity indirectly (gold ``forbidden[].reference_indirect``).

    Example:
        >>> e = EntryVerdict("0001", 3, "E1", "character", "required", True, gap=1, op="recall")
        >>> e.is_present, e.in_cast
        (True, True)
        >>> EntryVerdict("0001", 3, "E5", "prop", "forbidden", "abstain", reason="destroyed").is_present
        False
    """

    story_id: str
    segment_id: int
    eid: str
    kind: str
    role: str
    present: Present
    gap: int | None = None
    op: str | None = None
    anchor: bool = False
    flashback: bool = False
    expected_state: str | None = None
    judged_state: str | None = None
    expected_count: int | None = None
    judged_count: int | None = None
    lookalike: bool = False
    instance_match: bool | None = None
    confusable_with: str | None = None
    reason: str | None = None
    reference_indirect: bool = False

    def __post_init__(self) -> None:
        where = f"EntryVerdict(story {self.story_id!r}, segment {self.segment_id!r}, " \
                f"entity {self.eid!r})"
        for name in ("story_id", "eid"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v:
                raise _fail(f"{where}.{name}", "a non-empty string", v, f"pass {name} as text")
        if not _is_int(self.segment_id) or self.segment_id < 1:
            raise _fail(f"{where}.segment_id", "an int >= 1 (1-based)", self.segment_id,
                        "map seg_001 to 1; a 0-based index needs +1")
        if self.kind not in KINDS:
            raise _fail(f"{where}.kind", f"one of {KINDS}", self.kind, "use the gold entity kind")
        if self.role not in ROLES:
            raise _fail(f"{where}.role", f"one of {ROLES}", self.role,
                        "give the entry's role in the segment's roster")
        if self.role == "required" and self.kind not in RECALL_KINDS:
            raise _fail(f"{where}.kind", "kind 'character' or 'prop' for role 'required'",
                        self.kind, "a cast location has role 'location'")
        if self.role == "location" and self.kind != "location":
            raise _fail(f"{where}.kind", "kind 'location' for role 'location'", self.kind,
                        "a cast character or prop has role 'required'")
        if not (isinstance(self.present, bool) or self.present == ABSTAIN):
            raise _fail(f"{where}.present", "True, False or 'abstain'", self.present,
                        "normalise the judge's answer before scoring")
        for name in ("anchor", "flashback", "lookalike", "reference_indirect"):
            if not isinstance(getattr(self, name), bool):
                raise _fail(f"{where}.{name}", "a bool", getattr(self, name), "pass True or False")
        if self.instance_match is not None and not isinstance(self.instance_match, bool):
            raise _fail(f"{where}.instance_match", "True, False or None", self.instance_match,
                        "True: the judge named this entity; False: the other pair member")
        for name in ("expected_state", "judged_state", "confusable_with"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, str):
                raise _fail(f"{where}.{name}", "a string or None", v, f"pass {name} as text")
        for name in ("expected_count", "judged_count"):
            v = getattr(self, name)
            if v is not None and (not _is_int(v) or v < 0):
                raise _fail(f"{where}.{name}", "an int >= 0 or None", v, "pass a whole count")
        if self.gap is not None and (not _is_int(self.gap) or self.gap < 0):
            raise _fail(f"{where}.gap", "an int >= 0 or None", self.gap, "use the gold gap")
        if self.role in CAST_ROLES:
            if self.op not in OPS:
                raise _fail(f"{where}.op", f"one of {OPS} for a cast entry", self.op,
                            "copy the gold cast op")
        else:
            cast_only = {"gap": self.gap, "op": self.op, "anchor": self.anchor,
                         "flashback": self.flashback, "expected_state": self.expected_state,
                         "expected_count": self.expected_count, "lookalike": self.lookalike,
                         "confusable_with": self.confusable_with}
            set_ = sorted(k for k, v in cast_only.items() if v not in (None, False))
            if set_:
                raise _fail(where, f"no cast-only fields on a {self.role!r} entry",
                            set_, "these gold fields belong to cast entries")
        if self.confusable_with == self.eid:
            raise _fail(f"{where}.confusable_with", "another entity's id", self.confusable_with,
                        "a false friend is a different entity")
        if self.role == "forbidden":
            if self.reason not in FORBIDDEN_REASONS:
                raise _fail(f"{where}.reason", f"one of {FORBIDDEN_REASONS}", self.reason,
                            "copy the gold forbidden reason")
            if self.reference_indirect and self.reason == "lookalike_absent":
                raise _fail(f"{where}.reference_indirect", "False for reason 'lookalike_absent'",
                            True, "reference_indirect marks destroyed/deceased entries only")
        else:
            if self.reason is not None:
                raise _fail(f"{where}.reason", "None outside forbidden entries", self.reason,
                            "only forbidden entries have a reason")
            if self.reference_indirect:
                raise _fail(f"{where}.reference_indirect", "False outside forbidden entries",
                            True, "only forbidden entries are reference-indirect")

    @property
    def is_present(self) -> bool:
        """The judge said present = true ('abstain' and false are not present)."""
        return self.present is True

    @property
    def is_abstain(self) -> bool:
        """The judge abstained (or the segment was unparsable)."""
        return self.present == ABSTAIN

    @property
    def in_cast(self) -> bool:
        """A gold cast entry of the segment (role ``required`` or ``location``)."""
        return self.role in CAST_ROLES


@dataclass(frozen=True)
class SegmentVerdict:
    """The judge's answer on one segment of one condition's rollout.

    Attributes:
        story_id: the story.
        segment_id: 1-based segment number.
        parsed: whether the judge's answer parsed (after the one retry). When ``False``
            every entry is ``"abstain"`` (checked).
        entries: one :class:`EntryVerdict` per roster entity (ids unique), stored as a
            tuple.

    Example:
        >>> e = EntryVerdict("s", 1, "E1", "character", "required", True, op="introduce")
        >>> seg = SegmentVerdict.unparsable("s", 1, [e])
        >>> seg.parsed, seg.entries[0].present
        (False, 'abstain')
    """

    story_id: str
    segment_id: int
    parsed: bool
    entries: tuple[EntryVerdict, ...] = field(default=())

    def __post_init__(self) -> None:
        where = f"SegmentVerdict(story {self.story_id!r}, segment {self.segment_id!r})"
        if not isinstance(self.story_id, str) or not self.story_id:
            raise _fail(f"{where}.story_id", "a non-empty string", self.story_id, "pass the story id")
        if not _is_int(self.segment_id) or self.segment_id < 1:
            raise _fail(f"{where}.segment_id", "an int >= 1 (1-based)", self.segment_id,
                        "map seg_001 to 1")
        if not isinstance(self.parsed, bool):
            raise _fail(f"{where}.parsed", "a bool", self.parsed, "pass True or False")
        if isinstance(self.entries, (str, bytes)) or not isinstance(self.entries, Iterable):
            raise _fail(f"{where}.entries", "a sequence of EntryVerdict", self.entries,
                        "pass a list or tuple")
        entries = tuple(self.entries)
        object.__setattr__(self, "entries", entries)
        seen: set[str] = set()
        for i, e in enumerate(entries):
            if not isinstance(e, EntryVerdict):
                raise _fail(f"{where}.entries[{i}]", "an EntryVerdict", type(e).__name__,
                            "build entries with EntryVerdict(...)")
            if (e.story_id, e.segment_id) != (self.story_id, self.segment_id):
                raise _fail(f"{where}.entries[{i}]", "the segment's story_id and segment_id",
                            (e.story_id, e.segment_id), "put each entry in its own segment")
            if e.eid in seen:
                raise _fail(f"{where}.entries[{i}].eid", "ids unique within a segment", e.eid,
                            "an entity is one roster line; merge its roles (forbidden wins)")
            seen.add(e.eid)
            if not self.parsed and not e.is_abstain:
                raise _fail(f"{where}.entries[{i}].present", "'abstain' in an unparsable segment",
                            e.present, "build it with SegmentVerdict.unparsable(...)")

    @classmethod
    def unparsable(cls, story_id: str, segment_id: int,
                   entries: Iterable[EntryVerdict]) -> SegmentVerdict:
        """A segment whose judge answer did not parse: every entry becomes 'abstain'.

        The gold fields are kept; the judged state, count and instance are cleared.
        """
        return cls(story_id, segment_id, False, tuple(
            replace(e, present=ABSTAIN, judged_state=None, judged_count=None,
                    instance_match=None) for e in entries))

    @property
    def key(self) -> tuple[str, int]:
        """``(story_id, segment_id)``."""
        return (self.story_id, self.segment_id)

    def entry(self, eid: str) -> EntryVerdict | None:
        """The entry of entity ``eid``, or ``None`` when it is not on the roster."""
        for e in self.entries:
            if e.eid == eid:
                return e
        return None

    def false_friend_confused(self, entry: EntryVerdict) -> bool | None:
        """Did the judge see the false-friend target of ``entry``?

        ``None`` when not testable: ``entry`` has no ``confusable_with``, or its target
        is in this segment's cast (seeing a co-present target is correct). Otherwise
        ``True`` when the target's entry is judged present, whatever ``entry``'s own
        verdict (the reference rule).

        Raises:
            UserInputError: the target is neither in the cast nor on the roster.
        """
        tgt = entry.confusable_with
        if tgt is None:
            return None
        t = self.entry(tgt)
        if t is None:
            raise _fail(f"SegmentVerdict(story {self.story_id!r}, segment {self.segment_id}) "
                        f"false friend of {entry.eid!r}", f"target {tgt!r} on the roster",
                        sorted(e.eid for e in self.entries),
                        "an absent false-friend target is put on the roster "
                        "(role 'false_friend_target' or 'forbidden')")
        if t.in_cast:
            return None
        return t.is_present


def _segments(segments: Iterable[SegmentVerdict], where: str) -> list[SegmentVerdict]:
    if isinstance(segments, (str, bytes, SegmentVerdict)) or not isinstance(segments, Iterable):
        raise _fail(where, "an iterable of SegmentVerdict", type(segments).__name__,
                    "pass one condition's segments as a list")
    out = list(segments)
    seen: set[tuple[str, int]] = set()
    for i, s in enumerate(out):
        if not isinstance(s, SegmentVerdict):
            raise _fail(f"{where}[{i}]", "a SegmentVerdict", type(s).__name__,
                        "build segments with SegmentVerdict(...)")
        if s.key in seen:
            raise _fail(f"{where}[{i}]", "each (story_id, segment_id) once per condition", s.key,
                        "pass one condition's segments; drop duplicate answers")
        seen.add(s.key)
    return out
