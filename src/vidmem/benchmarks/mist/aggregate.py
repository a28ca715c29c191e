"""Every MIST number from stored case rows (pure: no judge, no files).

A stored row (:meth:`~vidmem.benchmarks.mist.scorer.MistScorer.score_case`) holds per
case the setup and leak readings and, per arm and try, the six reveal and six inside
readings. Here they become, per arm:

* **gates** of two selections, each with the four factors apart (setup, leak, reveal,
  inside; never their product) and the class counts overall and per family R0/R1/R2
  (:func:`~vidmem.metrics.mist_gates.summarize_gates`):

  - ``first`` -- one clip per case, no selection: the arm's try 0; for the M3-Agent
    arms the first rewrite (try 1), or the original when the loop stopped at a
    diagnosed success before rewriting;
  - ``best`` -- keep-best over the arm's candidates with the **original** (the
    baseline's try 0) always eligible: the clip with the highest reveal, ties broken by
    the last-position inside reading, then the mean inside, then the earlier candidate
    (the original first). Chosen by the reporting scorer, so an **oracle estimate**.

* **running best-of-K**: for k = 1..K the mean over cases of the kept clip's reveal (and
  the chosen clip's inside) among the original and the arm's first k tries (M3-Agent
  arms: its first k candidates, the original being candidate 0), every cell labelled an
  oracle estimate; **per try**, the mean reveal and inside of try k alone (not monotone).
* **deltas** against the baseline's one clip, for reveal and inside of both selections:
  the paired case bootstrap (4,000 resamples, seed 0) and the paired Wilcoxon
  signed-rank test (:mod:`vidmem.stats.paired_cases`), over the cases where both
  values are readable (the others are counted as dropped);
* **transitions**: baseline class -> the arm's class, per case;
* **hard cuts**: clips with a cut inside, cuts, and seams (gap -> reveal) that are cuts.

Every rule is in :data:`PROTOCOL`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from vidmem.benchmarks.mist.config import AGENT_ARMS, BASELINE, MistConfig
from vidmem.metrics.mist_gates import ClipGates, clip_gates, summarize_gates
from vidmem.stats.paired_cases import paired_case_bootstrap, paired_wilcoxon

__all__ = ["PROTOCOL", "aggregate_rows", "arm_candidates", "keep_best", "row_clips"]

ORACLE_NOTE = ("keep-best chosen by the reporting scorer with the original always eligible: "
               "an oracle coverage estimate, not a deployable critic")

PROTOCOL: dict[str, dict[str, str]] = {
    "first": {
        "rule": "one clip per case without selection: the arm's try 0; M3-Agent arms: the "
                "first rewrite (try 1), the original when the loop stopped at success on it",
        "reason": "the kept-clip analysis locks one outcome per case",
        "source": "seed 001 section 4 (Table 2: 'one kept clip per case, rather than "
                  "best-of-five'); the stopped-loop case decided here",
    },
    "best": {
        "rule": "keep-best: highest reveal, ties by inside at the last readable position, "
                "then mean inside, then the earlier candidate (the original first); the "
                "original is eligible in every arm; labelled an oracle estimate",
        "reason": "each arm keeps the try the judge scores highest; inside is read on the "
                  "clip chosen for reveal; the original stays in the set",
        "source": "seed 001 section 4 (Table 3, 'inside of chosen'), section 5 (Eq. 3, the "
                  "original in the set), App. A (oracle); tie order decided here",
    },
    "candidates": {
        "rule": "fixed arms: the original + K new tries; M3-Agent arms: K candidates, the "
                "original being candidate 0 (K - 1 new clips); baseline: the original only",
        "reason": "M3-Agent's K counts the original (interface section 5); the fixed arms "
                  "spend K generator calls, so the comparison does not favour M3",
        "source": "interface section 5; seed 001 section 4 (the same five tries)",
    },
    "running_best": {
        "rule": "k = 1..K: mean over cases of the kept clip's reveal (and the chosen clip's "
                "inside) among the original and the first k tries; cases whose candidates "
                "are all unreadable are left out",
        "reason": "later tries are not better on average, so best-of-K is a running best",
        "source": "seed 001 section 4 (Fig. 4d, Table 9); stats.paired_cases.PROTOCOL",
    },
    "deltas": {
        "rule": "arm minus the baseline's one clip, per case, for reveal and inside of the "
                "first and best selections; cases with an unreadable value in either are "
                "dropped and counted",
        "reason": "paired statistics over cases; best-of-K against one baseline clip is the "
                  "paper's Table 3 comparison (an oracle estimate)",
        "source": "PROTOCOLS.md section 5; seed 001 Table 7 text",
    },
    "hard_cuts": {
        "rule": "per clip the cuts inside it (grey MAD >= 22); the seam gap -> reveal is "
                "reported apart",
        "reason": "continuity check per generated clip; the seam shows whether the reveal "
                  "continues the locked shots",
        "source": "seed 001 App. C; metrics.hard_cuts.PROTOCOL; the seam decided here",
    },
}


#: the gates of a case with no usable clip (class ``unscored``)
_BLANK = clip_gates(None, None, [None] * 6, [None] * 6)


def row_clips(row: Mapping[str, Any], arm: str, threshold: float = 0.5) -> list[ClipGates]:
    """The gate factors of each try of ``arm`` in one stored row, from its readings."""
    return [clip_gates(row["setup"], row["leak"], c["reveal_readings"], c["inside_readings"],
                       threshold=threshold)
            for c in row["arms"].get(arm, [])]


def _key(g: ClipGates) -> tuple[float, float, float]:
    return (g.reveal if g.reveal is not None else -1.0,
            g.inside_last if g.inside_last is not None else -1.0,
            g.inside if g.inside is not None else -1.0)


def keep_best(candidates: Sequence[ClipGates | None]) -> int | None:
    """Index of the kept candidate (rule ``best`` of :data:`PROTOCOL`); ``None`` when no
    candidate has a readable reveal.

    Example:
        >>> a = clip_gates(1, 0, [1, 1, 0, 0, 0, 0], [0] * 6)
        >>> b = clip_gates(1, 0, [1, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1])
        >>> keep_best([a, b]), keep_best([a, a]), keep_best([None])
        (1, 0, None)
    """
    best, key = None, None
    for i, g in enumerate(candidates):
        if g is None or g.reveal is None:
            continue
        k = _key(g)
        if key is None or k > key:
            best, key = i, k
    return best


def arm_candidates(row: Mapping[str, Any], arm: str, threshold: float = 0.5
                   ) -> tuple[list[ClipGates], ClipGates | None]:
    """``(candidate list in eligibility order, first clip)`` of ``arm`` in one row.

    The list starts with the original for every arm; for M3-Agent arms the original is
    their own try 0, for the fixed arms the baseline's try 0 followed by the K tries.
    """
    tries = row_clips(row, arm, threshold)
    if arm == BASELINE or arm in AGENT_ARMS:
        cands = tries
    else:
        original = row_clips(row, BASELINE, threshold)[:1]
        cands = original + tries
    if arm in AGENT_ARMS:
        first = tries[1] if len(tries) > 1 else (tries[0] if tries else None)
    else:
        first = tries[0] if tries else None
    return cands, first


def _mean(xs: Sequence[float | None]) -> float | None:
    vals = [x for x in xs if x is not None]
    return sum(vals) / len(vals) if vals else None


def _running(rows: Sequence[Mapping[str, Any]], arm: str, k: int, threshold: float
             ) -> dict[str, Any]:
    extra = 0 if arm in AGENT_ARMS or arm == BASELINE else 1  # the original ahead of try 0
    steps = 1 if arm == BASELINE else k
    reveal, inside = [], []
    for j in range(1, steps + 1):
        rv, ins = [], []
        for row in rows:
            cands, _ = arm_candidates(row, arm, threshold)
            pool = cands[:extra + j]
            i = keep_best(pool)
            if i is not None:
                rv.append(pool[i].reveal)
                ins.append(pool[i].inside)
        reveal.append(_mean(rv))
        inside.append(_mean(ins))
    return {"reveal": reveal, "inside_of_chosen": inside, "oracle_estimate": True,
            "note": ORACLE_NOTE}


def _per_try(rows: Sequence[Mapping[str, Any]], arm: str, threshold: float) -> list[dict]:
    out = []
    n = max((len(r["arms"].get(arm, [])) for r in rows), default=0)
    for k in range(n):
        gs = [row_clips(r, arm, threshold)[k] for r in rows if len(r["arms"].get(arm, [])) > k]
        out.append({"try": k, "n": len(gs), "reveal": _mean([g.reveal for g in gs]),
                    "inside": _mean([g.inside for g in gs])})
    return out


def _paired(arm_vals: Mapping[str, float | None], base_vals: Mapping[str, float | None],
            config: MistConfig, oracle: bool) -> dict[str, Any]:
    both = sorted(c for c in arm_vals if arm_vals[c] is not None
                  and base_vals.get(c) is not None)
    a = {c: float(arm_vals[c]) for c in both}  # type: ignore[arg-type]
    b = {c: float(base_vals[c]) for c in both}  # type: ignore[arg-type]
    boot = paired_case_bootstrap(a, b, n_resamples=config.n_resamples,
                                 seed=config.bootstrap_seed, confidence=config.confidence)
    return {"n": len(both), "n_dropped": len(arm_vals) - len(both),
            "bootstrap": boot.to_dict(), "wilcoxon": paired_wilcoxon(a, b).to_dict(),
            "oracle_estimate": oracle}


def _cuts(rows: Sequence[Mapping[str, Any]], arm: str) -> dict[str, int]:
    clips = [c for r in rows for c in r["arms"].get(arm, [])]
    return {"clips": len(clips), "clips_with_cut": sum(bool(c["hard_cuts"]) for c in clips),
            "cuts": sum(len(c["hard_cuts"]) for c in clips),
            "seam_cuts": sum(bool(c.get("seam_cut")) for c in clips)}


def aggregate_rows(rows: Sequence[Mapping[str, Any]], config: MistConfig) -> dict[str, Any]:
    """The summary of scored MIST rows (module docstring); rows not ``scored`` are skipped.

    Returns:
        ``{"arms", "baseline", "n_cases_scored", "cases", "families", "arm": {arm:
        {"first", "best", "running_best", "per_try", "kept", "hard_cuts"}}, "deltas":
        {arm: {"first"|"best": {"reveal"|"inside": paired stats}}}, "transitions",
        "locked_hard_cuts", "judge", "oracle_note"}``.
    """
    scored = [r for r in rows if r.get("status", "scored") == "scored"]
    th = config.threshold
    fams = [r["family"] for r in scored]
    per_arm: dict[str, Any] = {}
    picks: dict[str, dict[str, dict[str, ClipGates | None]]] = {}
    for arm in config.arms:
        firsts, bests, kept = {}, {}, Counter()
        for r in scored:
            cands, first = arm_candidates(r, arm, th)
            i = keep_best(cands)
            firsts[r["case_id"]] = first
            bests[r["case_id"]] = None if i is None else cands[i]
            kept["original" if i == 0 else "none" if i is None else "try"] += 1
        picks[arm] = {"first": firsts, "best": bests}
        per_arm[arm] = {
            "first": summarize_gates([firsts[r["case_id"]] or _BLANK for r in scored], fams,
                                     threshold=th),
            "best": {**summarize_gates([bests[r["case_id"]] or _BLANK for r in scored], fams,
                                       threshold=th), "oracle_estimate": True},
            "running_best": _running(scored, arm, config.k, th),
            "per_try": _per_try(scored, arm, th),
            "kept": dict(kept),
            "hard_cuts": _cuts(scored, arm),
        }
    deltas: dict[str, Any] = {}
    transitions: dict[str, Any] = {}
    base = picks.get(BASELINE, {}).get("first", {})
    for arm in config.arms:
        if arm == BASELINE:
            continue
        deltas[arm], transitions[arm] = {}, {}
        for sel in ("first", "best"):
            got = picks[arm][sel]
            deltas[arm][sel] = {
                f: _paired({c: getattr(g, f) if g else None for c, g in got.items()},
                           {c: getattr(g, f) if g else None for c, g in base.items()},
                           config, oracle=sel == "best")
                for f in ("reveal", "inside")}
            moves = Counter(f"{(base.get(c) or _BLANK).label}->{(g or _BLANK).label}"
                            for c, g in got.items())
            transitions[arm][sel] = dict(sorted(moves.items()))
    judge: Counter[str] = Counter()
    for r in scored:
        judge.update(r.get("judge") or {})
    locked = {shot: sum(bool(r["locked"][shot]["hard_cuts"]) for r in scored)
              for shot in ("setup", "gap")}
    return {
        "arms": list(config.arms), "baseline": BASELINE, "k": config.k,
        "n_cases_scored": len(scored), "cases": [r["case_id"] for r in scored],
        "families": dict(Counter(fams)), "arm": per_arm, "deltas": deltas,
        "transitions": transitions, "locked_hard_cuts": locked, "judge": dict(judge),
        "oracle_note": ORACLE_NOTE,
    }
