"""The Track-B report: built from a scored run directory only (nothing is judged again).

It reads ``run.json``, ``summary.json``, ``scores.jsonl``, each story's stored request
and response in the item store (:mod:`.run_items`), and, for the drill-down only, the
gold (while it still hashes as scored), the clips' middle frames and the reference PNGs
of generated rollouts.

Sections:

1. the pooled table: per condition Recall, Precision, F1, Avoid-OK, decoy false-positive
   rate, abstain rate, unparsable segments, and the vector (dRecall, dPrecision,
   dAvoid-OK) minus ``none`` with its paired story-bootstrap interval;
2. the forest plot of that vector per condition, with the same on the segments parsed in
   both arms (:mod:`.report_plots`; ``last_seen`` marked privileged);
3. the paper's Table-3 layout: conditions x the nine stress families, each cell the
   family's headline rate, ``+`` / ``-`` where the bootstrap interval of its difference
   from ``none`` excludes zero; ``last_seen`` marked privileged;
4. recall by absence-gap bin (1-4, 5-29, >= 30 segments; gap 0 apart as "just seen"):
   the table with Wilson intervals and differences from ``none``, per kind, and the plot;
5. the per-segment drill-down, one section per condition (:mod:`.report_drilldown`: a
   bounded, deterministic selection of faulty segments; ``VIDMEM_DRILL_DOWN=all`` shows
   every segment).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vidmem.report.labels import protocol_label
from vidmem.report.model import Figure, Report, Table

__all__ = ["build_track_b_report", "family_cell", "parsed_in_both_note", "sign"]

FAMILY_HEADINGS = {
    "long_gap_return": "long-gap", "temporal_reference": "temporal", "state_change": "state chg",
    "persistent_state": "persist", "count": "count", "lookalike": "look-alike",
    "false_friend": "false friend", "deprecation": "deprecation",
    "reference_indirect": "ref-indirect",
}


def sign(rate: Mapping[str, Any] | None) -> str:
    """``+`` / ``-`` when the interval of a difference excludes zero, else ``""``.

    Example:
        >>> sign({"ci_low": 0.01, "ci_high": 0.2}), sign({"ci_low": -0.1, "ci_high": 0.2})
        ('+', '')
    """
    if not rate or rate.get("ci_low") is None:
        return ""
    if rate["ci_low"] > 0:
        return "+"
    if rate["ci_high"] < 0:
        return "-"
    return ""


def family_cell(value: float | None, mark: str) -> str:
    """``0.523 +``; ``n/a`` when the family has no opportunity."""
    return "n/a" if value is None else f"{value:.3f}{(' ' + mark) if mark else ''}"


def _delta(d: Mapping[str, Any] | None, rate: str) -> str:
    if not d or d["rates"][rate]["difference"] is None:
        return "n/a"
    r = d["rates"][rate]
    ci = "" if r["ci_low"] is None else f" [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]"
    return f"{r['difference']:+.3f}{ci}{sign(r)}"


def _label(cond: str, summary: Mapping[str, Any]) -> str:
    if cond in summary.get("privileged", ()):
        return f"{cond} (privileged)"
    return f"{cond} (baseline)" if cond == summary.get("baseline") else cond


def build_track_b_report(run: Any, *, drill_down: int | str | None = "env") -> Report:
    """Build the report of a Track-B run from its directory (sections in the module doc).

    Args:
        run: an opened :class:`~vidmem.runners.store.RunDir`.
        drill_down: segments per condition in the drill-down: a number, ``"all"`` (or
            ``None``) for every segment, or ``"env"`` (what ``vidmem report`` uses): the
            ``VIDMEM_DRILL_DOWN`` variable, else 3.
    """
    m = run.manifest
    summary = run.summary()
    scorer = summary.get("scorer") or m.config.get("scorer", {})
    official = bool(summary.get("official"))
    rep = Report(
        "VMem-Bench Track-B: memory in closed-loop story generation",
        protocol_label(summary, scorer, official="official protocol",
                       other="non-official (offline judge or settings that "
                             "differ from the protocol)"),
        meta={"vidmem": m.vidmem_version, "run": str(run.path), "created": m.created_at,
              "status": m.status, "preset": scorer.get("preset", "?"),
              "judge": scorer.get("judge"), "gold": m.config.get("gold_root", "?")},
    )
    if not summary:
        rep.notice("error", "summary.json is missing: the run did not finish scoring.")
        return rep
    if not official:
        rep.notice("warning", "These numbers come from a non-official judge or settings; they "
                   "are not comparable with the paper's Track-B tables.")
    if summary.get("absent_conditions"):
        rep.notice("warning", "Not scored, no story's rollouts folder has them: "
                   + ", ".join(summary["absent_conditions"]) + ".")
    if summary.get("missing"):
        rep.notice("warning", f"{len(summary['missing'])} story(ies) had no rollouts folder and "
                   "were not scored: " + ", ".join(list(summary["missing"])[:10]))
    if summary.get("errors"):
        rep.notice("error", f"{len(summary['errors'])} story(ies) failed to score: "
                   + "; ".join(f"{s}: {e}" for s, e in summary["errors"][:3]))
    conds = summary.get("conditions", [])
    unparsable = {c: summary["pooled"][c]["unparsable"]["numerator"] for c in conds}
    if any(unparsable.values()):
        rep.notice("warning", "unparsable judge answers (every entry abstains, required "
                   f"entities count as missed): {unparsable}; see deltas_parsed_in_both in "
                   "summary.json for the comparison on segments parsed in both arms ("
                   + parsed_in_both_note(summary) + ").")

    missing = {c: summary.get("judge", {}).get(c, {}).get("missing_clips", 0) for c in conds}
    if any(missing.values()):
        rep.notice("warning", "missing clips scored as all-absent (--allow-missing; every "
                   f"entry judged not present, no judge question): {missing}")

    sec = rep.section(
        "Pooled rates",
        "Counts pooled over every segment of every story. Recall = required character and "
        "prop entries judged present / required; Precision = required judged present / "
        "judged-present cast, forbidden and false-friend entries (decoys and locations "
        "excluded); Avoid-OK = forbidden entries kept out. d = condition minus none with the "
        "paired story-bootstrap 95% interval; + / - where it excludes zero. Every rule is in "
        "run.json's `protocol`.")
    rows = []
    for c in conds:
        p = summary["pooled"][c]
        d = summary.get("deltas", {}).get(c)
        rows.append([_label(c, summary), p["recall"]["value"], p["precision"]["value"], p["f1"],
                     p["avoid_ok"]["value"], p["decoy_fpr"]["value"], p["abstain_rate"]["value"],
                     p["unparsable"]["numerator"], _delta(d, "recall"), _delta(d, "precision"),
                     _delta(d, "avoid_ok")])
    sec.add(Table(["condition", "Recall", "Precision", "F1", "Avoid-OK", "decoy FPR", "abstain",
                   "unparsable", "dRecall", "dPrecision", "dAvoid-OK"], rows,
                  caption=f"{summary.get('n_stories_scored', 0)} stories, "
                  f"{summary.get('n_segments', 0)} segments per condition"))

    _forest_section(rep, summary)

    sec = rep.section(
        "Stress families (Table-3 layout)",
        "Each family's headline rate (long-gap and temporal: recall; state: accuracy; count: "
        "exact rate; look-alike: correct instance; false friend: correct id; deprecation and "
        "reference-indirect: Avoid-OK). + / -: the paired story-bootstrap interval of the "
        "difference from none excludes zero. last_seen is a privileged diagnostic.")
    rows = []
    for c in conds:
        fam = summary["families"][c]
        fd = summary.get("family_deltas", {}).get(c)
        cells = [_label(c, summary)]
        for f in FAMILY_HEADINGS:
            head = fam[f]["rates"][fam[f]["headline"]]
            cells.append(family_cell(head["value"], sign(fd["rates"][f]) if fd else ""))
        rows.append(cells)
    sec.add(Table(["condition", *FAMILY_HEADINGS.values()], rows,
                  caption="n/a: no opportunity for the family in the scored stories"))
    _gap_section(rep, summary)
    _drill_down(rep, run, summary, drill_down)
    return rep


def _forest_section(rep: Report, summary: Mapping[str, Any]) -> None:
    from vidmem.benchmarks.vmem_track_b.report_plots import forest_plot

    fig = forest_plot(summary)
    if fig is None:
        return
    sec = rep.section(
        "Differences from no memory (forest plot)",
        "Each condition minus none: the vector (dRecall, dPrecision, dAvoid-OK) with the "
        "paired story-bootstrap 95% interval (dots), and the same on the segments whose judge "
        "answer parsed in both arms (hollow squares). An interval off the zero line is a "
        "difference the bootstrap supports; last_seen (grey) is a privileged diagnostic.")
    sec.add(Figure(fig, caption="condition minus none, per rate of the vector; "
                   + parsed_in_both_note(summary), name="forest"))


def parsed_in_both_note(summary: Mapping[str, Any]) -> str:
    """Per condition, the stories left in the parsed-in-both comparison and those dropped.

    A story none of whose segments parsed in both arms has nothing to resample and drops
    out of that bootstrap (run.json ``protocol``: ``differences``); the report says so.

    Example:
        >>> parsed_in_both_note({"deltas_parsed_in_both": {"x": {
        ...     "n_segments": 20, "n_stories": 2, "n_stories_dropped": 1,
        ...     "stories_dropped": ["0003_c"]}}})
        'parsed in both arms: x 20 segments of 2 stories, 1 story dropped (no segment parsed in both arms: 0003_c)'
    """
    parts = []
    for cond, block in (summary.get("deltas_parsed_in_both") or {}).items():
        if not block:
            parts.append(f"{cond} none")
            continue
        text = f"{cond} {block.get('n_segments', 0)} segments of {block.get('n_stories', '?')} stories"
        dropped = list(block.get("stories_dropped") or [])
        if dropped:
            names = ", ".join(dropped[:5]) + (" ..." if len(dropped) > 5 else "")
            text += (f", {len(dropped)} stor{'y' if len(dropped) == 1 else 'ies'} dropped "
                     f"(no segment parsed in both arms: {names})")
        parts.append(text)
    return "parsed in both arms: " + ("; ".join(parts) if parts else "not computed")


def _cell(rate: Mapping[str, Any] | None) -> str:
    if not rate or rate.get("value") is None:
        return "n/a"
    ci = "" if rate.get("ci_low") is None else f" [{rate['ci_low']:.2f}, {rate['ci_high']:.2f}]"
    return f"{rate['value']:.3f}{ci} (n={rate['denominator']})"


def _gap_section(rep: Report, summary: Mapping[str, Any]) -> None:
    from vidmem.benchmarks.vmem_track_b.report_plots import gap_bin_plot

    gaps = summary.get("gap_bins")
    if not gaps:
        return
    bins, rates, deltas = gaps["bins"], gaps["rates"], gaps.get("deltas") or {}
    sec = rep.section(
        "Recall by absence gap",
        "Required character and prop returns, binned by how many segments the entity was "
        "away (gold gap). Gap 0 -- on screen in the previous segment -- is no absence and is "
        "shown apart as *just seen*. Recall with its Wilson 95% interval and support n; d = "
        "condition minus none with the paired story-bootstrap interval, + / - where it "
        "excludes zero. Every condition, no memory included, tends to recall more at long "
        "gaps, where prompts describe the returning entity: read the differences, not the "
        "curve (paper App. F.2).")
    rows = []
    for c in summary.get("conditions", []):
        if c not in rates:
            continue
        r = rates[c]
        d = deltas.get(c)
        rows.append([_label(c, summary), *(_cell(r["bins"][b]) for b in bins),
                     _cell(r["just_seen"]), *(_delta(d, b) for b in bins)])
    sec.add(Table(["condition", *bins, "just seen", *(f"d {b}" for b in bins)], rows,
                  caption="recall of required returns by absence gap (segments away)"))
    kinds = []
    for c in summary.get("conditions", []):
        for kind, by in (rates.get(c) or {}).get("by_kind", {}).items():
            kinds.append([kind, _label(c, summary), *(_cell(by[b]) for b in bins),
                          _cell(by.get("just_seen"))])
    if kinds:
        sec.add(Table(["kind", "condition", *bins, "just seen"], sorted(kinds, key=lambda r: r[0]),
                      caption="the same by entity kind (the bins mix kinds)"))
    fig = gap_bin_plot(summary)
    if fig is not None:
        sec.add(Figure(fig, caption="recall by absence-gap bin with Wilson 95% intervals; none "
                       "dotted, privileged conditions grey dashed", name="recall-by-gap"))


def _drill_down(rep: Report, run: Any, summary: Mapping[str, Any],
                limit: int | None | str) -> None:
    from vidmem.benchmarks.vmem_track_b.report_drilldown import (
        add_drill_down,
        drill_down_limit,
        parse_limit,
    )
    from vidmem.benchmarks.vmem_track_b.run_items import scored_items
    from vidmem.errors import StoreError

    try:
        items = scored_items(run)
    except StoreError as exc:
        rep.notice("warning", f"no drill-down: {exc.message}")
        return
    if any(it.request is None for it in items):
        rep.notice("warning", "the item store holds no entry for some scored stories; their "
                   "segments are left out of the drill-down")
        items = [it for it in items if it.request is not None]
    n = drill_down_limit() if limit == "env" else None if limit is None else parse_limit(limit)
    add_drill_down(rep, run, items, list(summary.get("conditions", [])), n)
