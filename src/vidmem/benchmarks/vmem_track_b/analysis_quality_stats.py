"""The numbers of the ``quality`` analysis, from per-clip records: pure, no I/O.

Rules (each in ``analysis_quality.PROTOCOL``):

* per-clip recall = required entries judged present / required entries of that segment,
  from the stored verdicts (an abstained or unparsable entry is not present, as in the
  pooled Recall); a segment with no required entry has no per-clip recall and is left
  out of the correlations and counted;
* a condition's mean of a metric pools its clips over stories (dynamic degree: the share
  of dynamic clips); its interval resamples stories (clusters), never clips, and pools
  the drawn stories' clips (a story drawn twice counts twice);
* differences from ``none`` are paired over the stories both conditions hold
  (:func:`vidmem.stats.paired_bootstrap.paired_story_bootstrap` with per-story
  (sum, count) per metric);
* the Spearman correlation of each metric with per-clip recall is
  :func:`vidmem.metrics.clip_quality.spearman_with_recall` over a condition's clips.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vidmem.metrics.clip_quality import METRICS, spearman_with_recall
from vidmem.stats.paired_bootstrap import multiplicities, paired_story_bootstrap

__all__ = ["clip_recall", "clustered_mean", "condition_summary", "differences_from"]


def clip_recall(entries: Sequence[Mapping[str, Any]]) -> tuple[float | None, int]:
    """Per-clip recall of one stored segment's entries, and its required count.

    Example:
        >>> clip_recall([{"role": "required", "present": True},
        ...              {"role": "required", "present": "abstain"},
        ...              {"role": "decoy", "present": True}])
        (0.5, 2)
        >>> clip_recall([{"role": "location", "present": True}])
        (None, 0)
    """
    required = [e for e in entries if e.get("role") == "required"]
    if not required:
        return None, 0
    return sum(e.get("present") is True for e in required) / len(required), len(required)


def _value(v: Any) -> float | None:
    if v is None:
        return None
    x = float(v)  # dynamic degree: True -> 1.0
    return x if np.isfinite(x) else None


def _story_counts(clips: Sequence[Mapping[str, Any]], metric: str) -> dict[str, list[float]]:
    """story -> [sum, count] of one metric over its clips (missing values left out)."""
    out: dict[str, list[float]] = {}
    for c in clips:
        acc = out.setdefault(c["story_id"], [0.0, 0.0])
        x = _value(c.get(metric))
        if x is not None:
            acc[0] += x
            acc[1] += 1
    return out


def clustered_mean(per_story: Mapping[str, Sequence[float]], *, n_resamples: int, seed: int,
                   confidence: float) -> dict[str, Any]:
    """Pooled mean of per-story ``(sum, count)`` with a story-bootstrap percentile interval.

    Stories are sorted by id and drawn with ``numpy.random.default_rng(seed)`` as in
    :mod:`vidmem.stats.paired_bootstrap`; draws whose pooled count is 0 are left out.

    Example:
        >>> r = clustered_mean({"a": [2.0, 2], "b": [0.0, 2]}, n_resamples=200, seed=0,
        ...                    confidence=0.95)
        >>> r["mean"], r["n_clips"], r["n_stories"], r["ci_low"], r["ci_high"]
        (0.5, 4, 2, 0.0, 1.0)
    """
    stories = sorted(per_story)
    counts = np.array([per_story[s] for s in stories], dtype=np.float64).reshape(-1, 2)
    total = counts.sum(axis=0)
    out: dict[str, Any] = {"mean": None, "ci_low": None, "ci_high": None,
                           "n_clips": int(total[1]), "n_stories": len(stories),
                           "n_resamples": int(n_resamples), "seed": int(seed),
                           "confidence": float(confidence)}
    if total[1] == 0:
        return out
    out["mean"] = float(total[0] / total[1])
    if len(stories) < 2:
        return out  # one cluster: no interval
    rng = np.random.default_rng(int(seed))
    m = multiplicities(rng.integers(0, len(stories), size=(int(n_resamples), len(stories))),
                       len(stories))
    pooled = m @ counts
    ok = pooled[:, 1] > 0
    draws = pooled[ok, 0] / pooled[ok, 1]
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.percentile(draws, [100.0 * alpha, 100.0 * (1.0 - alpha)])
    out["ci_low"], out["ci_high"] = float(lo), float(hi)
    return out


def condition_summary(clips: Sequence[Mapping[str, Any]], *, n_resamples: int, seed: int,
                      confidence: float) -> dict[str, Any]:
    """One condition's means (with intervals) and Spearman correlations with recall.

    Args:
        clips: that condition's per-clip records (``story_id``, the :data:`METRICS`
            fields and ``recall``).

    Example:
        >>> rows = [{"story_id": "s", "recall": r, "temporal_flickering": q}
        ...         for r, q in [(0.0, 0.90), (0.5, 0.95), (1.0, 0.99), (None, 0.5)]]
        >>> s = condition_summary(rows, n_resamples=10, seed=0, confidence=0.95)
        >>> s["spearman"]["temporal_flickering"]["rho"], s["n_without_recall"]
        (1.0, 1)
    """
    recall = [c.get("recall") for c in clips]
    means, rank = {}, {}
    for metric in METRICS:
        means[metric] = clustered_mean(_story_counts(clips, metric), n_resamples=n_resamples,
                                       seed=seed, confidence=confidence)
        rank[metric] = spearman_with_recall([_value(c.get(metric)) for c in clips],
                                            recall).to_dict()
    return {"n_clips": len(clips), "n_without_recall": sum(r is None for r in recall),
            "n_stories": len({c["story_id"] for c in clips}), "means": means,
            "spearman": rank}


def differences_from(clips: Sequence[Mapping[str, Any]], condition: str, reference: str, *,
                     n_resamples: int, seed: int, confidence: float) -> dict[str, Any] | None:
    """``condition - reference`` per metric, paired over the stories both hold.

    Returns ``None`` when they share no story.
    """
    def arm(cond: str) -> dict[str, dict[str, list[float]]]:
        rows = [c for c in clips if c["condition"] == cond]
        return {m: _story_counts(rows, m) for m in METRICS}

    a, b = arm(condition), arm(reference)
    shared = sorted(set(a[METRICS[0]]) & set(b[METRICS[0]]))
    if not shared:
        return None

    def counts(side: Mapping[str, Mapping[str, list[float]]]) -> dict[str, list[list[float]]]:
        # a sum may exceed its count by a rounding error only; the bootstrap checks num <= den
        return {s: [[min(side[m][s][0], side[m][s][1]), side[m][s][1]] for m in METRICS]
                for s in shared}

    res = paired_story_bootstrap(counts(a), counts(b), n_resamples=n_resamples, seed=seed,
                                 confidence=confidence, names=METRICS)
    out = res.to_dict()
    out["difference"] = f"{condition} - {reference}"
    if len(shared) < 2:  # one story: every draw is that story, no interval to report
        for r in out["rates"].values():
            r["ci_low"] = r["ci_high"] = None
    return out
