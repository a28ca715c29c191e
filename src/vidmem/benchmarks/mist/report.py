"""The MIST report, built from a scored run's ``summary.json`` and stored items only.

Sections:

1. gates per arm, one clip per case: setup, leak, reveal, inside (and its last-position
   reading) apart, never their product, and the classes never-open / open-but-wrong /
   correct;
2. the same for keep-best over K tries (the original eligible), labelled an oracle
   estimate, with which candidate was kept;
3. classes per operation family R0/R1/R2, for both selections;
4. differences from the baseline: mean paired difference with the paired case
   bootstrap interval and the Wilcoxon signed-rank p, for reveal and inside;
5. running best-of-K (plot and table, oracle) and the per-try means;
6. continuity: hard cuts per arm, the locked shots and the seams;
7. the M3-Agent chains (:mod:`.report_chains`): per case, each try's last frame,
   diagnosis, old and new instruction and score.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vidmem.benchmarks.mist.config import AGENT_ARMS, BASELINE
from vidmem.metrics.mist_gates import LABELS
from vidmem.report.labels import protocol_label
from vidmem.report.model import Report, Table

__all__ = ["build_mist_report", "delta_cell", "print_audit"]

FAMILY_NAMES = {"R0": "R0 presence/count", "R1": "R1 binding", "R2": "R2 history update"}


def delta_cell(d: Mapping[str, Any] | None) -> str:
    """``+0.250 [+0.100, +0.400]`` from a paired-statistics block; ``n/a`` without one.

    Example:
        >>> delta_cell({"bootstrap": {"mean_diff": 0.25, "ci_low": 0.1, "ci_high": 0.4}})
        '+0.250 [+0.100, +0.400]'
    """
    if not d or d["bootstrap"]["mean_diff"] is None:
        return "n/a"
    b = d["bootstrap"]
    ci = "" if b["ci_low"] is None else f" [{b['ci_low']:+.3f}, {b['ci_high']:+.3f}]"
    return f"{b['mean_diff']:+.3f}{ci}"


def _arm_label(arm: str) -> str:
    if arm == BASELINE:
        return arm
    return f"{arm} (M3-Agent)" if arm in AGENT_ARMS else arm


def _gate_rows(summary: Mapping[str, Any], sel: str) -> list[list[Any]]:
    rows = []
    for arm in summary["arms"]:
        g = summary["arm"][arm][sel]
        rows.append([_arm_label(arm), g["n"], g["setup"], g["leak"], g["reveal"], g["inside"],
                     g["inside_last"], *[g["labels"][k] for k in LABELS], g["n_unscored"]])
    return rows


_GATE_COLS = ["arm", "cases", "setup", "leak", "reveal", "inside", "inside (last)",
              *LABELS, "unscored"]


def _family_table(summary: Mapping[str, Any], sel: str) -> Table:
    fams = sorted(summary.get("families") or {})
    rows = []
    for arm in summary["arms"]:
        by = summary["arm"][arm][sel].get("by_family", {})
        for f in fams:
            b = by.get(f)
            if b is None:
                continue
            rows.append([_arm_label(arm), FAMILY_NAMES.get(f, f), b["n"], b["setup"],
                         b["reveal"], b["inside"], *[b["labels"][k] for k in LABELS]])
    return Table(["arm", "family", "cases", "setup", "reveal", "inside", *LABELS], rows,
                 caption=("one clip per case" if sel == "first" else
                          "keep-best over K tries (oracle estimate)"))


def _delta_rows(summary: Mapping[str, Any]) -> list[list[Any]]:
    rows = []
    for arm in summary["arms"]:
        for sel in ("first", "best"):
            for factor in ("reveal", "inside"):
                d = (summary["deltas"].get(arm) or {}).get(sel, {}).get(factor)
                if d is None:
                    continue
                w = d["wilcoxon"]
                rows.append([_arm_label(arm), "one clip" if sel == "first" else
                             "best-of-K (oracle)", factor, d["n"], delta_cell(d),
                             w["statistic"], w["p_value"], w["n_nonzero"], d["n_dropped"]])
    return rows


def build_mist_report(run: Any) -> Report:
    """The report of a MIST run, from its directory (sections in the module docstring)."""
    from vidmem.report import Figure, line_plot

    m = run.manifest
    summary = run.summary()
    scorer = summary.get("scorer") or m.config.get("scorer", {})
    official = bool(summary.get("official"))
    rep = Report(
        "MIST: setup, leak, reveal and inside, scored apart",
        protocol_label(summary, scorer, official="official protocol",
                       other="non-official (offline judge or rewriter, or "
                             "settings that differ from the protocol)"),
        meta={"vidmem": m.vidmem_version, "run": str(run.path), "created": m.created_at,
              "status": m.status, "preset": scorer.get("preset", "?"),
              "judge": scorer.get("judge"), "rewriter": scorer.get("rewriter"),
              "cards": m.config.get("card_root", "?")},
    )
    if not summary:
        rep.notice("error", "summary.json is missing: the run did not finish scoring.")
        return rep
    if not official:
        rep.notice("warning", "These numbers come from a non-official judge, rewriter or "
                   "settings; they are not comparable with the paper's MIST tables.")
    rep.notice("info", "Every keep-best and best-of-K cell is chosen after generation by the "
               "same judge that reports it: an oracle coverage estimate, not a deployable "
               "critic. A high reveal is not a memory claim.")
    if summary.get("missing"):
        rep.notice("warning", f"{len(summary['missing'])} case(s) had no rollouts folder and "
                   "were not scored: " + ", ".join(list(summary["missing"])[:10]))
    if summary.get("errors"):
        rep.notice("error", f"{len(summary['errors'])} case(s) failed to score: "
                   + "; ".join(f"{c}: {e}" for c, e in summary["errors"][:3]))
    judge = summary.get("judge") or {}
    if judge.get("unreadable"):
        rep.notice("warning", f"{judge['unreadable']} of {judge.get('questions', 0)} judge "
                   "readings were unreadable (unsure, unparsable or an error); they are left "
                   "out of the means.")
    n, k = summary.get("n_cases_scored", 0), summary.get("k")
    sec = rep.section(
        "Gates per arm (one clip per case)",
        "Setup reads the locked first shot, leak the locked gap shot (both shared by every "
        "arm, so they stay flat by construction); reveal and inside read six positions of "
        "the reveal shot (0.90-0.995). Reveal = mean of the readable reveal readings; the "
        "class uses the majority (opened) and the last readable inside reading. The "
        "M3-Agent arms' one clip is their first rewrite.")
    sec.add(Table(_GATE_COLS, _gate_rows(summary, "first"), caption=f"{n} cases"))
    sec = rep.section(
        f"Keep-best over K = {k} tries (oracle estimate)",
        "Per case the candidate with the highest reveal (ties: last-position inside, mean "
        "inside, the earlier try), the original baseline clip always eligible; inside is "
        "read on the clip chosen for reveal.")
    sec.add(Table(_GATE_COLS, _gate_rows(summary, "best"), caption="oracle estimate"))
    sec.add(Table(["arm", "kept original", "kept a new try", "none readable"],
                  [[_arm_label(a), summary["arm"][a]["kept"].get("original", 0),
                    summary["arm"][a]["kept"].get("try", 0),
                    summary["arm"][a]["kept"].get("none", 0)] for a in summary["arms"]]))
    sec = rep.section("Classes per operation family",
                      "Counts per family, never only a product of the factors.")
    sec.add(_family_table(summary, "first"))
    sec.add(_family_table(summary, "best"))
    sec = rep.section(
        "Differences from the baseline",
        "Arm minus the baseline's one clip, per case: mean paired difference with the paired "
        "case bootstrap 95% percentile interval "
        f"({scorer.get('n_resamples', 4000)} resamples, seed {scorer.get('bootstrap_seed', 0)}) "
        "and the two-sided paired Wilcoxon signed-rank test (scipy; zero differences "
        "dropped). Best-of-K rows are oracle estimates.")
    sec.add(Table(["arm", "selection", "factor", "cases", "difference [95% CI]", "Wilcoxon W",
                   "p", "non-zero", "dropped"], _delta_rows(summary)))
    curves = {a: summary["arm"][a]["running_best"]["reveal"] for a in summary["arms"]
              if a != BASELINE}
    if curves and k:
        sec = rep.section(
            "Running best-of-K (oracle estimate)",
            "Mean over cases of the kept clip's reveal among the original and the first k "
            "tries (M3-Agent: its first k candidates, the original first). "
            "Per-try means (pass by pass) are not monotone.")
        base = summary["arm"][BASELINE]["first"]["reveal"]
        series = {a: v + [None] * (k - len(v)) for a, v in curves.items()}
        series["baseline (one clip)"] = [base] * k
        sec.add(Figure(line_plot(list(range(1, k + 1)), series, xlabel="tries k",
                                 ylabel="best-of-k reveal", title="running best-of-K"),
                       caption="oracle estimate: chosen by the reporting judge",
                       name="mist-running-best"))
        sec.add(Table(["arm", *[f"k={j}" for j in range(1, k + 1)]],
                      [[_arm_label(a), *summary["arm"][a]["running_best"]["reveal"]]
                       for a in curves], caption="running best reveal (oracle)"))
        sec.add(Table(["arm", "try", "cases", "reveal", "inside"],
                      [[_arm_label(a), t["try"], t["n"], t["reveal"], t["inside"]]
                       for a in summary["arms"] for t in summary["arm"][a]["per_try"]],
                      caption="per try, no selection"))
    sec = rep.section(
        "Continuity (hard cuts)",
        "A frame pair is a hard cut when the grey (BT.601) frames differ by >= 22 on "
        "average; the seam compares the gap's last frame with the reveal's first.")
    lk = summary.get("locked_hard_cuts", {})
    sec.add(Table(["arm", "clips", "clips with a cut", "cuts", "seam cuts"],
                  [[_arm_label(a), *[summary["arm"][a]["hard_cuts"][c] for c in
                                     ("clips", "clips_with_cut", "cuts", "seam_cuts")]]
                   for a in summary["arms"]],
                  caption=f"locked shots with a cut: setup {lk.get('setup', 0)}, "
                  f"gap {lk.get('gap', 0)}"))
    from vidmem.benchmarks.mist.report_chains import add_chains

    add_chains(rep, run)
    return rep


def print_audit(console: Any, audit: Any) -> None:
    """The audit listing of ``vidmem audit``: per card, arm and shot the target words."""
    from rich.table import Table as RichTable

    table = RichTable(title="MIST prompt-channel audit", title_justify="left")
    for col in ("case", "arm", "shot", "target words found", "verdict"):
        table.add_column(col)
    colours = {"leak": "red", "names_target": "yellow", "target_missing": "yellow",
               "unknown_arm": "yellow"}
    for card in audit.cards:
        for r in card.rows:
            c = colours.get(r.verdict)
            verdict = f"[{c}]{r.verdict}[/{c}]" if c else r.verdict
            table.add_row(r.case_id, r.arm, r.shot, ", ".join(r.terms) or "-", verdict)
    console.print(table)
    for p in audit.problems:
        console.print(str(p), highlight=False, soft_wrap=True)
    n = len(audit.cards)
    leaks = sum(len(c.leaks) for c in audit.cards)
    console.print(f"{n} card(s): " + ("no leak" if audit.ok else f"[red]{leaks} leak(s)[/red]")
                  + "; names_target marks arms that may name s* (answer_only, "
                  "same_sentence_resample, diagnosis_rewrite)", highlight=False)
