"""The report sections of the ``attribution`` analysis.

Rules: one section of shares (per failure kind, a row per condition, each cause's pooled
share with its story-clustered interval and count), then per condition a table of every
unit and, for the first ``frames`` units (the result's ``frames``) in the order of
:data:`FRAME_ORDER` (the rarer, more telling causes first; then story and segment), the
reference PNGs handed over for the segment followed by the clip's middle frame (the
drill-down's helpers). Nothing is judged here; clips are decoded only for middle frames.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vidmem.benchmarks.vmem_track_b import analysis_attribution_rules as rules

__all__ = ["FRAME_ORDER", "add_sections", "share_cell"]

#: which units get frames first
FRAME_ORDER = ("synthesis", "carried", "selection", "judge_disagreement", "not_carried",
               "no_memory", "writing", "not_writing", "references_unknown", "introduction")

_WORDS = {
    "judge_disagreement": "a second judge sees it", "introduction": "first appearance",
    "writing": "previous appearance already wrong", "not_writing": "other (references unknown)",
    "no_memory": "no memory (condition none)", "synthesis": "a reference shows it, clip does not",
    "selection": "no reference shows it", "carried": "a reference shows it",
    "not_carried": "no reference shows it", "references_unknown": "references unknown"}


def share_cell(s: Mapping[str, Any]) -> str:
    """``share [low, high] (n)`` of one cause.

    Example:
        >>> share_cell({"share": 0.25, "ci_low": 0.1, "ci_high": 0.4, "n": 2, "units": 8})
        '0.25 [0.10, 0.40] (2)'
        >>> share_cell({"share": None, "ci_low": None, "ci_high": None, "n": 0, "units": 0})
        '-'
    """
    if s.get("share") is None:
        return "-"
    ci = "" if s.get("ci_low") is None else f" [{s['ci_low']:.2f}, {s['ci_high']:.2f}]"
    return f"{s['share']:.2f}{ci} ({s['n']})"


def _frames(run: Any, unit: Mapping[str, Any], items: Mapping[str, Any]) -> list[Any]:
    from vidmem.benchmarks.vmem_track_b.analysis_attribution import _rollout_refs
    from vidmem.benchmarks.vmem_track_b.report_drilldown import (
        _PLACEHOLDER,
        _clip_path,
        _image,
        _middle_frame,
    )

    it = items.get(unit["story_id"])
    if it is None:
        return [(_PLACEHOLDER, "story not in the run any more")]
    cond, k = unit["condition"], int(unit["segment_id"]) - 1
    n = len(((it.request or {}).get("clips") or {}).get(cond) or [])
    refs = _rollout_refs(run, it, cond, n)
    out = []
    for i, r in enumerate((refs or {}).get(k + 1, []), start=1):
        img = _image(Path(r["png"]))
        shows = "shows it" if i in unit.get("shown_refs", ()) else "does not show it"
        out.append((_PLACEHOLDER if img is None else img, f"ref {i}: {r['source']} ({shows})"))
    if refs is None:
        out.append((_PLACEHOLDER, "references unknown"))
    out.append(_middle_frame(_clip_path(run, it, cond, k)))
    return out


def add_sections(rep: Any, data: Mapping[str, Any], run: Any) -> None:
    """Append the analysis's sections to ``rep`` (rules in the module doc)."""
    from vidmem.benchmarks.vmem_track_b.report_drilldown import _golds
    from vidmem.benchmarks.vmem_track_b.run_items import scored_items
    from vidmem.report.model import ImageGrid, Table

    conds = list(data.get("conditions") or [])
    unknown = list(data.get("references_unknown") or [])
    text = (f"Each failure's cause, judged by {data.get('judge')} (references)"
            + (f" and {data['second_judge']} (second judge)" if data.get("second_judge") else "")
            + ". Cell: pooled share [story-clustered 95% interval] (units).")
    if data.get("unjudged_references"):
        text += (f" {data['unjudged_references']} reference image(s) got no usable answer and "
                 "count as not showing anything.")
    if unknown:
        text += (" References unknown (writing vs other only) for: " + ", ".join(unknown) + ".")
    sec = rep.section("Failure attribution (analysis)", text)
    for failure, causes, what in (("miss", rules.MISS_CAUSES, "missed required characters/props"),
                                  ("render", rules.RENDER_CAUSES, "rendered forbidden entities")):
        per = data["shares"][failure]
        rows = [[c, next(iter(per[c].values()))["units"] if per[c] else 0,
                 *(share_cell(per[c][k]) for k in causes)] for c in conds]
        sec.add(Table(["condition", "units", *causes], rows,
                      caption=f"{what}: " + "; ".join(f"{k} = {_WORDS[k]}" for k in causes)))
    items = {it.story_id: it for it in scored_items(run)}
    golds = _golds(list(items.values()))
    limit = int(data.get("frames", 4))
    for cond in conds:
        mine = [u for u in data["units"] if u["condition"] == cond]
        sec = rep.section(f"Attribution units: {cond}",
                          f"{len(mine)} unit(s); the first {min(limit, len(mine))} with frames "
                          "(references handed over, then the clip's middle frame).")
        rows = []
        for u in mine:
            story = golds.get(u["story_id"], (None, ""))[0]
            ent = story.entities.get(u["eid"]) if story is not None else None
            rows.append([u["story_id"], f"seg_{u['segment_id']:03d}", u["eid"],
                         ent.name if ent is not None else "?", u["failure"], u["cause"],
                         "" if u["previous"] is None else f"seg_{u['previous']:03d}",
                         ", ".join(f"ref {k} ({src})" for k, src in
                                   zip(u.get("shown_refs", ()), u["shown_by"], strict=False))])
        if rows:
            sec.add(Table(["story", "segment", "entity", "name", "failure", "cause",
                           "previous appearance", "references showing it"], rows))
        first = sorted(mine, key=lambda u: (FRAME_ORDER.index(u["cause"]), u["story_id"],
                                            u["segment_id"], u["eid"]))
        for u in first[:limit]:
            sec.add(ImageGrid(_frames(run, u, items), columns=4, thumb_size=256,
                              caption=f"{u['story_id']} seg_{u['segment_id']:03d} {u['eid']}: "
                              f"{u['failure']}, {u['cause']}"))
