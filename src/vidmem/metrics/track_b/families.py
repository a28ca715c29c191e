"""Track-B stress families: the nine family rates, each with a Wilson interval.

Part of :mod:`vidmem.metrics.track_b` (the overview is there).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from scipy import stats as _stats

from vidmem.metrics.track_b.records import SegmentVerdict, _fail, _is_int, _segments
from vidmem.metrics.track_b.results import FamilyRate, WilsonRate
from vidmem.metrics.track_b.vocabulary import FAMILIES, LONG_GAP, STATE_SHOWN


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
