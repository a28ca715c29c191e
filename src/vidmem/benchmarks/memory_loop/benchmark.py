"""The memory loop as a :class:`~vidmem.benchmarks.contract.Benchmark`: one case, one video.

Every case is one stored item, keyed by the content of what was scored (the case, the
video's and the pose track's file hashes, the scorer configuration), so a killed run
resumes where it stopped and re-scoring an unchanged run is read from the store. The
per-case formulas live in :mod:`vidmem.benchmarks.memory_loop.scorer`, the aggregates
in :mod:`vidmem.benchmarks.memory_loop.aggregate`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console

from vidmem.benchmarks.contract import Benchmark, Outcome, Rollout, ScoreItem
from vidmem.benchmarks.memory_loop import camera_flow, cli
from vidmem.benchmarks.memory_loop import data as md
from vidmem.benchmarks.memory_loop.aggregate import BOOTSTRAP, aggregate
from vidmem.benchmarks.memory_loop.requests import pose_source
from vidmem.benchmarks.memory_loop.schema import BENCHMARK, BENCHMARK_VERSION, CASES_FILE
from vidmem.benchmarks.memory_loop.scorer import PRESETS, MemoryLoopScorer, ScorerConfig
from vidmem.io.hashing import file_sha256
from vidmem.metrics import camera_motion
from vidmem.models.loading import load_backend
from vidmem.models.weights import weights_fingerprint
from vidmem.registry import BACKENDS
from vidmem.runners.manifest import InputLocation
from vidmem.runners.store import RunDir
from vidmem.stats import halflife_model

NOT_CAUSAL = ("A larger half-life value is not a longer causal memory: it says only that, on "
              "these gaps, revisit fidelity fell slowly relative to t_ref. The pairs of one "
              "video are not shown to be independent revisit events "
              "(event_independence_verified: false).")


def is_official(config: ScorerConfig) -> bool:
    """True for the official path with an official embedder and the protocol's settings."""
    return (config.preset == "official" and config.embedder == PRESETS["official"]
            and config.protocol_defaults)


class MemoryLoop(Benchmark):
    name = BENCHMARK
    version = BENCHMARK_VERSION
    title = "Memory loop"
    item_word = "case"
    outputs_word = "videos"
    outputs_flag = "--videos"
    root_help = "Memory-loop root: cases.jsonl + start_images/."
    videos_help = "Folder holding <case_id>.mp4 (and optional <case_id>.mp4.poses.json)."
    allow_missing_help = "Score the cases that have a video; list the others as missing."
    validate_options = cli.VALIDATE_OPTIONS
    requests_options = cli.REQUESTS_OPTIONS
    scorer_options = cli.SCORER_OPTIONS
    summary_printer = "vidmem.benchmarks.memory_loop.benchmark:print_summary"
    report_builder = "vidmem.benchmarks.memory_loop.report:build_memory_loop_report"
    sim_builder = "vidmem.benchmarks.memory_loop.sim_build:build_memory_loop"
    demo_module = "vidmem.benchmarks.memory_loop.demo"

    # ------------------------------------------------------------------ dataset

    def load(self, root: str | Path) -> md.MemoryLoopDataset:
        return md.load_memory_loop(root)

    def validate(self, root: str | Path, *, shallow: bool = False) -> md.MemoryLoopValidation:
        """Check a dataset (opening images and pose tracks unless ``shallow``)."""
        return md.validate_memory_loop(root, deep=not shallow)

    def validation_summary(self, report: md.MemoryLoopValidation) -> str:
        return f"no problems found ({report.n_cases} cases)"

    def items(self, dataset: md.MemoryLoopDataset) -> list[md.MemoryLoopCase]:
        return list(dataset.cases)

    def item_id(self, item: md.MemoryLoopCase) -> str:
        return item.case_id

    # ------------------------------------------------------------------ generation

    def rollouts(self, dataset: md.MemoryLoopDataset, out_dir: Path, *, seed: int = 0,
                 **options: Any) -> list[Rollout]:
        return [Rollout(req, {"start_image_sha256": file_sha256(req.start_image)})
                for req in md.generation_requests(dataset, out_dir, seed=seed)]

    def find_outputs(self, dataset: md.MemoryLoopDataset, videos: str | Path) -> Any:
        return md.find_videos(dataset, videos)

    # ------------------------------------------------------------------ scoring

    def scorer_config(self, **options: Any) -> ScorerConfig:
        return cli.scorer_config(**options)

    def config_from_dict(self, data: Mapping[str, Any]) -> ScorerConfig:
        return ScorerConfig.from_dict(data)

    def score_items(self, dataset: md.MemoryLoopDataset, scan: Any, config: ScorerConfig,
                    run_dir: Path, **requests: Any) -> list[ScoreItem]:
        weights = weights_fingerprint(config.embedder,
                                      dict(config.backend_options.get(config.embedder, {})))
        items = []
        for case in dataset.cases:
            video = scan.found.get(case.case_id)
            if video is None:
                continue
            source, poses = pose_source(dataset, case, video)
            items.append(ScoreItem(case.case_id, {
                "case": case.model_dump(mode="json"), "video": str(video),
                "video_sha256": file_sha256(video), "pose_source": source,
                "poses_path": None if poses is None else str(poses),
                "poses_sha256": None if poses is None or not poses.is_file() else file_sha256(poses),
                "scorer": config.to_dict(), "scorer_version": BENCHMARK_VERSION, "weights": weights,
            }, unkeyed=("video", "poses_path")))
        return items

    def load_backends(self, config: ScorerConfig) -> MemoryLoopScorer:
        options = dict(config.backend_options.get(config.embedder, {}))
        return MemoryLoopScorer(config, embedder=load_backend(config.embedder, options,
                                                              role="image_embedder"))

    def score_item(self, request: Mapping[str, Any], backends: MemoryLoopScorer) -> dict[str, Any]:
        case = md.MemoryLoopCase.model_validate(request["case"])
        resp = backends.score_video(case, request["video"], source=request["pose_source"],
                                    poses_path=request["poses_path"])
        fit = resp["half_life"]
        d = fit["details"]
        gate = resp["return_gate"]
        camera = resp["camera_gate"]
        score = {
            "sample_fidelity": resp["sample_fidelity"], "n_pairs": len(resp["pairs"]),
            "diagnostic": resp["diagnostic"], "pose_source": resp["pose_source"],
            "half_life_status": fit["status"], "half_life_value": fit["value"],
            "half_life_check": d.get("failed_check"), "half_life_reason": fit["reason"],
            "t_half_seconds": d.get("t_half"), "tau_seconds": d.get("tau"), "r2": d.get("r2"),
            "gap_min_seconds": d.get("gap_min"), "gap_max_seconds": d.get("gap_max"),
            "t_half_beyond_gaps": (d.get("t_half_beyond_gaps") if fit["status"] == "official"
                                   else None),
            "t_half_below_gaps": (d.get("t_half_below_gaps") if fit["status"] == "official"
                                  else None),
            # every pair, for vidmem's model-level half-life (one fit over a run's pairs)
            "pair_gap_fidelity": [[p["gap_seconds"], p["fidelity"]] for p in resp["pairs"]],
            "camera_gate_status": camera["status"], "camera_gate_reason": camera["reason"],
            "camera_moving_share": camera["moving_share"],
            "return_gate_passed": None if gate is None else gate["passed"],
            "frames_decoded": resp["frames_decoded"],
        }
        return {"response": resp, "score": score}

    def row(self, item: md.MemoryLoopCase, stored: Any, status: str) -> dict[str, Any]:
        row = {"case_id": item.case_id, "loop_id": item.loop_id, "difficulty": item.difficulty,
               "status": status}
        return {**row, **stored.score} if status == "scored" else row

    def aggregate(self, rows: list[dict[str, Any]], config: ScorerConfig, outcome: Outcome) -> dict[str, Any]:
        return {
            # Cases paired from the planned loop (no pose track) are diagnostic: a run that
            # has any is not an official protocol run.
            "benchmark": BENCHMARK,
            "official": is_official(config) and not any(r.get("diagnostic") for r in rows),
            "official_backends": bool(BACKENDS.get(config.embedder).meta.get("official")),
            "protocol_defaults": config.protocol_defaults, "scorer": config.to_dict(),
            "n_cases": outcome.n_items, **aggregate(rows),
            "diagnostic_cases": [r["case_id"] for r in rows if r.get("diagnostic")],
            "missing": {cid: outcome.missing_reasons.get(cid, "missing") for cid in outcome.missing},
            "errors": [list(e) for e in outcome.errors], "execution": dict(outcome.execution),
            "note": NOT_CAUSAL,
        }

    def preset_backends(self) -> dict[str, dict[str, str | None]]:
        from vidmem.benchmarks.memory_loop.scorer import PRESETS

        return {p: {"score: embedder": name} for p, name in PRESETS.items()}

    def protocol(self, config: ScorerConfig) -> dict[str, Any]:
        scorer = config
        return {
            "revisit_pairs": "frame j is matched to the nearest earlier frame i at least "
            f"{scorer.min_gap_seconds:g} s older and within pose distance {scorer.pose_radius:g} "
            "(ties within 1e-9: the earliest i); the pair is kept only if the camera went >= "
            f"{scorer.excursion_factor:g} x {scorer.pose_radius:g} away from i in between, otherwise j "
            "has no pair (the excursion decides whether the match counts, it does not widen the "
            "search; vidmem.metrics.revisit)",
            "tie_rule": "reference rule (WorldAtlas Arena memory_loop keeps the first minimum): "
            "among earlier frames equally near j (within 1e-9), the earliest is the match, so a "
            "camera resting on a view it came back to pairs each resting frame with the first "
            "sighting; vidmem <= 1.2 took the latest",
            "pose_distance": "|t_i - t_j| / (largest departure from frame 0) + rotation_weight x "
            "geodesic degrees / 180",
            "no_translation_cutoff": "the translation term is 0 when the largest departure from "
            "frame 0 is at most 1e-6 x max(1, largest |camera position|) world units: the "
            "reference's fixed 1e-6 at unit scale, scaled with the coordinates (vidmem's choice) so "
            "position jitter of a camera that only turns never dominates; vidmem <= 1.2 used 1e-9",
            "pose_radius": scorer.pose_radius, "rotation_weight": scorer.rotation_weight,
            "excursion_factor": scorer.excursion_factor, "min_gap_seconds": scorer.min_gap_seconds,
            "max_pairs": scorer.max_pairs,
            "pair_cap": f"reference rule: with more than {scorer.max_pairs} pairs, cut the gap "
            f"range [shortest, longest] into {scorer.max_pairs} equal-width buckets (bucket = "
            f"min(int((gap - shortest) / max(span, 1e-8 s) x {scorer.max_pairs}), "
            f"{scorer.max_pairs - 1})) and keep the nearest pair in pose of each non-empty bucket "
            "(ties: shorter gap, then smaller j); the first bucket keeps the shortest-gap pair "
            "and the last the longest-gap pair instead; fewer pairs remain when buckets are "
            "empty; vidmem <= 1.2 took the pair nearest each of evenly spaced target gaps",
            "pose_track": "the manifest's poses file, else <video>.poses.json; without one the "
            "planned loop resampled to the video's frame count is paired and the case is "
            "diagnostic",
            "gap_seconds": "native frame-index difference / the video stream's fps (probe); the "
            "1 s minimum gap is compared in seconds, not in rounded frames",
            "revisit_fidelity": "clamp(0.7 x (cos(embedding a, embedding b) + 1) / 2 + 0.3 x "
            "clamp(SSIM(a, b), 0, 1), 0, 1); only paired frames are decoded",
            "embedder": scorer.embedder, "official_backends": is_official(scorer),
            "ssim": "reference rule: mean over the R, G and B channels of each channel's SSIM, "
            "Gaussian window sigma 1.5 (11 x 11 taps), population statistics, K1 0.01, K2 0.03, "
            "L 255, the SSIM map averaged over every pixel with the window mirrored at the "
            "borders (OpenCV BORDER_REFLECT_101), float64; equals skimage structural_similarity("
            "channel_axis, gaussian_weights, sigma 1.5, use_sample_covariance False, data_range "
            "255) on the pixels >= 5 px from the border; vidmem <= 1.2 used BT.601 luma, border "
            "cropped",
            "ssim_clamp": "reference rule: SSIM enters revisit fidelity clamped to [0, 1] (a "
            "negative SSIM adds 0); the per-pair rows store the unclamped mean SSIM",
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
                "identifiable_tau": "vidmem check: tau / gap span must lie in [|min centred gap| / "
                "700, 1e4]; a fit whose error keeps falling as tau grows past 1e4 gap spans (a "
                "near-linear decline) is not_applicable with reason 'tau: the fit runs past the "
                "identifiable range ...' (vidmem <= 1.2 said 'converged'), one smallest at the "
                "lower end 'tau: the fit runs below ...'; 'converged' is left for an optimiser "
                "failure with the minimum inside the range",
                "fit_method": "vidmem: Levenberg-Marquardt on all three parameters from profile "
                "starts (the reference sweeps b and fits log(f - b) by a line, with tau <= 10 gap "
                "spans; vidmem keeps its own fit and checks)",
                "backend": "exponential_fit", "event_independence_verified": False,
                "note": NOT_CAUSAL,
            },
            "aggregates": "per loop and overall: mean sample fidelity (bootstrap CI over cases), "
            "mean raw half-life value and median t_half over official fits, not_applicable counts "
            "by failed check; vidmem diagnostics outside the protocol: n_beyond_gaps (official "
            "fits with t_half > the case's longest gap), n_below_gaps (t_half < the case's "
            "shortest gap) and median_t_half_within_gaps_seconds (the median over the official "
            "fits that are neither); the official median is unchanged",
            "t_half_below_gaps": "vidmem flag, beyond the card: an official fit whose t_half is "
            "shorter than the case's shortest gap halved before the first pair, an "
            "extrapolation as unidentifiable as t_half beyond the longest gap "
            "(t_half_beyond_gaps); both are flagged per case and counted, neither changes the "
            "status or the official median",
            "model_half_life": {
                "label": halflife_model.LABEL, "method": halflife_model.METHOD,
                "cases": "camera-evaluable scored cases with pairs, all together (overall) and "
                "per loop; pairs of one case stay together in the bootstrap",
                "grid": f"{halflife_model.N_GRID} decay times log-spaced over [0.1 x shortest "
                "gap (or finest gap spacing), 1e4 x gap span]; a minimum on an edge is "
                "not_applicable (tau)",
                "checks": f">= {halflife_model.MIN_INFORMATIVE_CASES} cases with >= 3 distinct "
                "gaps, interior minimum, positive shared amplitude (decay), R^2 >= 0.3 against "
                "the per-case means",
                "bootstrap": "case-clustered percentile bootstrap (the run's bootstrap settings; "
                "percentiles by numpy inverted_cdf, no interpolation); a draw's minimum refined by a "
                "parabola in log tau through its grid neighbours; draws at the upper edge count "
                "as unbounded (the upper bound is then None)",
                "why": "one 60 s loop spans 2-40 s of gaps, too little to fix tau per case; a "
                "shared tau over a run's cases uses every case's gaps (benchmarks/"
                "bench_halflife_recovery.py compares both on sim truth)",
            },
            "camera_gate": {
                "rule": "vidmem gate, beyond the card: a loop tests memory only if the camera "
                "moved; dense Farneback optical flow between frames "
                f"{camera_motion.STEP_SECONDS:g} s apart (at least one frame), grey, downscaled "
                f"to {camera_flow.MOTION_WIDTH} px wide, mean magnitude in frame widths per "
                "second, against the loop's planned camera path on the same frame grid (protocol "
                "pose distance per step); evaluable when the video moved on >= "
                f"{camera_motion.MIN_MOVING_SHARE:g} of the planned moves, else not_evaluable "
                "with the reason",
                "min_rate_widths_per_second": camera_motion.MIN_RATE,
                "min_rate_reason": "a frozen H.264 video (start image x 480 frames) measures at "
                "most 0.00024 and one with per-frame pixel noise (sigma 4) 0.00058 frame widths/s; "
                "the slowest planned move of the sim's loops (dolly and square loops at a quarter "
                "of their top speed) measures 0.0023-0.0026: the floor sits between",
                "moving_fraction": camera_motion.MOVING_FRACTION,
                "moving_fraction_reason": "a step is a planned move when its planned pose "
                "distance is >= this share of the plan's fastest step, so the eased starts and "
                "stops of each leg and the holds are not asked to move",
                "min_moving_share": camera_motion.MIN_MOVING_SHARE,
                "min_moving_share_reason": "half the planned moves: a generator may keep its own "
                "pace, but a camera that stands still through most of the loop tests no memory",
                "farneback": dict(camera_flow.FARNEBACK),
                "rank_correlation": "Spearman correlation of measured and planned step motion, a "
                "diagnostic only (a generator need not keep the plan's pace)",
                "reporting": "coverage = evaluable / checked cases, shown beside fidelity, and the "
                "mean sample fidelity over evaluable cases (vidmem); never folded into the "
                "protocol's sample fidelity or half-life",
                "planned_path_in_requests": "every generation request carries extras.camera_path "
                "(docs/memory_loop_camera_and_poses.md)",
            },
            "protocol_defaults": scorer.protocol_defaults,
            "bootstrap": BOOTSTRAP,
        }

    def run_config(self, dataset: md.MemoryLoopDataset, config: ScorerConfig) -> dict[str, Any]:
        # The root is only where the data is: cases.jsonl's hash is here, and the item keys
        # hold the videos' and pose tracks' SHA-256s (scoring reads no start image).
        return {"dataset_root": InputLocation(dataset.root), "cases_sha256": file_sha256(dataset.root / CASES_FILE),
                "scorer": config.to_dict()}

    def seeds(self, config: ScorerConfig) -> dict[str, int]:
        return {"bootstrap": BOOTSTRAP["seed"]}

    def backend_infos(self, backends: MemoryLoopScorer) -> dict[str, Any]:
        return {"embedder": backends.embedder.info()}


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
                  f"{_ci(sf)} over {sf['n']} of {result['n_cases']} cases; half-life official on {hl['n_official']} of "
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
    cam = o.get("camera_gate")
    if cam:
        fe = o["sample_fidelity_camera_evaluable"]
        console.print(f"camera compliance (vidmem gate): {cam['n_evaluable']} of {cam['n_checked']} "
                      f"cases evaluable (coverage {_fmt(cam['coverage'])}); fidelity over them "
                      f"{_fmt(fe['mean'])} {_ci(fe)}"
                      + (f"; not evaluable: {cam['not_evaluable']}" if cam["not_evaluable"] else ""))
    mh = o.get("model_half_life")
    if mh:
        console.print("model-level half-life (vidmem estimate, not the protocol's): "
                      + (f"t_half {_fmt(mh['t_half_seconds'], '.1f')} s "
                         f"\\[{_fmt(mh['ci_low_seconds'], '.1f')}, {_fmt(mh['ci_high_seconds'], '.1f')}] "
                         f"over {mh['n_cases']} cases" if mh["status"] == "estimate"
                         else f"not_applicable ({mh['reason']})"))
    if result["diagnostic_cases"]:
        console.print(f"[yellow]{len(result['diagnostic_cases'])} diagnostic case(s)[/yellow]: "
                      "no pose track, pairs from the planned loop")
    if result["missing"]:
        console.print(f"[yellow]{len(result['missing'])} case video(s) missing[/yellow], not scored")
    if result["errors"]:
        console.print(f"[red]{len(result['errors'])} case(s) failed to score[/red] (left out of "
                      "the mean); first: "
                      f"{result['errors'][0]}")
    console.print(f"note: {NOT_CAUSAL}")
    console.print(f"run: {run.path}")


