"""A run's judge health: how its questions were answered, and whether to trust them.

An unparsable answer is the judge model's answer (it came back, it could not be used),
so it is counted, never retried forever, and read by each benchmark's own rule (an
entity abstains, a reference is not shown). But a run whose judge mostly answers
garbage -- an HTML error page with status 200, prose around broken JSON, a model
that ignores the format -- measures the judge, not the generator: above a share of
``max_unparsable`` (default :data:`MAX_UNPARSABLE`) the run fails with the share and a
sample reply, and ``summary.json`` keeps the numbers for whoever wants to look.

The counts come from each stored item's ``judge_answers`` (written by the runner from
:meth:`~vidmem.runners.judge_cache.CachedJudge.answer_counts`), so a resumed run counts
the items scored before as they were scored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["MAX_UNPARSABLE", "PROTOCOL", "judge_health", "unparsable_failure"]

#: default ``--max-unparsable``: the share of unusable judge answers a run tolerates.
MAX_UNPARSABLE = 0.2

PROTOCOL = {
    "value": f"a run fails when more than max_unparsable (default {MAX_UNPARSABLE:g}) of its "
             "judge answers are unusable after the one JSON-only follow-up; a question with "
             "no answer (transport, HTTP status, timeout) fails its item and is asked again "
             "on --resume",
    "reason": "an error is never a result; a judge that mostly answers garbage measures "
              "the judge, not the generator",
    "source": "vidmem",
}


def judge_health(stored: Iterable[Any], max_unparsable: float = MAX_UNPARSABLE) -> dict[str, Any]:
    """The run's judge counts over its scored items, and the failure if any.

    Args:
        stored: the run's stored score items (objects with ``status`` and ``response``).
        max_unparsable: the largest tolerated share of unusable answers, in ``[0, 1]``.

    Returns:
        ``{"answers", "from_cache", "asked", "unparsable", "unparsable_share",
        "max_unparsable", "sample", "failure"}``; ``failure`` is ``None`` or the message.

    Example:
        >>> class S:
        ...     def __init__(self, asked, bad):
        ...         self.status = "done"
        ...         self.response = {"judge_answers": {"asked": asked, "from_cache": 0,
        ...                          "unparsable": bad, "unparsable_sample": "<html>"}}
        >>> h = judge_health([S(10, 1), S(10, 5)], 0.2)
        >>> h["unparsable_share"], h["failure"][:46]
        (0.3, 'the judge answered 6 of 20 questions (30.0%) u')
        >>> judge_health([S(10, 1)], 0.2)["failure"] is None
        True
    """
    counts = {"from_cache": 0, "asked": 0, "unparsable": 0}
    sample = None
    for s in stored:
        if getattr(s, "status", None) != "done" or not isinstance(s.response, Mapping):
            continue
        answers = s.response.get("judge_answers")
        if not isinstance(answers, Mapping):
            continue
        for name in counts:
            counts[name] += int(answers.get(name, 0) or 0)
        if sample is None and answers.get("unparsable_sample"):
            sample = str(answers["unparsable_sample"])
    total = counts["from_cache"] + counts["asked"]
    share = counts["unparsable"] / total if total else 0.0
    return {"answers": total, **counts, "unparsable_share": round(share, 6),
            "max_unparsable": float(max_unparsable), "sample": sample,
            "failure": unparsable_failure(counts["unparsable"], total, max_unparsable, sample)}


def unparsable_failure(unparsable: int, total: int, max_unparsable: float,
                       sample: str | None) -> str | None:
    """The failure message when ``unparsable / total`` passes ``max_unparsable``.

    Example:
        >>> unparsable_failure(1, 10, 0.2, "x") is None, unparsable_failure(0, 0, 0.0, None)
        (True, None)
        >>> unparsable_failure(3, 10, 0.2, "oops")
        "the judge answered 3 of 10 questions (30.0%) unusably, more than --max-unparsable 0.2; a sample reply: 'oops'"
    """
    if not total or unparsable / total <= max_unparsable:
        return None
    shown = repr(" ".join(sample.split())[:200]) if sample else "(none kept)"
    return (f"the judge answered {unparsable} of {total} questions ({100 * unparsable / total:.1f}%) "
            f"unusably, more than --max-unparsable {max_unparsable:g}; a sample reply: {shown}")
