"""CMBench's command-line options: the scorer preset, backend overrides, KV log.

The generic CLI (:mod:`vidmem.cli.benchmark_commands`) builds `vidmem validate|requests|
score|run cmbench` from these declarations; :func:`scorer_config` turns the parsed
values into the scorer configuration.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vidmem.benchmarks.cmbench.scorer import ScorerConfig
from vidmem.benchmarks.contract import CliOption
from vidmem.benchmarks.options import backend_options_for

#: the published adapter's continuation: 64 frames at 16 fps (about 4 s)
REQUEST_FRAMES = 64
REQUEST_FPS = 16.0

REQUESTS_OPTIONS = (
    CliOption("frames", ("--frames",), int, REQUEST_FRAMES,
              "Continuation length asked of the generator, in frames (the published adapter's 64).",
              min=1),
    CliOption("fps", ("--fps",), float, REQUEST_FPS,
              "Continuation frame rate asked of the generator (the published adapter's 16).", min=1e-6),
)
VALIDATE_OPTIONS = (
    CliOption("no_probe", ("--no-probe",), bool, False, "Skip opening the videos."),
)
SCORER_OPTIONS = (
    CliOption("preset", ("--preset", "--scorer"), str, "offline",
              "official (OWL-ViT+SAM 2+DINOv2), direct, or offline (classic proxies)."),
    CliOption("detector", ("--detector",), str | None, None, "Override the preset's detector (family/variant)."),
    CliOption("segmenter", ("--segmenter",), str | None, None, "Override the preset's segmenter (family/variant)."),
    CliOption("embedder", ("--embedder",), str | None, None, "Override the preset's embedder (family/variant)."),
    CliOption("backend_opt", ("--backend-opt",), list[str] | None, None,
              "NAME:key=value, e.g. dinov2/base:weights=/models/dinov2-base."),
    CliOption("device", ("--device",), str | None, None, "cpu, cuda, cuda:1 ... for every model backend."),
    CliOption("model_dir", ("--model-dir",), Path | None, None, "Where local weights live.",
              envvar="VIDMEM_MODEL_DIR"),
    CliOption("stride", ("--stride",), int, 1, "Score every N-th continuation frame.", min=1),
    CliOption("threshold", ("--threshold",), float | None, None,
              "Detector score threshold (default: the detector's)."),
)
SCORE_OPTIONS = (
    CliOption("kv_log", ("--kv-log",), Path | None, None, "KV-cache log (docs/kv_log_format.md) for PR and FPS."),
    CliOption("baseline", ("--baseline",), Path | None, None, "Full-history baseline run dir for the speedup."),
)


def scorer_config(preset: str = "offline", detector: str | None = None, segmenter: str | None = None,
                  embedder: str | None = None, backend_opt: list[str] | None = None,
                  device: str | None = None, model_dir: Path | None = None, stride: int = 1,
                  threshold: float | None = None) -> ScorerConfig:
    """The scorer configuration of a preset with the command line's overrides."""
    cfg = ScorerConfig.from_preset(preset, detector=detector, segmenter=segmenter, embedder=embedder,
                                   stride=stride, detector_threshold=threshold)
    names = [n for n in (cfg.detector, cfg.segmenter, cfg.embedder) if n is not None]
    options: dict[str, Any] = backend_options_for(names, backend_opt, device, model_dir)
    return ScorerConfig(**{**cfg.__dict__, "backend_options": options})
