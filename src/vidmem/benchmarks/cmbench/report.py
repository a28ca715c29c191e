"""The CMBench report: built from a scored run directory only (run.json, summary,
the item store and the crops the scorer saved)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from vidmem.report.images import side_by_side
from vidmem.report.labels import protocol_label
from vidmem.report.model import Figure, ImageGrid, KeyValues, Report, Table
from vidmem.report.plots import bar_with_ci, line_plot

MAX_EXAMPLES = 24


def _png(path: Path) -> np.ndarray | None:
    return np.asarray(Image.open(path).convert("RGB")) if path.is_file() else None


def _per_frame(run: Any, rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    # The store may also hold items of earlier inputs; show the ones the scores came from.
    keys = {r.get("item_key") for r in rows}
    with run.items() as store:
        return {s.item_id: s.response for s in store.iter_items(kind="score", status="done") if s.key in keys}


def build_cmbench_report(run: Any) -> Report:
    m = run.manifest
    summary = run.summary()
    scorer = summary.get("scorer") or m.config.get("scorer", {})
    official = bool(summary.get("official"))
    rep = Report(
        "CMBench: context-memory recall",
        protocol_label(summary, scorer, official="official protocol backends",
                       other="non-official backends (offline proxy or overrides)"),
        meta={"vidmem": m.vidmem_version, "run": str(run.path), "created": m.created_at, "status": m.status,
              "scorer preset": scorer.get("preset", "?"),
              "backends": ", ".join(str(scorer.get(k)) for k in ("detector", "segmenter", "embedder")),
              "dataset": m.config.get("dataset_root", "?")},
    )
    if summary and not official:  # no summary, no numbers: said below
        rep.notice("warning", "These numbers come from non-official backends; they are not comparable with "
                   "results computed with OWL-ViT + SAM 2 + DINOv2.")
    if summary.get("n_missing_scored_zero"):
        rep.notice("warning", f"{summary['n_missing_scored_zero']} tasks had no continuation and were scored 0 "
                   "(--allow-missing).")
    if summary.get("short_tasks"):
        rep.notice("warning", f"{len(summary['short_tasks'])} continuation(s) are far shorter than "
                   "requested (under half the frames asked; scored as they are): "
                   + ", ".join(summary["short_tasks"][:10]))
    if summary.get("errors"):
        rep.notice("error", f"{len(summary['errors'])} tasks failed to score: "
                   + "; ".join(f"{t}: {e}" for t, e in summary["errors"][:3]))
    if not summary:
        rep.notice("error", "summary.json is missing: the run did not finish scoring.")
        return rep

    s = summary["score"]
    res = rep.section("Score", "Task score: the best cosine over continuation frames between the embedded "
                      "reference crop and the detected target crop (0 when never detected). Benchmark score: "
                      "the mean over tasks, with a 95% percentile bootstrap interval over tasks.")
    res.add(KeyValues({"score": s["mean"], "95% CI": f"[{_f(s['ci_low'])}, {_f(s['ci_high'])}]", "tasks": s["n"]}))
    groups = summary["by_group"]
    res.add(Table(["type", "task_type", "mean", "ci_low", "ci_high", "n"],
                  [[g["type"], g["task_type"], g["mean"], g["ci_low"], g["ci_high"], g["n"]] for g in groups],
                  caption="by type x task_type"))
    if groups:
        res.add(Figure(bar_with_ci([f"{g['type']}/{g['task_type']}" for g in groups], [g["mean"] for g in groups],
                                   [g["ci_low"] if g["ci_low"] is not None else g["mean"] for g in groups],
                                   [g["ci_high"] if g["ci_high"] is not None else g["mean"] for g in groups],
                                   ylabel="score"), caption="mean score with 95% CI", name="groups"))
    if "kv" in summary:
        kv = summary["kv"]
        rep.section("KV pruning and speed", "PR per task = 1 - visible / full historical KV positions, current "
                    "chunk excluded. Headline: mean of per-task PR; pooled ratio shown as a secondary number.").add(
            KeyValues({"PR (mean of per-task)": kv.get("pruning_ratio_mean"),
                       "PR pooled (secondary)": kv.get("pruning_ratio_pooled"),
                       "FPS": kv.get("fps"), "baseline FPS": kv.get("baseline_fps"),
                       "speedup": kv.get("speedup"), "tasks without log": len(kv.get("tasks_without_log", []))}))

    rows = run.scores()
    rep.section("Tasks").add(Table(
        ["task_id", "type", "task_type", "target_label", "status", "score", "best_frame", "n_detected", "n_frames_scored"],
        [[r.get(c) for c in ("task_id", "type", "task_type", "target_label", "status", "score", "best_frame",
                             "n_detected", "n_frames_scored")] for r in rows]))

    per_frame = _per_frame(run, rows)
    ex = rep.section("Examples", "Reference crop next to the best-matching generated crop, and the similarity "
                     "of every scored continuation frame (gaps: target not detected).")
    crops = run.path / "crops"
    panels = []
    for r in rows[:MAX_EXAMPLES]:
        ref = _png(crops / f"{r['task_id']}_ref.png")
        if ref is None:
            continue
        best = _png(crops / f"{r['task_id']}_best.png")
        imgs = [ref] + ([best] if best is not None else [])
        caps = ["reference"] + ([f"best frame {r.get('best_frame')} ({_f(r.get('score'))})"] if best is not None else [])
        panels.append((side_by_side(imgs, caps, height=120), f"{r['task_id']}: {r['target_label']}"))
    if panels:
        ex.add(ImageGrid(panels, columns=3, thumb_size=360))
    curves = {}
    for r in rows[:8]:
        resp = per_frame.get(r["task_id"])
        if resp:
            curves[r["task_id"]] = [np.nan if f["similarity"][0] is None else f["similarity"][0] for f in resp["frames"]]
    if curves:
        n = max(len(v) for v in curves.values())
        ys = {k: v + [np.nan] * (n - len(v)) for k, v in curves.items()}
        ex.add(Figure(line_plot(list(range(n)), ys, xlabel="scored frame", ylabel="cosine to reference",
                                title="per-frame similarity"), caption="first tasks", name="per-frame"))
    return rep


def _f(v: Any) -> str:
    return "n/a" if v is None else f"{float(v):.4f}"
