"""The Track-A report: built from a scored run directory only.

It reads ``run.json``, ``summary.json``, ``scores.jsonl``, the per-film responses in the
item store (``details.<policy>``: per segment, the references in rank order with their
judge labels and thumbnail paths) and the thumbnails under ``RUN/thumbnails/``. No model
is loaded and nothing is judged again. The gold is read once more only to show the
chosen segments' scenario tags and candidate entities, from the film folder the run
recorded (``run.json`` config ``gold_root``, the item request's ``film_dir``), and only
when its files still hash as they did when the run scored them; otherwise the report
says so and shows the references without them.

Sections:

1. the paper's Track-A table, per dataset folder x policy at K = budget, and the overall
   row, with ``n_precision_undefined`` and unparsable counts, and the precision note;
2. F1 and recall against the budget K = 1..budget (overall);
3. judge questions (asked vs naive) and the references the causal guard dropped;
4. a few chosen segments (rule in :func:`choose_segments`): every policy's references
   in rank order, with thumbnails and the judge's labels, and the segment's candidates C.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vidmem.benchmarks.vmem_track_a.report_segments import (
    RETURN_TAGS,
    THUMBNAILS,
    ChosenSegment,
    choose_segments,
    film_responses,
    load_gold_for,
    reference_caption,
    segment_rows,
    thumbnail_of,
)
from vidmem.report.labels import protocol_label
from vidmem.report.model import Figure, ImageGrid, KeyValues, Markdown, Report, Table
from vidmem.report.plots import line_plot

__all__ = ["RETURN_TAGS", "TABLE_COLUMNS", "THUMBNAILS", "ChosenSegment", "build_track_a_report",
           "choose_segments", "film_responses", "load_gold_for", "reference_caption",
           "thumbnail_of"]

#: the Track-A table: heading -> key of the summary's means
TABLE_COLUMNS: dict[str, str] = {
    "Prec": "precision", "Recall": "recall", "F1": "f1", "R_V": "r_v", "R_S": "r_s",
    "SelEff": "sel_eff", "refs/seg": "refs_per_segment", "films": "n_films",
    "segments": "n_segments", "n_precision_undefined": "n_precision_undefined",
    "no candidates": "n_no_candidates", "unparsable": "n_unparsable",
}
_THUMB_SIDE = 128


def _summary(run: Any) -> dict[str, Any]:
    return run.summary()


def _fmt(v: Any) -> str:
    return "n/a" if v is None else f"{float(v):.3f}"


def _table(summary: Mapping[str, Any]) -> Table:
    rows = []
    for dataset, by_policy in summary.get("table", {}).items():
        for policy, m in by_policy.items():
            rows.append([dataset, policy, *(m.get(k) for k in TABLE_COLUMNS.values())])
    for policy, m in summary.get("overall", {}).items():
        rows.append(["overall", policy, *(m.get(k) for k in TABLE_COLUMNS.values())])
    return Table(["dataset", "policy", *TABLE_COLUMNS], rows,
                 caption=f"per dataset folder x policy at K = {summary.get('budget')}, then "
                 "the overall row (unweighted mean over all films)")


def _curves(summary: Mapping[str, Any], metric: str) -> tuple[list[int], dict[str, list[Any]]]:
    curves = summary.get("f1_vs_budget", {})
    ks = list(range(1, int(summary.get("budget") or 0) + 1))
    return ks, {p: [c.get(str(k), {}).get(metric) for k in ks] for p, c in curves.items()}


def _budget_section(rep: Report, summary: Mapping[str, Any]) -> None:
    sec = rep.section(
        "Budget sweep", "Each policy composes once per segment with the largest budget; K = "
        "1..budget are prefixes of that ranking, rescored from the same judge labels (no "
        "new questions). Overall means over all films.")
    for metric, name in (("f1", "F1"), ("recall", "Recall")):
        ks, ys = _curves(summary, metric)
        if not ks or not ys:
            continue
        sec.add(Figure(line_plot(ks, ys, xlabel="budget K (references per segment)",
                                 ylabel=name, title=f"{name} vs budget"),
                       caption=f"{name} at K = 1..{ks[-1]}, overall", name=f"{metric}-vs-budget"))
        sec.add(Table(["K", *ys], [[k, *(ys[p][i] for p in ys)] for i, k in enumerate(ks)],
                      caption=f"{name} by K, overall"))


def _judge_section(rep: Report, summary: Mapping[str, Any]) -> None:
    q = summary.get("judge_questions", {})
    answers = summary.get("judge_answers") or {}
    sec = rep.section(
        "Judge questions and the causal guard",
        "Each distinct (segment, frame) reference is judged once, however many policies "
        "picked it and at however many budgets it counts; *naive* is the number of "
        "judgements a scorer that asked per policy and per K would make. The guard drops "
        "references at or after the composing segment's start (*future*), items that are "
        "not references, and references without a finite time.")
    sec.add(KeyValues({
        "distinct references": q.get("references"),
        "reference questions asked": q.get("asked"),
        "naive judgements (per policy, per K)": q.get("naive_reference_judgements"),
        "fewer than naive (x)": q.get("fewer_than_naive"),
        "same-view pairs asked": q.get("same_view_pairs"),
        "sent to the judge by this scoring (identical questions once)": answers.get("asked"),
        "answered from the cache": answers.get("from_cache"),
    }, caption="judge questions over all films"))
    dropped = summary.get("dropped", {})
    reasons = sorted({r for d in dropped.values() for r in d}) or ["future", "bad_time",
                                                                   "not_a_reference"]
    unparsable = summary.get("unparsable", {})
    sec.add(Table(["policy", *(f"dropped: {r}" for r in reasons), "dropped: total",
                   "unparsable answers"],
                  [[p, *(d.get(r, 0) for r in reasons), sum(d.values()), unparsable.get(p)]
                   for p, d in dropped.items()],
                  caption="per policy, over all films and segments (at the largest budget)"))


def _in_order(details: Mapping[str, Any], order: Sequence[str]) -> dict[str, Any]:
    """The policies in the run's order (the store keeps JSON keys sorted)."""
    return {**{p: details[p] for p in order if p in details},
            **{p: v for p, v in details.items() if p not in order}}


def _entity_text(gold: Any, ids: Sequence[str]) -> str:
    if not ids:
        return "none"
    names = []
    for e in ids:
        ent = gold.entities.get(e) if gold is not None else None
        names.append(f"{e} ({ent.name}, {ent.kind})" if ent is not None else e)
    return ", ".join(names)


def _segment_section(rep: Report, run: Any, pick: ChosenSegment, details: Mapping[str, Any],
                     gold: Any | None, budget: int) -> None:
    rows = segment_rows(details).get(pick.segment, {})
    any_row = next(iter(rows.values()), {})
    seg = next((s for s in gold.segments if s.index == pick.segment), None) if gold else None
    head = f"Segment {pick.segment} of {pick.film_id}"
    sec = rep.section(head, f"Picked because {pick.why}.")
    facts: dict[str, Any] = {"film": pick.film_id, "segment (film order)": pick.segment,
                             "chunk_id": any_row.get("chunk_id")}
    if seg is not None:
        c = [e for e in seg.present if e not in seg.first_appearances]
        facts.update({
            "time span (s)": f"{seg.start_seconds:g} - {seg.end_seconds:g}",
            "scenario tags": ", ".join(seg.scenario_tags) or "none",
            "instruction": seg.prompt,
            "present P": _entity_text(gold, seg.present),
            "first appearances": _entity_text(gold, seg.first_appearances),
            "candidates C (P minus first appearances)": _entity_text(gold, c),
        })
    else:
        facts["candidates C"] = "unknown (gold not readable)"
    sec.add(KeyValues(facts))
    sec.add(Table(["policy", "references", "distinct entities shown", f"recall at K = {budget}",
                   "dropped by the guard"],
                  [[p, len(r["refs"][:budget]), pick.covered.get(p), pick.recall.get(p),
                    sum(r.get("dropped", {}).values())] for p, r in rows.items()],
                  caption="per policy, this segment"))
    for policy, row in rows.items():
        refs = row["refs"][:budget]
        if not refs:
            sec.add(Markdown(f"**{policy}**: no references (an empty selection)."))
            continue
        sec.add(ImageGrid([(thumbnail_of(run, r.get("thumbnail")), reference_caption(i, r))
                           for i, r in enumerate(refs, start=1)],
                          columns=8, thumb_size=_THUMB_SIDE,
                          caption=f"{policy}: references in rank order, with the judge's "
                          "labels (entity ids; nothing = no roster entity seen)"))


# --------------------------------------------------------------------------- report


def build_track_a_report(run: Any) -> Report:
    """Build the report of a Track-A run from its directory.

    Args:
        run: an opened :class:`~vidmem.runners.store.RunDir`.

    Returns:
        A :class:`~vidmem.report.Report` (sections in the module docstring).
    """
    m = run.manifest
    summary = _summary(run)
    scorer = summary.get("scorer") or m.config.get("scorer", {})
    official = bool(summary.get("official"))
    budget = int(summary.get("budget") or scorer.get("budget") or 16)
    rep = Report(
        "VMem-Bench Track-A: references retrieved by memory policies",
        protocol_label(summary, scorer, official="official protocol",
                       other="non-official (offline encoders or judge, or "
                             "settings that differ from the protocol)"),
        meta={"vidmem": m.vidmem_version, "run": str(run.path), "created": m.created_at,
              "status": m.status, "preset": scorer.get("preset", "?"),
              "judge": scorer.get("judge"), "lang": scorer.get("lang"), "budget": budget,
              "encoders": ", ".join(f"{k.replace('_embedder', '')}={scorer.get(k)}" for k in (
                  "segment_text_embedder", "frame_embedder", "keyframe_embedder",
                  "similarity_embedder")),
              "gold": m.config.get("gold_root", "?")},
    )
    if not summary:
        rep.notice("error", "summary.json is missing: the run did not finish scoring.")
        return rep
    if not official:
        rep.notice("warning", "These numbers come from non-official encoders, judge or "
                   "settings; they are not comparable with the paper's Track-A table.")
    if not scorer.get("same_view"):
        rep.notice("info", "The same-view question was not asked (same_view off): R_V and "
                   "SelEff are not defined and show as n/a.")
    if summary.get("missing"):
        rep.notice("warning", f"{len(summary['missing'])} film(s) had no usable video and were "
                   "not scored: " + ", ".join(list(summary["missing"])[:10]))
    if summary.get("errors"):
        rep.notice("error", f"{len(summary['errors'])} film(s) failed to score: "
                   + "; ".join(f"{f}: {e}" for f, e in summary["errors"][:3]))
    n_unparsable = sum((summary.get("unparsable") or {}).values())
    if n_unparsable:
        rep.notice("warning", f"{n_unparsable} reference answer(s) were unparsable: each counts "
                   "in k and shows nothing (see the unparsable column).")
    n_dropped = sum(sum(d.values()) for d in (summary.get("dropped") or {}).values())
    if n_dropped:
        rep.notice("warning", f"the causal guard dropped {n_dropped} reference(s): see "
                   "'Judge questions and the causal guard'.")

    sec = rep.section(
        f"Track-A table (K = {budget})",
        "Per segment: Prec = share of the k references showing an entity present in the "
        "segment; Recall = share of the candidates C (present minus first appearances) "
        "shown by some reference; F1 from the two; R_V = share of correct references "
        "repeating an already covered (entity, view); R_S = mean same-entity cosine of the "
        "references (similarity encoder); SelEff = Prec x (1 - R_V); refs/seg = references "
        "handed over. Film means are unweighted over its segments; a dataset's value is the "
        "mean over its films. The full rules are in run.json's `protocol.metrics`.")
    sec.add(_table(summary))
    note = summary.get("precision_note")
    if note:
        sec.add(Markdown(f"**Precision note.** {note}."))

    _budget_section(rep, summary)
    _judge_section(rep, summary)

    rows = run.scores()
    stored = film_responses(run, rows)
    lang = scorer.get("lang", "zh")
    order = list(scorer.get("policies") or summary.get("overall") or [])
    films, golds, why_not = [], {}, {}
    for r in rows:
        item = stored.get(r["film_id"])
        if item is None:
            continue
        gold, reason = load_gold_for(run, item["request"], lang)
        golds[r["film_id"]] = gold
        if reason:
            why_not[r["film_id"]] = reason
        films.append((r["film_id"], _in_order(item["response"].get("details", {}), order), gold))
    picks = choose_segments(films, budget)
    rep.section(
        "Chosen segments",
        "At most two segments, shown reference by reference. Rule: (1) the first segment, in film "
        "order, tagged re-appearance or scene-return whose candidate set C is not empty; "
        "(2) among the other segments with C not empty, the one where the policies' recall "
        f"at K = {budget} spreads most (max minus min; ties to the earliest). Labels are the "
        "judge's entity ids per reference, or *unparsable*.")
    for film_id, reason in why_not.items():
        rep.notice("info", f"{film_id}: {reason}; its chosen segments show no candidates or "
                   "scenario tags, and disagreement is measured in distinct entities shown.")
    details = {f: d for f, d, _ in films}
    for pick in picks:
        _segment_section(rep, run, pick, details[pick.film_id], golds.get(pick.film_id), budget)
    return rep
