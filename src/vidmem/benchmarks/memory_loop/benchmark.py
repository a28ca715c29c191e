"""Memory-loop runs: generate loop rollouts (closed loop) and/or score them (bring your own).

Every case is one stored item, keyed by the content of what was scored (the case, the
video's and the pose track's file hashes, the scorer configuration), so a killed run
resumes where it stopped and re-scoring an unchanged run is read from the store. The
per-case formulas live in :mod:`vidmem.benchmarks.memory_loop.scorer`, the
aggregates in :mod:`vidmem.benchmarks.memory_loop.aggregate`.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from rich.console import Console

from vidmem.benchmarks.memory_loop import data as md
from vidmem.benchmarks.memory_loop.aggregate import BOOTSTRAP, aggregate
from vidmem.benchmarks.memory_loop.requests import pose_source
from vidmem.benchmarks.memory_loop.schema import BENCHMARK, BENCHMARK_VERSION, CASES_FILE
from vidmem.benchmarks.memory_loop.scorer import MemoryLoopScorer, ScorerConfig
from vidmem.io.hashing import file_sha256
from vidmem.models.loading import load_backend
from vidmem.models.weights import weights_fingerprint
from vidmem.registry import BACKENDS
from vidmem.runners import generation
from vidmem.runners.execute import WorkItem, execute
from vidmem.runners.store import RunDir, RunManifest

SUMMARY_JSON = "summary.json"
NOT_CAUSAL = ("A larger half-life value is not a longer causal memory: it says only that, on "
              "these gaps, revisit fidelity fell slowly relative to t_ref. The pairs of one "
              "video are not shown to be independent revisit events "
              "(event_independence_verified: false).")


@cache
def _scorer(config_json: str) -> MemoryLoopScorer:
    config = ScorerConfig.from_dict(json.loads(config_json))
    options = dict(config.backend_options.get(config.embedder, {}))
    return MemoryLoopScorer(config, embedder=load_backend(config.embedder, options,
                                                          role="image_embedder"))


def _score_item(item: WorkItem) -> dict[str, Any]:
    req = item.request
    case = md.MemoryLoopCase.model_validate(req["case"])
    scorer = _scorer(json.dumps(req["scorer"], sort_keys=True))
    resp = scorer.score_video(case, req["video"], source=req["pose_source"],
                              poses_path=req["poses_path"])
    fit = resp["half_life"]
    d = fit["details"]
    gate = resp["return_gate"]
    score = {
        "sample_fidelity": resp["sample_fidelity"], "n_pairs": len(resp["pairs"]),
        "diagnostic": resp["diagnostic"], "pose_source": resp["pose_source"],
        "half_life_status": fit["status"], "half_life_value": fit["value"],
        "half_life_check": d.get("failed_check"), "half_life_reason": fit["reason"],
        "t_half_seconds": d.get("t_half"), "tau_seconds": d.get("tau"), "r2": d.get("r2"),
        "gap_min_seconds": d.get("gap_min"), "gap_max_seconds": d.get("gap_max"),
        "t_half_beyond_gaps": (d.get("t_half_beyond_gaps") if fit["status"] == "official"
                               else None),
        "return_gate_passed": None if gate is None else gate["passed"],
        "frames_decoded": resp["frames_decoded"],
    }
    return {"response": resp, "score": score}


# ------------------------------------------------------------------------ entry points


def validate(root: str | Path, *, deep: bool = True) -> md.MemoryLoopValidation:
    """Check a dataset (opening images and pose tracks unless ``deep=False``)."""
    return md.validate_memory_loop(root, deep=deep)


def write_requests(root: str | Path, manifest: str | Path, videos: str | Path, *,
                   seed: int = 0) -> int:
    """Write one generation request per case to ``manifest``; return the count."""
    ds = md.load_memory_loop(root)
    return md.write_manifest(md.generation_requests(ds, Path(videos), seed=seed), manifest)


def is_official(config: ScorerConfig) -> bool:
    """True for the official path with an official embedder and the protocol's settings."""
    from vidmem.benchmarks.memory_loop.scorer import PRESETS

    return (config.path == "official" and config.embedder == PRESETS["official"]
            and config.protocol_defaults)


def _manifest(ds: md.MemoryLoopDataset, scorer: ScorerConfig, extra: dict[str, Any],
              argv: list[str] | None) -> RunManifest:
    protocol = {
        "revisit_pairs": "frame j is matched to the nearest earlier frame i at least "
        f"{scorer.min_gap_seconds:g} s older and within pose distance {scorer.pose_radius:g} "
        "(ties: the latest i); the pair is kept only if the camera went >= "
        f"{scorer.excursion_factor:g} x {scorer.pose_radius:g} away from i in between, otherwise j "
        "has no pair (the excursion decides whether the match counts, it does not widen the "
        "search; vidmem.metrics.revisit)",
        "pose_distance": "|t_i - t_j| / (largest departure from frame 0) + rotation_weight x "
        "geodesic degrees / 180",
        "pose_radius": scorer.pose_radius, "rotation_weight": scorer.rotation_weight,
        "excursion_factor": scorer.excursion_factor, "min_gap_seconds": scorer.min_gap_seconds,
        "max_pairs": scorer.max_pairs,
        "pair_cap": "spread evenly over gap lengths, shortest and longest always kept",
        "pose_track": "the manifest's poses file, else <video>.poses.json; without one the "
        "planned loop resampled to the video's frame count is paired and the case is "
        "diagnostic",
        "gap_seconds": "native frame-index difference / the video stream's fps (probe)",
        "revisit_fidelity": "clamp(0.7 x (cos(embedding a, embedding b) + 1) / 2 + 0.3 x "
        "SSIM(a, b), 0, 1); only paired frames are decoded",
        "embedder": scorer.embedder, "official_backends": is_official(scorer),
        "ssim": "BT.601 luma, Gaussian window sigma 1.5 (11 x 11), K1 0.01, K2 0.03, L 255",
        "sample_fidelity": "mean over the video's pairs",
        "return_gate": "departed >= 3 x radius from frame 0 and last frame within radius; "
        "diagnostic, never averaged in",
        "half_life": {
            "model": "f(dt) = a exp(-dt / tau) + b on centred, normalised time; t_half = tau ln 2;"
            " raw = clamp(t_half / t_ref, 0, 1)",
            "t_ref_seconds": scorer.t_ref_seconds, "min_pairs": 5, "min_fidelity_range": 0.02,
            "min_r2": 0.3, "min_distinct_gaps": 3,
            "distinct_gaps_decision": "vidmem decision: the protocol asks for > 1 distinct gap; "
            "exactly 2 distinct gaps are not_applicable because the 3-parameter curve then "
            "passes through both group means for every tau",
            "backend": "exponential_fit", "event_independence_verified": False,
            "note": NOT_CAUSAL,
        },
        "aggregates": "per loop and overall: mean sample fidelity (bootstrap CI over cases), "
        "mean raw half-life value and median t_half over official fits, not_applicable counts "
        "by failed check; vidmem diagnostics outside the protocol: n_beyond_gaps (official "
        "fits with t_half > the case's longest gap) and the median t_half of the others",
        "protocol_defaults": scorer.protocol_defaults,
        "bootstrap": BOOTSTRAP,
    }
    config = {"dataset_root": str(ds.root), "cases_sha256": file_sha256(ds.root / CASES_FILE),
              "scorer": scorer.to_dict(), **extra}
    return RunManifest(benchmark=BENCHMARK, benchmark_version=BENCHMARK_VERSION, config=config,
                       seeds={"bootstrap": BOOTSTRAP["seed"]}, protocol=protocol,
                       **({"command": argv} if argv else {}))


def open_run(ds: md.MemoryLoopDataset, out: str | Path, scorer: ScorerConfig,
             extra: dict[str, Any], *, resume: bool, overwrite: bool,
             argv: list[str] | None) -> RunDir:
    """Create (or reopen) the run directory ``out`` for this dataset and scorer."""
    return RunDir.create(out, _manifest(ds, scorer, extra, argv), resume=resume,
                         overwrite=overwrite)


def generate(ds: md.MemoryLoopDataset, run: RunDir, generator: str, options: dict[str, Any], *,
             workers: int = 1, quiet: bool = False, seed: int = 0) -> dict[str, Any]:
    """Generate every case's video into ``RUN/videos`` (resumable)."""
    out_dir = run.path / "videos"
    items = [generation.make_item(req, generator, options, {"start_image_sha256": file_sha256(req.start_image)})
             for req in md.generation_requests(ds, out_dir, seed=seed)]
    with run.items() as store:
        summary = generation.run_generation(store, items, workers=workers, quiet=quiet)
    return {"dir": out_dir, "summary": summary.as_counts(), "errors": list(summary.error_samples)}


def score(ds: md.MemoryLoopDataset, run: RunDir, videos: str | Path, scorer: ScorerConfig, *,
          allow_missing: bool = False, workers: int = 1, quiet: bool = False) -> dict[str, Any]:
    """Score every case's video in ``videos`` into ``run``; write and return the summary."""
    scan = md.find_videos(ds, videos)
    if scan.missing and not allow_missing:
        scan.raise_if_missing()
    weights = weights_fingerprint(scorer.embedder, dict(scorer.backend_options.get(scorer.embedder, {})))
    items = []
    for case in ds.cases:
        video = scan.found.get(case.case_id)
        if video is None:
            continue
        source, poses = pose_source(ds, case, video)
        items.append(WorkItem.make(case.case_id, "score", {
            "case": case.model_dump(mode="json"), "video": str(video),
            "video_sha256": file_sha256(video), "pose_source": source,
            "poses_path": None if poses is None else str(poses),
            "poses_sha256": None if poses is None or not poses.is_file() else file_sha256(poses),
            "scorer": scorer.to_dict(), "scorer_version": BENCHMARK_VERSION, "weights": weights,
        }))
    with run.items() as store:
        if any(item.key not in store.done_keys() for item in items):
            # Load the embedder here first: a bad option or missing weights is one clear
            # error now, not the same error stored once per case.
            _scorer(json.dumps(scorer.to_dict(), sort_keys=True))
        summary = execute(store, items, _score_item, workers=workers, progress=not quiet,
                          quiet=quiet)
        keys = {i.key for i in items}
        stored = {s.item_id: s for s in store.iter_items(kind="score") if s.key in keys}
    rows = []
    for case in ds.cases:
        s = stored.get(case.case_id)
        if s is not None and s.status == "done":
            status = "scored"
        else:
            status = "missing" if case.case_id in scan.missing else "error"
        row = {"case_id": case.case_id, "loop_id": case.loop_id, "difficulty": case.difficulty,
               "status": status}
        rows.append({**row, **s.score} if status == "scored" and s is not None else row)
    run.write_scores(rows)
    errors = [(s.item_id, (s.error or "").splitlines()[0] if s.error else "")
              for s in stored.values() if s.status == "error"]
    result = {
        # Cases paired from the planned loop (no pose track) are diagnostic: a run that has
        # any is not an official protocol run.
        "benchmark": BENCHMARK,
        "official": is_official(scorer) and not any(r.get("diagnostic") for r in rows),
        "official_backends": bool(BACKENDS.get(scorer.embedder).meta.get("official")),
        "protocol_defaults": scorer.protocol_defaults, "scorer": scorer.to_dict(),
        "n_cases": len(ds.cases), **aggregate(rows),
        "diagnostic_cases": [r["case_id"] for r in rows if r.get("diagnostic")],
        "missing": {cid: scan.reasons.get(cid, "missing") for cid in scan.missing},
        "errors": errors, "execution": summary.as_counts(), "note": NOT_CAUSAL,
    }
    (run.path / SUMMARY_JSON).write_text(json.dumps(result, indent=2), encoding="utf-8")
    run.set_counts({**summary.as_counts(), "cases": len(ds.cases), "missing": len(scan.missing)})
    run.set_status("complete" if summary.ok else "failed")
    return result


def record_backends(run: RunDir, scorer: ScorerConfig) -> None:
    """Write the loaded embedder's name, weights and hash into run.json (if loaded)."""
    if _scorer.cache_info().currsize == 0:
        return
    sc = _scorer(json.dumps(scorer.to_dict(), sort_keys=True))
    run.set_backends({"embedder": sc.embedder.info()})


def _fmt(v: float | None, spec: str = ".4f") -> str:
    return "n/a" if v is None else format(v, spec)


def _ci(block: dict[str, Any]) -> str:
    # Square brackets would be read as rich markup; escape them.
    return f"\\[{_fmt(block['ci_low'])}, {_fmt(block['ci_high'])}]"


def print_summary(console: Console, result: dict[str, Any], run: RunDir) -> None:
    """Print the headline numbers and the per-loop table."""
    from rich.table import Table

    label = ("official protocol" if result["official"] else
             "NON-OFFICIAL (offline embedder, overrides or non-protocol pairing)")
    o = result["overall"]
    sf, hl = o["sample_fidelity"], o["half_life"]
    console.print(f"[bold]Memory loop[/bold] ({label}): sample fidelity {_fmt(sf['mean'])} "
                  f"{_ci(sf)} over {sf['n']} cases; half-life official on {hl['n_official']} of "
                  f"{o['n_scored']} (mean value {_fmt(hl['value']['mean'])}, median t_half "
                  f"{_fmt(hl['median_t_half_seconds'], '.1f')} s)")
    t = Table(title="by loop", title_justify="left")
    for c in ("loop_id", "fidelity", "95% CI", "n", "HL official", "HL value", "not applicable"):
        t.add_column(c)
    for g in result["by_loop"]:
        na = ", ".join(f"{k}: {v}" for k, v in g["half_life"]["not_applicable"].items()) or "-"
        t.add_row(g["loop_id"], _fmt(g["sample_fidelity"]["mean"]), _ci(g["sample_fidelity"]),
                  str(g["n_scored"]), str(g["half_life"]["n_official"]),
                  _fmt(g["half_life"]["value"]["mean"]), na)
    console.print(t)
    if result["diagnostic_cases"]:
        console.print(f"[yellow]{len(result['diagnostic_cases'])} diagnostic case(s)[/yellow]: "
                      "no pose track, pairs from the planned loop")
    if result["missing"]:
        console.print(f"[yellow]{len(result['missing'])} case video(s) missing[/yellow], not scored")
    if result["errors"]:
        console.print(f"[red]{len(result['errors'])} case(s) failed to score[/red]; first: "
                      f"{result['errors'][0]}")
    console.print(f"note: {NOT_CAUSAL}")
    console.print(f"run: {run.path}")


def build_report(run: RunDir) -> Any:
    """The run's report (built from the run directory only)."""
    from vidmem.benchmarks.memory_loop.report import build_memory_loop_report

    return build_memory_loop_report(run)
