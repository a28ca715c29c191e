"""CMBench as a :class:`~vidmem.benchmarks.contract.Benchmark`: one task, one continuation.

Every task is one stored item, keyed by the content of what was scored (task, context
and continuation file hashes, scorer configuration, weights), so a killed run resumes
where it stopped and re-scoring an unchanged run is read from the store.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console

from vidmem.benchmarks.cmbench import cli
from vidmem.benchmarks.cmbench import data as cd
from vidmem.benchmarks.cmbench.schema import BENCHMARK
from vidmem.benchmarks.cmbench.scorer import PRESETS, CMBenchScorer, ScorerConfig
from vidmem.benchmarks.contract import Benchmark, Outcome, Rollout, ScoreItem
from vidmem.errors import UserInputError
from vidmem.io.hashing import file_sha256
from vidmem.metrics.crop_recall import group_scores
from vidmem.metrics.kv_pruning import speedup
from vidmem.models.loading import load_backend
from vidmem.models.weights import weights_fingerprint
from vidmem.runners.manifest import InputLocation
from vidmem.runners.store import RunDir
from vidmem.stats.bootstrap import bootstrap_mean_ci

BENCHMARK_VERSION = "1.1"
SUMMARY_JSON = "summary.json"
BOOTSTRAP = {"n_resamples": 2000, "seed": 0, "confidence": 0.95}
#: a continuation with fewer than this share of the requested frames is flagged ``short``
SHORT_SHARE = 0.5


def is_official(config: ScorerConfig) -> bool:
    """The protocol's backends and settings: the official preset, every frame, default threshold."""
    preset = PRESETS["official"]
    return (config.preset == "official" and config.stride == 1 and config.detector_threshold is None
            and all(getattr(config, role) == preset[role] for role in ("detector", "segmenter", "embedder")))


class CMBench(Benchmark):
    name = BENCHMARK
    version = BENCHMARK_VERSION
    title = "CMBench"
    item_word = "task"
    outputs_word = "continuations"
    outputs_flag = "--continuations"
    root_help = "CMBench root: metadata.jsonl + videos/."
    videos_help = "Folder holding <task_id>.mp4 continuations."
    allow_missing_help = "Score missing continuations as 0 (and say how many)."
    validate_options = cli.VALIDATE_OPTIONS
    requests_options = cli.REQUESTS_OPTIONS
    scorer_options = cli.SCORER_OPTIONS
    summary_printer = "vidmem.benchmarks.cmbench.benchmark:print_summary"
    report_builder = "vidmem.benchmarks.cmbench.report:build_cmbench_report"
    sim_builder = "vidmem.benchmarks.cmbench.sim_build:build_cmbench"
    demo_module = "vidmem.benchmarks.cmbench.demo"
    score_options = cli.SCORE_OPTIONS

    # ------------------------------------------------------------------ dataset

    def load(self, root: str | Path) -> cd.CMBenchDataset:
        return cd.load_cmbench(root)

    def validate(self, root: str | Path, *, no_probe: bool = False) -> cd.ValidationReport:
        return cd.validate_cmbench(root, probe_videos=not no_probe)

    def items(self, dataset: cd.CMBenchDataset) -> list[cd.CMBenchTask]:
        return list(dataset.tasks)

    def item_id(self, item: cd.CMBenchTask) -> str:
        return item.task_id

    # ------------------------------------------------------------------ generation

    def rollouts(self, dataset: cd.CMBenchDataset, out_dir: Path, *,
                 frames: int = cli.REQUEST_FRAMES, fps: float = cli.REQUEST_FPS,
                 **options: Any) -> list[Rollout]:
        return [Rollout(req, {"context_sha256": file_sha256(req.context_video)})
                for req in cd.continuation_requests(dataset, out_dir, fps=fps,
                                                    duration_seconds=frames / fps)]

    def find_outputs(self, dataset: cd.CMBenchDataset, videos: str | Path) -> cd.ContinuationScan:
        return cd.find_continuations(dataset, videos)

    # ------------------------------------------------------------------ scoring

    def scorer_config(self, **options: Any) -> ScorerConfig:
        return cli.scorer_config(**options)

    def config_from_dict(self, data: Mapping[str, Any]) -> ScorerConfig:
        return ScorerConfig(**{k: v for k, v in data.items() if k != "fill_rgb"})

    def score_items(self, dataset: cd.CMBenchDataset, scan: Any, config: ScorerConfig,
                    run_dir: Path, *, frames: int = cli.REQUEST_FRAMES,
                    **requests: Any) -> list[ScoreItem]:
        opts = config.backend_options
        weights = {n: weights_fingerprint(n, dict(opts.get(n, {})))
                   for n in (config.detector, config.segmenter, config.embedder) if n is not None}
        items = []
        for task in dataset.tasks:
            video = scan.found.get(task.task_id)
            if video is None:
                continue
            context = dataset.video_path(task)
            resolved = cd.resolve_references(dataset, task)
            items.append(ScoreItem(task.task_id, {
                "task": task.model_dump(mode="json"), "context": str(context),
                "context_sha256": file_sha256(context), "video": str(video),
                "video_sha256": file_sha256(video), "references": [r.__dict__ for r in resolved],
                "scorer": config.to_dict(), "crops_dir": str(run_dir / "crops"),
                "scorer_version": BENCHMARK_VERSION, "weights": weights,
                "requested_frames": frames,
            }, unkeyed=("context", "video", "crops_dir")))
        return items

    def load_backends(self, config: ScorerConfig) -> CMBenchScorer:
        opts = config.backend_options

        def load(name: str | None, role: str) -> Any:
            if name is None:
                return None
            options = dict(opts.get(name, {}))
            if role == "detector" and config.detector_threshold is not None:
                options["threshold"] = config.detector_threshold
            return load_backend(name, options, role=role)

        return CMBenchScorer(config, detector=load(config.detector, "detector"),
                             segmenter=load(config.segmenter, "segmenter"),
                             embedder=load(config.embedder, "image_embedder"))

    def score_item(self, request: Mapping[str, Any], backends: CMBenchScorer) -> dict[str, Any]:
        from vidmem.io.video import read_frames
        from vidmem.report.images import png_bytes

        task = cd.CMBenchTask.model_validate(request["task"])
        resolved = [cd.ResolvedReference(**r) for r in request["references"]]
        refs = backends.reference_crops(task, request["context"], resolved)
        result = backends.score_video(task, request["video"], refs)
        crops = Path(request["crops_dir"])
        crops.mkdir(parents=True, exist_ok=True)
        (crops / f"{task.task_id}_ref.png").write_bytes(png_bytes(refs[0].crop))
        best_png = crops / f"{task.task_id}_best.png"
        best_png.unlink(missing_ok=True)  # a crop from an earlier video must not outlive it
        if result["best_frame"] is not None:
            frame = read_frames(request["video"], [result["best_frame"]])[0]
            x0, y0, x1, y1 = result["best_box"]
            best_png.write_bytes(png_bytes(frame[y0:y1, x0:x1]))
        score = {k: result[k] for k in ("score", "best_frame", "best_reference", "n_frames_scored",
                                        "n_detected", "video_frames")}
        # A 1-frame or 0.1 s continuation would score 0 without a word: say so.
        score["short"] = result["video_frames"] < SHORT_SHARE * request["requested_frames"]
        return {"response": result, "score": score}

    def row(self, item: cd.CMBenchTask, stored: Any, status: str) -> dict[str, Any]:
        base = {"task_id": item.task_id, "type": item.type, "task_type": item.task_type, "scene": item.scene,
                "target_label": item.target_label, "status": status}
        if status == "scored":
            return {**base, **stored.score, "item_key": stored.key}
        # missing (only reachable with --allow-missing) scores 0; an error has no score and
        # is left out of the mean, and listed in summary["errors"].
        return {**base, "score": 0.0 if status == "missing" else None, "best_frame": None,
                "best_reference": None, "n_frames_scored": 0, "n_detected": 0}

    def aggregate(self, rows: list[dict[str, Any]], config: ScorerConfig, outcome: Outcome) -> dict[str, Any]:
        scored = [r for r in rows if r["status"] in ("scored", "missing")]
        ci = bootstrap_mean_ci([r["score"] for r in scored], confidence=BOOTSTRAP["confidence"],
                               n_resamples=BOOTSTRAP["n_resamples"], seed=BOOTSTRAP["seed"])
        groups = []
        for (typ, tt), sub in group_scores(scored, ["type", "task_type"]).items():
            gci = bootstrap_mean_ci(sub, n_resamples=BOOTSTRAP["n_resamples"], seed=BOOTSTRAP["seed"])
            groups.append({"type": typ, "task_type": tt, **gci.to_dict()})
        return {
            "benchmark": BENCHMARK, "score": ci.to_dict(), "by_group": groups,
            "official": is_official(config), "scorer": config.to_dict(),
            "n_tasks": len(rows), "n_missing_scored_zero": sum(r["status"] == "missing" for r in rows),
            "short_tasks": [r["task_id"] for r in rows if r.get("short")],
            "scan_missing": list(outcome.missing), "errors": [list(e) for e in outcome.errors],
            "execution": dict(outcome.execution),
        }

    def summary_extras(self, rows: list[dict[str, Any]], options: Mapping[str, Any]) -> dict[str, Any]:
        if not options.get("kv_log"):
            return {}
        return {"kv": kv_block(cd.read_kv_log(options["kv_log"]), [r["task_id"] for r in rows],
                               options.get("baseline"))}

    def preset_backends(self) -> dict[str, dict[str, str | None]]:
        from vidmem.benchmarks.cmbench.scorer import PRESETS

        return {p: {f"score: {k}": v for k, v in slots.items()} for p, slots in PRESETS.items()}

    def protocol(self, config: ScorerConfig) -> dict[str, Any]:
        return {
            "task_score": "max over scored continuation frames of cos(embedding(reference crop), embedding(target crop)); 0 when never detected",
            "benchmark_score": "mean over tasks; also by type x task_type; percentile bootstrap CI over tasks",
            "preset": config.preset,
            "official_backends": is_official(config),
            "crop_background_fill_rgb": [124, 116, 104],
            "detection": "text queries target_label + target_aliases (text detectors) or the reference box crop "
            "(image-guided detectors); best box above the detector threshold per frame",
            "image_query_upscale": f"image-guided detection: a reference crop whose longer side is under "
            f"{config.image_query_min_side} px (0: off) is searched, with the frames, upscaled by the "
            "smallest integer factor reaching it (at most 4, bicubic), boxes mapped back; keypoint "
            "detectors find too few keypoints on small smooth objects (decided here, issue 26)",
            "reference_frame": "frame_index when present, else the frame on screen at timestamp_seconds (real PTS)",
            "pixel_box": "multiply by [W,H,W,H], snap within 1e-8, floor top-left, ceil bottom-right, clip",
            "several_references": "best (reference, frame) pair (official tasks have one reference)",
            "bootstrap": BOOTSTRAP,
            "kv_pruning_headline": "mean of per-task PR (card); pooled ratio reported as secondary",
            "continuation_request": f"{cli.REQUEST_FRAMES} frames at {cli.REQUEST_FPS:g} fps "
            "(duration = frames / fps), the published adapter's default; --frames/--fps change "
            "it and run.json's config.requests records what was asked",
            "short_continuation": f"flagged (row 'short', summary 'short_tasks') when the video "
            f"has fewer than {SHORT_SHARE:g} x the requested frames; still scored",
        }

    def run_config(self, dataset: cd.CMBenchDataset, config: ScorerConfig) -> dict[str, Any]:
        # The root is only where the data is: item keys hold the videos' SHA-256s.
        return {"dataset_root": InputLocation(dataset.root),
                "metadata_sha256": file_sha256(Path(dataset.root) / "metadata.jsonl"),
                "scorer": config.to_dict()}

    def seeds(self, config: ScorerConfig) -> dict[str, int]:
        return {"bootstrap": BOOTSTRAP["seed"]}

    def backend_infos(self, backends: CMBenchScorer) -> dict[str, Any]:
        return {role: b.info() for role, b in (("detector", backends.detector),
                                               ("segmenter", backends.segmenter),
                                               ("embedder", backends.embedder)) if b is not None}


def kv_block(log: Any, task_ids: list[str], baseline: str | Path | None) -> dict[str, Any]:
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


def print_summary(console: Console, result: dict[str, Any], run: RunDir) -> None:
    from rich.table import Table

    s = result["score"]
    label = "official protocol backends" if result["official"] else "NON-OFFICIAL backends (offline proxy or overrides)"
    console.print(f"[bold]CMBench[/bold] ({label}): score {_fmt(s['mean'])} "
                  f"{_ci(s['ci_low'], s['ci_high'])} over {s['n']} of {result['n_tasks']} tasks")
    t = Table(title="by type x task_type", title_justify="left")
    for c in ("type", "task_type", "mean", "95% CI", "n"):
        t.add_column(c)
    for g in result["by_group"]:
        t.add_row(g["type"], g["task_type"], _fmt(g["mean"]), _ci(g["ci_low"], g["ci_high"]), str(g["n"]))
    console.print(t)
    if result.get("short_tasks"):
        console.print(f"[yellow]{len(result['short_tasks'])} continuation(s) far shorter than "
                      f"requested[/yellow] (under {SHORT_SHARE:g} x the frames asked): "
                      + ", ".join(result["short_tasks"][:5]))
    if result["n_missing_scored_zero"]:
        console.print(f"[yellow]{result['n_missing_scored_zero']} missing continuations scored as 0[/yellow]")
    if result.get("errors"):
        console.print(f"[red]{len(result['errors'])} tasks failed to score[/red] (left out of the mean); "
                      f"first: {result['errors'][0]}")
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


