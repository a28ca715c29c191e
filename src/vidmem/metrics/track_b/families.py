"""Track-B stress families: the nine family rates, each with a Wilson interval.

Part of :mod:`vidmem.metrics.track_b` (the overview is there).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping

from scipy.special import ndtri as _ndtri

from vidmem.metrics.track_b.records import (
    EntryVerdict,
    SegmentVerdict,
    _fail,
    _is_int,
    _segments,
)
from vidmem.metrics.track_b.results import FamilyRate, WilsonRate
from vidmem.metrics.track_b.vocabulary import FAMILIES, LONG_GAP, STATE_SHOWN


def _family_entry(e: EntryVerdict, c: Counter[str]) -> None:
    """Add one entry's stress-family counts to ``c``, all but the false-friend confusion.

    Per entry, with no look at the rest of its segment (the confusion needs the target's
    entry: :func:`_family_counts`), so a tally can count an entry signature once.
    """
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
        return
    if not e.in_cast:
        return
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
    if _false_friend_intro(e):
        c["ff.id_tot"] += 1
        c["ff.id_ok"] += hit


def _false_friend_intro(e: EntryVerdict) -> bool:
    """A cast introduction with a false friend: the entries of the false-friend family."""
    return e.in_cast and e.confusable_with is not None and e.op == "introduce"


def _confusion(confused: bool | None, c: Counter[str]) -> None:
    """Add one false-friend introduction's confusion (``None``: not testable) to ``c``."""
    if confused is not None:
        c["ff.conf_tot"] += 1
        c["ff.confused"] += confused


def _family_counts(seg: SegmentVerdict, c: Counter[str]) -> None:
    """Add one segment's stress-family counts to ``c``."""
    for e in seg.entries:
        _family_entry(e, c)
        if _false_friend_intro(e):
            _confusion(seg.false_friend_confused(e), c)


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval of the proportion ``k / n``.

    The bounds of ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``,
    computed operation for operation as scipy does (Newcombe 1998; the equality is
    checked bit for bit in the tests) without building the test, whose exact p-value
    costs about a millisecond a call: with ``z`` the two-sided normal quantile
    (``scipy.special.ndtri``) and ``p = k / n``, the bounds are
    ``(2np + z^2 -+ z sqrt(4np(1-p) + z^2)) / 2(n + z^2)``, and exactly 0 (``k = 0``)
    or 1 (``k = n``) at the ends.

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
    # scipy.stats._binomtest._binom_wilson_conf_int (scipy 1.17), same operand types
    k, n = int(k), int(n)
    p = k / n
    z = _ndtri(0.5 + 0.5 * confidence)
    denom = 2 * (n + z**2)
    center = (2 * n * p + z**2) / denom
    q = 1 - p
    delta = z / denom * math.sqrt(4 * n * p * q + z**2)
    lo = 0.0 if k == 0 else center - delta
    hi = 1.0 if k == n else center + delta
    return float(lo), float(hi)


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
        >>> from vidmem.metrics.track_b import EntryVerdict, SegmentVerdict
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
    return _families_from(c, confidence)


#: per family, its rates as (numerator, denominator) counter names; the first is the
#: family's headline rate
FAMILY_RATE_KEYS: dict[str, dict[str, tuple[str, str]]] = {
    "long_gap_return": {"recall": ("long_gap.hit", "long_gap.tot")},
    "temporal_reference": {"recall": ("temporal.hit", "temporal.tot")},
    "state_change": {"accuracy": ("state_change.ok", "state_change.tot"),
                     "judged_present": ("state_change.tot", "state_change.opp")},
    "persistent_state": {"accuracy": ("persistent_state.ok", "persistent_state.tot"),
                         "judged_present": ("persistent_state.tot", "persistent_state.opp")},
    "count": {"exact_rate": ("count.exact", "count.tot"),
              "off_by_one_rate": ("count.off1", "count.tot"),
              "judged_present": ("count.tot", "count.opp")},
    "lookalike": {"correct_instance_rate": ("lookalike.correct", "lookalike.tot"),
                  "wrong_instance_rate": ("lookalike.wrong", "lookalike.tot"),
                  "judged_present": ("lookalike.tot", "lookalike.opp"),
                  "absent_avoid_ok": ("lookalike.absent.ok", "lookalike.absent.tot")},
    "false_friend": {"correct_id_rate": ("ff.id_ok", "ff.id_tot"),
                     "confusion_rate": ("ff.confused", "ff.conf_tot")},
    "deprecation": {"avoid_ok": ("deprecation.ok", "deprecation.tot")},
    "reference_indirect": {"avoid_ok": ("reference_indirect.ok", "reference_indirect.tot")},
}
#: per family (in :data:`FAMILIES` order), the counter names of its headline rate
FAMILY_HEADLINE_KEYS: tuple[tuple[str, str], ...] = tuple(
    next(iter(FAMILY_RATE_KEYS[f].values())) for f in FAMILIES)


def _families_from(c: Mapping[str, int], confidence: float) -> dict[str, FamilyRate]:
    """The nine :class:`FamilyRate` s from the counts of :func:`_family_counts`."""
    return {name: FamilyRate(name, {rate: _w(c, num, den, confidence)
                                    for rate, (num, den) in FAMILY_RATE_KEYS[name].items()})
            for name in FAMILIES}
