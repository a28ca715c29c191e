"""Track-B identity units: which returns the identity scorer compares, and with what.

The presence judge checks an entity against its description only, so a fresh stranger
who matches the text scores as a hit. The identity scorer instead compares a returning
entity with *its own previous appearance in the same rollout*. This module picks those
comparisons from the frozen gold alone (no clip, no model): pure data in, units out.

Rules (each in :data:`PROTOCOL` with its reason and source):

* **Families.** ``return_after_absence``: a character or prop cast in segment n, absent
  from the cast of segment n - 1 and cast in some earlier segment (gold gap >= 1).
  ``recent_return_sample``: a seeded 20% sample of the character/prop cast entries that
  *were* cast in segment n - 1 (gap 0), introductions excluded. ``changed_long_gap``: a
  character returning after >= 30 segments away (gap >= 30) whose shown state differs
  from its shown state at the previous appearance. A (segment, entity) can be a unit
  of two families (a changed long-gap return is also a return after absence); each
  family is reported on its own, as the paper's Table 18 does.
* **Previous appearance** = the latest earlier segment whose ``cast`` lists the entity
  (``forbidden`` and look-alike lists do not count); gap = n - previous - 1, the gold's
  own convention (the previous segment is gap 0).
* **Shown state** of an appearance: the cast entry's ``state`` label when it has one
  (a flashback shows its past state); otherwise the entity's current state, which
  starts at its ``initial_state`` and moves with every non-flashback entry that names a
  state. A stateless entity has no state and is never "changed".
* **Sample.** Per story, the gap-0 pool in (segment, cast order) order; k =
  floor(0.2 n + 0.5) members drawn without replacement by
  ``random.Random(md5('<seed>:<story>:identity_sample')[:8])``; kept in pool order.
  Per story, so choosing other stories never changes a story's units.

Example:
    >>> from vidmem.benchmarks.vmem_track_b.stories import CastEntry, Entity, Segment, Story
    >>> seg = lambda i, *cast: Segment("s", i, "S1", 5.0, "continue", "", "", cast=cast)
    >>> story = Story("s", 1, "t", (
    ...     seg(1, CastEntry("E1", "introduce")),
    ...     seg(2, CastEntry("E1", "recall", 0, 1)),
    ...     seg(3),
    ...     seg(4, CastEntry("E1", "recall", 1, 2))),
    ...     {"E1": Entity("E1", "character", "Ada", "A cat.")})
    >>> [(u.family, u.segment_id, u.previous_segment_id, u.gap)
    ...  for u in identity_units(story, sample_share=1.0)]
    [('return_after_absence', 4, 2, 1), ('recent_return_sample', 2, 1, 0)]
"""

from __future__ import annotations

import hashlib
import math
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from vidmem.benchmarks.vmem_track_b.stories import Entity, Story
from vidmem.errors import UserInputError
from vidmem.metrics.track_b.vocabulary import LONG_GAP, RECALL_KINDS

__all__ = ["CHANGED_KINDS", "FAMILIES", "PROTOCOL", "SAMPLE_SHARE", "IdentityUnit",
           "cohort_identity_units", "family_counts", "identity_units"]

#: the unit families, in report order
FAMILIES = ("return_after_absence", "recent_return_sample", "changed_long_gap")
#: the share of previous-segment returns sampled
SAMPLE_SHARE = 0.2
#: the kinds whose changed long-gap returns are units
CHANGED_KINDS = ("character",)

_PAPER = "seed 000 App. D.2 'Units' and Table 18"

#: every rule this module applies: what it is, why, and where it comes from
PROTOCOL: dict[str, dict[str, str]] = {
    "return_after_absence": {
        "rule": "a character/prop cast entry of segment n whose entity is not in the cast of "
                "segment n-1 but is in the cast of an earlier segment (gap >= 1)",
        "reason": "a return after absence is where identity has to be carried over",
        "source": f"PROTOCOLS.md section 4 (Identity); {_PAPER} (1,130 units)",
    },
    "recent_return_sample": {
        "rule": "a seeded 20% sample of the character/prop cast entries whose entity is in "
                "the cast of segment n-1 (gap 0), introductions excluded",
        "reason": "a continuity baseline without scoring every frame-to-frame continuation",
        "source": f"PROTOCOLS.md section 4; {_PAPER} (583 units)",
    },
    "changed_long_gap": {
        "rule": f"a character cast entry with gap >= {LONG_GAP} whose shown state differs "
                "from its shown state at the previous appearance",
        "reason": "there a higher similarity means the return looks more like its OLD look: "
                  "reported apart, never pooled with the other families",
        "source": f"PROTOCOLS.md section 4; {_PAPER} (61 units); 'changed' = shown state "
                  "differs: decided here from the gold (state labels on cast entries)",
    },
    "overlap": {
        "rule": "a (segment, entity) may be a unit of two families (a changed long-gap "
                "return is also a return after absence); each family is aggregated alone",
        "reason": "the paper reports the families as separate rows",
        "source": f"{_PAPER}",
    },
    "previous_appearance": {
        "rule": "the latest earlier segment whose cast lists the entity (forbidden and "
                "look-alike lists do not count); gap = n - previous - 1",
        "reason": "both sides of a comparison come from the same rollout of one condition",
        "source": "PROTOCOLS.md section 4; the gold's gap convention (previous segment = 0)",
    },
    "shown_state": {
        "rule": "the cast entry's state label if it has one (a flashback shows its past "
                "state), else the entity's current state: initial_state, moved by every "
                "non-flashback entry naming a state; stateless entities have none",
        "reason": "the gold states a label only where it matters (transform, persist, "
                  "flashback); elsewhere the last stated state still holds",
        "source": "decided here from the gold (trackB-gt-2.0 cast[].state)",
    },
    "sample_draw": {
        "rule": "per story: the gap-0 pool in (segment, cast order) order; k = floor(share * "
                "n + 0.5); random.Random(md5('<seed>:<story>:identity_sample')[:8]).sample"
                "(range(n), k), kept in pool order; share 0.2, seed = the run seed",
        "reason": "reproducible on any machine (hashlib, not hash()); a story's units do not "
                  "depend on which other stories are scored",
        "source": "decided here (the reference sampler is not published); salt as the "
                  "roster's",
    },
    "kinds": {
        "rule": "return families: character and prop; changed_long_gap: character only",
        "reason": "the protocol's units; locations are compared whole-frame elsewhere",
        "source": f"PROTOCOLS.md section 4; {_PAPER}",
    },
}


@dataclass(frozen=True)
class IdentityUnit:
    """One comparison: an entity at segment n against its previous appearance.

    Attributes:
        story_id: the story's file stem.
        family: one of :data:`FAMILIES`.
        eid, name, kind: the entity.
        segment_id: the current appearance (1..n).
        previous_segment_id: the latest earlier segment whose cast lists it.
        gap: segments in between (0: the previous segment).
        op: the current cast entry's op.
        state, previous_state: the shown state at each side (``None``: stateless).
        appearance, previous_appearance: that state's gold text (for the detector query
            and the pairwise judge).
        changed: the shown states differ.
        flashback: the current entry shows a past state.
    """

    story_id: str
    family: str
    eid: str
    name: str
    kind: str
    segment_id: int
    previous_segment_id: int
    gap: int
    op: str
    state: str | None
    previous_state: str | None
    appearance: str
    previous_appearance: str
    changed: bool
    flashback: bool = False

    @property
    def key(self) -> str:
        """A content key: ``<story>:<family>:<segment>:<eid>``."""
        return f"{self.story_id}:{self.family}:{self.segment_id}:{self.eid}"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values, for the store and the report."""
        return asdict(self)


@dataclass(frozen=True)
class _Appearance:
    segment_id: int
    op: str
    state: str | None
    flashback: bool


def _look(entity: Entity, state: str | None) -> str:
    if state is not None and state in entity.states:
        return entity.states[state]
    return entity.appearance


def _appearances(story: Story) -> list[tuple[str, _Appearance, _Appearance | None]]:
    """Every cast entry in (segment, cast) order with its previous appearance."""
    current: dict[str, str | None] = {e.eid: e.initial_state for e in story.entities.values()}
    last: dict[str, _Appearance] = {}
    out = []
    for seg in story.segments:
        for entry in seg.cast:
            shown = entry.state if entry.state is not None else current.get(entry.eid)
            if entry.state is not None and not entry.flashback:
                current[entry.eid] = entry.state
            here = _Appearance(seg.segment_id, entry.op, shown, entry.flashback)
            out.append((entry.eid, here, last.get(entry.eid)))
            last[entry.eid] = here  # an entity is cast at most once per segment
    return out


def _unit(story: Story, family: str, eid: str, here: _Appearance,
          prev: _Appearance) -> IdentityUnit:
    ent = story.entities[eid]
    return IdentityUnit(
        story_id=story.story_id, family=family, eid=eid, name=ent.name, kind=ent.kind,
        segment_id=here.segment_id, previous_segment_id=prev.segment_id,
        gap=here.segment_id - prev.segment_id - 1, op=here.op, state=here.state,
        previous_state=prev.state, appearance=_look(ent, here.state),
        previous_appearance=_look(ent, prev.state),
        changed=here.state is not None and here.state != prev.state,
        flashback=here.flashback)


def _sample_indices(n: int, share: float, seed: int, story_id: str) -> list[int]:
    k = math.floor(share * n + 0.5)
    salt = f"{seed}:{story_id}:identity_sample".encode()
    rng = random.Random(int.from_bytes(hashlib.md5(salt, usedforsecurity=False).digest()[:8],
                                       "big"))
    return sorted(rng.sample(range(n), k))


def _check(seed: Any, sample_share: Any, changed_min_gap: Any, kinds: Sequence[str]) -> None:
    where = "Track-B identity units"
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise UserInputError(f"{where}: seed must be an integer, found {seed!r}",
                             hint="pass the run seed, e.g. seed=0")
    if (isinstance(sample_share, bool) or not isinstance(sample_share, int | float)
            or not 0.0 <= sample_share <= 1.0):
        raise UserInputError(f"{where}: sample_share must be a number in [0, 1], found "
                             f"{sample_share!r}", hint=f"the protocol's share is {SAMPLE_SHARE}")
    if isinstance(changed_min_gap, bool) or not isinstance(changed_min_gap, int) \
            or changed_min_gap < 1:
        raise UserInputError(f"{where}: changed_min_gap must be an integer >= 1, found "
                             f"{changed_min_gap!r}", hint=f"the protocol's gap is {LONG_GAP}")
    bad = [k for k in kinds if k not in ("character", "prop", "location")]
    if bad or not kinds:
        raise UserInputError(f"{where}: kinds must be a non-empty subset of character, prop, "
                             f"location; found {list(kinds)!r}",
                             hint=f"the protocol's kinds are {list(RECALL_KINDS)}")


def identity_units(story: Story, *, seed: int = 0, sample_share: float = SAMPLE_SHARE,
                   changed_min_gap: int = LONG_GAP,
                   kinds: Sequence[str] = RECALL_KINDS) -> list[IdentityUnit]:
    """The identity units of one story, family by family (rules in :data:`PROTOCOL`).

    Args:
        story: a loaded story (:func:`~vidmem.benchmarks.vmem_track_b.stories.load_stories`).
        seed: the run seed of the 20% sample.
        sample_share: the sampled share of previous-segment returns (0.2).
        changed_min_gap: the gap from which a changed character return is a unit (30).
        kinds: the kinds of the two return families (character, prop).

    Returns:
        Units in :data:`FAMILIES` order, each family in (segment, cast order) order.

    Raises:
        UserInputError: a seed, share, gap or kind list that is not acceptable.
    """
    _check(seed, sample_share, changed_min_gap, kinds)
    absent, recent, changed = [], [], []
    for eid, here, prev in _appearances(story):
        if prev is None or story.entities[eid].kind not in kinds:
            continue
        gap = here.segment_id - prev.segment_id - 1
        if gap == 0:
            recent.append(_unit(story, "recent_return_sample", eid, here, prev))
            continue
        absent.append(_unit(story, "return_after_absence", eid, here, prev))
        unit = _unit(story, "changed_long_gap", eid, here, prev)
        if unit.kind in CHANGED_KINDS and gap >= changed_min_gap and unit.changed:
            changed.append(unit)
    sampled = [recent[i] for i in _sample_indices(len(recent), sample_share, seed,
                                                  story.story_id)]
    return absent + sampled + changed


def cohort_identity_units(stories: Iterable[Story], *, seed: int = 0,
                          sample_share: float = SAMPLE_SHARE,
                          changed_min_gap: int = LONG_GAP,
                          kinds: Sequence[str] = RECALL_KINDS) -> list[IdentityUnit]:
    """:func:`identity_units` of every story, in the given story order."""
    return [u for s in stories for u in identity_units(
        s, seed=seed, sample_share=sample_share, changed_min_gap=changed_min_gap,
        kinds=kinds)]


def family_counts(units: Iterable[IdentityUnit]) -> dict[str, int]:
    """Units per family, every family listed (0 when none).

    Example:
        >>> family_counts([])
        {'return_after_absence': 0, 'recent_return_sample': 0, 'changed_long_gap': 0}
    """
    counts = Counter(u.family for u in units)
    return {f: counts.get(f, 0) for f in FAMILIES}
