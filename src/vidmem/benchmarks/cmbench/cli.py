"""`vidmem validate|requests|score|run cmbench`: parse options and call the runner."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from vidmem.cli.common import JsonOpt, QuietOpt, console, parse_backend_option, print_json
from vidmem.errors import UserInputError

Root = Annotated[Path, typer.Option("--root", help="CMBench root: metadata.jsonl + videos/.")]
Out = Annotated[Path, typer.Option("--out", help="Run directory to write.")]
Scorer = Annotated[str, typer.Option("--scorer", help="official (OWL-ViT+SAM 2+DINOv2), direct, or offline (classic proxies).")]
Backend = Annotated[str | None, typer.Option(help="Override the preset's backend (family/variant).")]
BackendOpt = Annotated[list[str] | None, typer.Option("--backend-opt", help="NAME:key=value, e.g. dinov2/base:weights=/models/dinov2-base.")]
Device = Annotated[str | None, typer.Option("--device", help="cpu, cuda, cuda:1 ... for every model backend.")]
ModelDir = Annotated[Path | None, typer.Option("--model-dir", envvar="VIDMEM_MODEL_DIR", help="Where local weights live.")]
Stride = Annotated[int, typer.Option("--stride", min=1, help="Score every N-th continuation frame.")]
Threshold = Annotated[float | None, typer.Option("--threshold", help="Detector score threshold (default: the detector's).")]
Workers = Annotated[int, typer.Option("--workers", min=1, help="Worker processes.")]
Resume = Annotated[bool, typer.Option("--resume", help="Continue an interrupted run.")]
Overwrite = Annotated[bool, typer.Option("--overwrite", help="Replace an existing run directory.")]
AllowMissing = Annotated[bool, typer.Option("--allow-missing", help="Score missing continuations as 0 (and say how many).")]
KvLog = Annotated[Path | None, typer.Option("--kv-log", help="KV-cache log (docs/kv_log_format.md) for PR and FPS.")]
Baseline = Annotated[Path | None, typer.Option("--baseline", help="Full-history baseline run dir for the speedup.")]


def _scorer_config(scorer: str, detector: str | None, segmenter: str | None, embedder: str | None,
                   backend_opt: list[str] | None, device: str | None, model_dir: Path | None,
                   stride: int, threshold: float | None) -> Any:
    from vidmem.benchmarks.cmbench.scorer import ScorerConfig
    from vidmem.registry import BACKENDS

    cfg = ScorerConfig.from_preset(scorer, detector=detector, segmenter=segmenter, embedder=embedder,
                                   stride=stride, detector_threshold=threshold)
    options: dict[str, dict[str, Any]] = {}
    for name in (cfg.detector, cfg.segmenter, cfg.embedder):
        if name is None:
            continue
        opts = options.setdefault(name, {})
        if device:
            opts["device"] = device
        if model_dir and BACKENDS.get(name).extra == "models":
            opts["model_dir"] = str(model_dir)
    for spec in backend_opt or []:
        name, key, value = parse_backend_option(spec)
        if name not in options:
            raise UserInputError(f"--backend-opt {spec!r}: '{name}' is not one of this run's backends",
                                 hint=f"this run uses {', '.join(options)}")
        options[name][key] = value
    return ScorerConfig(**{**cfg.__dict__, "backend_options": options})


def register(run_app: typer.Typer, score_app: typer.Typer, requests_app: typer.Typer, validate_app: typer.Typer) -> None:
    @validate_app.command("cmbench")
    def validate_cmbench(
        root: Root,
        no_probe: Annotated[bool, typer.Option("--no-probe", help="Skip opening the videos.")] = False,
        as_json: JsonOpt = False,
    ) -> None:
        """List every problem of a CMBench dataset at once (exit 1 if any error)."""
        from vidmem.benchmarks.cmbench import benchmark as runner

        report = runner.validate(root, probe_videos=not no_probe)
        if as_json:
            print_json({"ok": report.ok, "problems": [p.__dict__ for p in (*report.errors, *report.warnings)]})
        else:
            console.print(report.format(limit=1000) if (report.errors or report.warnings) else "no problems found")
        if not report.ok:
            raise typer.Exit(1)

    @requests_app.command("cmbench")
    def requests_cmbench(
        root: Root,
        out: Annotated[Path, typer.Option("--out", help="Manifest to write (JSONL, one request per task).")],
        continuations: Annotated[Path, typer.Option("--continuations", help="Where generators must write <task_id>.mp4.")] = Path("continuations"),
    ) -> None:
        """Write one generation request per task, for any generator to fill."""
        from vidmem.benchmarks.cmbench import benchmark as runner

        n = runner.write_requests(root, out, continuations.resolve())
        console.print(f"{n} requests -> {out}; then: vidmem score cmbench --root {root} --videos {continuations}")

    def _score_common(root: Path, videos: Path | None, out: Path, gen: tuple[str, dict[str, Any]] | None, cfg: Any,
                      allow_missing: bool, kv_log: Path | None, baseline: Path | None, workers: int, resume: bool,
                      overwrite: bool, quiet: bool, as_json: bool) -> None:
        from vidmem.benchmarks.cmbench import benchmark as runner
        from vidmem.benchmarks.cmbench.data import find_continuations, load_cmbench
        from vidmem.cli.benchmark_flow import score_or_run

        score_or_run(runner, load_cmbench(root), videos=videos, out=out, gen=gen, cfg=cfg,
                     allow_missing=allow_missing, find_videos=find_continuations,
                     failed_what="continuations",
                     failed_hint="fix the generator and rerun with --resume, or pass --allow-missing to "
                     "score them as 0",
                     workers=workers, resume=resume, overwrite=overwrite, quiet=quiet, as_json=as_json,
                     score_options={"kv_log": kv_log, "baseline": baseline})

    @score_app.command("cmbench")
    def score_cmbench(
        root: Root, out: Out,
        videos: Annotated[Path, typer.Option("--videos", help="Folder holding <task_id>.mp4 continuations.")],
        scorer: Scorer = "offline", detector: Backend = None, segmenter: Backend = None, embedder: Backend = None,
        backend_opt: BackendOpt = None, device: Device = None, model_dir: ModelDir = None, stride: Stride = 1,
        threshold: Threshold = None, allow_missing: AllowMissing = False, kv_log: KvLog = None,
        baseline: Baseline = None, workers: Workers = 1, resume: Resume = False, overwrite: Overwrite = False,
        quiet: QuietOpt = False, as_json: JsonOpt = False,
    ) -> None:
        """Score continuations generated elsewhere (bring your own videos)."""
        cfg = _scorer_config(scorer, detector, segmenter, embedder, backend_opt, device, model_dir, stride, threshold)
        _score_common(root, videos, out, None, cfg, allow_missing, kv_log, baseline, workers, resume, overwrite,
                      quiet, as_json)

    @run_app.command("cmbench")
    def run_cmbench(
        root: Root, out: Out,
        generator: Annotated[str, typer.Option("--generator", help="sim, command, or package.module:Class.")],
        generator_opt: Annotated[list[str] | None, typer.Option("--generator-opt", help="key=value for the generator.")] = None,
        scorer: Scorer = "offline", detector: Backend = None, segmenter: Backend = None, embedder: Backend = None,
        backend_opt: BackendOpt = None, device: Device = None, model_dir: ModelDir = None, stride: Stride = 1,
        threshold: Threshold = None, allow_missing: AllowMissing = False, kv_log: KvLog = None,
        baseline: Baseline = None, workers: Workers = 1, resume: Resume = False, overwrite: Overwrite = False,
        quiet: QuietOpt = False, as_json: JsonOpt = False,
    ) -> None:
        """Generate every continuation with a generator adapter, then score it."""
        from vidmem.generators.loading import parse_options

        cfg = _scorer_config(scorer, detector, segmenter, embedder, backend_opt, device, model_dir, stride, threshold)
        _score_common(root, None, out, (generator, parse_options(generator_opt)), cfg, allow_missing, kv_log,
                      baseline, workers, resume, overwrite, quiet, as_json)
