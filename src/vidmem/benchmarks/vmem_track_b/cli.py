"""Track-B's command-line options; :func:`scorer_config` turns them into the configuration.

The offline judge's card deck defaults to ``<gold>/_cards``, where ``vidmem sim build
vmem_track_b`` writes it (:mod:`vidmem.benchmarks.sim_deck`).
"""

from __future__ import annotations

from pathlib import Path

from vidmem.benchmarks.contract import CliOption
from vidmem.benchmarks.options import backend_options_for
from vidmem.benchmarks.sim_deck import command_root, with_default_deck
from vidmem.benchmarks.vmem_track_b.config import ScorerConfig, parse_conditions
from vidmem.benchmarks.vmem_track_b.stats import STATS_OPTIONS as _STATS

STORIES = _STATS[0]
VALIDATE_OPTIONS = (STORIES,)
STATS_OPTIONS = (STORIES,)
SCORER_OPTIONS = (
    CliOption("preset", ("--preset", "--scorer"), str, "offline",
              "official (judge/openai) or offline (judge/sim-cards, the sim card deck)."),
    CliOption("conditions", ("--conditions",), str | None, None,
              "Comma-separated condition folders; 'none' is the baseline of every difference. "
              "Default: run --preset offline: none,seg_uniform,seg_dino_key,last_seen (text_frame "
              "and seg_frame need a text-image embedder); --preset official: the card's six; "
              "score: the card's six that the rollouts folder holds (the others are named)."),
    STORIES,
    CliOption("index_base", ("--index-base",), int, 1,
              "1: seg_001/001/1 is the first segment (the release); 0: file k is segment k+1."),
    CliOption("seed", ("--seed",), int, 0, "Roster seed (decoys and line order)."),
    CliOption("n_resamples", ("--bootstrap-resamples",), int, 2000,
              "Draws of the paired story bootstrap.", min=1),
    CliOption("bootstrap_seed", ("--bootstrap-seed",), int, 20260925,
              "Seed of the paired story bootstrap."),
    CliOption("judge", ("--judge",), str | None, None, "Judge backend (family/variant)."),
    CliOption("backend_opt", ("--backend-opt",), list[str] | None, None,
              "NAME:key=value, e.g. judge/sim-cards:weights=DECK (default: GOLD/_cards, "
              "where vidmem sim build writes it) or judge/openai:base_url=URL."),
    CliOption("model_dir", ("--model-dir",), Path | None, None, "Where local weights live.",
              envvar="VIDMEM_MODEL_DIR"),
)


def scorer_config(preset: str = "offline", conditions: str | None = None,
                  stories: str | None = None, index_base: int = 1, seed: int = 0,
                  n_resamples: int = 2000, bootstrap_seed: int = 20260925,
                  judge: str | None = None, backend_opt: list[str] | None = None,
                  model_dir: Path | None = None, root: Path | None = None) -> ScorerConfig:
    """The preset's configuration with the command line's overrides (``root``: the story
    root, where the offline judge's deck is looked for; default: the command's ``--gold``)."""
    cfg = ScorerConfig.from_preset(
        preset, conditions=parse_conditions(conditions), stories=stories,
        index_base=index_base, seed=seed, n_resamples=n_resamples,
        bootstrap_seed=bootstrap_seed, judge=judge)
    opts = backend_options_for([cfg.judge], backend_opt, None, model_dir)
    opts = with_default_deck(opts, cfg.judge, root or command_root())
    return ScorerConfig.from_dict({**cfg.to_dict(),
                                   "backend_options": {k: v for k, v in opts.items() if v}})
