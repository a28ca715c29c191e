"""Every MIST rule a run follows, for run.json's ``protocol`` block.

The block gathers the rules of every module a run goes through -- cards and audit,
generation, questions, gate arithmetic, aggregation, statistics, hard cuts -- each as
``{rule, reason, source}``, plus the configuration's values (arms, K, seeds, judge,
rewriter, format) and the judge prompt's contract and hash.
"""

from __future__ import annotations

from typing import Any

from vidmem.benchmarks.mist import aggregate, audit, cards, generation, questions
from vidmem.benchmarks.mist.config import (
    AGENT_ARMS,
    BASELINE,
    DEFAULT_K,
    FIXED_ARMS,
    PRESETS,
    MistConfig,
)
from vidmem.benchmarks.mist.schema import ARMS, ARMS_NAMING_TARGET, ARMS_WITHOUT_TARGET
from vidmem.metrics import hard_cuts, mist_gates
from vidmem.metrics.mist_gates import REVEAL_POSITIONS
from vidmem.stats import paired_cases

RULES: dict[str, dict[str, str]] = {
    "item": {
        "rule": "one case = one rollout = one stored score item = one cluster of the paired "
                "statistics; all its arms and tries are judged together (one judge_many call)",
        "reason": "paired statistics over cases; the locked shots are shared by every arm",
        "source": "PROTOCOLS.md section 5; decided here",
    },
    "layout": {
        "rule": "<rollouts>/<case>/locked/{setup,gap}.mp4 and <rollouts>/<case>/<arm>/"
                "try_<k>.mp4; a missing clip is an error naming case, arm and try",
        "reason": "brought clips are scored exactly like generated ones",
        "source": "decided here (benchmarks/mist/scorer.py)",
    },
    "oracle": {
        "rule": "every keep-best / best-of-K cell is labelled an oracle estimate",
        "reason": "chosen after generation with the reporting scorer",
        "source": "PROTOCOLS.md section 5; seed 001 App. A",
    },
    "official": {
        "rule": "a run is labelled official only with the official preset and every "
                "protocol default (six arms, K = 5, 4000 resamples, seed 0, threshold 0.5)",
        "reason": "offline proxies (judge/sim-cards, rewriter/sim-grammar) are not the "
                  "paper's judge and LLM",
        "source": "ARCHITECTURE.md 'Names'",
    },
}


def protocol_block(config: MistConfig) -> dict[str, Any]:
    """The protocol block of a run with ``config``."""
    def rules(table: dict[str, Any]) -> dict[str, Any]:
        return {k: dict(v) for k, v in table.items()}

    return {
        "rules": rules(RULES),
        "cards": rules(cards.PROTOCOL),
        "audit": rules(audit.PROTOCOL),
        "generation": rules(generation.PROTOCOL),
        "questions": rules(questions.PROTOCOL),
        "gates": rules(mist_gates.PROTOCOL),
        "aggregate": rules(aggregate.PROTOCOL),
        "statistics": rules(paired_cases.PROTOCOL),
        "hard_cuts": rules(hard_cuts.PROTOCOL),
        "judge_prompt": questions.gate_prompt().describe(),
        "positions": list(REVEAL_POSITIONS),
        "arms": list(config.arms), "card_arms": list(ARMS), "baseline": BASELINE,
        "fixed_arms": [a for a in FIXED_ARMS if a in config.arms],
        "agent_arms": [a for a in AGENT_ARMS if a in config.arms],
        "arms_naming_target": list(ARMS_NAMING_TARGET),
        "arms_without_target": list(ARMS_WITHOUT_TARGET),
        "k": config.k, "protocol_k": DEFAULT_K, "seed": config.seed,
        "preset": config.preset, "preset_values": dict(PRESETS[config.preset]),
        "judge": config.judge, "rewriter": config.rewriter, "max_rejects": config.max_rejects,
        "format": {"shot_seconds": 5.0, "fps": config.fps, "width": config.width,
                   "height": config.height},
        "setup_frames": config.setup_frames, "leak_frames": config.leak_frames,
        "threshold": config.threshold, "n_resamples": config.n_resamples,
        "bootstrap_seed": config.bootstrap_seed, "confidence": config.confidence,
        "protocol_defaults": config.protocol_defaults,
    }
