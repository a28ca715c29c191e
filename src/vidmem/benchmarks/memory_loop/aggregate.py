"""Memory-loop aggregates: per-case score rows -> per-loop and overall results.

For every group (all cases, and each loop):

* **sample fidelity**: mean over the scored cases that have at least one revisit pair,
  with a percentile bootstrap interval over cases (:func:`vidmem.stats.bootstrap.bootstrap_mean_ci`);
* **Memory Half-Life**: the number of ``official`` fits, the mean of their raw values
  (``clamp(t_half / t_ref, 0, 1)``, with a bootstrap interval) and the median
  ``t_half`` in seconds (the official numbers, unchanged), and how many official fits
  put ``t_half`` beyond the longest gap (``n_beyond_gaps``) or below the shortest
  (``n_below_gaps``), both extrapolations (see :mod:`vidmem.stats.halflife`), with the
  median over the fits that are neither (``median_t_half_within_gaps_seconds``, a
  vidmem diagnostic that is not part of the protocol: it is spared the extrapolated
  outliers but, keeping only fits inside the observed gaps, leans towards them); the
  ``not_applicable`` cases counted by the check that failed (``min_pairs``,
  ``distinct_gaps``, ``fidelity_range``, ``r2``, ``decay``...), with one full reason
  per check as an example;
* **camera compliance** (vidmem, beyond the card; :mod:`vidmem.metrics.camera_motion`):
  how many scored cases are ``evaluable`` (the camera moved where the loop plans it)
  as a coverage rate, the not-evaluable reasons by kind, and the mean sample fidelity
  over the evaluable cases only (``sample_fidelity_camera_evaluable``); the protocol's
  ``sample_fidelity`` is never changed by it;
* **model-level half-life** (``model_half_life``, vidmem's estimate beyond the card,
  :func:`vidmem.stats.halflife_model.fit_model_half_life`): one decay time shared by
  every camera-evaluable case of the group, with a case-clustered bootstrap interval;
  labelled as vidmem's, never mixed with the per-case numbers above;
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
from vidmem.stats.halflife_model import fit_model_half_life

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
            ``t_half_below_gaps``, ``diagnostic``, ``n_pairs``, ``return_gate_passed``,
            ``camera_gate_status``, ``camera_gate_reason``, ``pair_gap_fidelity``).
        boot: bootstrap settings.

    Returns:
        Plain JSON data.

    Example:
        >>> rows = [{"status": "scored", "sample_fidelity": f, "half_life_status": s,
        ...          "half_life_check": c, "half_life_reason": c and c + ": why",
        ...          "half_life_value": v, "t_half_seconds": t, "t_half_beyond_gaps": x,
        ...          "t_half_below_gaps": x and False,
        ...          "diagnostic": False, "n_pairs": 24, "return_gate_passed": True}
        ...         for f, s, c, v, t, x in [(0.9, "official", None, 0.5, 30.0, False),
        ...                                  (0.8, "official", None, 1.0, 90.0, True),
        ...                                  (0.7, "not_applicable", "decay", None, None, None)]]
        >>> g = group_summary(rows)
        >>> round(g["sample_fidelity"]["mean"], 3), g["half_life"]["n_official"]
        (0.8, 2)
        >>> g["half_life"]["median_t_half_seconds"], g["half_life"]["n_beyond_gaps"]
        (60.0, 1)
        >>> g["half_life"]["median_t_half_within_gaps_seconds"], g["half_life"]["n_below_gaps"]
        (30.0, 0)
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
              if r.get("t_half_seconds") is not None and r.get("t_half_beyond_gaps") is False
              and r.get("t_half_below_gaps") is False]
    # Rows scored before a flag existed lack it: then the numbers built on it cannot be given.
    beyond_flagged = all(isinstance(r.get("t_half_beyond_gaps"), bool) for r in official)
    flagged = beyond_flagged and all(isinstance(r.get("t_half_below_gaps"), bool)
                                     for r in official)
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
                              if beyond_flagged else None),
            "n_below_gaps": (sum(r.get("t_half_below_gaps") is True for r in official)
                             if flagged else None),
            "median_t_half_within_gaps_seconds": (float(np.median(inside))
                                                  if inside and flagged else None),
            "not_applicable": dict(sorted(reasons.items())),
            "not_applicable_examples": dict(sorted(examples.items())),
        },
        "return_gate": {"n": len(gated), "passed": sum(bool(r["return_gate_passed"]) for r in gated)},
        **camera_summary(scored, boot),
        "model_half_life": model_half_life(scored, boot),
    }


def camera_summary(scored: Sequence[Mapping[str, Any]],
                   boot: Mapping[str, Any] = BOOTSTRAP) -> dict[str, Any]:
    """Camera-compliance coverage of scored rows, and fidelity over the evaluable ones.

    Example:
        >>> rows = [{"sample_fidelity": f, "camera_gate_status": s,
        ...          "camera_gate_reason": None if s == "evaluable" else "near_static: ..."}
        ...         for f, s in [(0.7, "evaluable"), (0.8, "evaluable"), (0.99, "not_evaluable")]]
        >>> c = camera_summary(rows)
        >>> c["camera_gate"]["coverage"], c["camera_gate"]["not_evaluable"]
        (0.6667, {'near_static': 1})
        >>> round(c["sample_fidelity_camera_evaluable"]["mean"], 3)
        0.75
    """
    checked = [r for r in scored if r.get("camera_gate_status") in ("evaluable", "not_evaluable")]
    ok = [r for r in checked if r["camera_gate_status"] == "evaluable"]
    kinds = Counter(str(r.get("camera_gate_reason") or "unknown").split(":")[0]
                    for r in checked if r["camera_gate_status"] != "evaluable")
    return {
        "camera_gate": {"n_checked": len(checked), "n_evaluable": len(ok),
                        "n_unchecked": len(scored) - len(checked),
                        "coverage": round(len(ok) / len(checked), 4) if checked else None,
                        "not_evaluable": dict(sorted(kinds.items()))},
        "sample_fidelity_camera_evaluable": _ci(
            [float(r["sample_fidelity"]) for r in ok if r.get("sample_fidelity") is not None], boot),
    }


def model_half_life(scored: Sequence[Mapping[str, Any]],
                    boot: Mapping[str, Any] = BOOTSTRAP) -> dict[str, Any]:
    """vidmem's model-level half-life over the camera-evaluable rows' pairs."""
    cases = {str(r["case_id"]): ([p[0] for p in r["pair_gap_fidelity"]],
                                 [p[1] for p in r["pair_gap_fidelity"]])
             for r in scored if r.get("camera_gate_status") == "evaluable"
             and r.get("pair_gap_fidelity") is not None}
    return fit_model_half_life(cases, n_resamples=boot["n_resamples"],
                               confidence=boot["confidence"], seed=boot["seed"])


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
