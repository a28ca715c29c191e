"""The tally-based ``aggregate_rows`` equals the pre-tally code, number for number.

The reference below is the code ``aggregate_rows`` ran before the tallies (issue 14's
performance work), kept verbatim: ``verdicts_from_json`` building every record, the
public Counter-based rate functions on the segment lists, ``_family_counts`` through
``family_rates`` per story, ``gap_bin_summary`` on segment lists, and Wilson intervals
from ``scipy.stats.binomtest``. Both run on a few hundred random hand-made verdicts
(every role, family, the false-friend cases, unparsable segments, a story unparsable
throughout one arm, a story without verdicts) and must give equal summaries; malformed
stored rows must fail in both, naming story and segment.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps

from vidmem.benchmarks.vmem_track_b.config import BASELINE, PRIVILEGED, ScorerConfig
from vidmem.benchmarks.vmem_track_b.scorer import (
    _family_counts,
    aggregate_rows,
    verdicts_from_json,
    verdicts_to_json,
)
from vidmem.errors import UserInputError
from vidmem.metrics import track_b as tb
from vidmem.metrics.track_b import families as families_module
from vidmem.metrics.track_b import gap_bins as gap_bins_module
from vidmem.stats.paired_bootstrap import paired_story_bootstrap

CONDITIONS = ("none", "seg_uniform", "last_seen")

# ----------------------------------------------------------------------------- reference


def scipy_wilson(k, n, confidence=0.95):
    if n == 0:
        return None
    ci = sps.binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


def ref_verdicts_from_json(story_id, data):
    return [tb.SegmentVerdict(story_id, int(s["segment_id"]), bool(s["parsed"]), tuple(
        tb.EntryVerdict(story_id=story_id, segment_id=int(s["segment_id"]), **e)
        for e in s["entries"])) for s in data]


def ref_arm(rows, cond):
    segs = []
    for r in rows:
        segs += ref_verdicts_from_json(r["story_id"], r["conditions"][cond]["verdicts"])
    return segs


def ref_bootstrap(a, b, config):
    ca, cb = tb.story_counts(a), tb.story_counts(b)
    if not ca or set(ca) != set(cb):
        return None
    return paired_story_bootstrap(ca, cb, n_resamples=config.n_resamples,
                                  seed=config.bootstrap_seed,
                                  confidence=config.confidence).to_dict()


def ref_family_counts(segs, confidence):
    by_story = {}
    for s in segs:
        by_story.setdefault(s.story_id, []).append(s)
    out = {}
    for sid, ss in by_story.items():
        fam = tb.family_rates(ss, confidence=confidence)
        out[sid] = [[fam[f].headline.numerator, fam[f].headline.denominator] for f in tb.FAMILIES]
    return out


def ref_gap_bin_deltas(a, b, config):
    ca, cb = tb.gap_bin_story_counts(a), tb.gap_bin_story_counts(b)
    if not ca or set(ca) != set(cb):
        return None
    return paired_story_bootstrap(ca, cb, n_resamples=config.n_resamples,
                                  seed=config.bootstrap_seed, confidence=config.confidence,
                                  names=tb.BIN_ROWS).to_dict()


def ref_gap_bin_summary(arms, config):
    conds = [c for c in config.conditions if c in arms]
    rates = {c: tb.gap_bin_recall(arms[c], confidence=config.confidence).to_dict() for c in conds}
    deltas = {}
    if BASELINE in arms:
        for c in conds:
            if c != BASELINE:
                deltas[c] = ref_gap_bin_deltas(arms[c], arms[BASELINE], config)
    return {"bins": list(tb.GAP_BINS), "just_seen": tb.JUST_SEEN, "rates": rates,
            "deltas": deltas}


def ref_aggregate_rows(rows, config):
    chosen = config.selected()
    scored = [r for r in rows if r.get("status") == "scored"
              and (chosen is None or int(r["number"]) in chosen)]
    conds = list(config.conditions)
    arms = {c: ref_arm(scored, c) for c in conds}
    pooled = {c: tb.pooled_rates(arms[c]).to_dict() for c in conds}
    families = {c: {k: v.to_dict() for k, v in tb.family_rates(
        arms[c], confidence=config.confidence).items()} for c in conds}
    judge = {}
    for c in conds:
        total = Counter()
        for r in scored:
            total.update(r["conditions"][c]["judge"])
        judge[c] = dict(total)
    deltas, parsed, family_deltas = {}, {}, {}
    if BASELINE in conds and scored:
        base_fam = ref_family_counts(arms[BASELINE], config.confidence)
        for c in conds:
            if c == BASELINE:
                continue
            deltas[c] = ref_bootstrap(arms[c], arms[BASELINE], config)
            family_deltas[c] = paired_story_bootstrap(
                ref_family_counts(arms[c], config.confidence), base_fam,
                n_resamples=config.n_resamples, seed=config.bootstrap_seed,
                confidence=config.confidence, names=tb.FAMILIES).to_dict()
            a, b = tb.parsed_in_both(arms[c], arms[BASELINE])
            every = sorted({s.story_id for s in arms[c]})
            kept = {s.story_id for s in a}
            parsed[c] = ref_bootstrap(a, b, config) or {"rates": {}}
            parsed[c].update(n_segments=len(a), n_stories=len(kept),
                             n_stories_dropped=len(every) - len(kept),
                             stories_dropped=[sid for sid in every if sid not in kept])
    return {
        "conditions": conds, "baseline": BASELINE if BASELINE in conds else None,
        "privileged": sorted(PRIVILEGED & set(conds)),
        "n_stories_scored": len(scored), "stories": [r["story_id"] for r in scored],
        "n_segments": sum(int(r["n_segments"]) for r in scored),
        "pooled": pooled, "families": families, "judge": judge,
        "deltas": deltas, "deltas_parsed_in_both": parsed, "family_deltas": family_deltas,
        "gap_bins": ref_gap_bin_summary(arms, config),
        "not_selected": [r["story_id"] for r in rows
                         if chosen is not None and int(r.get("number", -1)) not in chosen],
    }


@pytest.fixture
def reference(monkeypatch):
    """The pre-tally aggregate, its Wilson intervals from scipy's binomtest."""
    monkeypatch.setattr(families_module, "wilson_interval", scipy_wilson)
    monkeypatch.setattr(gap_bins_module, "wilson_interval", scipy_wilson)
    return ref_aggregate_rows


# ----------------------------------------------------------------------------- random verdicts


def _present(rng) -> Any:
    return [True, False, "abstain"][int(rng.choice(3, p=[0.55, 0.35, 0.10]))]


def random_segment(sid: str, seg: int, gold, rng, p_unparsable: float) -> tb.SegmentVerdict:
    """One segment: the gold from ``gold`` (the same in every condition), verdicts from ``rng``."""
    def E(eid, kind, role, **kw):
        return tb.EntryVerdict(sid, seg, eid, kind, role, _present(rng), **kw)

    entries, cast_ids = [], []
    for j in range(int(gold.integers(0, 6))):
        eid = f"E{j}"
        op = str(gold.choice(tb.OPS))
        kw: dict[str, Any] = {"op": op, "gap": None if op == "introduce" or gold.random() < 0.1
                              else int(gold.integers(0, 70))}
        kw["anchor"] = bool(gold.random() < 0.15)
        kw["flashback"] = bool(gold.random() < 0.08)
        if gold.random() < 0.3:
            kw["expected_state"] = "burnt"
            kw["judged_state"] = [None, "changed", "default"][int(rng.integers(0, 3))]
        if gold.random() < 0.25:
            kw["expected_count"] = int(gold.integers(0, 5))
            kw["judged_count"] = None if rng.random() < 0.3 else int(rng.integers(0, 7))
        kw["lookalike"] = bool(gold.random() < 0.2)
        kw["instance_match"] = [None, True, False][int(rng.integers(0, 3))]
        if op == "introduce" and gold.random() < 0.6:
            kw["confusable_with"] = str(gold.choice([t for t in ("T", "F0", "E0", "E1", "LOC")
                                                     if t != eid]))
        entries.append(E(eid, str(gold.choice(tb.RECALL_KINDS)), "required", **kw))
        cast_ids.append(eid)
    if gold.random() < 0.7:
        entries.append(E("LOC", "location", "location", op=str(gold.choice(tb.OPS)),
                         gap=int(gold.integers(0, 40)), anchor=bool(gold.random() < 0.2)))
        cast_ids.append("LOC")
    for j in range(int(gold.integers(0, 3))):
        reason = str(gold.choice(tb.FORBIDDEN_REASONS))
        entries.append(E(f"F{j}", str(gold.choice(tb.KINDS)), "forbidden", reason=reason,
                         reference_indirect=reason != "lookalike_absent" and bool(gold.random() < 0.4)))
    entries.append(E("T", str(gold.choice(tb.RECALL_KINDS)), "false_friend_target"))
    for j in range(int(gold.integers(0, 4))):
        entries.append(E(f"D{j}", str(gold.choice(tb.KINDS)), "decoy"))
    on_roster = {e.eid for e in entries}
    entries = [e if e.confusable_with is None or e.confusable_with in on_roster
               else tb.EntryVerdict(**{**e.__dict__, "confusable_with": "T"}) for e in entries]
    order = rng.permutation(len(entries))  # roster order is the judge's, not the gold's
    entries = [entries[i] for i in order]
    if rng.random() < p_unparsable:
        return tb.SegmentVerdict.unparsable(sid, seg, entries)
    return tb.SegmentVerdict(sid, seg, True, entries)


def random_rows(seed: int, n_stories: int = 6) -> list[dict[str, Any]]:
    """Stored rows of ``n_stories`` stories x the three conditions, through ``json``."""
    rows = []
    for k in range(1, n_stories + 1):
        sid = f"{k:04d}_random"
        n = 0 if k == n_stories else int(np.random.default_rng([seed, k]).integers(15, 45))
        row: dict[str, Any] = {"story_id": sid, "number": k, "status": "scored",
                               "n_segments": n, "conditions": {}}
        for ci, cond in enumerate(CONDITIONS):
            rng = np.random.default_rng([seed, k, ci, 7])
            # story 2 is unparsable throughout the policy arm: parsed-in-both drops it
            p_bad = 1.0 if (k == 2 and cond == "seg_uniform") else 0.15
            segs = [random_segment(sid, s, np.random.default_rng([seed, k, s]), rng, p_bad)
                    for s in range(1, n + 1)]
            row["conditions"][cond] = {"verdicts": verdicts_to_json(segs),
                                       "judge": {"segments": n,
                                                 "unparsable": sum(not s.parsed for s in segs)}}
        rows.append(row)
    rows.append({"story_id": "0099_failed", "number": 99, "status": "failed"})
    return json.loads(json.dumps(rows))


# ----------------------------------------------------------------------------- tests


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_aggregate_equals_the_reference(seed, reference):
    rows = random_rows(seed)
    n_segments = sum(len(r["conditions"]["none"]["verdicts"]) for r in rows if "conditions" in r)
    assert n_segments >= 100
    config = ScorerConfig(conditions=CONDITIONS, n_resamples=400)
    fast = aggregate_rows(rows, config)
    ref = reference(rows, config)
    assert set(fast) == set(ref)
    for key in ref:
        assert fast[key] == ref[key], key
    # the data reach every family and the cuts the comparison is about
    fam = fast["families"]["none"]
    assert all(fam[f]["rates"][fam[f]["headline"]]["denominator"] > 0 for f in tb.FAMILIES)
    assert fam["false_friend"]["rates"]["confusion_rate"]["denominator"] > 0
    assert fast["deltas"]["seg_uniform"]["n_stories"] == 5  # the empty story is in no arm
    assert fast["deltas_parsed_in_both"]["seg_uniform"]["n_stories"] == 4  # story 2 dropped


def test_selection_and_default_draws_equal_the_reference(reference):
    rows = random_rows(5, n_stories=4)
    config = ScorerConfig(conditions=("none", "last_seen"), stories="0001-0002")
    assert aggregate_rows(rows, config) == reference(rows, config)
    config = ScorerConfig(conditions=("seg_uniform", "last_seen"))  # no baseline
    assert aggregate_rows(rows, config) == reference(rows, config)


def test_family_counts_and_verdicts_equal_the_reference(reference):
    rows = random_rows(6, n_stories=3)
    for r in rows[:3]:
        data = r["conditions"]["last_seen"]["verdicts"]
        segs = verdicts_from_json(r["story_id"], data)
        assert segs == ref_verdicts_from_json(r["story_id"], data)
        assert _family_counts(segs, 0.95) == ref_family_counts(segs, 0.95)


def test_wilson_interval_is_scipys_bit_for_bit():
    for confidence in (0.5, 0.9, 0.95, 0.99):
        for n in [*range(1, 60), 2824, 25529]:
            for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
                assert tb.wilson_interval(k, n, confidence) == scipy_wilson(k, n, confidence)


def _rows_with(mutate) -> list[dict[str, Any]]:
    rows = random_rows(9, n_stories=2)
    rows = copy.deepcopy(rows)
    mutate(rows[0]["conditions"]["seg_uniform"]["verdicts"])
    return rows


def _first_with(verdicts, pred):
    for s in verdicts:
        for e in s["entries"]:
            if pred(e):
                return s, e
    raise AssertionError("no such entry")


def _set(pred, **fields):
    def mutate(verdicts):
        _, e = _first_with(verdicts, pred)
        e.update(fields)
    return mutate


def _last_present_to_one(verdicts):
    # an int where json's `true` was seen before: the signature's types differ
    s, e = _first_with(verdicts[len(verdicts) // 2:], lambda e: e.get("present") is True)
    e["present"] = 1


def _doubled_eid(verdicts):
    s = next(s for s in verdicts if len(s["entries"]) >= 2)
    s["entries"][1]["eid"] = s["entries"][0]["eid"]


def _not_abstain_when_unparsed(verdicts):
    s = next(s for s in verdicts if not s["parsed"] and s["entries"])
    s["entries"][0]["present"] = True


def _target_off_roster(verdicts):
    s, e = _first_with(verdicts, lambda e: e.get("op") == "introduce" and "confusable_with" in e)
    e["confusable_with"] = "NOBODY"


def _doubled_segment(verdicts):
    verdicts.append(copy.deepcopy(verdicts[0]))


def _no_parsed_field(verdicts):
    del verdicts[3]["parsed"]


@pytest.mark.parametrize("mutate, match", [
    (_set(lambda e: e["role"] == "decoy", kind="dragon"), r"kind: expected one of"),
    (_set(lambda e: "gap" in e and e["gap"] == 1, gap=True), r"gap: expected an int >= 0"),
    (_last_present_to_one, r"present: expected True, False or 'abstain', found 1"),
    (_set(lambda e: e["role"] == "decoy", colour="red"), r"unexpected keyword argument 'colour'"),
    (_set(lambda e: e["role"] == "decoy", eid=""), r"eid: expected a non-empty string"),
    (_set(lambda e: e["role"] == "decoy", gap=3), r"no cast-only fields"),
    (_doubled_eid, r"ids unique within a segment"),
    (_not_abstain_when_unparsed, r"'abstain' in an unparsable segment"),
    (_target_off_roster, r"target 'NOBODY' on the roster"),
    (_doubled_segment, r"once per condition"),
    (_no_parsed_field, r"without a whole segment_id, parsed and entries"),
])
def test_a_malformed_stored_row_is_an_error_naming_story_and_segment(mutate, match, reference):
    rows = _rows_with(mutate)
    config = ScorerConfig(conditions=CONDITIONS, n_resamples=50)
    with pytest.raises(UserInputError, match=match) as exc:
        aggregate_rows(rows, config)
    text = str(exc.value)
    assert "0001_random" in text and "segment" in text, text
    # the pre-tally code refused it too (its message for unknown fields was a TypeError)
    with pytest.raises((UserInputError, TypeError, KeyError)):
        reference(rows, config)


def test_a_row_without_a_condition_names_story_and_condition():
    rows = random_rows(4, n_stories=2)
    del rows[1]["conditions"]["last_seen"]
    with pytest.raises(UserInputError, match=r"story '0002_random' has no verdicts of condition "
                       r"last_seen"):
        aggregate_rows(rows, ScorerConfig(conditions=CONDITIONS, n_resamples=50))


@pytest.mark.parametrize("field, value", [("present", 1), ("present", 1.0), ("gap", True),
                                          ("anchor", 0), ("eid", 7)])
def test_a_seen_signature_never_lets_a_wrong_type_through(field, value):
    good = {"eid": "A", "kind": "prop", "role": "required", "present": True, "op": "recall",
            "gap": 1, "anchor": False}
    t = tb.Tallier()
    assert t.tally([("s", 1, True, [good])]).pooled().recall.value == 1.0
    with pytest.raises(UserInputError, match=rf"story 's', segment 2.*{field}"):
        t.tally([("s", 2, True, [{**good, field: value}])])
