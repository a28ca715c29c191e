"""CMBench runs: generate continuations (closed loop) and/or score them (bring your own).

Every task is one stored item, keyed by the content of what was scored (task, context
and continuation file hashes, scorer configuration), so a killed run resumes where it
stopped and re-scoring an unchanged run is read from the store.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from rich.console import Console

from vidmem.benchmarks.cmbench import data as cd
from vidmem.benchmarks.cmbench.scorer import PRESETS, CMBenchScorer, ScorerConfig
from vidmem.errors import UserInputError
from vidmem.io.hashing import file_sha256
from vidmem.metrics.crop_recall import group_scores
from vidmem.metrics.kv_pruning import speedup
from vidmem.models.loading import load_backend
from vidmem.models.weights import weights_fingerprint
from vidmem.runners import generation
from vidmem.runners.execute import WorkItem, execute
from vidmem.runners.store import RunDir, RunManifest
from vidmem.stats.bootstrap import bootstrap_mean_ci

BENCHMARK = "cmbench"
BENCHMARK_VERSION = "1.0"
SUMMARY_JSON = "summary.json"
BOOTSTRAP = {"n_resamples": 2000, "seed": 0, "confidence": 0.95}


# --------------------------------------------------------------------------- workers


@cache
def _scorer(config_json: str) -> CMBenchScorer:
    cfg = json.loads(config_json)
    opts = cfg.get("backend_options", {})
    config = ScorerConfig(**{k: v for k, v in cfg.items() if k != "fill_rgb"})

    def load(name: str | None, role: str) -> Any:
        if name is None:
            return None
        options = dict(opts.get(name, {}))
        if role == "detector" and config.detector_threshold is not None:
            options["threshold"] = config.detector_threshold
        return load_backend(name, options, role=role)

    return CMBenchScorer(
        config,
        detector=load(config.detector, "detector"),
        segmenter=load(config.segmenter, "segmenter"),
        embedder=load(config.embedder, "image_embedder"),
    )


def _score_item(item: WorkItem) -> dict[str, Any]:
    req = item.request
    task = cd.CMBenchTask.model_validate(req["task"])
    scorer = _scorer(json.dumps(req["scorer"], sort_keys=True))
    resolved = [cd.ResolvedReference(**r) for r in req["references"]]
    refs = scorer.reference_crops(task, req["context"], resolved)
    result = scorer.score_video(task, req["video"], refs)
    crops = Path(req["crops_dir"])
    crops.mkdir(parents=True, exist_ok=True)
    from vidmem.report.images import png_bytes

    (crops / f"{task.task_id}_ref.png").write_bytes(png_bytes(refs[0].crop))
    best_png = crops / f"{task.task_id}_best.png"
    best_png.unlink(missing_ok=True)  # a crop from an earlier video must not outlive it
    if result["best_frame"] is not None:
        from vidmem.io.video import read_frames

        frame = read_frames(req["video"], [result["best_frame"]])[0]
        x0, y0, x1, y1 = result["best_box"]
        best_png.write_bytes(png_bytes(frame[y0:y1, x0:x1]))
    score = {k: result[k] for k in ("score", "best_frame", "best_reference", "n_frames_scored", "n_detected")}
    return {"response": result, "score": score}


# ------------------------------------------------------------------------ entry points


def validate(root: str | Path, *, probe_videos: bool = True) -> cd.ValidationReport:
    return cd.validate_cmbench(root, probe_videos=probe_videos)


def write_requests(root: str | Path, manifest: str | Path, continuations: str | Path) -> int:
    ds = cd.load_cmbench(root)
    return cd.write_manifest(cd.continuation_requests(ds, Path(continuations)), manifest)


def _is_official(config: ScorerConfig) -> bool:
    """The protocol's backends and settings: the official preset, every frame, default threshold."""
    preset = PRESETS["official"]
    return (config.path == "official" and config.stride == 1 and config.detector_threshold is None
            and all(getattr(config, role) == preset[role] for role in ("detector", "segmenter", "embedder")))


def _manifest(ds: cd.CMBenchDataset, scorer: ScorerConfig, extra: dict[str, Any], argv: list[str] | None) -> RunManifest:
    protocol = {
        "task_score": "max over scored continuation frames of cos(embedding(reference crop), embedding(target crop)); 0 when never detected",
        "benchmark_score": "mean over tasks; also by type x task_type; percentile bootstrap CI over tasks",
        "scorer_path": scorer.path,
        "official_backends": _is_official(scorer),
        "crop_background_fill_rgb": [124, 116, 104],
        "detection": "text queries target_label + target_aliases (text detectors) or the reference box crop "
        "(image-guided detectors); best box above the detector threshold per frame",
        "reference_frame": "frame_index when present, else the frame on screen at timestamp_seconds (real PTS)",
        "pixel_box": "multiply by [W,H,W,H], snap within 1e-8, floor top-left, ceil bottom-right, clip",
        "several_references": "best (reference, frame) pair (official tasks have one reference)",
        "bootstrap": BOOTSTRAP,
        "kv_pruning_headline": "mean of per-task PR (card); pooled ratio reported as secondary",
    }
    return RunManifest(
        benchmark=BENCHMARK, benchmark_version=BENCHMARK_VERSION,
        config={"dataset_root": str(ds.root), "metadata_sha256": file_sha256(Path(ds.root) / "metadata.jsonl"),
                "scorer": scorer.to_dict(), **extra},
        seeds={"bootstrap": BOOTSTRAP["seed"]}, protocol=protocol, **({"command": argv} if argv else {}),
    )


def generate(ds: cd.CMBenchDataset, run: RunDir, generator: str, options: dict[str, Any], *,
             workers: int = 1, quiet: bool = False) -> dict[str, Any]:
    """Generate every task's continuation into ``RUN/continuations`` (resumable)."""
    out_dir = run.path / "continuations"
    items = [generation.make_item(req, generator, options, {"context_sha256": file_sha256(req.context_video)})
             for req in cd.continuation_requests(ds, out_dir)]
    with run.items() as store:
        summary = generation.run_generation(store, items, workers=workers, quiet=quiet)
    return {"dir": out_dir, "summary": summary.as_counts(), "errors": list(summary.error_samples)}


def score(ds: cd.CMBenchDataset, run: RunDir, videos: str | Path, scorer: ScorerConfig, *,
          allow_missing: bool = False, kv_log: str | Path | None = None, baseline: str | Path | None = None,
          workers: int = 1, quiet: bool = False) -> dict[str, Any]:
    """Score every task's continuation in ``videos`` into ``run``; return the summary."""
    scan = cd.find_continuations(ds, videos)
    if scan.missing and not allow_missing:
        scan.raise_if_missing()
    opts = scorer.backend_options
    weights = {n: weights_fingerprint(n, dict(opts.get(n, {})))
               for n in (scorer.detector, scorer.segmenter, scorer.embedder) if n is not None}
    items = []
    for task in ds.tasks:
        video = scan.found.get(task.task_id)
        if video is None:
            continue
        context = ds.video_path(task)
        resolved = cd.resolve_references(ds, task)
        items.append(WorkItem.make(task.task_id, "score", {
            "task": task.model_dump(mode="json"), "context": str(context), "context_sha256": file_sha256(context),
            "video": str(video), "video_sha256": file_sha256(video),
            "references": [r.__dict__ for r in resolved], "scorer": scorer.to_dict(),
            "crops_dir": str(run.path / "crops"), "scorer_version": BENCHMARK_VERSION,
            "weights": weights,
        }))
    with run.items() as store:
        done = store.done_keys()
        if any(item.key not in done for item in items):
            # Load the backends here first: a bad option or missing weights is one clear
            # error now, not the same error stored once per task.
            _scorer(json.dumps(scorer.to_dict(), sort_keys=True))
        summary = execute(store, items, _score_item, workers=workers, progress=not quiet, quiet=quiet)
        keys = {i.key for i in items}
        stored = {s.item_id: s for s in store.iter_items(kind="score") if s.key in keys}
    rows = []
    for task in ds.tasks:
        s = stored.get(task.task_id)
        status = "scored" if s is not None and s.status == "done" else ("missing" if task.task_id in scan.missing else "error")
        base = {"task_id": task.task_id, "type": task.type, "task_type": task.task_type, "scene": task.scene,
                "target_label": task.target_label, "status": status}
        if status == "scored":
            rows.append({**base, **s.score, "item_key": s.key})
        else:
            # missing (only reachable with --allow-missing) scores 0; an error has no score
            # and is left out of the mean, and listed in summary["errors"].
            rows.append({**base, "score": 0.0 if status == "missing" else None, "best_frame": None,
                         "best_reference": None, "n_frames_scored": 0, "n_detected": 0})
    run.write_scores(rows)
    errors = [(s.item_id, (s.error or "").splitlines()[0] if s.error else "") for s in stored.values()
              if s.status == "error"]
    result = _aggregate(rows, scorer, scan_missing=list(scan.missing), errors=errors, execution=summary.as_counts())
    if kv_log:
        result["kv"] = _kv_block(cd.read_kv_log(kv_log), [r["task_id"] for r in rows], baseline)
    (run.path / SUMMARY_JSON).write_text(json.dumps(result, indent=2))
    run.set_counts({**summary.as_counts(), "tasks": len(ds.tasks), "missing": len(scan.missing)})
    run.set_status("complete" if summary.ok else "failed")
    return result


def _aggregate(rows: list[dict[str, Any]], scorer: ScorerConfig, **extra: Any) -> dict[str, Any]:
    scored = [r for r in rows if r["status"] in ("scored", "missing")]
    ci = bootstrap_mean_ci([r["score"] for r in scored], confidence=BOOTSTRAP["confidence"],
                           n_resamples=BOOTSTRAP["n_resamples"], seed=BOOTSTRAP["seed"])
    groups = []
    for (typ, tt), sub in group_scores(scored, ["type", "task_type"]).items():
        gci = bootstrap_mean_ci(sub, n_resamples=BOOTSTRAP["n_resamples"], seed=BOOTSTRAP["seed"])
        groups.append({"type": typ, "task_type": tt, **gci.to_dict()})
    return {
        "benchmark": BENCHMARK, "score": ci.to_dict(), "by_group": groups,
        "official": _is_official(scorer), "scorer": scorer.to_dict(),
        "n_tasks": len(rows), "n_missing_scored_zero": sum(r["status"] == "missing" for r in rows),
        **extra,
    }


def _kv_block(log: Any, task_ids: list[str], baseline: str | Path | None) -> dict[str, Any]:
    timing = {t: {"frames": v.continuation_frames, "seconds": v.continuation_seconds}
              for t, v in log.timings.items()}
    block: dict[str, Any] = {
        "pruning_ratio_mean": log.mean_pruning_ratio(), "pruning_ratio_pooled": log.pooled_pruning_ratio(),
        "per_task_pruning_ratio": log.pruning_ratios(), "fps": log.fps(task_ids),
        "timing_by_task": timing, "tasks_without_log": sorted(set(task_ids) - set(log.task_ids)),
    }
    if baseline:
        path = Path(baseline) / SUMMARY_JSON
        try:
            base_timing = (json.loads(path.read_text()).get("kv") or {}).get("timing_by_task") if path.is_file() else None
        except (json.JSONDecodeError, AttributeError):
            base_timing = None
        if not base_timing:
            raise UserInputError(f"baseline run {baseline}: no KV timing in {SUMMARY_JSON}",
                                 hint="pass a cmbench run dir that was scored with --kv-log")
        common = sorted(set(timing) & set(base_timing))
        if not common:
            raise UserInputError(f"baseline run {baseline} has timing for none of this run's tasks")
        frames = sum(base_timing[t]["frames"] for t in common)
        seconds = sum(base_timing[t]["seconds"] for t in common)
        base_fps = frames / seconds if seconds > 0 else None
        run_fps = log.fps(common)
        block.update(baseline=str(baseline), speedup_tasks=len(common), fps_common_tasks=run_fps,
                     baseline_fps=base_fps, speedup=speedup(run_fps, base_fps))
    return block


def open_run(ds: cd.CMBenchDataset, out: str | Path, scorer: ScorerConfig, extra: dict[str, Any], *,
             resume: bool, overwrite: bool, argv: list[str] | None) -> RunDir:
    return RunDir.create(out, _manifest(ds, scorer, extra, argv), resume=resume, overwrite=overwrite)


def record_backends(run: RunDir, scorer: ScorerConfig) -> None:
    """Write the loaded backends' names, weights and hashes into run.json (if loaded)."""
    key = json.dumps(scorer.to_dict(), sort_keys=True)
    if _scorer.cache_info().currsize == 0:
        return
    sc = _scorer(key)
    infos = {}
    for role, b in (("detector", sc.detector), ("segmenter", sc.segmenter), ("embedder", sc.embedder)):
        if b is not None:
            infos[role] = b.info()
    run.set_backends(infos)


def print_summary(console: Console, result: dict[str, Any], run: RunDir) -> None:
    from rich.table import Table

    s = result["score"]
    label = "official protocol backends" if result["official"] else "NON-OFFICIAL backends (offline proxy or overrides)"
    console.print(f"[bold]CMBench[/bold] ({label}): score {_fmt(s['mean'])} "
                  f"{_ci(s['ci_low'], s['ci_high'])} over {s['n']} tasks")
    t = Table(title="by type x task_type", title_justify="left")
    for c in ("type", "task_type", "mean", "95% CI", "n"):
        t.add_column(c)
    for g in result["by_group"]:
        t.add_row(g["type"], g["task_type"], _fmt(g["mean"]), _ci(g["ci_low"], g["ci_high"]), str(g["n"]))
    console.print(t)
    if result["n_missing_scored_zero"]:
        console.print(f"[yellow]{result['n_missing_scored_zero']} missing continuations scored as 0[/yellow]")
    if result.get("errors"):
        console.print(f"[red]{len(result['errors'])} tasks failed to score[/red]; first: {result['errors'][0]}")
    if "kv" in result:
        kv = result["kv"]
        console.print(f"KV pruning ratio (mean of per-task): {_fmt(kv['pruning_ratio_mean'])}; pooled (secondary): "
                      f"{_fmt(kv['pruning_ratio_pooled'])}; FPS {_fmt(kv['fps'])}"
                      + (f"; speedup vs baseline {_fmt(kv.get('speedup'))}" if "speedup" in kv else ""))
    console.print(f"run: {run.path}")


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.4f}"


def _ci(low: float | None, high: float | None) -> str:
    # Square brackets would be read as rich markup; escape them.
    return f"\\[{_fmt(low)}, {_fmt(high)}]"


def build_report(run: RunDir) -> Any:
    from vidmem.benchmarks.cmbench.report import build_cmbench_report

    return build_cmbench_report(run)
