"""The memory loop's command-line options: the scorer preset, the embedder, pairing knobs.

The generic CLI (:mod:`vidmem.cli.benchmark_commands`) builds `vidmem validate|requests|
score|run memory_loop` from these declarations; :func:`scorer_config` turns the parsed
values into the scorer configuration.
"""

from __future__ import annotations

from pathlib import Path

from vidmem.benchmarks.contract import CliOption
from vidmem.benchmarks.memory_loop.scorer import ScorerConfig
from vidmem.benchmarks.options import backend_options_for

VALIDATE_OPTIONS = (
    CliOption("shallow", ("--shallow",), bool, False, "Skip opening images and pose tracks."),
)
REQUESTS_OPTIONS = (
    CliOption("seed", ("--seed",), int, 0, "Generation seed written into every request."),
)
SCORER_OPTIONS = (
    CliOption("preset", ("--preset", "--scorer"), str, "offline", "official (DINOv2) or offline (classic/hsv-lbp proxy)."),
    CliOption("embedder", ("--embedder",), str | None, None,
              "Override the preset's image embedder (family/variant)."),
    CliOption("backend_opt", ("--backend-opt",), list[str] | None, None,
              "NAME:key=value, e.g. dinov2/base:weights=/models/dinov2-base."),
    CliOption("device", ("--device",), str | None, None, "cpu, cuda, cuda:1 ... for the embedder."),
    CliOption("model_dir", ("--model-dir",), Path | None, None, "Where local weights live.",
              envvar="VIDMEM_MODEL_DIR"),
    CliOption("pose_radius", ("--pose-radius",), float | None, None,
              "Revisit pose radius (protocol 0.15; other values are non-official)."),
    CliOption("rotation_weight", ("--rotation-weight",), float | None, None,
              "Rotation weight of the pose distance (protocol 1.0)."),
    CliOption("max_pairs", ("--max-pairs",), int | None, None, "Pairs kept per video (protocol 24)."),
    CliOption("t_ref", ("--t-ref",), float | None, None, "Half-life reference window, seconds (protocol 60)."),
)


def scorer_config(preset: str = "offline", embedder: str | None = None,
                  backend_opt: list[str] | None = None, device: str | None = None,
                  model_dir: Path | None = None, pose_radius: float | None = None,
                  rotation_weight: float | None = None, max_pairs: int | None = None,
                  t_ref: float | None = None) -> ScorerConfig:
    """The scorer configuration of a preset with the command line's overrides."""
    cfg = ScorerConfig.from_preset(preset, embedder=embedder, pose_radius=pose_radius,
                                   rotation_weight=rotation_weight, max_pairs=max_pairs,
                                   t_ref_seconds=t_ref)
    opts = backend_options_for([cfg.embedder], backend_opt, device, model_dir)[cfg.embedder]
    return ScorerConfig(**{**cfg.__dict__, "backend_options": {cfg.embedder: opts} if opts else {}})
