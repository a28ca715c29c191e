"""Identity analysis by absence gap: the family table's rates, binned by time away.

Does a returning entity stay itself less often the longer it was away? The family
table (:mod:`.analysis_identity_stats`) pools every return after absence, whatever
its gap; this module splits the same unit rows by the gap to their previous
appearance. Pure functions on the stored measurements and the frozen cuts.

Rules (each in :data:`PROTOCOL`):

* **Bins** are Track-B's recall-by-gap bins (:func:`vidmem.metrics.track_b.gap_bins.
  absence_bin`): gap 0 (on screen in the previous segment: the
  ``recent_return_sample`` units) is ``just_seen``; the absence bins are ``1-4``,
  ``5-29`` and ``>=30`` segments in between.
* **Units**: the character/prop units of ``return_after_absence`` and
  ``recent_return_sample`` -- the units of the family table's ``all`` row, so the bins
  add up to it. A ``changed_long_gap`` unit is the same (segment, entity) as a return
  after absence and is not counted twice. Location units are binned apart, as
  ``location:<bin>``.
* **Rates** are the family table's (:func:`~.analysis_identity_stats.story_counts`,
  the same frozen cut), pooled over stories; differences from the baseline use the
  same paired story bootstrap (:func:`~.analysis_identity_stats.deltas`).
* **Per-unit call** (:func:`same_call`): same = found on both sides and score >= the
  frozen cut of the unit's kind; ``None`` for a kind without a cut -- the call
  ``same_all`` counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vidmem.benchmarks.vmem_track_b import analysis_identity_stats as stats
from vidmem.metrics.track_b.gap_bins import GAP_BINS, JUST_SEEN, absence_bin
from vidmem.stats.calibration import Calibration

__all__ = ["BINS", "PROTOCOL", "binned_rows", "delta_rows", "gap_table", "report_rows",
           "same_call"]

#: the bins in report order: just seen, then the absence bins
BINS = (JUST_SEEN, *GAP_BINS)
#: the families binned (the family table's ``all`` row)
_FAMILIES = ("return_after_absence", "recent_return_sample")
_LOCATION = "location:"

PROTOCOL: dict[str, dict[str, str]] = {
    "gap_bins": {
        "rule": "gap to the previous appearance (segments in between): 0 = just_seen "
                "(the recent_return_sample units), then 1-4, 5-29 and >= 30",
        "reason": "the bins Track-B's recall by gap uses, so the two read side by side",
        "source": "vidmem.metrics.track_b.gap_bins GAP_BINS_PROTOCOL; PROTOCOLS.md "
                  "section 4",
    },
    "gap_units": {
        "rule": "character/prop units of return_after_absence and recent_return_sample (the "
                "family table's 'all'); changed_long_gap units are not counted again; "
                "location units binned apart as location:<bin>",
        "reason": "a changed long-gap return is the same (segment, entity) as a return "
                  "after absence; crop and whole-frame scores are not pooled",
        "source": "decided here",
    },
    "gap_rates": {
        "rule": "the family table's rates and frozen per-kind cuts, pooled over stories; "
                "differences from the baseline by the same paired story bootstrap",
        "reason": "one definition of every rate, whichever way the units are grouped",
        "source": "analysis_identity_stats PROTOCOL (rates, deltas)",
    },
    "gap_sample": {
        "rule": "just_seen holds the seeded 20% sample of gap-0 returns only",
        "reason": "the units are the protocol's; scoring every continuation is not",
        "source": "identity_units PROTOCOL (recent_return_sample)",
    },
}


def binned_rows(per_story: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]]
                ) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """The unit rows with their gap bin as family (rules in :data:`PROTOCOL`).

    Args:
        per_story: story -> condition -> unit rows (``family``, ``gap``...).

    Returns:
        The same nesting, rows of the binned families only, ``family`` replaced by the
        bin (``location:<bin>`` for locations) and the original kept as ``unit_family``.

    Example:
        >>> rows = [{"family": "return_after_absence", "gap": 7},
        ...         {"family": "changed_long_gap", "gap": 31},
        ...         {"family": "location:recent_return_sample", "gap": 0}]
        >>> [r["family"] for r in binned_rows({"s": {"none": rows}})["s"]["none"]]
        ['5-29', 'location:just_seen']
    """
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for sid, conds in per_story.items():
        out[sid] = {}
        for cond, rows in conds.items():
            kept = []
            for r in rows:
                fam = str(r["family"])
                place = fam.startswith(_LOCATION)
                if fam.removeprefix(_LOCATION) not in _FAMILIES:
                    continue
                b = absence_bin(int(r["gap"]))
                kept.append({**r, "unit_family": fam,
                             "family": f"{_LOCATION}{b}" if place else b})
            out[sid][cond] = kept
    return out


def same_call(row: Mapping[str, Any], calibration: Mapping[str, Mapping[str, Any]]
              ) -> bool | None:
    """The analysis' same/different call of one unit row; ``None``: its kind has no cut.

    Example:
        >>> cal = stats.calibrate({"positive": [{"kind": "prop", "score": 0.9}],
        ...                        "negative": [{"kind": "prop", "score": 0.2}]})
        >>> row = {"kind": "prop", "found_current": True, "found_previous": True, "score": 0.95}
        >>> same_call(row, cal), same_call({**row, "found_previous": False}, cal)
        (True, False)
        >>> same_call({**row, "kind": "character"}, cal) is None
        True
    """
    c = calibration.get(str(row["kind"])) or {}
    if c.get("cut") is None:
        return None
    if not (row["found_current"] and row["found_previous"] and row["score"] is not None):
        return False
    return Calibration.from_dict(c).same(float(row["score"]))


def gap_table(per_story: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]],
              calibration: Mapping[str, Mapping[str, Any]], baseline: str, *,
              n_resamples: int, seed: int, confidence: float) -> dict[str, Any]:
    """The ``by_gap`` block of the identity result.

    Args:
        per_story: story -> condition -> unit rows (the stored measurements).
        calibration: the frozen cuts (:func:`~.analysis_identity_stats.calibrate`).
        baseline: the condition the differences are taken from (``none``).
        n_resamples, seed, confidence: the run's bootstrap settings.

    Returns:
        ``{"bins", "table": {cond: {bin | "location:<bin>": rates}}, "counts": {cond:
        {bin: {story: counts}}}, "deltas": {cond: {bin: bootstrap}}}``; a bin with no
        unit in any condition is left out.
    """
    table, counts = stats.condition_table(binned_rows(per_story), calibration)
    for cond in table:  # 'all' would repeat the family table's row
        table[cond].pop("all", None)
        counts[cond].pop("all", None)
    return {"bins": list(BINS), "table": table, "counts": counts,
            "deltas": stats.deltas(counts, baseline, n_resamples=n_resamples, seed=seed,
                                   confidence=confidence)}


def report_rows(data: Mapping[str, Any], conditions: Sequence[str]) -> list[list[Any]]:
    """Table rows (condition, bin, units, found both, mean similarity, same (all))."""
    rows = []
    order = [*BINS, *(f"{_LOCATION}{b}" for b in BINS)]
    for cond in conditions:
        bins = data["table"].get(cond, {})
        for b in order:
            r = bins.get(b)
            if r:
                rows.append([cond, b, r["n_found_current"], r["found_both"],
                             r["mean_similarity"], r["same_all"]])
    return rows


def delta_rows(data: Mapping[str, Any]) -> list[list[Any]]:
    """Table rows (condition, bin, rate, difference, low, high) of the entity bins."""
    rows = []
    for cond, bins in data["deltas"].items():
        for b in BINS:
            d = bins.get(b)
            for rate in ("found_both", "same_all") if d else ():
                x = d["rates"][rate]
                rows.append([cond, b, rate, x["difference"], x["ci_low"], x["ci_high"]])
    return rows
