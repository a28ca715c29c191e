"""Track-A :data:`PROTOCOL`: every scoring rule, with its reason and its source.

Part of :mod:`vidmem.metrics.reference_evidence` (the overview is there); the run log
records it.
"""

from __future__ import annotations

_REF = "Suchenl/VMem-Bench"
_VC = f"{_REF} src/vmem_bench/scoring/visual_coverage.py"
_AGG = f"{_REF} scripts/evaluate_baselines/trackA/aggregate_trackA_outputs.py"

#: every rule this package applies: what it is, why, and where it comes from
PROTOCOL: dict[str, dict[str, str]] = {
    "candidates": {
        "rule": "C = present - first_appearances of the segment (computed by the caller)",
        "reason": "a memory can only supply what it has seen; first appearances are not recallable",
        "source": f"{_VC} _load_gold ('continuity'); PROTOCOLS.md section 3",
    },
    "correct_reference": {
        "rule": "a reference is correct when it shows >= 1 entity present in the segment "
                "(any of P, first appearances included), not only one of C",
        "reason": "the reference scorer counts a reference whose label set over the "
                  "gold-present roster is non-empty",
        "source": f"{_VC} _score_segment_v3 (precision = non-empty entity_ids / n); "
                  f"{_REF} docs/benchmark/scoring_v3.md 'Metrics'",
    },
    "labels_outside_present": {
        "rule": "entity ids a judge names outside P are ignored (neither correct nor covering)",
        "reason": "the roster the judge sees is the present set; coverage is intersected with it",
        "source": f"{_VC} _score_segment_v3 (covered = union of labels & present_set)",
    },
    "unparsable_reference": {
        "rule": "a reference whose judge answer is unparsable counts in k, shows nothing, "
                "and is counted (n_unparsable)",
        "reason": "conservative: never credit an unreadable answer, never hide it (the card: "
                  "counted per policy and shown); the reference scorer raises instead",
        "source": f"decided here; {_VC} _parse_v3_reference raises on an invalid answer",
    },
    "duplicates": {
        "rule": "every returned reference counts in k, repeated images included; the ids in "
                "one answer are a set",
        "reason": "the reference keeps every selected image; a duplicate is a repeated view "
                  "(R_V, R_S), not a reason to shrink k; its judge rejects repeated ids",
        "source": f"{_VC} _load_selection (appends every representation), _parse_v3_reference",
    },
    "recall": {
        "rule": "recall = |C & union of the references' labels| / |C|",
        "reason": "coverage of the candidates by the selection as a whole",
        "source": f"{_VC} _score_segment_v3 (missing = present - covered)",
    },
    "empty_selection": {
        "rule": "k = 0: precision None (counted as undefined), recall 0, F1 0; the segment "
                "stays in the recall and F1 means",
        "reason": "the card overrides the reference, whose F1 is None there and drops out "
                  "of the F1 mean, which rewards returning nothing",
        "source": f"PROTOCOLS.md section 3 (override); {_VC} _score_segment_v3 n == 0 branch",
    },
    "no_candidates": {
        "rule": "C empty: recall and F1 are None and the segment enters neither mean "
                "(precision, R_V, R_S and SelEff still count)",
        "reason": "the reference scores a vacuous recall 1.0 and then keeps only segments "
                  "with n_continuity > 0 in recall_mean and f1_mean; None gives the same "
                  "means and cannot leak a vacuous 1.0 into another mean",
        "source": f"{_VC} _score_segment_v3 ('if continuity_set else 1.0') and run() "
                  "summary (recall_mean, f1_mean filters)",
    },
    "f1": {
        "rule": "F1 = 2PR / (P + R) from the rounded P and R, 0 when P + R = 0",
        "reason": "as the reference computes it",
        "source": f"{_VC} _f1",
    },
    "redundancy_groups": {
        "rule": "R_V and R_S group correct references by entity; a reference showing several "
                "entities joins each of their groups (multimembership)",
        "reason": "paper App. D.1: a multi-entity reference contributes to each group rather "
                  "than to an arbitrary first label; the v2 reference code groups single "
                  "labels, its v3 leaves redundancy null",
        "source": f"paper App. D.1 (seed 000); {_VC} _score_segment_v2 (per-entity groups)",
    },
    "view": {
        "rule": "a view is a near-duplicate class of one entity's references (same viewpoint "
                "and appearance), given by the caller as a key per (reference, entity); "
                "not the entity's state, not its source segment",
        "reason": "the reference asks its judge how many visually distinct views a "
                  "same-entity group holds, near-duplicates counting once",
        "source": f"{_VC} _distinct_views",
    },
    "r_v": {
        "rule": "R_V = correct references all of whose (entity, view) pairs a higher-ranked "
                "reference already showed / correct references; None when none is correct",
        "reason": "the card's 'share of references repeating an already covered view'; with "
                  "one label per reference it equals the reference's sum over groups of "
                  "(size - distinct views) / on-screen references",
        "source": f"{_VC} _score_segment_v2 (redundancy_vlm); PROTOCOLS.md section 3",
    },
    "sel_eff": {
        "rule": "SelEff = (correct - repeating references) / k = precision x (1 - R_V); "
                "0 when no reference is correct; None when k = 0",
        "reason": "the reference's 'useful (on-screen and not a near-duplicate) / total', "
                  "which is the card's Prec x (1 - R_V)",
        "source": f"{_VC} _score_segment_v2 (selection_efficiency); PROTOCOLS.md section 3",
    },
    "r_s": {
        "rule": "R_S = sum over entity groups of the pairwise cosines / number of pairs "
                "(pair-weighted); an entity with one reference adds no pair; None when "
                "there is no pair",
        "reason": "the reference's threshold-free same-entity self-similarity",
        "source": f"{_VC} _mean_pairwise_sim and _score_segment_v2 (redundancy_sim); "
                  f"{_REF} scripts/evaluate_baselines/trackA/recompute_redundancy_sim.py "
                  "_chunk_sim",
    },
    "r_s_embeddings": {
        "rule": "embedding rows are scaled to unit length, so the cosine is their dot product",
        "reason": "the reference's embedder returns unit vectors and uses the dot product",
        "source": f"{_VC} _mean_pairwise_sim",
    },
    "film_mean": {
        "rule": "unweighted mean over all the film's segments where the value is defined: "
                "precision over k > 0 (the rest counted), recall and F1 over C non-empty, "
                "R_V, R_S and SelEff over k > 0",
        "reason": "paper App. D.1: unweighted means over a film's segments; the reference's "
                  "duration-weighted *_wmean columns are not the reported ones",
        "source": f"{_VC} run() summary (agg filters); paper App. D.1",
    },
    "film_segments": {
        "rule": "every gold segment of the film enters its average, those where the policy "
                "returned nothing included (the caller passes them all)",
        "reason": "the reference scores every segment of the gold, empty selections included",
        "source": f"{_VC} run() (cids = sorted(segments))",
    },
    "dataset_mean": {
        "rule": "per dataset folder, the unweighted mean of the film means over films where "
                "the value is defined",
        "reason": "the paper's table is per dataset; films weigh equally",
        "source": f"{_AGG} _macro_avg and _write_aggregates (by_dataset)",
    },
    "overall_mean": {
        "rule": "overall = unweighted mean over all films of all datasets, not the mean of "
                "the dataset means",
        "reason": "as the reference's leaderboard computes its overall row",
        "source": f"{_AGG} _write_aggregates (overall = _macro_avg(all_rows))",
    },
    "rounding": {
        "rule": "per-segment values and film means to 4 decimals, means over films to 6; "
                "refs per segment to 3 per film; every mean is round(statistics.mean(values), "
                "digits) of the already rounded values (exact sum, one rounding; not fmean)",
        "reason": "as the reference rounds them",
        "source": f"{_VC} _score_segment_v3, _f1, run() agg; {_AGG} _macro_avg",
    },
    "budget_sweep": {
        "rule": "K = 1..16: each segment's own ranked references cut to the first K and "
                "rescored from the same labels, view keys and embeddings; a segment with "
                "fewer than K keeps all",
        "reason": "a diagnostic of the policy's own ranking, with no re-judging and no "
                  "per-K retuning",
        "source": "paper App. D.1 'Causal guard and budget sweeps'; PROTOCOLS.md section 3",
    },
}
