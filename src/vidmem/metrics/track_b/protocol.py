"""Track-B :data:`PROTOCOL`: every scoring rule, with its reason and its source.

Part of :mod:`vidmem.metrics.track_b` (the overview is there); the run log records it.
"""

from __future__ import annotations

_REF = "Suchenl/VMem-Bench"
_E2E = f"{_REF} src/vmem_bench/scoring/end2end_coverage.py"
_README = f"{_REF} src/vmem_bench/scoring/README.md (Track B table)"
_GOLD = "the sample gold trackB/en/gt/0001_lighthouse_keeper.json"

#: every rule this package applies: what it is, why, and where it comes from
PROTOCOL: dict[str, dict[str, str]] = {
    "present": {
        "rule": "an entity counts as present only when the judge said present = true; "
                "false and 'abstain' are both not present",
        "reason": "the reference builds its present set A from 'true' answers only",
        "source": f"{_E2E} _tally (A = present == 'true'); PROTOCOLS.md section 4",
    },
    "unparsable": {
        "rule": "an unparsable segment has every roster entry 'abstain' (required -> miss, "
                "forbidden -> not violated); segments are counted (unparsable rate)",
        "reason": "never credit an unreadable answer, never hide it",
        "source": f"PROTOCOLS.md section 4; paper App. D.1; {_E2E} score_segment "
                  "(parse_error, missing ids vote 'abstain')",
    },
    "recall": {
        "rule": "Recall = required character and prop cast entries judged present / required "
                "character and prop cast entries; introductions included",
        "reason": "the headline recall pools characters and props; locations are near-free",
        "source": f"{_E2E} run() (recall_char_prop from recall.character + recall.prop); "
                  "PROTOCOLS.md section 4",
    },
    "precision": {
        "rule": "Precision = required entries judged present / entries judged present whose "
                "role is required, forbidden or false_friend_target and whose kind is not "
                "location; decoys excluded",
        "reason": "the closed-world story roster; a location is not drawn by mistake",
        "source": f"{_E2E} _tally (prec over present | forbidden | ff_targets, "
                  "kind != location); PROTOCOLS.md section 4",
    },
    "f1": {
        "rule": "F1 = 2PR / (P + R) from the unrounded pooled P and R; 0 when P + R = 0; None "
                "when either is undefined",
        "reason": "harmonic mean of the pooled rates (paper 3.3); the reference rounds P and R "
                  "to 4 decimals first, here rounding is left to the report",
        "source": f"{_E2E} run() (f1); paper section 3.3",
    },
    "avoid_ok": {
        "rule": "Avoid-OK = forbidden entries not judged present / forbidden entries, every "
                "reason and kind",
        "reason": "the fraction of forbidden appearances that stay absent",
        "source": f"{_E2E} _tally (avoid.opp, avoid.viol) and run() (1 - viol / opp)",
    },
    "decoy_fpr": {
        "rule": "decoy FPR = decoy entries judged present / decoy entries",
        "reason": "the judge's noise floor on entities that are certainly absent",
        "source": f"{_E2E} _tally (decoy.fp / decoy.tot)",
    },
    "abstain_rate": {
        "rule": "abstain rate = entries answered 'abstain' / all roster entries (every role, "
                "unparsable segments included)",
        "reason": "coverage of the judge, read next to precision-like rates",
        "source": f"{_E2E} run() (abstain / roster.tot); paper App. D.1",
    },
    "long_gap_return": {
        "rule": "recall over required character/prop entries with gap >= 30",
        "reason": "long-gap returns pool characters and props",
        "source": f"{_E2E} _tally (cap.long_gap); paper Table 3 caption",
    },
    "temporal_reference": {
        "rule": "recall over cast entries (any kind, locations included) whose gold anchor is a "
                "temporal (name-free) reference",
        "reason": "the reference counts anchors outside its character/prop filter, and the "
                  "gold anchors a location too (E9 at seg_084)",
        "source": f"{_E2E} _tally (cap.temporal, anchor.type == 'temporal'); {_GOLD}",
    },
    "state_families": {
        "rule": "cast entries with a gold state that is not a flashback: op transform -> state "
                "change, any other op -> persistent state; flashback states are presence only",
        "reason": "a flashback carries a past look for presence, not a state judgement",
        "source": f"{_E2E} _tally (key = state_change if op == transform else persist_state)",
    },
    "state_accuracy": {
        "rule": "state accuracy = judged state 'changed' (the state the roster line describes "
                "is shown) / state entries judged present; state entries not judged present "
                "are reported as judged_present, never as errors",
        "reason": "a state can only be read off an entity the judge saw",
        "source": f"{_E2E} _tally (cap.<state>.tot only when eid in A; .missed otherwise) "
                  "and _roster_text (changed = shown as described)",
    },
    "count": {
        "rule": "over cast entries with a gold count judged present: exact rate = judged count "
                "== gold; off-by-one rate = |judged - gold| == 1 (exact not included)",
        "reason": "a count can only be read off an entity the judge saw",
        "source": f"{_E2E} _tally (cap.count) and run() (exact_rate, off_by_one_rate)",
    },
    "lookalike": {
        "rule": "over cast entries with an active look-alike (the gold present_members) judged "
                "present: correct-instance rate = instance_match True; wrong-instance rate = "
                "instance_match False (the other pair member); absent_avoid_ok = forbidden "
                "lookalike_absent entries not judged present",
        "reason": "instance choice is scorable only on a member the judge saw; the gold note "
                  "pairs 'do not draw the absent twin' with 'bind features when both share a "
                  "segment'",
        "source": f"{_E2E} _tally (cap.lookalike, cap.lookalike_absent); {_GOLD} lookalike_pairs",
    },
    "false_friend": {
        "rule": "over cast entries with confusable_with and op introduce: correct-id rate = "
                "entry judged present; confusion rate = false-friend target judged present, "
                "over those whose target is not in the segment's cast (whatever the true "
                "entity's verdict)",
        "reason": "a co-present target is a correct sighting, not a confusion; later recalls "
                  "of a false friend are ordinary returns",
        "source": f"{_E2E} _prep_segment (ff_entries: op == 'introduce') and _tally "
                  "(cap.false_friend.tot_id / tot_conf / confused)",
    },
    "deprecation": {
        "rule": "Avoid-OK over forbidden entries with reason destroyed or deceased",
        "reason": "what the story removed must stay out",
        "source": f"{_E2E} _tally (cap.deprecation: reason != lookalike_absent)",
    },
    "reference_indirect": {
        "rule": "Avoid-OK over destroyed/deceased forbidden entries flagged reference_indirect "
                "(the prompt refers to the removed entity indirectly)",
        "reason": "reference-indirect is a flag on deprecation entries, not a forbidden reason",
        "source": f"{_E2E} _tally (cap.reference_indirect inside the deprecation branch); "
                  f"{_GOLD} (forbidden[].reference_indirect)",
    },
    "wilson": {
        "rule": "every family rate carries a Wilson score interval at the given confidence "
                "(default 95%), the bounds of scipy.stats.binomtest(k, n).proportion_ci("
                "method='wilson') computed as scipy does, operation for operation (checked "
                "bit for bit), without the test's exact p-value; None when n = 0",
        "reason": "family opportunities are few; scipy uses the exact normal quantile "
                  "(1.95996...) where the reference writes 1.96 (bounds differ in the 5th "
                  "decimal) and the reference applies Wilson to the avoidance families only",
        "source": f"{_E2E} _wilson; {_README} (Wilson 95% CIs); brief of issue 14",
    },
    "pooling": {
        "rule": "every rate is pooled: counts summed over all segments of all stories, then "
                "divided (micro-average); no per-segment or per-story means",
        "reason": "each family rate is a micro-average over its opportunities",
        "source": f"paper Table 1 caption and section 3.3; {_E2E} run() (G = sum of acc)",
    },
    "parsed_in_both": {
        "rule": "the robustness comparison keeps the (story, segment) pairs present in both "
                "arms whose answers parsed in both; a story with no such segment drops out "
                "of that bootstrap (nothing of it is left to resample), and the block says "
                "so: n_stories, n_stories_dropped, stories_dropped (shown in the report and "
                "by vidmem compare)",
        "reason": "unparsable answers count required entities as missed and are more "
                  "frequent with retrieval",
        "source": "paper App. F.6.1 (Table 20a)",
    },
}
