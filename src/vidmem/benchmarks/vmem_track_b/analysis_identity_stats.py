"""Identity analysis, statistics: the frozen per-kind cut, then every condition's rates.

Pure functions on the stored per-story measurements (:mod:`.analysis_identity_story`).

Rules (in :data:`PROTOCOL`):

* **Calibration first.** One Youden cut per kind (character, prop, location) from the
  control pairs of every story and condition (:func:`calibrate`,
  :func:`vidmem.stats.calibration.youden_threshold`); a kind with no positive or no
  negative control has no cut, and its units get no same/different call. The cut is
  frozen into the result before :func:`condition_table` calls a single unit.
* **Per (condition, family)**, counts per story, pooled over stories:
  ``found_current`` (units found in the current clip / units), ``found_both`` (found on
  both sides / units), ``same_if_found`` (score >= cut / units found on both sides of
  a calibrated kind), ``same_all`` (score >= cut / units of a calibrated kind; a unit
  not found on both sides counts as not the same) and ``mean_similarity`` (mean cosine
  over units found on both sides).
* **Differences vs the baseline** (``none``): the paired story bootstrap
  (:func:`vidmem.stats.paired_bootstrap.paired_story_bootstrap`) of every rate; the mean
  similarity enters as the pooled rate of ``(1 + cosine) / 2`` (a cosine may be
  negative; the bootstrap wants 0 <= numerator <= denominator), its difference and
  interval multiplied back by 2 -- exact, since the map is linear.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vidmem.stats.calibration import Calibration, youden_threshold
from vidmem.stats.paired_bootstrap import paired_story_bootstrap

__all__ = ["FACE", "KINDS", "PROTOCOL", "RATES", "calibrate", "condition_table", "deltas",
           "face_rows", "story_counts"]

KINDS = ("character", "prop", "location")
#: the kind of the face comparisons (characters' largest faces), calibrated apart
FACE = "face"
#: the pooled rates of a (condition, family), in count-row order
RATES = ("found_current", "found_both", "same_if_found", "same_all", "mean_similarity")

PROTOCOL: dict[str, dict[str, str]] = {
    "cut_per_kind": {
        "rule": "one Youden cut per kind (character, prop, location) from the control pairs "
                "of every story and condition; a kind without positive or negative controls "
                "has no cut and no same/different calls",
        "reason": "crop and whole-frame cosines live on different scales",
        "source": "PROTOCOLS.md section 4 (Thresholds); stats/calibration.py rules",
    },
    "plateau": {
        "rule": "beside each cut, the lowest and highest candidate cut with the maximal J "
                "(cuts_with_max_j); the cut itself lies halfway below the highest run of "
                "them (stats/calibration.py ties)",
        "reason": "with separated controls every cut between the highest negative and the "
                  "lowest positive has J = 1; the reader sees how wide that range is",
        "source": "decided here",
    },
    "frozen": {
        "rule": "the cuts are computed and frozen in run.json (calibration.identity, one "
                "entry per measuring settings) before any unit is called; a stored entry "
                "is reused, and refused when the controls changed (recalibrate=true "
                "replaces it)",
        "reason": "a cut tuned on the conditions would bias their comparison",
        "source": "PROTOCOLS.md section 4 ('fixed before any condition is scored')",
    },
    "rates": {
        "rule": "found_current = found in the current clip / units; found_both = found on both "
                "sides / units; same_if_found = score >= cut / found on both (calibrated "
                "kinds); same_all = score >= cut / units of calibrated kinds (not found = not "
                "the same); mean_similarity = mean cosine over units found on both sides",
        "reason": "an image-guided detector misses impostors, so a similarity over found "
                  "pairs alone would hide them; same_all counts them",
        "source": "PROTOCOLS.md section 4 (mean similarity, detection rate, same-entity "
                  "rate); the same_all denominator decided here",
    },
    "deltas": {
        "rule": "each condition minus the baseline (none), paired story bootstrap of every "
                "rate (draws and seed of the run's scorer); mean similarity via the pooled "
                "rate of (1 + cos) / 2, difference and interval times 2",
        "reason": "stories are the clusters, as for the Track-B vector",
        "source": "PROTOCOLS.md section 4 'Statistics'; the shift decided here",
    },
}


def calibrate(controls: Mapping[str, Sequence[Mapping[str, Any]]], name: str = "",
              kinds: Sequence[str] = KINDS) -> dict[str, dict[str, Any]]:
    """Per kind, the frozen Youden calibration of the control scores (or why there is none).

    Example:
        >>> c = calibrate({"positive": [{"kind": "prop", "score": 0.9}],
        ...                "negative": [{"kind": "prop", "score": 0.2}]})
        >>> c["prop"]["cut"], c["character"]["cut"], c["character"]["why"]
        (0.55, None, 'no positive or negative control pairs')
    """
    out: dict[str, dict[str, Any]] = {}
    for kind in kinds:
        pos = [float(c["score"]) for c in controls.get("positive", ()) if c["kind"] == kind
               and c["score"] is not None]
        neg = [float(c["score"]) for c in controls.get("negative", ()) if c["kind"] == kind
               and c["score"] is not None]
        if pos and neg:
            cal = youden_threshold(pos, neg, name=f"{name} {kind}".strip())
            out[kind] = cal.to_dict()
            out[kind]["cuts_with_max_j"] = _plateau(cal)
            out[kind]["positive_scores"] = sorted(pos)
            out[kind]["negative_scores"] = sorted(neg)
        else:
            missing = " or ".join(w for w, x in (("positive", pos), ("negative", neg)) if not x)
            out[kind] = {"cut": None, "why": f"no {missing} control pairs",
                         "n_positive": len(pos), "n_negative": len(neg)}
    return out


def _plateau(cal: Calibration) -> dict[str, float]:
    """The lowest and highest candidate cut reaching the maximal J (the whole range).

    Example:
        >>> _plateau(youden_threshold([0.9, 0.8], [0.1, 0.5]))
        {'lowest': 0.8, 'highest': 0.8}
    """
    tp = np.rint(np.asarray(cal.tpr_curve) * cal.n_positive)
    fp = np.rint(np.asarray(cal.fpr_curve) * cal.n_negative)
    thr = np.asarray(cal.thresholds)
    j = np.where(np.isfinite(thr), tp * cal.n_negative - fp * cal.n_positive, -np.inf)
    best = thr[j == j.max()]
    return {"lowest": float(best.min()), "highest": float(best.max())}


def face_rows(per_story: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]]
              ) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """The character rows with a face comparison, read as rows of kind ``face``.

    Example:
        >>> face_rows({"s": {"c": [{"family": "f", "kind": "character", "faces_current": True,
        ...                        "faces_previous": False, "face_score": None}]}})
        {'s': {'c': [{'family': 'f', 'kind': 'face', 'found_current': True, 'found_previous': False, 'score': None}]}}
    """
    return {sid: {cond: [{"family": r["family"], "kind": FACE,
                          "found_current": r["faces_current"],
                          "found_previous": r["faces_previous"], "score": r["face_score"]}
                         for r in rows if "face_score" in r]
                  for cond, rows in conds.items()} for sid, conds in per_story.items()}


def _cuts(calibration: Mapping[str, Mapping[str, Any]]) -> dict[str, Calibration]:
    return {k: Calibration.from_dict(v) for k, v in calibration.items() if v.get("cut") is not None}


def story_counts(rows: Sequence[Mapping[str, Any]],
                 cuts: Mapping[str, Calibration]) -> np.ndarray:
    """``(len(RATES), 2)`` (numerator, denominator) counts of one story's unit rows.

    Example:
        >>> cut = youden_threshold([0.9], [0.2])
        >>> rows = [{"kind": "prop", "found_current": True, "found_previous": True, "score": 0.95},
        ...         {"kind": "prop", "found_current": False, "found_previous": True, "score": None}]
        >>> story_counts(rows, {"prop": cut}).tolist()
        [[1.0, 2.0], [1.0, 2.0], [1.0, 1.0], [1.0, 2.0], [0.975, 1.0]]
    """
    c = np.zeros((len(RATES), 2))
    for r in rows:
        both = bool(r["found_current"] and r["found_previous"] and r["score"] is not None)
        c[0] += (bool(r["found_current"]), 1)
        c[1] += (both, 1)
        cut = cuts.get(r["kind"])
        if cut is not None:
            same = both and cut.same(float(r["score"]))
            c[3] += (same, 1)
            if both:
                c[2] += (same, 1)
        if both:
            c[4] += ((1.0 + float(r["score"])) / 2.0, 1)
    return c


def _rates(counts: np.ndarray) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, name in enumerate(RATES):
        num, den = counts[i]
        value = None if den == 0 else float(num / den)
        if name == "mean_similarity" and value is not None:
            value = 2.0 * value - 1.0
        out[name] = value
        out[f"n_{name}"] = int(den)
    return out


def condition_table(per_story: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]],
                    calibration: Mapping[str, Mapping[str, Any]]
                    ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, dict[str, Any]]]]:
    """Pooled rates per condition and family (plus ``all``) with the frozen cuts.

    Args:
        per_story: story -> condition -> unit rows (the stored measurements).
        calibration: :func:`calibrate`'s result.

    Returns:
        ``(table, counts)``: ``table[cond][family]`` the rates; ``counts[cond][family]
        [story]`` the ``(len(RATES), 2)`` count lists the bootstrap resamples.
    """
    cuts = _cuts(calibration)
    grouped: dict[str, dict[str, dict[str, list[Mapping[str, Any]]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    for sid, conds in per_story.items():
        for cond, rows in conds.items():
            for r in rows:
                grouped[cond][r["family"]][sid].append(r)
                if not str(r["family"]).startswith("location:") and r["family"] != \
                        "changed_long_gap":  # 'all': the two return families of characters/props
                    grouped[cond]["all"][sid].append(r)
    table: dict[str, dict[str, Any]] = {}
    counts: dict[str, dict[str, dict[str, Any]]] = {}
    for cond, fams in grouped.items():
        table[cond], counts[cond] = {}, {}
        for fam, stories in fams.items():
            per = {sid: story_counts(stories.get(sid, []), cuts) for sid in per_story}
            counts[cond][fam] = {sid: v.tolist() for sid, v in per.items()}
            table[cond][fam] = _rates(np.sum(list(per.values()), axis=0))
    return table, counts


def deltas(counts: Mapping[str, Mapping[str, Mapping[str, Any]]], baseline: str, *,
           n_resamples: int, seed: int, confidence: float) -> dict[str, dict[str, Any]]:
    """Per condition (not the baseline) and family, the paired story bootstrap of each rate."""
    out: dict[str, dict[str, Any]] = {}
    if baseline not in counts:
        return out
    for cond, fams in counts.items():
        if cond == baseline:
            continue
        out[cond] = {}
        for fam, arm in fams.items():
            ref = counts[baseline].get(fam)
            if ref is None:
                continue
            res = paired_story_bootstrap(arm, ref, n_resamples=n_resamples, seed=seed,
                                         confidence=confidence, names=RATES).to_dict()
            sim = res["rates"]["mean_similarity"]
            for k in ("difference", "ci_low", "ci_high"):
                if sim[k] is not None:
                    sim[k] = 2.0 * sim[k]
            for k in ("rate_a", "rate_b"):
                if sim[k] is not None:
                    sim[k] = 2.0 * sim[k] - 1.0
            out[cond][fam] = res
    return out
