"""Youden-optimal similarity thresholds from control pairs, frozen before scoring.

An identity score (a cosine between two appearances) needs a cut above which the two
count as "the same". The cut is read off control pairs whose answer is known: positive
pairs (two disjoint frame sets of one clip: the same entity) and negative pairs (two
different entities of the same kind and story). It maximises Youden's J = TPR - FPR
over scikit-learn's ROC curve, and is then frozen (:class:`Calibration`, written to
run.json) before any condition is scored.

Rules (each in :data:`PROTOCOL` with its reason and source): a pair is called "same"
when ``score >= cut``; the candidate cuts are the finite thresholds of
``sklearn.metrics.roc_curve(drop_intermediate=False)`` (every distinct score); of the
runs of adjacent candidates with the maximal J the highest wins, and the cut is the
midpoint between that run's lowest candidate and the next lower control score (the
widest margin the controls allow: a cut ON a control score overfits that score); AUC is
``roc_auc_score`` (ties count a half).

Example (J = 2/3 at 0.8 and at 0.7, not adjacent; the run {0.8} wins, and the cut is
halfway down to the next score, 0.75):
    >>> c = youden_threshold([0.9, 0.8, 0.7], [0.2, 0.75, 0.1])
    >>> c.cut, round(c.tpr, 4), round(c.fpr, 4), round(c.j, 4), round(c.auc, 4)
    (0.775, 0.6667, 0.0, 0.6667, 0.8889)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.metrics import roc_auc_score, roc_curve

from vidmem.errors import UserInputError

__all__ = ["PROTOCOL", "Calibration", "youden_threshold"]

#: every rule this module applies: what it is, why, and where it comes from
PROTOCOL: dict[str, dict[str, str]] = {
    "controls": {
        "rule": "positive = two disjoint frame sets of one clip (same entity); negative = "
                "two different entities of the same kind and story",
        "reason": "pairs whose answer is known without a label",
        "source": "PROTOCOLS.md section 4 (Identity); seed 000 App. D.2 and Table 16",
    },
    "cut": {
        "rule": "the cut maximises Youden's J = TPR - FPR; a pair is 'same' iff score >= cut",
        "reason": "the protocol's Youden-optimal threshold; >= is roc_curve's convention",
        "source": "PROTOCOLS.md section 4; sklearn.metrics.roc_curve",
    },
    "candidates": {
        "rule": "the finite thresholds of roc_curve(y, scores, drop_intermediate=False): "
                "every distinct control score (the +inf start point is never a cut)",
        "reason": "J only changes at a score; dropping points could drop the optimum",
        "source": "decided here",
    },
    "ties": {
        "rule": "J is piecewise constant in the cut and compared exactly, as tp * N - fp * P "
                "in whole counts; of the runs of adjacent candidates (distinct control "
                "scores, descending) with the maximal J the highest run wins (lowest FPR), "
                "and the cut is the midpoint between that run's lowest candidate and the "
                "next lower distinct control score (the lowest candidate itself when there "
                "is none); separable controls: (min positive + max negative) / 2; the "
                "reported TPR/FPR/J are those of score >= cut",
        "reason": "the maximal margin between the controls: a cut ON a control score "
                  "overfits it (with separated controls the cut sat on the lowest positive, "
                  "and a same-entity return a hair below it was called different); the "
                  "highest run because a false 'same' is what inflates identity continuity",
        "source": "decided here (the reference calibration code is not published)",
    },
    "auc": {
        "rule": "AUC = sklearn roc_auc_score (a tied positive/negative pair counts 1/2)",
        "reason": "the threshold-free separation reported next to the cut",
        "source": "seed 000 Table 16 (calibration of the identity metrics)",
    },
    "frozen": {
        "rule": "the calibration is computed once from the controls and written to run.json "
                "before any condition is scored; scoring reads it back (from_dict)",
        "reason": "a cut tuned on the conditions would bias their comparison",
        "source": "PROTOCOLS.md section 4 ('fixed before any condition is scored')",
    },
}


@dataclass(frozen=True)
class Calibration:
    """A frozen Youden cut and the ROC it came from.

    Attributes:
        cut: call a pair "same" when its score >= cut.
        tpr, fpr: the controls' rates at the cut; ``j = tpr - fpr``.
        auc: area under the ROC curve.
        n_positive, n_negative: control pairs.
        fpr_curve, tpr_curve, thresholds: the ROC points in roc_curve order (the first
            threshold is ``inf``, stored as ``None`` in :meth:`to_dict`).
        name: what was calibrated (e.g. ``"dinov3/base crop"``), for the report.
    """

    cut: float
    tpr: float
    fpr: float
    auc: float
    n_positive: int
    n_negative: int
    fpr_curve: tuple[float, ...]
    tpr_curve: tuple[float, ...]
    thresholds: tuple[float, ...]
    name: str = ""

    @property
    def j(self) -> float:
        """Youden's J at the cut."""
        return self.tpr - self.fpr

    def same(self, score: float) -> bool:
        """Whether a score is over the cut.

        Example:
            >>> c = youden_threshold([0.9], [0.1])  # cut 0.5
            >>> c.same(0.5), c.same(0.49)
            (True, False)
        """
        return bool(score >= self.cut)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (``inf`` thresholds as ``None``) for run.json."""
        return {"name": self.name, "cut": self.cut, "tpr": self.tpr, "fpr": self.fpr,
                "j": self.j, "auc": self.auc, "n_positive": self.n_positive,
                "n_negative": self.n_negative, "rule": "same iff score >= cut",
                "curve": {"fpr": list(self.fpr_curve), "tpr": list(self.tpr_curve),
                          "thresholds": [t if np.isfinite(t) else None
                                         for t in self.thresholds]}}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Calibration:
        """Read back :meth:`to_dict` (``j`` and ``rule`` are derived and ignored).

        Example:
            >>> c = youden_threshold([0.9, 0.8], [0.1])
            >>> Calibration.from_dict(c.to_dict()) == c
            True
        """
        try:
            curve = d["curve"]
            return cls(cut=float(d["cut"]), tpr=float(d["tpr"]), fpr=float(d["fpr"]),
                       auc=float(d["auc"]), n_positive=int(d["n_positive"]),
                       n_negative=int(d["n_negative"]),
                       fpr_curve=tuple(float(x) for x in curve["fpr"]),
                       tpr_curve=tuple(float(x) for x in curve["tpr"]),
                       thresholds=tuple(np.inf if t is None else float(t)
                                        for t in curve["thresholds"]),
                       name=str(d.get("name", "")))
        except (KeyError, TypeError, ValueError) as exc:
            raise UserInputError(f"calibration: not a stored Calibration ({exc!r})",
                                 hint="pass the dict written by Calibration.to_dict "
                                      "(run.json's calibration block)") from exc


def _scores(values: Sequence[float] | np.ndarray, what: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise UserInputError(f"calibration: {what} scores must be numbers ({exc})") from exc
    if arr.ndim != 1 or arr.size == 0:
        raise UserInputError(f"calibration: {what} scores must be a non-empty 1-D list, found "
                             f"shape {arr.shape}",
                             hint=f"score at least one {what} control pair")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise UserInputError(f"calibration: {what} score {int(bad[0])} is {arr[bad[0]]} (not "
                             f"finite; {bad.size} such)",
                             hint="drop control pairs that were not detected on both sides")
    return arr


def _midpoint(lowest: float, below: float | None) -> float:
    """Halfway from a candidate cut down to the next lower score, never onto that score.

    Example:
        >>> _midpoint(0.8, 0.75), _midpoint(0.8, None), _midpoint(1.0, float(np.nextafter(1.0, 0)))
        (0.775, 0.8, 1.0)
    """
    if below is None:
        return lowest
    mid = 0.5 * (lowest + below)
    # two adjacent floats have no float between them: keep the candidate, so that
    # score >= cut still calls exactly the scores >= lowest "same"
    return mid if below < mid <= lowest else lowest


def youden_threshold(positive: Sequence[float] | np.ndarray,
                     negative: Sequence[float] | np.ndarray, *, name: str = "") -> Calibration:
    """The Youden-optimal cut of positive vs negative control scores.

    Args:
        positive: scores of same-entity control pairs (higher = more alike).
        negative: scores of different-entity control pairs.
        name: what was calibrated, kept in the result.

    Returns:
        The frozen :class:`Calibration` (rules in :data:`PROTOCOL`).

    Raises:
        UserInputError: an empty or non-finite score list.

    Example (separable: halfway between the lowest positive and the highest negative):
        >>> c = youden_threshold([0.6, 0.7, 0.9], [0.1, 0.3, 0.4])
        >>> c.cut, c.tpr, c.fpr, c.auc
        (0.5, 1.0, 0.0, 1.0)
    """
    pos, neg = _scores(positive, "positive"), _scores(negative, "negative")
    y = np.concatenate([np.ones(pos.size, np.int8), np.zeros(neg.size, np.int8)])
    s = np.concatenate([pos, neg])
    fpr, tpr, thr = roc_curve(y, s, drop_intermediate=False)
    # J compared in whole counts (tp * N - fp * P): in floats 1 - 1/3 > 2/3, and a tie
    # would go to whichever rounding error is larger.
    tp, fp = np.rint(tpr * pos.size).astype(np.int64), np.rint(fpr * neg.size).astype(np.int64)
    j = np.where(np.isfinite(thr), tp * neg.size - fp * pos.size, np.iinfo(np.int64).min)
    # roc_curve lists thresholds in decreasing order, so argmax (the first maximum) opens
    # the highest run of maximal J; the run ends before the first lower J: PROTOCOL["ties"].
    start = int(np.argmax(j))
    below_max = np.flatnonzero(j[start:] != j[start])
    low = start + (int(below_max[0]) - 1 if below_max.size else thr.size - 1 - start)
    cut = _midpoint(float(thr[low]), float(thr[low + 1]) if low + 1 < thr.size else None)
    # no control score lies in [cut, thr[low]), so the rates at the cut are those at thr[low]
    return Calibration(cut=cut, tpr=float(tpr[low]), fpr=float(fpr[low]),
                       auc=float(roc_auc_score(y, s)), n_positive=int(pos.size),
                       n_negative=int(neg.size), fpr_curve=tuple(map(float, fpr)),
                       tpr_curve=tuple(map(float, tpr)), thresholds=tuple(map(float, thr)),
                       name=name)
