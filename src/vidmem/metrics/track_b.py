"""VMem-Bench Track-B: pure scoring of stored per-segment judge verdicts.

For every segment of a closed-loop rollout the judge saw one blinded roster -- the
segment's cast, its forbidden entities, absent false-friend targets and a few decoys --
and said of each entity ``present``: ``True``, ``False`` or ``"abstain"``, plus a state,
a count and an instance choice where the roster line asked for them. This module turns
those stored verdicts into numbers; it calls no judge and reads no file.

Input records (built by the benchmark's loader from the gold and the judge answers):

* :class:`EntryVerdict`, one per (story, condition, segment, roster entity): the
  entity's role in the segment and the gold fields of its stress families, next to the
  judge's verdict on it.
* :class:`SegmentVerdict`, one per (story, condition, segment): whether the judge's
  answer parsed, and the segment's entries. An unparsable segment has every entry
  ``"abstain"`` (:meth:`SegmentVerdict.unparsable` builds one), which counts as "not
  present" everywhere: a required entity is missed, a forbidden one is not violated.

What is computed (PROTOCOLS.md section 4, paper section 3.3 and App. D.1), all pooled
as counts over every segment of every story given:

* :func:`pooled_rates`: Recall, Precision, F1, Avoid-OK, decoy false-positive rate,
  abstain rate and the unparsable-segment count, each as numerator / denominator.
* :func:`family_rates`: the nine stress families, each rate with its numerator,
  denominator and a Wilson interval (:func:`wilson_interval`).
* :func:`story_counts`: per story, the (numerator, denominator) of Recall, Precision
  and Avoid-OK -- the input of :func:`vidmem.stats.paired_bootstrap.paired_story_bootstrap`
  (this module may not import ``stats/``; the benchmark joins the two).
* :func:`parsed_in_both`: both arms cut to the (story, segment) pairs whose answer
  parsed in both, for the robustness comparison of the paper's Table 20a.

Every rule adopted from the published code (Suchenl/VMem-Bench) or decided here is in
:data:`PROTOCOL`, with its reason and its source, for the run log.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
from scipy import stats as _stats

from vidmem.errors import UserInputError

__all__ = [
    "ABSTAIN",
    "BOOTSTRAP_RATES",
    "CAST_ROLES",
    "FAMILIES",
    "FORBIDDEN_REASONS",
    "KINDS",
    "LONG_GAP",
    "OPS",
    "PROTOCOL",
    "RECALL_KINDS",
    "ROLES",
    "EntryVerdict",
    "FamilyRate",
    "PooledRates",
    "Proportion",
    "SegmentVerdict",
    "WilsonRate",
    "family_rates",
    "parsed_in_both",
    "pooled_rates",
    "story_counts",
    "wilson_interval",
]

#: the judge's third answer: neither present nor absent
ABSTAIN = "abstain"
KINDS = ("character", "prop", "location")
#: the kinds whose appearances Recall and Precision pool (locations are near-free)
RECALL_KINDS = ("character", "prop")
#: an entry's role in its segment's roster
ROLES = ("required", "forbidden", "false_friend_target", "decoy", "location")
#: the roles of the segment's cast (the gold ``cast[]`` entries)
CAST_ROLES = ("required", "location")
OPS = ("introduce", "recall", "recall_after_gap", "transform", "persist")
FORBIDDEN_REASONS = ("destroyed", "deceased", "lookalike_absent")
#: gap (segments) from which a return is a long-gap return
LONG_GAP = 30
#: the nine stress families of :func:`family_rates`, in the paper's order
FAMILIES = ("long_gap_return", "temporal_reference", "state_change", "persistent_state",
            "count", "lookalike", "false_friend", "deprecation", "reference_indirect")
#: the rates of the paired story bootstrap, in the order of :func:`story_counts` rows
BOOTSTRAP_RATES = ("recall", "precision", "avoid_ok")
#: the judge's state answer when the clip shows the state the roster line describes
STATE_SHOWN = "changed"

Present = bool | Literal["abstain"]

_REF = "Suchenl/VMem-Bench"
_E2E = f"{_REF} src/vmem_bench/scoring/end2end_coverage.py"
_README = f"{_REF} src/vmem_bench/scoring/README.md (Track B table)"
_GOLD = "the sample gold trackB/en/gt/0001_lighthouse_keeper.json"

#: every rule this module applies: what it is, why, and where it comes from
PROTOCOL: dict[str, dict[str, str]] = {
    "present": {
        "rule": "an entity counts as present only when the judge said present = true; "
                "false and 'abstain' are both not present",
        "reason": "the reference builds its present set A from 'true' answers only",
        "source": f"{_E2E} _tally (A = present == 'true'); PROTOCOLS.md section 4",
    },
    "unparsable": {
        "rule": "an unparsable segment has every roster entry 'abstain' (required -> miss, "
                "forbidden -> not violated); segments are counted (unparsable rate)",
        "reason": "never credit an unreadable answer, never hide it",
        "source": f"PROTOCOLS.md section 4; paper App. D.1; {_E2E} score_segment "
                  "(parse_error, missing ids vote 'abstain')",
    },
    "recall": {
        "rule": "Recall = required character and prop cast entries judged present / required "
                "character and prop cast entries; introductions included",
        "reason": "the headline recall pools characters and props; locations are near-free",
        "source": f"{_E2E} run() (recall_char_prop from recall.character + recall.prop); "
                  "PROTOCOLS.md section 4",
    },
    "precision": {
        "rule": "Precision = required entries judged present / entries judged present whose "
                "role is required, forbidden or false_friend_target and whose kind is not "
                "location; decoys excluded",
        "reason": "the closed-world story roster; a location is not drawn by mistake",
        "source": f"{_E2E} _tally (prec over present | forbidden | ff_targets, "
                  "kind != location); PROTOCOLS.md section 4",
    },
    "f1": {
        "rule": "F1 = 2PR / (P + R) from the unrounded pooled P and R; 0 when P + R = 0; None "
                "when either is undefined",
        "reason": "harmonic mean of the pooled rates (paper 3.3); the reference rounds P and R "
                  "to 4 decimals first, here rounding is left to the report",
        "source": f"{_E2E} run() (f1); paper section 3.3",
    },
    "avoid_ok": {
        "rule": "Avoid-OK = forbidden entries not judged present / forbidden entries, every "
                "reason and kind",
        "reason": "the fraction of forbidden appearances that stay absent",
        "source": f"{_E2E} _tally (avoid.opp, avoid.viol) and run() (1 - viol / opp)",
    },
    "decoy_fpr": {
        "rule": "decoy FPR = decoy entries judged present / decoy entries",
        "reason": "the judge's noise floor on entities that are certainly absent",
        "source": f"{_E2E} _tally (decoy.fp / decoy.tot)",
    },
    "abstain_rate": {
        "rule": "abstain rate = entries answered 'abstain' / all roster entries (every role, "
                "unparsable segments included)",
        "reason": "coverage of the judge, read next to precision-like rates",
        "source": f"{_E2E} run() (abstain / roster.tot); paper App. D.1",
    },
    "long_gap_return": {
        "rule": "recall over required character/prop entries with gap >= 30",
        "reason": "long-gap returns pool characters and props",
        "source": f"{_E2E} _tally (cap.long_gap); paper Table 3 caption",
    },
    "temporal_reference": {
        "rule": "recall over cast entries (any kind, locations included) whose gold anchor is a "
                "temporal (name-free) reference",
        "reason": "the reference counts anchors outside its character/prop filter, and the "
                  "gold anchors a location too (E9 at seg_084)",
        "source": f"{_E2E} _tally (cap.temporal, anchor.type == 'temporal'); {_GOLD}",
    },
    "state_families": {
        "rule": "cast entries with a gold state that is not a flashback: op transform -> state "
                "change, any other op -> persistent state; flashback states are presence only",
        "reason": "a flashback carries a past look for presence, not a state judgement",
        "source": f"{_E2E} _tally (key = state_change if op == transform else persist_state)",
    },
    "state_accuracy": {
        "rule": "state accuracy = judged state 'changed' (the state the roster line describes "
                "is shown) / state entries judged present; state entries not judged present "
                "are reported as judged_present, never as errors",
        "reason": "a state can only be read off an entity the judge saw",
        "source": f"{_E2E} _tally (cap.<state>.tot only when eid in A; .missed otherwise) "
                  "and _roster_text (changed = shown as described)",
    },
    "count": {
        "rule": "over cast entries with a gold count judged present: exact rate = judged count "
                "== gold; off-by-one rate = |judged - gold| == 1 (exact not included)",
        "reason": "a count can only be read off an entity the judge saw",
        "source": f"{_E2E} _tally (cap.count) and run() (exact_rate, off_by_one_rate)",
    },
    "lookalike": {
        "rule": "over cast entries with an active look-alike (the gold present_members) judged "
                "present: correct-instance rate = instance_match True; wrong-instance rate = "
                "instance_match False (the other pair member); absent_avoid_ok = forbidden "
                "lookalike_absent entries not judged present",
        "reason": "instance choice is scorable only on a member the judge saw; the gold note "
                  "pairs 'do not draw the absent twin' with 'bind features when both share a "
                  "segment'",
        "source": f"{_E2E} _tally (cap.lookalike, cap.lookalike_absent); {_GOLD} lookalike_pairs",
    },
    "false_friend": {
        "rule": "over cast entries with confusable_with and op introduce: correct-id rate = "
                "entry judged present; confusion rate = false-friend target judged present, "
                "over those whose target is not in the segment's cast (whatever the true "
                "entity's verdict)",
        "reason": "a co-present target is a correct sighting, not a confusion; later recalls "
                  "of a false friend are ordinary returns",
        "source": f"{_E2E} _prep_segment (ff_entries: op == 'introduce') and _tally "
                  "(cap.false_friend.tot_id / tot_conf / confused)",
    },
    "deprecation": {
        "rule": "Avoid-OK over forbidden entries with reason destroyed or deceased",
        "reason": "what the story removed must stay out",
        "source": f"{_E2E} _tally (cap.deprecation: reason != lookalike_absent)",
    },
    "reference_indirect": {
        "rule": "Avoid-OK over destroyed/deceased forbidden entries flagged reference_indirect "
                "(the prompt refers to the removed entity indirectly)",
        "reason": "reference-indirect is a flag on deprecation entries, not a forbidden reason",
        "source": f"{_E2E} _tally (cap.reference_indirect inside the deprecation branch); "
                  f"{_GOLD} (forbidden[].reference_indirect)",
    },
    "wilson": {
        "rule": "every family rate carries a Wilson score interval at the given confidence "
                "(default 95%), scipy.stats.binomtest(k, n).proportion_ci(method='wilson'); "
                "None when n = 0",
        "reason": "family opportunities are few; scipy uses the exact normal quantile "
                  "(1.95996...) where the reference writes 1.96 (bounds differ in the 5th "
                  "decimal) and the reference applies Wilson to the avoidance families only",
        "source": f"{_E2E} _wilson; {_README} (Wilson 95% CIs); brief of issue 14",
    },
    "pooling": {
        "rule": "every rate is pooled: counts summed over all segments of all stories, then "
                "divided (micro-average); no per-segment or per-story means",
        "reason": "each family rate is a micro-average over its opportunities",
        "source": f"paper Table 1 caption and section 3.3; {_E2E} run() (G = sum of acc)",
    },
    "parsed_in_both": {
        "rule": "the robustness comparison keeps the (story, segment) pairs present in both "
                "arms whose answers parsed in both",
        "reason": "unparsable answers count required entities as missed and are more "
                  "frequent with retrieval",
        "source": "paper App. F.6.1 (Table 20a)",
    },
}


def _fail(where: str, expected: str, found: object, fix: str) -> UserInputError:
    return UserInputError(f"{where}: expected {expected}, found {found!r}", hint=fix)


def _is_int(v: object) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


# ------------------------------------------------------------------------ records
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


# ------------------------------------------------------------------------ results
@dataclass(frozen=True)
class Proportion:
    """A pooled count: ``numerator / denominator``.

    Example:
        >>> Proportion(3, 4).value, Proportion(0, 0).value
        (0.75, None)
    """

    numerator: int
    denominator: int

    @property
    def value(self) -> float | None:
        """The rate, ``None`` when the denominator is 0."""
        return self.numerator / self.denominator if self.denominator else None

    def to_dict(self) -> dict[str, float | int | None]:
        return {"value": self.value, "numerator": self.numerator, "denominator": self.denominator}


@dataclass(frozen=True)
class WilsonRate:
    """A pooled proportion with its Wilson score interval (``None`` bounds when n = 0)."""

    numerator: int
    denominator: int
    low: float | None
    high: float | None
    confidence: float

    @property
    def value(self) -> float | None:
        """The rate, ``None`` when the denominator is 0."""
        return self.numerator / self.denominator if self.denominator else None

    def to_dict(self) -> dict[str, float | int | None]:
        return {"value": self.value, "numerator": self.numerator,
                "denominator": self.denominator, "ci_low": self.low, "ci_high": self.high,
                "confidence": self.confidence}


@dataclass(frozen=True)
class FamilyRate:
    """One stress family: its named rates, the first being the family's headline rate."""

    family: str
    rates: dict[str, WilsonRate]

    @property
    def headline(self) -> WilsonRate:
        """The family's own rate (recall, accuracy, exact rate, correct-instance rate,
        correct-id rate or Avoid-OK)."""
        return next(iter(self.rates.values()))

    def to_dict(self) -> dict[str, object]:
        return {"family": self.family, "headline": next(iter(self.rates)),
                "rates": {k: v.to_dict() for k, v in self.rates.items()}}


@dataclass(frozen=True)
class PooledRates:
    """The pooled Track-B rates of one condition (see :func:`pooled_rates`).

    Attributes:
        recall: required character/prop entries judged present / required entries.
        precision: required entries judged present / non-location entries judged present
            among required, forbidden and false-friend-target entries.
        f1: harmonic mean of the two rates (0 when both are 0; ``None`` if undefined).
        avoid_ok: forbidden entries not judged present / forbidden entries.
        decoy_fpr: decoys judged present / decoys.
        abstain: entries answered 'abstain' / roster entries.
        unparsable: unparsable segments / segments.
        recall_by_kind: recall per kind: character, prop (required entries) and location
            (cast locations).
    """

    recall: Proportion
    precision: Proportion
    f1: float | None
    avoid_ok: Proportion
    decoy_fpr: Proportion
    abstain: Proportion
    unparsable: Proportion
    recall_by_kind: dict[str, Proportion]

    @property
    def n_segments(self) -> int:
        return self.unparsable.denominator

    def to_dict(self) -> dict[str, object]:
        return {"recall": self.recall.to_dict(), "precision": self.precision.to_dict(),
                "f1": self.f1, "avoid_ok": self.avoid_ok.to_dict(),
                "decoy_fpr": self.decoy_fpr.to_dict(), "abstain_rate": self.abstain.to_dict(),
                "unparsable": self.unparsable.to_dict(), "n_segments": self.n_segments,
                "recall_by_kind": {k: v.to_dict() for k, v in self.recall_by_kind.items()}}


# ------------------------------------------------------------------------ counting
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


def _headline_counts(seg: SegmentVerdict, c: Counter[str]) -> None:
    """Add one segment's Recall / Precision / Avoid-OK / noise counts to ``c``."""
    c["segments"] += 1
    c["unparsable"] += not seg.parsed
    for e in seg.entries:
        hit = e.is_present
        c["roster"] += 1
        c["abstain"] += e.is_abstain
        if e.role == "required":
            c["recall.tot"] += 1
            c["recall.hit"] += hit
            c[f"recall.{e.kind}.tot"] += 1
            c[f"recall.{e.kind}.hit"] += hit
        elif e.role == "location":
            c["recall.location.tot"] += 1
            c["recall.location.hit"] += hit
        elif e.role == "forbidden":
            c["avoid.tot"] += 1
            c["avoid.ok"] += not hit
        elif e.role == "decoy":
            c["decoy.tot"] += 1
            c["decoy.fp"] += hit
        if hit and e.kind != "location" and e.role in ("required", "forbidden",
                                                         "false_friend_target"):
            c["prec.tot"] += 1
            c["prec.hit"] += e.role == "required"


def _family_counts(seg: SegmentVerdict, c: Counter[str]) -> None:
    """Add one segment's stress-family counts to ``c``."""
    for e in seg.entries:
        hit = e.is_present
        if e.role == "forbidden":
            ok = not hit
            if e.reason == "lookalike_absent":
                c["lookalike.absent.tot"] += 1
                c["lookalike.absent.ok"] += ok
            else:
                c["deprecation.tot"] += 1
                c["deprecation.ok"] += ok
                if e.reference_indirect:
                    c["reference_indirect.tot"] += 1
                    c["reference_indirect.ok"] += ok
            continue
        if not e.in_cast:
            continue
        if e.role == "required" and e.gap is not None and e.gap >= LONG_GAP:
            c["long_gap.tot"] += 1
            c["long_gap.hit"] += hit
        if e.anchor:
            c["temporal.tot"] += 1
            c["temporal.hit"] += hit
        if e.expected_state is not None and not e.flashback:
            key = "state_change" if e.op == "transform" else "persistent_state"
            c[f"{key}.opp"] += 1
            if hit:
                c[f"{key}.tot"] += 1
                c[f"{key}.ok"] += e.judged_state == STATE_SHOWN
        if e.expected_count is not None:
            c["count.opp"] += 1
            if hit:
                c["count.tot"] += 1
                if e.judged_count is not None:
                    d = abs(int(e.judged_count) - int(e.expected_count))
                    c["count.exact"] += d == 0
                    c["count.off1"] += d == 1
        if e.lookalike:
            c["lookalike.opp"] += 1
            if hit:
                c["lookalike.tot"] += 1
                c["lookalike.correct"] += e.instance_match is True
                c["lookalike.wrong"] += e.instance_match is False
        if e.confusable_with is not None and e.op == "introduce":
            c["ff.id_tot"] += 1
            c["ff.id_ok"] += hit
            confused = seg.false_friend_confused(e)
            if confused is not None:
                c["ff.conf_tot"] += 1
                c["ff.confused"] += confused


def _p(c: Mapping[str, int], num: str, den: str) -> Proportion:
    return Proportion(int(c.get(num, 0)), int(c.get(den, 0)))


def _f1(p: float | None, r: float | None) -> float | None:
    if p is None or r is None:
        return None
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def pooled_rates(segments: Iterable[SegmentVerdict]) -> PooledRates:
    """Pooled Recall, Precision, F1, Avoid-OK and the judge's noise counts of one condition.

    Counts are summed over every entry of every segment given, then divided (rules in
    :data:`PROTOCOL`).

    Args:
        segments: one condition's :class:`SegmentVerdict` s, all stories together; each
            (story, segment) at most once.

    Returns:
        :class:`PooledRates`, every rate as numerator / denominator.

    Raises:
        UserInputError: not SegmentVerdicts, or a (story, segment) given twice.

    Example:
        >>> def e(eid, kind, role, present, **kw):
        ...     return EntryVerdict("s", 1, eid, kind, role, present, **kw)
        >>> seg = SegmentVerdict("s", 1, True, [
        ...     e("A", "character", "required", True, op="recall", gap=2),
        ...     e("B", "prop", "required", "abstain", op="introduce"),
        ...     e("L", "location", "location", True, op="recall", gap=1),
        ...     e("F", "prop", "forbidden", True, reason="destroyed"),
        ...     e("D", "prop", "decoy", False)])
        >>> r = pooled_rates([seg])
        >>> r.recall.value, r.precision.value, r.avoid_ok.value, r.abstain.numerator
        (0.5, 0.5, 0.0, 1)
    """
    c: Counter[str] = Counter()
    for seg in _segments(segments, "pooled_rates(segments)"):
        _headline_counts(seg, c)
    recall = _p(c, "recall.hit", "recall.tot")
    precision = _p(c, "prec.hit", "prec.tot")
    return PooledRates(
        recall=recall,
        precision=precision,
        f1=_f1(precision.value, recall.value),
        avoid_ok=_p(c, "avoid.ok", "avoid.tot"),
        decoy_fpr=_p(c, "decoy.fp", "decoy.tot"),
        abstain=_p(c, "abstain", "roster"),
        unparsable=_p(c, "unparsable", "segments"),
        recall_by_kind={k: _p(c, f"recall.{k}.hit", f"recall.{k}.tot") for k in KINDS},
    )


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval of the proportion ``k / n``.

    Uses ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``: with
    ``z`` the two-sided normal quantile and ``p = k / n``, the bounds are
    ``(p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)``, clipped to [0, 1].

    Args:
        k: successes, ``0 <= k <= n``.
        n: trials; 0 gives ``None``.
        confidence: two-sided level in (0, 1).

    Example:
        >>> lo, hi = wilson_interval(3, 10)
        >>> round(lo, 4), round(hi, 4)
        (0.1078, 0.6032)
        >>> wilson_interval(0, 0) is None
        True
    """
    if not (_is_int(k) and _is_int(n)) or not 0 <= k <= n:
        raise _fail("wilson_interval", "ints with 0 <= k <= n", (k, n), "pass counts")
    if not 0.0 < confidence < 1.0:
        raise _fail("wilson_interval confidence", "a level in (0, 1)", confidence, "e.g. 0.95")
    if n == 0:
        return None
    ci = _stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence,
                                                         method="wilson")
    return float(ci.low), float(ci.high)


def _w(c: Mapping[str, int], num: str, den: str, confidence: float) -> WilsonRate:
    k, n = int(c.get(num, 0)), int(c.get(den, 0))
    ci = wilson_interval(k, n, confidence)
    return WilsonRate(k, n, None if ci is None else ci[0], None if ci is None else ci[1],
                      confidence)


def family_rates(segments: Iterable[SegmentVerdict], *,
                 confidence: float = 0.95) -> dict[str, FamilyRate]:
    """The nine stress-family rates of one condition, pooled, each with a Wilson interval.

    Families (keys in :data:`FAMILIES` order) and their rates, the first one headline:

    * ``long_gap_return``: ``recall`` over required entries with gap >= 30.
    * ``temporal_reference``: ``recall`` over cast entries with a temporal anchor.
    * ``state_change`` / ``persistent_state``: ``accuracy`` (state shown / state entries
      judged present) and ``judged_present`` (judged present / state entries); gold
      states that are not flashbacks, op ``transform`` vs any other op.
    * ``count``: ``exact_rate`` and ``off_by_one_rate`` over counted entries judged
      present, and ``judged_present``.
    * ``lookalike``: ``correct_instance_rate`` and ``wrong_instance_rate`` over active
      look-alike members judged present, ``judged_present``, and ``absent_avoid_ok``
      (forbidden ``lookalike_absent`` entries kept out).
    * ``false_friend``: ``correct_id_rate`` over false-friend introductions and
      ``confusion_rate`` over those whose target is not in the cast.
    * ``deprecation``: ``avoid_ok`` over destroyed/deceased forbidden entries.
    * ``reference_indirect``: ``avoid_ok`` over those flagged reference-indirect.

    Args:
        segments: one condition's segments (as for :func:`pooled_rates`).
        confidence: level of the Wilson intervals.

    Returns:
        family name -> :class:`FamilyRate`.

    Example:
        >>> def e(eid, kind, role, present, **kw):
        ...     return EntryVerdict("s", 40, eid, kind, role, present, **kw)
        >>> seg = SegmentVerdict("s", 40, True, [
        ...     e("A", "character", "required", True, op="recall", gap=35),
        ...     e("N", "prop", "required", True, op="introduce", confusable_with="O"),
        ...     e("O", "prop", "false_friend_target", True),
        ...     e("F", "prop", "forbidden", False, reason="deceased", reference_indirect=True)])
        >>> fam = family_rates([seg])
        >>> fam["long_gap_return"].headline.value, fam["false_friend"].rates["confusion_rate"].value
        (1.0, 1.0)
        >>> fam["reference_indirect"].headline.numerator, fam["count"].headline.value is None
        (1, True)
    """
    c: Counter[str] = Counter()
    for seg in _segments(segments, "family_rates(segments)"):
        _family_counts(seg, c)

    def w(num: str, den: str) -> WilsonRate:
        return _w(c, num, den, confidence)

    rates: dict[str, dict[str, WilsonRate]] = {
        "long_gap_return": {"recall": w("long_gap.hit", "long_gap.tot")},
        "temporal_reference": {"recall": w("temporal.hit", "temporal.tot")},
        "state_change": {"accuracy": w("state_change.ok", "state_change.tot"),
                         "judged_present": w("state_change.tot", "state_change.opp")},
        "persistent_state": {"accuracy": w("persistent_state.ok", "persistent_state.tot"),
                             "judged_present": w("persistent_state.tot",
                                                 "persistent_state.opp")},
        "count": {"exact_rate": w("count.exact", "count.tot"),
                  "off_by_one_rate": w("count.off1", "count.tot"),
                  "judged_present": w("count.tot", "count.opp")},
        "lookalike": {"correct_instance_rate": w("lookalike.correct", "lookalike.tot"),
                      "wrong_instance_rate": w("lookalike.wrong", "lookalike.tot"),
                      "judged_present": w("lookalike.tot", "lookalike.opp"),
                      "absent_avoid_ok": w("lookalike.absent.ok", "lookalike.absent.tot")},
        "false_friend": {"correct_id_rate": w("ff.id_ok", "ff.id_tot"),
                         "confusion_rate": w("ff.confused", "ff.conf_tot")},
        "deprecation": {"avoid_ok": w("deprecation.ok", "deprecation.tot")},
        "reference_indirect": {"avoid_ok": w("reference_indirect.ok",
                                             "reference_indirect.tot")},
    }
    return {name: FamilyRate(name, rates[name]) for name in FAMILIES}


def story_counts(segments: Iterable[SegmentVerdict]) -> dict[str, np.ndarray]:
    """Per story, the counts of Recall, Precision and Avoid-OK, for the story bootstrap.

    Args:
        segments: one condition's segments.

    Returns:
        story_id -> int64 array of shape ``(3, 2)``: rows :data:`BOOTSTRAP_RATES`
        (recall, precision, avoid_ok), columns (numerator, denominator). Summed over
        stories they give :func:`pooled_rates`.

    Example:
        >>> e = EntryVerdict("s", 1, "A", "prop", "required", True, op="introduce")
        >>> story_counts([SegmentVerdict("s", 1, True, [e])])["s"].tolist()
        [[1, 1], [1, 1], [0, 0]]
    """
    per: dict[str, Counter[str]] = {}
    for seg in _segments(segments, "story_counts(segments)"):
        _headline_counts(seg, per.setdefault(seg.story_id, Counter()))
    keys = (("recall.hit", "recall.tot"), ("prec.hit", "prec.tot"), ("avoid.ok", "avoid.tot"))
    return {sid: np.array([[c.get(n, 0), c.get(d, 0)] for n, d in keys], dtype=np.int64)
            for sid, c in per.items()}


def parsed_in_both(arm_a: Iterable[SegmentVerdict], arm_b: Iterable[SegmentVerdict]
                   ) -> tuple[list[SegmentVerdict], list[SegmentVerdict]]:
    """Both arms cut to the (story, segment) pairs present in both and parsed in both.

    Order within each arm is kept. Feed the result to :func:`story_counts` and the paired
    bootstrap for the parsed-in-both comparison.

    Example:
        >>> ok = SegmentVerdict("s", 1, True, [])
        >>> bad = SegmentVerdict("s", 2, False, [])
        >>> a, b = parsed_in_both([ok, bad], [SegmentVerdict("s", 1, True, []),
        ...                                   SegmentVerdict("s", 2, True, [])])
        >>> [s.segment_id for s in a], [s.segment_id for s in b]
        ([1], [1])
    """
    a = _segments(arm_a, "parsed_in_both(arm_a)")
    b = _segments(arm_b, "parsed_in_both(arm_b)")
    keep = {s.key for s in a if s.parsed} & {s.key for s in b if s.parsed}
    return [s for s in a if s.key in keep], [s for s in b if s.key in keep]

