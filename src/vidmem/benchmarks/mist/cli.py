"""MIST's command-line options; :func:`scorer_config` turns them into the configuration.

The offline judge's card deck defaults to ``<root>/_cards``, where ``vidmem sim build
mist`` writes it (:mod:`vidmem.benchmarks.sim_deck`).
"""

from __future__ import annotations

from pathlib import Path

from vidmem.benchmarks.contract import CliOption
from vidmem.benchmarks.mist.config import DEFAULT_K, MistConfig, parse_arms
from vidmem.benchmarks.options import backend_options_for
from vidmem.benchmarks.sim_deck import command_root, with_default_deck

SCORER_OPTIONS = (
    CliOption("preset", ("--preset", "--scorer"), str, "offline",
              "official (judge/openai, rewriter/openai) or offline (judge/sim-cards with the "
              "sim card deck, rewriter/sim-grammar)."),
    CliOption("arms", ("--arms",), str | None, None,
              "Comma-separated arms (default: baseline,answer_only,open_and_hold,"
              "same_sentence_resample,diagnosis_rewrite,target_withheld_rewrite); baseline "
              "is required."),
    CliOption("k", ("--k", "--tries"), int, DEFAULT_K,
              "Tries per arm (M3-Agent: candidates including the original).", min=1),
    CliOption("seed", ("--seed",), int, 0, "Run seed; every clip's seed derives from it."),
    CliOption("judge", ("--judge",), str | None, None,
              "Gate judge and M3-Agent diagnoser (family/variant)."),
    CliOption("rewriter", ("--rewriter",), str | None, None,
              "M3-Agent rewriter (family/variant)."),
    CliOption("max_rejects", ("--max-rejects",), int, 3,
              "Rewrites M3-Agent's invariant check may refuse per step.", min=0),
    CliOption("fps", ("--fps",), float | None, None, "Requested fps of each shot."),
    CliOption("width", ("--width",), int | None, None, "Requested frame width."),
    CliOption("height", ("--height",), int | None, None, "Requested frame height."),
    CliOption("n_resamples", ("--bootstrap-resamples",), int, 4000,
              "Draws of the paired case bootstrap.", min=1),
    CliOption("bootstrap_seed", ("--bootstrap-seed",), int, 0,
              "Seed of the paired case bootstrap."),
    CliOption("backend_opt", ("--backend-opt",), list[str] | None, None,
              "NAME:key=value, e.g. judge/sim-cards:weights=DECK (default: ROOT/_cards, "
              "where vidmem sim build writes it) or judge/openai:base_url=URL."),
    CliOption("model_dir", ("--model-dir",), Path | None, None, "Where local weights live.",
              envvar="VIDMEM_MODEL_DIR"),
)


def scorer_config(preset: str = "offline", arms: str | None = None, k: int = DEFAULT_K,
                  seed: int = 0, judge: str | None = None, rewriter: str | None = None,
                  max_rejects: int = 3, fps: float | None = None, width: int | None = None,
                  height: int | None = None, n_resamples: int = 4000, bootstrap_seed: int = 0,
                  backend_opt: list[str] | None = None,
                  model_dir: Path | None = None, root: Path | None = None) -> MistConfig:
    """The preset's configuration with the command line's overrides (``root``: the card
    root, where the offline judge's deck is looked for; default: the command's ``--root``)."""
    cfg = MistConfig.from_preset(
        preset, arms=parse_arms(arms), k=k, seed=seed, judge=judge, rewriter=rewriter,
        max_rejects=max_rejects, fps=fps, width=width, height=height,
        n_resamples=n_resamples, bootstrap_seed=bootstrap_seed)
    opts = backend_options_for([cfg.judge, cfg.rewriter], backend_opt, None, model_dir)
    opts = with_default_deck(opts, cfg.judge, root or command_root())
    return MistConfig.from_dict({**cfg.to_dict(),
                                 "backend_options": {k: v for k, v in opts.items() if v}})
