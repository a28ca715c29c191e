"""Film means round ``statistics.mean`` as the reference does (issue 24, item 8).

Suchenl/VMem-Bench ``visual_coverage.py`` ``run()``: ``agg = round(mean(vals), 4)`` with
``from statistics import mean`` over the per-segment values, each already rounded to 4
decimals (``_f1`` from the rounded precision and recall); the leaderboard's
``_macro_avg`` is ``round(mean(vals), 6)`` over film means. ``statistics.mean`` sums the
binary floats exactly and rounds once, so a mean on a decimal tie (x.xxxx5) goes where
the exact value of the inputs puts it; ``fmean`` (the old code) could land on the other
side.
"""

from __future__ import annotations

from fractions import Fraction

from vidmem.metrics.reference_evidence import SegmentEvidence, film_means, score_segment


def seg(correct: int, k: int, covered: int = 1, n_candidates: int = 1):
    """A segment with ``k`` references of which ``correct`` show entity a (present,
    a candidate), and ``covered`` of ``n_candidates`` candidates shown."""
    ids = [f"e{i}" for i in range(n_candidates)]
    shows = [{ids[0]} for _ in range(correct)] + [set() for _ in range(k - correct)]
    if covered == 0:
        shows = [set() for _ in range(k)]
    return score_segment(SegmentEvidence(set(ids), set(ids), shows))


def exact_reference_mean(values: list[float], digits: int) -> float:
    """The reference rule without the statistics module: the exact mean of the binary
    inputs, rounded once to the nearest double, then rounded to ``digits``."""
    return round(float(sum(Fraction(v) for v in values) / len(values)), digits)


def test_the_issue_example_f1_mean_is_0_8132():
    # per-segment F1: 0.6667 (P 0.5, R 1), 1, 1, 0.5455 (P 0.6, R 0.5), 0.6667, 1
    scores = [seg(1, 2), seg(1, 1), seg(1, 1), seg(3, 5, covered=1, n_candidates=2),
              seg(1, 2), seg(1, 1)]
    assert [s.f1 for s in scores] == [0.6667, 1.0, 1.0, 0.5455, 0.6667, 1.0]
    # decimal sum 4.8789 / 6 = 0.81315, a tie; the exact mean of the doubles lies just
    # below it, but the double nearest it is 0.81315000000000003...: 0.8132
    assert exact_reference_mean([0.6667, 1, 1, 0.5455, 0.6667, 1], 4) == 0.8132
    assert film_means(scores).f1 == 0.8132  # fmean gave 0.8131


def test_a_precision_mean_on_a_tie_rounds_as_the_reference():
    # precisions 7/9, 3/8, 1/6, 7/9, 5/9, 5/9 -> 0.7778, 0.375, 0.1667, 0.7778, 0.5556, 0.5556;
    # decimal sum 3.2085 / 6 = 0.53475 (a tie); the double nearest the exact mean of the
    # doubles is 0.53475000000000006 (above): 0.5348 (fmean: 0.53475 below it, 0.5347)
    scores = [seg(7, 9), seg(3, 8), seg(1, 6), seg(7, 9), seg(5, 9), seg(5, 9)]
    values = [s.precision for s in scores]
    assert values == [0.7778, 0.375, 0.1667, 0.7778, 0.5556, 0.5556]
    assert exact_reference_mean(values, 4) == 0.5348
    assert film_means(scores).precision == 0.5348
