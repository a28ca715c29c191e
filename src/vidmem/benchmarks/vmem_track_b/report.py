"""The Track-B report (minimal): built from a scored run's ``summary.json`` only.

Sections:

1. the pooled table: per condition Recall, Precision, F1, Avoid-OK, decoy false-positive
   rate, abstain rate, unparsable segments, and the vector (dRecall, dPrecision,
   dAvoid-OK) minus ``none`` with its paired story-bootstrap interval;
2. the paper's Table-3 layout: conditions x the nine stress families, each cell the
   family's headline rate, ``+`` / ``-`` where the bootstrap interval of its difference
   from ``none`` excludes zero; ``last_seen`` marked privileged.

Not yet: the forest plot of the differences and the per-segment drill-down.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from vidmem.report.model import Report, Table

__all__ = ["build_track_b_report", "family_cell", "sign"]

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


def build_track_b_report(run: Any) -> Report:
    """Build the report of a Track-B run from its directory (sections in the module doc)."""
    m = run.manifest
    path = run.path / "summary.json"
    summary = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    scorer = summary.get("scorer") or m.config.get("scorer", {})
    official = bool(summary.get("official"))
    rep = Report(
        "VMem-Bench Track-B: memory in closed-loop story generation",
        "official protocol" if official else "non-official (offline judge or settings that "
        "differ from the protocol)",
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
                   "summary.json for the comparison on segments parsed in both arms.")

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
    return rep
