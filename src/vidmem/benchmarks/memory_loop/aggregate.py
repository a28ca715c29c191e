"""Memory-loop aggregates: per-case score rows -> per-loop and overall results.

For every group (all cases, and each loop):

* **sample fidelity**: mean over the scored cases that have at least one revisit pair,
  with a percentile bootstrap interval over cases (:func:`vidmem.stats.bootstrap.bootstrap_mean_ci`);
* **Memory Half-Life**: the number of ``official`` fits, the mean of their raw values
  (``clamp(t_half / t_ref, 0, 1)``, with a bootstrap interval) and the median
  ``t_half`` in seconds, and how many official fits put ``t_half`` beyond the longest
  gap (``n_beyond_gaps``: extrapolated, see :mod:`vidmem.stats.halflife`) with the
  median over the others (``median_t_half_not_beyond_gaps_seconds``, a vidmem diagnostic
  that is not part of the protocol: it is spared the extrapolated outliers but leans
  short when the true half-life is close to the longest gaps, since it keeps only fits
  that came out shorter than them); the ``not_applicable`` cases counted by the check that failed
  (``min_pairs``, ``distinct_gaps``, ``fidelity_range``, ``r2``, ``decay``...), with
  one full reason per check as an example;
* counts: cases, scored, missing, errors, diagnostic (pairs from the plan), without
  pairs, and how many passed the return gate (a diagnostic, never averaged in).

A larger half-life value is not a longer causal memory: it says that, on these gaps,
fidelity fell slowly relative to ``t_ref``. The pairs of one video are not shown to be
independent events (``event_independence_verified`` is false).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vidmem.metrics.loop_paths import LOOP_IDS, LOOPS
from vidmem.stats.bootstrap import bootstrap_mean_ci

__all__ = ["BOOTSTRAP", "aggregate", "group_summary"]

#: Bootstrap settings of every interval (recorded in run.json).
BOOTSTRAP = {"n_resamples": 2000, "seed": 0, "confidence": 0.95}


def _ci(values: Sequence[float], boot: Mapping[str, Any]) -> dict[str, Any]:
    return bootstrap_mean_ci(list(values), confidence=boot["confidence"],
                             n_resamples=boot["n_resamples"], seed=boot["seed"]).to_dict()


def group_summary(rows: Sequence[Mapping[str, Any]],
                  boot: Mapping[str, Any] = BOOTSTRAP) -> dict[str, Any]:
    """Aggregate one group of per-case rows (see the module docstring).

    Args:
        rows: per-case rows as written to ``scores.jsonl`` (``status``, ``sample_fidelity``,
            ``half_life_status``, ``half_life_check``, ``half_life_reason``,
            ``half_life_value``, ``t_half_seconds``, ``t_half_beyond_gaps``,
            ``diagnostic``, ``n_pairs``, ``return_gate_passed``).
        boot: bootstrap settings.

    Returns:
        Plain JSON data.

    Example:
        >>> rows = [{"status": "scored", "sample_fidelity": f, "half_life_status": s,
        ...          "half_life_check": c, "half_life_reason": c and c + ": why",
        ...          "half_life_value": v, "t_half_seconds": t, "t_half_beyond_gaps": x,
        ...          "diagnostic": False, "n_pairs": 24, "return_gate_passed": True}
        ...         for f, s, c, v, t, x in [(0.9, "official", None, 0.5, 30.0, False),
        ...                                  (0.8, "official", None, 1.0, 90.0, True),
        ...                                  (0.7, "not_applicable", "decay", None, None, None)]]
        >>> g = group_summary(rows)
        >>> round(g["sample_fidelity"]["mean"], 3), g["half_life"]["n_official"]
        (0.8, 2)
        >>> g["half_life"]["median_t_half_seconds"], g["half_life"]["n_beyond_gaps"]
        (60.0, 1)
        >>> g["half_life"]["median_t_half_not_beyond_gaps_seconds"]
        30.0
        >>> g["half_life"]["not_applicable"]
        {'decay': 1}
    """
    scored = [r for r in rows if r.get("status") == "scored"]
    with_pairs = [r for r in scored if r.get("sample_fidelity") is not None]
    official = [r for r in scored if r.get("half_life_status") == "official"]
    na = [r for r in scored if r.get("half_life_status") != "official"]
    reasons = Counter(str(r.get("half_life_check") or "unknown") for r in na)
    examples: dict[str, str] = {}
    for r in na:
        examples.setdefault(str(r.get("half_life_check") or "unknown"), str(r.get("half_life_reason")))
    gated = [r for r in scored if r.get("return_gate_passed") is not None]
    t_half = [float(r["t_half_seconds"]) for r in official if r.get("t_half_seconds") is not None]
    inside = [float(r["t_half_seconds"]) for r in official
              if r.get("t_half_seconds") is not None and r.get("t_half_beyond_gaps") is False]
    # Rows scored before the flag existed lack it: then neither number can be given.
    flagged = all(isinstance(r.get("t_half_beyond_gaps"), bool) for r in official)
    return {
        "n_cases": len(rows),
        "n_scored": len(scored),
        "n_missing": sum(r.get("status") == "missing" for r in rows),
        "n_errors": sum(r.get("status") == "error" for r in rows),
        "n_diagnostic": sum(bool(r.get("diagnostic")) for r in scored),
        "n_without_pairs": len(scored) - len(with_pairs),
        "sample_fidelity": _ci([float(r["sample_fidelity"]) for r in with_pairs], boot),
        "half_life": {
            "n_official": len(official),
            "value": _ci([float(r["half_life_value"]) for r in official], boot),
            "median_t_half_seconds": float(np.median(t_half)) if t_half else None,
            "n_beyond_gaps": (sum(r.get("t_half_beyond_gaps") is True for r in official)
                              if flagged else None),
            "median_t_half_not_beyond_gaps_seconds": (float(np.median(inside))
                                                      if inside and flagged else None),
            "not_applicable": dict(sorted(reasons.items())),
            "not_applicable_examples": dict(sorted(examples.items())),
        },
        "return_gate": {"n": len(gated), "passed": sum(bool(r["return_gate_passed"]) for r in gated)},
    }


def aggregate(rows: Sequence[Mapping[str, Any]],
              boot: Mapping[str, Any] = BOOTSTRAP) -> dict[str, Any]:
    """Overall and per-loop aggregates of per-case rows.

    Args:
        rows: per-case rows (each with a ``loop_id``), see :func:`group_summary`.
        boot: bootstrap settings.

    Returns:
        ``{"overall": {...}, "by_loop": [{"loop_id", "difficulty", ...}, ...]}``, loops
        in the benchmark's order, only those with cases.
    """
    by_loop = []
    for loop_id in LOOP_IDS:
        sub = [r for r in rows if r.get("loop_id") == loop_id]
        if sub:
            by_loop.append({"loop_id": loop_id, "difficulty": LOOPS[loop_id].difficulty,
                            **group_summary(sub, boot)})
    return {"overall": group_summary(rows, boot), "by_loop": by_loop}
