"""Every Track-B rule a scoring run follows, for run.json's ``protocol`` block."""

from __future__ import annotations

from typing import Any

from vidmem.benchmarks.vmem_track_b import question
from vidmem.benchmarks.vmem_track_b.config import (
    BASELINE,
    DEFAULT_CONDITIONS,
    PRESETS,
    PRIVILEGED,
    ScorerConfig,
)
from vidmem.metrics import track_b
from vidmem.stats import paired_bootstrap

RULES: dict[str, str] = {
    "item": "one story = one stored item = one cluster of the paired story bootstrap; all its "
            "conditions and segments are judged together (one judge_many call per story)",
    "generation": "vidmem run generates each (story, condition) rollout with the closed loop "
                  "(protocol.closed_loop: its own store, K = 3 references, last_seen "
                  "privileged); vidmem score reads rollouts brought by the user",
    "layout": "<rollouts>/<story>/<condition>/<segment>.mp4; <story> = the file stem "
              "(0001_lighthouse_keeper) or the 4-digit id (0001), the stem first; <segment> = "
              "seg_NNN, NNN or N; other files are ignored",
    "index_base": "index base 1 (default): the number is the segment id (seg_001 is the first "
                  "segment); index base 0: file k is segment k + 1. A number outside the range "
                  "of the chosen base is an error naming the file (the hint names the other "
                  "base); two files for one segment, or an .mp4 not named after a number, are "
                  "errors",
    "missing_clip": "a missing condition folder or segment clip is an error naming story, "
                    "condition and segment, unless --allow-missing: then it is scored as "
                    "all-absent (no judge question; every roster entry not present; the "
                    "segment parsed) and counted per condition as judge.missing_clips",
    "allow_missing": "--allow-missing also lists stories without a rollouts folder as missing "
                     "(not scored: the runner's rule for items without outputs)",
    "stories": "--stories selects the cohort before rollouts are looked for (the contract's "
               "select hook): unselected stories need no folder and get no row",
    "conditions": "the condition names are the folder names, in report order; 'none' is the "
                  "baseline of every difference; last_seen is marked privileged",
    "question": "per (condition, segment): segment_request with the segment's sut_prompts "
                "text as plot hint and the run seed; answers read with read_answer",
    "judge_failure": "an answer whose status is not 'ok' (unparsable after the retry, or an "
                     "error) is read as no answer: every entry 'abstain', the segment "
                     "flagged; counted per condition in summary.judge (status_*, unparsable), "
                     "never raised",
    "verdicts": "roster role -> EntryVerdict role; cast entries carry the gold gap, op, "
                "temporal anchor (anchor.type == 'temporal'), flashback, count and "
                "confusable_with; expected_state only where the roster asked the state cue "
                "(every non-flashback gold state, any op), expected_count only where it "
                "asked a count; lookalike = the entity is a present member of an active "
                "look-alike pair; instance_match: the judge's gold id == the entity -> True, "
                "the other member of its pair -> False, a third entity or none -> None (the "
                "reference's tally); a count that is not a whole number >= 0 (or 'abstain') "
                "-> None; forbidden entries carry reason and reference_indirect "
                "(destroyed/deceased only)",
    "storage": "each scored story stores its verdicts per condition as plain JSON (entries "
               "with their non-default fields), the per-condition pooled rates, story "
               "counts and judge counts; every aggregate is recomputed from them without a "
               "judge",
    "differences": "every condition minus none: paired_story_bootstrap on story_counts, the "
                   "vector (dRecall, dPrecision, dAvoid-OK); the same on the (story, segment) "
                   "pairs parsed in both arms (deltas_parsed_in_both: a story with no segment "
                   "parsed in both arms drops out of that bootstrap, counted in "
                   "n_stories_dropped and named in stories_dropped, and the report says how "
                   "many); with no 'none' "
                   "condition no difference is computed",
    "family_differences": "each stress family's headline rate, condition minus none, with the "
                          "same paired story bootstrap over per-story (numerator, denominator) "
                          "counts (family_deltas); the report marks + / - where its interval "
                          "excludes zero (the paper's Table-3 layout)",
    "summary": "per condition: pooled rates (Recall, Precision, F1, Avoid-OK, decoy FPR, "
               "abstain and unparsable), the nine families with Wilson intervals, judge counts",
    "gap_bins": "summary.gap_bins: per condition the recall of required character/prop "
                "returns by absence gap (1-4, 5-29, >= 30 segments; gap 0 apart as "
                "just_seen) with Wilson intervals, and each condition minus none per bin "
                "with the same paired story bootstrap (rules: protocol.gap_bins)",
    "compare": "vidmem compare RUN_A RUN_B: condition A of run A minus condition B of run B "
               "on the stored verdicts of the stories both scored (refused when a shared "
               "story's gold hashes differ, or a run is not Track-B); the paired story "
               "bootstrap with run A's draws, seed and confidence; the vector, the same on "
               "segments parsed in both arms, per family and per gap bin",
}


def protocol_block(config: ScorerConfig) -> dict[str, Any]:
    return {
        "rules": RULES,
        "judge_question": {k: dict(v) for k, v in question.PROTOCOL.items()},
        "judge_prompt": question.segment_prompt().describe(),
        "metrics": {k: dict(v) for k, v in track_b.PROTOCOL.items()},
        "gap_bins": {k: dict(v) for k, v in track_b.GAP_BINS_PROTOCOL.items()},
        "bootstrap": {k: dict(v) for k, v in paired_bootstrap.PROTOCOL.items()},
        "conditions": list(config.conditions), "card_conditions": list(DEFAULT_CONDITIONS),
        "baseline": BASELINE, "privileged": sorted(PRIVILEGED),
        "preset": config.preset, "preset_values": dict(PRESETS[config.preset]),
        "judge": config.judge, "seed": config.seed, "stories": config.stories,
        "index_base": config.index_base, "n_resamples": config.n_resamples,
        "bootstrap_seed": config.bootstrap_seed, "confidence": config.confidence,
    }
