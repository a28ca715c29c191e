"""The memory-loop report: built from a scored run directory only (run.json, summary.json,
scores.jsonl and the per-case responses in the item store)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from vidmem.report.labels import protocol_label
from vidmem.report.model import Figure, KeyValues, Report, Table
from vidmem.report.plots import scatter_with_curve

#: At most this many per-case fidelity-vs-gap figures.
MAX_FIGURES = 36

_NOT_CAUSAL = ("A larger half-life value is **not** a longer causal memory: it says only "
               "that, on these gaps, revisit fidelity fell slowly relative to t_ref. The pairs "
               "of one video are not shown to be independent revisit events "
               "(`event_independence_verified: false`).")


def responses_of(run: Any) -> dict[str, dict[str, Any]]:
    with run.items() as store:
        return {s.item_id: s.response for s in store.iter_items(kind="score", status="done")}


def _curve(details: dict[str, Any], gaps: list[float]) -> tuple[np.ndarray, np.ndarray] | None:
    """The fitted ``f(dt) = a exp(-(dt - a_reference_gap) / tau) + b`` over the gaps."""
    a, b, tau, ref = (details.get(k) for k in ("a", "b", "tau", "a_reference_gap"))
    if None in (a, b, tau, ref) or not gaps or tau <= 0:
        return None
    x = np.linspace(min(gaps), max(gaps), 120)  # no extrapolation beyond the observed gaps
    with np.errstate(all="ignore"):
        y = a * np.exp(-(x - ref) / tau) + b
    return (x, y) if np.all(np.isfinite(y)) else None


def _case_figure(case_id: str, resp: dict[str, Any]) -> Figure | None:
    pairs = resp.get("pairs") or []
    if not pairs:
        return None
    gaps = [p["gap_seconds"] for p in pairs]
    fids = [p["fidelity"] for p in pairs]
    fit = resp["half_life"]
    d = fit["details"]
    curve = _curve(d, gaps)
    cx, cy = curve if curve is not None else ([], [])
    t_half = d.get("t_half") if fit["status"] == "official" else None
    label = ("fit (official)" if fit["status"] == "official"
             else f"fit (not applicable: {d.get('failed_check')})")
    title = f"{case_id}" + (" [diagnostic]" if resp.get("diagnostic") else "")
    fig = scatter_with_curve(gaps, fids, cx, cy, {"t_half": t_half}, xlabel="gap (s)",
                             ylabel="revisit fidelity", title=title, scatter_label="pairs",
                             curve_label=label, figsize=(5.0, 3.2))
    why = fit["reason"] or f"t_half {_f(t_half, '.2f')} s, R^2 {_f(d.get('r2'))}"
    return Figure(fig, caption=f"{case_id}: {fit['status']}; {why}", name=f"case-{case_id}")


def _group_row(label: str, g: dict[str, Any]) -> list[Any]:
    sf, hl = g["sample_fidelity"], g["half_life"]
    na = "; ".join(f"{k}: {v}" for k, v in hl["not_applicable"].items()) or "-"
    return [label, sf["mean"], sf["ci_low"], sf["ci_high"], sf["n"], hl["n_official"],
            hl["value"]["mean"], hl["median_t_half_seconds"], na, g["n_diagnostic"]]


_GROUP_COLUMNS = ["group", "fidelity", "ci_low", "ci_high", "n", "HL official", "HL value (mean)",
                  "t_half median (s)", "not applicable", "diagnostic"]


def build_memory_loop_report(run: Any) -> Report:
    """Build the report of a memory-loop run from its directory.

    Args:
        run: an opened :class:`~vidmem.runners.store.RunDir`.

    Returns:
        A :class:`~vidmem.report.Report`: headline numbers, per-loop and overall tables,
        not-applicable counts with reasons, the case table (diagnostic cases flagged)
        and a fidelity-vs-gap plot per case with the fitted curve and ``t_half``.
    """
    m = run.manifest
    summary = run.summary()
    scorer = summary.get("scorer") or m.config.get("scorer", {})
    rep = Report(
        "Memory loop: revisit fidelity and Memory Half-Life",
        protocol_label(summary, scorer, official="official protocol",
                       other="non-official (offline embedder, overrides or "
                             "non-protocol pairing)"),
        meta={"vidmem": m.vidmem_version, "run": str(run.path), "created": m.created_at,
              "status": m.status, "embedder": scorer.get("embedder", "?"),
              "pose radius": scorer.get("pose_radius"), "max pairs": scorer.get("max_pairs"),
              "t_ref (s)": scorer.get("t_ref_seconds"),
              "dataset": m.config.get("dataset_root", "?")},
    )
    if not summary:
        rep.notice("error", "summary.json is missing: the run did not finish scoring.")
        return rep
    if not summary.get("official_backends"):
        rep.notice("warning", f"Embedder {scorer.get('embedder')} is not the protocol's "
                   "(DINOv2): these numbers are not comparable with official results.")
    if not summary.get("protocol_defaults"):
        rep.notice("warning", "Pairing or t_ref differ from the protocol (radius 0.15, rotation "
                   "weight 1, 3x excursion, 1 s, 24 pairs, t_ref 60 s).")
    diag = summary.get("diagnostic_cases") or []
    if diag:
        rep.notice("warning", f"{len(diag)} diagnostic case(s) had no pose track: their pairs "
                   "come from the planned loop, not from where the camera went: "
                   + ", ".join(diag[:10]) + (" ..." if len(diag) > 10 else ""))
    if summary.get("missing"):
        rep.notice("warning", f"{len(summary['missing'])} case video(s) missing, not scored.")
    if summary.get("errors"):
        rep.notice("error", f"{len(summary['errors'])} case(s) failed to score: "
                   + "; ".join(f"{c}: {e}" for c, e in summary["errors"][:3]))

    o = summary["overall"]
    head = rep.section("Memory Half-Life", "Revisit fidelity of a pair = clamp(0.7 (cos + 1) / 2 "
                       "+ 0.3 SSIM, 0, 1); sample fidelity = mean over the video's pairs. The "
                       "half-life fit f(dt) = a exp(-dt/tau) + b is exploratory; value = "
                       "clamp(t_half / t_ref, 0, 1), reported for official fits only. "
                       + _NOT_CAUSAL)
    head.add(KeyValues({
        "sample fidelity": o["sample_fidelity"]["mean"],
        "95% CI": f"[{_f(o['sample_fidelity']['ci_low'])}, {_f(o['sample_fidelity']['ci_high'])}]",
        "cases with pairs": o["sample_fidelity"]["n"],
        "half-life official fits": f"{o['half_life']['n_official']} of {o['n_scored']}",
        "half-life value (mean over official)": o["half_life"]["value"]["mean"],
        "median t_half (s, official)": o["half_life"]["median_t_half_seconds"],
        "official fits with t_half beyond the longest gap (extrapolated)":
            o["half_life"].get("n_beyond_gaps"),
        "official fits with t_half below the shortest gap (extrapolated)":
            o["half_life"].get("n_below_gaps"),
        "median t_half (s) of official fits within their gaps (vidmem diagnostic)":
            o["half_life"].get("median_t_half_within_gaps_seconds"),
        "camera-evaluable cases (vidmem gate)": _coverage(o.get("camera_gate")),
        "sample fidelity over camera-evaluable cases (vidmem)":
            (o.get("sample_fidelity_camera_evaluable") or {}).get("mean"),
        "diagnostic cases": o["n_diagnostic"],
        "return gate passed": f"{o['return_gate']['passed']} of {o['return_gate']['n']}",
    }))
    rows = [_group_row(g["loop_id"], g) for g in summary["by_loop"]] + [_group_row("overall", o)]
    head.add(Table(_GROUP_COLUMNS, rows, caption="per loop and overall (HL = half-life)"))
    _camera_section(rep, summary)
    _model_section(rep, summary)
    reasons = [[k, v, o["half_life"]["not_applicable_examples"].get(k, "")]
               for k, v in o["half_life"]["not_applicable"].items()]
    rep.section("Not applicable", "Cases whose half-life fit failed a support check, by the "
                "first check that failed.").add(
        Table(["check", "cases", "example reason"], reasons or [["-", 0, ""]]))

    cases = run.scores()
    cols = ["case_id", "loop_id", "status", "diagnostic", "pose_source", "n_pairs",
            "sample_fidelity", "half_life_status", "half_life_value", "t_half_seconds", "r2",
            "gap_min_seconds", "gap_max_seconds", "t_half_beyond_gaps", "t_half_below_gaps",
            "half_life_check", "return_gate_passed", "camera_gate_status", "camera_moving_share"]
    rep.section("Cases", "diagnostic = no pose track; pairs from the planned loop. "
                "t_half_beyond_gaps = t_half exceeds the case's longest gap, t_half_below_gaps "
                "= it is shorter than the case's shortest gap: either way it extends the fitted "
                "curve outside the observed gaps. camera_gate_status = vidmem's camera-compliance "
                "gate (camera_moving_share: share of the planned moves on which the video "
                "moved).").add(
        Table(cols, [[_cell(r.get(c)) for c in cols] for r in cases]))

    responses = responses_of(run)
    sec = rep.section("Fidelity against gap", "Each point is a revisit pair; the curve is the "
                      "fitted exponential and the dashed line t_half (official fits only).")
    shown = 0
    for r in cases:
        resp = responses.get(r["case_id"])
        if resp is None or shown >= MAX_FIGURES:
            continue
        fig = _case_figure(r["case_id"], resp)
        if fig is not None:
            sec.add(fig)
            shown += 1
    if shown < sum(1 for r in cases if r.get("n_pairs")):
        sec.add(KeyValues({"figures shown": shown, "cases with pairs": sum(
            1 for r in cases if r.get("n_pairs"))}, caption="only the first cases are plotted"))
    return rep


def _coverage(cam: dict[str, Any] | None) -> str:
    if not cam:
        return "n/a (rows scored before the gate)"
    return f"{cam['n_evaluable']} of {cam['n_checked']} (coverage {_f(cam['coverage'])})"


def _camera_section(rep: Report, summary: dict[str, Any]) -> None:
    """Camera compliance per loop: coverage beside fidelity, never folded into it."""
    groups = [(g["loop_id"], g) for g in summary["by_loop"]] + [("overall", summary["overall"])]
    if not any(g.get("camera_gate") for _, g in groups):
        return
    rows = []
    for label, g in groups:
        cam, fe = g.get("camera_gate") or {}, g.get("sample_fidelity_camera_evaluable") or {}
        rows.append([label, g["sample_fidelity"]["mean"], cam.get("n_evaluable"),
                     cam.get("n_checked"), cam.get("coverage"), fe.get("mean"), fe.get("ci_low"),
                     fe.get("ci_high"), "; ".join(f"{k}: {v}" for k, v in
                                                  (cam.get("not_evaluable") or {}).items()) or "-"])
    rep.section("Camera compliance (vidmem gate)", "A loop tests memory only if the camera "
                "moved: the video's frame-to-frame optical flow is compared with the loop's "
                "planned camera path, and a near-static video is not_evaluable. The coverage "
                "stands beside the protocol's fidelity and never changes it; the last columns "
                "give the mean fidelity over the evaluable cases.").add(
        Table(["group", "fidelity (all, protocol)", "evaluable", "checked", "coverage",
               "fidelity (evaluable)", "ci_low", "ci_high", "not evaluable"], rows))


def _model_section(rep: Report, summary: dict[str, Any]) -> None:
    """vidmem's model-level half-life, in its own section, apart from the per-case numbers."""
    groups = [(g["loop_id"], g) for g in summary["by_loop"]] + [("overall", summary["overall"])]
    rows = []
    for label, g in groups:
        m = g.get("model_half_life")
        if m:
            rows.append([label, m["status"], m["t_half_seconds"], m["ci_low_seconds"],
                         m["ci_high_seconds"], m["n_cases"], m["n_informative_cases"],
                         m["r2"], _cell(m["t_half_below_gaps"]), _cell(m["t_half_beyond_gaps"]),
                         m["reason"] or m["note"] or ""])
    if not rows:
        return
    rep.section("Model-level half-life (vidmem estimate, not the protocol's)",
                "Beyond the card: one decay time shared by all camera-evaluable cases of a "
                "group, each case with its own amplitude and floor, and a case-clustered "
                "bootstrap interval. It is not the official per-case half-life and is never "
                "mixed with it. " + _NOT_CAUSAL).add(
        Table(["group", "status", "t_half (s)", "ci_low (s)", "ci_high (s)", "cases",
               "cases with >= 3 gaps", "R^2", "below gaps", "beyond gaps", "reason / note"],
              rows))


def _cell(v: Any) -> Any:
    return "yes" if v is True else "no" if v is False else v


def _f(v: Any, spec: str = ".4f") -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    return format(float(v), spec)
