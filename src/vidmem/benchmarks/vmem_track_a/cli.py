"""Track-A's command-line options; :func:`scorer_config` turns them into the configuration.

The offline judge's card deck defaults to the one ``vidmem sim build vmem_track_a --out
SIM`` writes to ``SIM/_cards``, whichever gold root of that build is given (``SIM``,
``SIM/SimFilms`` or one film folder; :data:`DECK_PLACES`, :mod:`vidmem.benchmarks.sim_deck`).
"""

from __future__ import annotations

from pathlib import Path

from vidmem.benchmarks.contract import CliOption
from vidmem.benchmarks.options import backend_options_for
from vidmem.benchmarks.sim_deck import DECK_DIR, command_root, with_default_deck
from vidmem.benchmarks.vmem_track_a.config import ScorerConfig, parse_policies

LANG = CliOption("lang", ("--lang",), str, "zh",
                 "Gold language: zh (the release's default files) or en (gold/variants/en/).")
VALIDATE_OPTIONS = (LANG,)
STATS_OPTIONS = (LANG,)
#: where the sim build's deck lies from each gold root it offers: the build root, its
#: dataset folder (SimFilms) or one film folder, nearest first
DECK_PLACES = (DECK_DIR, f"../{DECK_DIR}", f"../../{DECK_DIR}")
SCORER_OPTIONS = (
    CliOption("preset", ("--preset", "--scorer"), str, "offline",
              "official (Qwen3-Embedding, SigLIP 2, DINOv3, judge/openai) or offline (classic "
              "encoders, judge/sim-cards; no text-to-frame policies)."),
    CliOption("policies", ("--policies",), str | None, None,
              "Comma-separated policies (built-in names or module:Class); default: the preset's."),
    CliOption("budget", ("--budget",), int, 16, "Largest K of the budget sweep K = 1..budget.", min=1),
    LANG,
    CliOption("seed", ("--seed",), int, 0, "Seed of the random control."),
    CliOption("segment_text_embedder", ("--segment-text-embedder",), str | None, None,
              "Text embedder ranking past segments (family/variant)."),
    CliOption("frame_embedder", ("--frame-embedder",), str | None, None,
              "Text-image embedder ranking frames against the instruction."),
    CliOption("keyframe_embedder", ("--keyframe-embedder",), str | None, None,
              "Image embedder of the farthest-point keyframes."),
    CliOption("similarity_embedder", ("--similarity-embedder",), str | None, None,
              "Image embedder of R_S (same-entity reference similarity)."),
    CliOption("judge", ("--judge",), str | None, None, "Judge backend (family/variant)."),
    CliOption("same_view", ("--same-view/--no-same-view",), bool | None, None,
              "Ask the judge whether two references of an entity are the same view (R_V)."),
    CliOption("backend_opt", ("--backend-opt",), list[str] | None, None,
              "NAME:key=value, e.g. judge/sim-cards:weights=DECK (default: the sim "
              "build's _cards beside or above the gold)."),
    CliOption("device", ("--device",), str | None, None, "cpu, cuda, cuda:1 ... for the encoders."),
    CliOption("model_dir", ("--model-dir",), Path | None, None, "Where local weights live.",
              envvar="VIDMEM_MODEL_DIR"),
)


def scorer_config(preset: str = "offline", policies: str | None = None, budget: int = 16,
                  lang: str = "zh", seed: int = 0, segment_text_embedder: str | None = None,
                  frame_embedder: str | None = None, keyframe_embedder: str | None = None,
                  similarity_embedder: str | None = None, judge: str | None = None,
                  same_view: bool | None = None, backend_opt: list[str] | None = None,
                  device: str | None = None, model_dir: Path | None = None,
                  root: Path | None = None) -> ScorerConfig:
    """The preset's configuration with the command line's overrides (``root``: the gold
    root, from which the offline judge's deck is looked for; default: the command's
    ``--gold``)."""
    cfg = ScorerConfig.from_preset(
        preset, policies=parse_policies(policies), budget=budget, lang=lang, seed=seed,
        segment_text_embedder=segment_text_embedder, frame_embedder=frame_embedder,
        keyframe_embedder=keyframe_embedder, similarity_embedder=similarity_embedder,
        judge=judge, same_view=same_view)
    encoders = [n for n in cfg.backend_names() if n != cfg.judge]
    judge_specs = [b for b in backend_opt or [] if b.split(":", 1)[0] == cfg.judge]
    opts = backend_options_for(encoders, [b for b in backend_opt or [] if b not in judge_specs],
                               device, model_dir)
    # the judge runs where its server or its own options say, not on --device
    opts.update(backend_options_for([cfg.judge], judge_specs, None, model_dir))
    opts = with_default_deck(opts, cfg.judge, root or command_root(), DECK_PLACES)
    return ScorerConfig.from_dict({**cfg.to_dict(),
                                   "backend_options": {k: v for k, v in opts.items() if v}})
