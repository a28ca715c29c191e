"""Track-B tallies: every count of one condition's verdicts, per segment, read once.

Part of :mod:`vidmem.metrics.track_b` (the overview is there). A tally is what
:func:`pooled_rates`, :func:`family_rates`, :func:`story_counts`, :func:`parsed_in_both`
and the gap bins compute, from one pass over an arm, as one integer matrix
(segments x counters): the whole arm, per story and any cut of segments are sums of
its rows. For aggregating many stored conditions at once (``summary.json``).

Rules:

* **same counting**: an entry's counts come from the very per-entry functions of the
  public rates (``_headline_entry``, ``_family_entry``, ``_gap_entry``); what needs the
  rest of the segment (segments, unparsable, the false-friend confusion) is added per
  segment as :func:`pooled_rates` and :func:`family_rates` do. Every number read off a
  tally equals the public function's on the same segments.
* **one count per signature**: an entry's counts depend on its fields but story,
  segment and entity id (its *signature*), so each signature is counted once
  (:class:`Tallier` holds them; share one between the arms of one aggregation).
* **stored entries validated once per signature**: a stored entry (a mapping of
  :class:`EntryVerdict` fields without ``story_id``/``segment_id``) whose signature --
  keys, values and value types, so ``true`` is never ``1`` -- was already accepted is
  only checked for its id; a new signature is validated by building the
  :class:`EntryVerdict` with the real story, segment and id. Anything else (a new
  shape, a doubled id, a non-abstain entry of an unparsable segment, a false-friend
  target off the roster, a doubled segment) replays the full record construction,
  which raises the records' own error naming story, segment and entity. The accepted
  input is exactly what building the records accepts.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import numpy as np
from scipy import sparse

from vidmem.errors import UserInputError
from vidmem.metrics.track_b.arm_tally import ArmTally
from vidmem.metrics.track_b.families import _confusion, _false_friend_intro, _family_entry
from vidmem.metrics.track_b.gap_bins import _gap_entry
from vidmem.metrics.track_b.pooled import _headline_entry, _headline_segment
from vidmem.metrics.track_b.records import EntryVerdict, SegmentVerdict, _fail, _segments

__all__ = ["Tallier", "stored_segment", "tally_segments"]

#: counter namespaces: pooled, families, gap bins (their counter names may overlap)
_PARTS = (("pooled", _headline_entry), ("family", _family_entry), ("gap", _gap_entry))
#: the EntryVerdict fields an entry's counts may depend on (all but where it is)
_SIGNATURE_FIELDS = tuple(f.name for f in dataclasses.fields(EntryVerdict)
                          if f.name not in ("story_id", "segment_id", "eid"))
_signature_of = attrgetter(*_SIGNATURE_FIELDS)


def stored_segment(story_id: str, segment_id: int, parsed: bool,
                   entries: Iterable[Mapping[str, Any]]) -> SegmentVerdict:
    """The :class:`SegmentVerdict` of one stored segment, every check applied.

    A stored entry is a mapping of :class:`EntryVerdict` fields but ``story_id`` and
    ``segment_id``; a mapping with unknown or missing fields is an error naming story,
    segment and entry.

    Example:
        >>> seg = stored_segment("s", 2, True, [{"eid": "D", "kind": "prop", "role": "decoy",
        ...                                      "present": False}])
        >>> seg.key, seg.entries[0].role
        (('s', 2), 'decoy')
        >>> stored_segment("s", 2, True, [{"eid": "D", "colour": "red"}])
        Traceback (most recent call last):
        ...
        vidmem.errors.UserInputError: stored Track-B verdict of story 's', segment 2, entry 0: ...
    """
    built = []
    for i, e in enumerate(entries):
        try:
            built.append(EntryVerdict(story_id=story_id, segment_id=segment_id, **e))
        except TypeError as exc:  # unknown, doubled or missing fields; not a mapping
            raise UserInputError(
                f"stored Track-B verdict of story {story_id!r}, segment {segment_id!r}, "
                f"entry {i}: {exc}",
                hint="a stored entry holds EntryVerdict fields (eid, kind, role, present, "
                "and the non-default gold fields); rescore the story to rewrite it") from None
    return SegmentVerdict(story_id, segment_id, parsed, tuple(built))


@dataclass(frozen=True)
class _Signature:
    """What a segment needs to know of one entry signature besides its counts."""

    index: int
    abstain: bool
    present: bool
    in_cast: bool
    confusable_with: str | None
    false_friend_intro: bool


class Tallier:
    """Counts entry signatures once and builds :class:`ArmTally` s (rules in the module doc).

    Example:
        >>> t = Tallier()
        >>> stored = [{"eid": "A", "kind": "prop", "role": "required", "present": True,
        ...            "op": "introduce"}]
        >>> arm = t.tally([("s", 1, True, stored), ("s", 2, False, [])])
        >>> len(arm), arm.pooled().recall.value, arm.pooled().unparsable.numerator
        (2, 1.0, 1)
    """

    def __init__(self) -> None:
        self._columns: dict[str, int] = {}
        self._rows: list[dict[int, int]] = []  # signature index -> {column: count}
        self._stored: dict[tuple[Any, ...], _Signature] = {}
        self._verdicts: dict[tuple[Any, ...], _Signature] = {}
        for name in ("family:ff.conf_tot", "family:ff.confused"):  # the confusion's columns
            self._column(name)

    def _column(self, name: str) -> int:
        return self._columns.setdefault(name, len(self._columns))

    def _learn(self, e: EntryVerdict) -> _Signature:
        row: dict[int, int] = {}
        for part, count in _PARTS:
            c: Counter[str] = Counter()
            count(e, c)
            for name, n in c.items():
                if n:
                    row[self._column(f"{part}:{name}")] = int(n)
        self._rows.append(row)
        return _Signature(len(self._rows) - 1, e.is_abstain, e.is_present, e.in_cast,
                          e.confusable_with, _false_friend_intro(e))

    def _of_verdict(self, e: EntryVerdict) -> _Signature:
        key = _signature_of(e)
        sig = self._verdicts.get(key)
        if sig is None:
            sig = self._verdicts[key] = self._learn(e)
        return sig

    def _learn_stored(self, key: tuple[Any, ...], story_id: str, segment_id: int,
                      e: dict[str, Any]) -> _Signature | None:
        """Validate a new stored signature by building its entry; ``None`` if it fails."""
        try:
            verdict = EntryVerdict(story_id=story_id, segment_id=segment_id, **e)
        except (TypeError, UserInputError):
            return None
        sig = self._stored[key] = self._learn(verdict)
        return sig

    def arm(self, where: str = "tally") -> ArmBuilder:
        """A builder of one condition's tally; ``where`` names it in errors."""
        return ArmBuilder(self, where)

    def tally(self, stored: Iterable[tuple[str, int, bool, Sequence[Mapping[str, Any]]]],
              where: str = "tally") -> ArmTally:
        """The tally of stored segments ``(story_id, segment_id, parsed, entries)``."""
        b = self.arm(where)
        for story_id, segment_id, parsed, entries in stored:
            b.add_stored(story_id, segment_id, parsed, entries)
        return b.build()


class ArmBuilder:
    """Collects one condition's segments (see :meth:`Tallier.arm`)."""

    def __init__(self, tallier: Tallier, where: str) -> None:
        self._t = tallier
        self._where = where
        self._stories: dict[str, int] = {}
        self._keys: set[tuple[str, int]] = set()
        self._segment_story: list[int] = []
        self._segment_ids: list[int] = []
        self._parsed: list[bool] = []
        self._ends: list[int] = []  # entries counted after each segment
        self._entry_sigs: list[int] = []
        self._confusions: list[tuple[int, Counter[str]]] = []

    def _commit(self, story_id: str, segment_id: int, parsed: bool, sigs: list[int],
                confusions: Counter[str] | None) -> None:
        key = (story_id, segment_id)
        if key in self._keys:
            raise _fail(f"{self._where}: story {story_id!r}, segment {segment_id}",
                        "each (story_id, segment_id) once per condition", key,
                        "store one answer per segment; drop the duplicate")
        self._keys.add(key)
        if confusions:
            self._confusions.append((len(self._parsed), confusions))
        self._segment_story.append(self._stories.setdefault(story_id, len(self._stories)))
        self._segment_ids.append(segment_id)
        self._parsed.append(parsed)
        self._entry_sigs += sigs
        self._ends.append(len(self._entry_sigs))

    def add_verdict(self, seg: SegmentVerdict) -> None:
        """Add one checked :class:`SegmentVerdict`."""
        if not isinstance(seg, SegmentVerdict):
            raise _fail(f"{self._where}", "a SegmentVerdict", type(seg).__name__,
                        "build segments with SegmentVerdict(...)")
        conf: Counter[str] = Counter()
        sigs = []
        for e in seg.entries:
            sig = self._t._of_verdict(e)
            sigs.append(sig.index)
            if sig.false_friend_intro:
                _confusion(seg.false_friend_confused(e), conf)
        self._commit(seg.story_id, seg.segment_id, seg.parsed, sigs, conf)

    def add_stored(self, story_id: str, segment_id: int, parsed: bool,
                   entries: Sequence[Mapping[str, Any]]) -> None:
        """Add one stored segment (its entries as in :func:`stored_segment`)."""
        if not (type(story_id) is str and story_id and type(segment_id) is int
                and segment_id >= 1 and type(parsed) is bool and type(entries) in (list, tuple)):
            return self.add_verdict(stored_segment(story_id, segment_id, parsed, entries))
        memo, learn = self._t._stored, self._t._learn_stored
        eids: list[str] = []
        sigs: list[_Signature] = []
        false_friends = False
        for e in entries:  # the hot loop: one signature look-up per entry
            if type(e) is not dict or not e:
                return self.add_verdict(stored_segment(story_id, segment_id, parsed, entries))
            items = tuple(e.items())
            first, eid = items[0]
            # the value types are part of the key: json's true == 1 == 1.0 otherwise
            key = (items[1:], tuple(map(type, e.values())))
            try:
                sig = memo.get(key)
            except TypeError:  # an unhashable value: never a valid field
                return self.add_verdict(stored_segment(story_id, segment_id, parsed, entries))
            if sig is None and first == "eid":
                sig = learn(key, story_id, segment_id, e)
            if (sig is None or first != "eid" or type(eid) is not str or not eid
                    or sig.confusable_with == eid):
                return self.add_verdict(stored_segment(story_id, segment_id, parsed, entries))
            eids.append(eid)
            sigs.append(sig)
            if sig.false_friend_intro:
                false_friends = True
        if len(set(eids)) != len(eids) or (not parsed and not all(s.abstain for s in sigs)):
            return self.add_verdict(stored_segment(story_id, segment_id, parsed, entries))
        conf: Counter[str] | None = None
        if false_friends:
            by_eid = dict(zip(eids, sigs, strict=True))
            conf = Counter()
            for s in sigs:
                if s.false_friend_intro:
                    target = by_eid.get(s.confusable_with)  # type: ignore[arg-type]
                    if target is None:  # off the roster: the records' error
                        return self.add_verdict(stored_segment(story_id, segment_id, parsed,
                                                               entries))
                    _confusion(None if target.in_cast else target.present, conf)
        self._commit(story_id, segment_id, parsed, [s.index for s in sigs], conf)
        return None

    def build(self) -> ArmTally:
        """The :class:`ArmTally` of every segment added."""
        per_segment = {}
        for parsed_ in (True, False):
            c: Counter[str] = Counter()
            _headline_segment(parsed_, c)
            per_segment[parsed_] = {self._t._column(f"pooled:{k}"): n for k, n in c.items()}
        cols = dict(self._t._columns)
        sig_counts = np.zeros((len(self._t._rows), len(cols)), dtype=np.int64)
        for i, row in enumerate(self._t._rows):
            for col, n in row.items():
                sig_counts[i, col] = n
        # segments x signatures (how often each signature occurs) @ signatures x counters
        ends = np.asarray(self._ends, dtype=np.intp)
        incidence = sparse.csr_matrix(
            (np.ones(len(self._entry_sigs), dtype=np.int64),
             np.asarray(self._entry_sigs, dtype=np.intp), np.concatenate(([0], ends))),
            shape=(ends.size, sig_counts.shape[0]))
        counts = np.asarray(incidence @ sig_counts, dtype=np.int64)
        parsed = np.asarray(self._parsed, dtype=bool)
        for parsed_, row in per_segment.items():
            for col, n in row.items():
                counts[parsed == parsed_, col] += n
        for i, conf in self._confusions:
            for name, n in conf.items():
                counts[i, cols[f"family:{name}"]] += n
        return ArmTally(tuple(self._stories), np.asarray(self._segment_story, dtype=np.intp),
                        np.asarray(self._segment_ids, dtype=np.int64), parsed, counts, cols)


def tally_segments(segments: Iterable[SegmentVerdict], *,
                   tallier: Tallier | None = None) -> ArmTally:
    """The :class:`ArmTally` of one condition's :class:`SegmentVerdict` s.

    Example:
        >>> from vidmem.metrics.track_b import EntryVerdict, SegmentVerdict, story_counts
        >>> e = EntryVerdict("s", 1, "A", "prop", "required", True, op="introduce")
        >>> segs = [SegmentVerdict("s", 1, True, [e])]
        >>> tally_segments(segs).story_counts()["s"].tolist() == story_counts(segs)["s"].tolist()
        True
    """
    b = (tallier or Tallier()).arm("tally_segments(segments)")
    for seg in _segments(segments, "tally_segments(segments)"):
        b.add_verdict(seg)
    return b.build()
