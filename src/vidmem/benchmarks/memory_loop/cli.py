"""`vidmem validate|requests|score|run memory_loop`: parse options and call the runner."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from vidmem.cli.common import JsonOpt, QuietOpt, console, parse_backend_option, print_json
from vidmem.errors import UserInputError

Root = Annotated[Path, typer.Option("--root", help="Memory-loop root: cases.jsonl + start_images/.")]
Out = Annotated[Path, typer.Option("--out", help="Run directory to write.")]
Scorer = Annotated[str, typer.Option("--scorer", help="official (DINOv2) or offline (classic/hsv-lbp proxy).")]
Embedder = Annotated[str | None, typer.Option("--embedder", help="Override the preset's image embedder (family/variant).")]
BackendOpt = Annotated[list[str] | None, typer.Option("--backend-opt", help="NAME:key=value, e.g. dinov2/base:weights=/models/dinov2-base.")]
Device = Annotated[str | None, typer.Option("--device", help="cpu, cuda, cuda:1 ... for the embedder.")]
ModelDir = Annotated[Path | None, typer.Option("--model-dir", envvar="VIDMEM_MODEL_DIR", help="Where local weights live.")]
Radius = Annotated[float | None, typer.Option("--pose-radius", help="Revisit pose radius (protocol 0.15; other values are non-official).")]
RotW = Annotated[float | None, typer.Option("--rotation-weight", help="Rotation weight of the pose distance (protocol 1.0).")]
MaxPairs = Annotated[int | None, typer.Option("--max-pairs", help="Pairs kept per video (protocol 24).")]
TRef = Annotated[float | None, typer.Option("--t-ref", help="Half-life reference window, seconds (protocol 60).")]
Workers = Annotated[int, typer.Option("--workers", min=1, help="Worker processes.")]
Resume = Annotated[bool, typer.Option("--resume", help="Continue an interrupted run.")]
Overwrite = Annotated[bool, typer.Option("--overwrite", help="Replace an existing run directory.")]
AllowMissing = Annotated[bool, typer.Option("--allow-missing", help="Score the cases that have a video; list the others as missing.")]


def _scorer_config(scorer: str, embedder: str | None, backend_opt: list[str] | None,
                   device: str | None, model_dir: Path | None, radius: float | None,
                   rotation_weight: float | None, max_pairs: int | None,
                   t_ref: float | None) -> Any:
    from vidmem.benchmarks.memory_loop.scorer import ScorerConfig
    from vidmem.registry import BACKENDS

    cfg = ScorerConfig.from_preset(scorer, embedder=embedder, pose_radius=radius,
                                   rotation_weight=rotation_weight, max_pairs=max_pairs,
                                   t_ref_seconds=t_ref)
    opts: dict[str, Any] = {}
    if device:
        opts["device"] = device
    if model_dir and BACKENDS.get(cfg.embedder).extra == "models":
        opts["model_dir"] = str(model_dir)
    for spec in backend_opt or []:
        name, key, value = parse_backend_option(spec)
        if name != cfg.embedder:
            raise UserInputError(f"--backend-opt {spec!r}: '{name}' is not this run's embedder",
                                 hint=f"this run embeds with {cfg.embedder}")
        opts[key] = value
    return ScorerConfig(**{**cfg.__dict__, "backend_options": {cfg.embedder: opts} if opts else {}})


def register(run_app: typer.Typer, score_app: typer.Typer, requests_app: typer.Typer,
             validate_app: typer.Typer) -> None:
    @validate_app.command("memory_loop")
    def validate_memory_loop(
        root: Root,
        shallow: Annotated[bool, typer.Option("--shallow", help="Skip opening images and pose tracks.")] = False,
        as_json: JsonOpt = False,
    ) -> None:
        """List every problem of a memory-loop dataset at once (exit 1 if any error)."""
        from vidmem.benchmarks.memory_loop import benchmark as runner

        report = runner.validate(root, deep=not shallow)
        if as_json:
            print_json({"ok": report.ok, "problems": [p.__dict__ for p in (*report.errors, *report.warnings)]})
        else:
            console.print(report.format(limit=1000) if report.problems else
                          f"no problems found ({report.n_cases} cases)", highlight=False)
        if not report.ok:
            raise typer.Exit(1)

    @requests_app.command("memory_loop")
    def requests_memory_loop(
        root: Root,
        out: Annotated[Path, typer.Option("--out", help="Manifest to write (JSONL, one request per case).")],
        videos: Annotated[Path, typer.Option("--videos", help="Where generators must write <case_id>.mp4.")] = Path("videos"),
        seed: Annotated[int, typer.Option("--seed", help="Generation seed written into every request.")] = 0,
    ) -> None:
        """Write one generation request per case, for any generator to fill."""
        from vidmem.benchmarks.memory_loop import benchmark as runner

        n = runner.write_requests(root, out, videos.resolve(), seed=seed)
        console.print(f"{n} requests -> {out}; then: vidmem score memory_loop --root {root} "
                      f"--videos {videos} --out RUN", highlight=False)

    def _common(root: Path, videos: Path | None, out: Path, gen: tuple[str, dict[str, Any]] | None,
                cfg: Any, allow_missing: bool, workers: int, resume: bool, overwrite: bool,
                quiet: bool, as_json: bool) -> None:
        from vidmem.benchmarks.memory_loop import benchmark as runner
        from vidmem.benchmarks.memory_loop.data import find_videos, load_memory_loop
        from vidmem.cli.benchmark_flow import score_or_run

        score_or_run(runner, load_memory_loop(root), videos=videos, out=out, gen=gen, cfg=cfg,
                     allow_missing=allow_missing, find_videos=find_videos,
                     failed_what="case video(s)",
                     failed_hint="fix the generator and rerun with --resume, or pass "
                     "--allow-missing to score the others",
                     workers=workers, resume=resume, overwrite=overwrite, quiet=quiet,
                     as_json=as_json, print_options={"highlight": False})

    @score_app.command("memory_loop")
    def score_memory_loop(
        root: Root, out: Out,
        videos: Annotated[Path, typer.Option("--videos", help="Folder holding <case_id>.mp4 (and optional <case_id>.mp4.poses.json).")],
        scorer: Scorer = "offline", embedder: Embedder = None, backend_opt: BackendOpt = None,
        device: Device = None, model_dir: ModelDir = None, pose_radius: Radius = None,
        rotation_weight: RotW = None, max_pairs: MaxPairs = None, t_ref: TRef = None,
        allow_missing: AllowMissing = False, workers: Workers = 1, resume: Resume = False,
        overwrite: Overwrite = False, quiet: QuietOpt = False, as_json: JsonOpt = False,
    ) -> None:
        """Score loop videos generated elsewhere (bring your own videos)."""
        cfg = _scorer_config(scorer, embedder, backend_opt, device, model_dir, pose_radius,
                             rotation_weight, max_pairs, t_ref)
        _common(root, videos, out, None, cfg, allow_missing, workers, resume, overwrite, quiet,
                as_json)

    @run_app.command("memory_loop")
    def run_memory_loop(
        root: Root, out: Out,
        generator: Annotated[str, typer.Option("--generator", help="sim, command, or package.module:Class.")],
        generator_opt: Annotated[list[str] | None, typer.Option("--generator-opt", help="key=value for the generator, e.g. memory=decay:20.")] = None,
        scorer: Scorer = "offline", embedder: Embedder = None, backend_opt: BackendOpt = None,
        device: Device = None, model_dir: ModelDir = None, pose_radius: Radius = None,
        rotation_weight: RotW = None, max_pairs: MaxPairs = None, t_ref: TRef = None,
        allow_missing: AllowMissing = False, workers: Workers = 1, resume: Resume = False,
        overwrite: Overwrite = False, quiet: QuietOpt = False, as_json: JsonOpt = False,
    ) -> None:
        """Generate every case's loop with a generator adapter, then score it."""
        from vidmem.generators.loading import parse_options

        cfg = _scorer_config(scorer, embedder, backend_opt, device, model_dir, pose_radius,
                             rotation_weight, max_pairs, t_ref)
        _common(root, None, out, (generator, parse_options(generator_opt)), cfg, allow_missing,
                workers, resume, overwrite, quiet, as_json)
