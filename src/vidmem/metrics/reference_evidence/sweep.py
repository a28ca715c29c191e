"""Track-A budget sweep: each segment's own ranking cut at K and rescored.

Part of :mod:`vidmem.metrics.reference_evidence` (the overview and the rules are there).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from vidmem.metrics.reference_evidence.segment import SegmentEvidence, SegmentScore, score_segment
from vidmem.metrics.reference_evidence.segment_metrics import SEGMENT_DIGITS, _fail

#: reference budgets of the sweep (each policy's own ranking cut at K)
BUDGETS = tuple(range(1, 17))


def budget_sweep(segments: Sequence[SegmentEvidence], budgets: Iterable[int] = BUDGETS, *,
                 ndigits: int | None = SEGMENT_DIGITS) -> dict[int, list[SegmentScore]]:
    """Per budget ``K``, every segment scored on the first ``K`` of its own ranking.

    Labels, view keys and embeddings are reused as judged; nothing is judged again. A
    segment with fewer than ``K`` references keeps them all.

    Example:
        >>> seg = SegmentEvidence({"a", "b"}, {"a", "b"}, [{"a"}, set(), {"b"}])
        >>> {k: s[0].f1 for k, s in budget_sweep([seg], [1, 2, 3, 16]).items()}
        {1: 0.6667, 2: 0.5, 3: 0.8, 16: 0.8}
    """
    out: dict[int, list[SegmentScore]] = {}
    for k in budgets:
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise _fail("budgets", "integers >= 1", k, "use K = 1..16")
        out[int(k)] = [score_segment(s.truncated(int(k)), ndigits=ndigits) for s in segments]
    return out

