"""The line under a report's title that says whether its numbers follow the protocol."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["protocol_label"]


def protocol_label(summary: Mapping[str, Any], scorer: Mapping[str, Any], *, official: str,
                   other: str) -> str:
    """``official`` or ``other`` as the run's ``summary.json`` says; for a run without one
    (it stopped before scoring: a bad option, missing weights, killed) neither -- there
    are no numbers to call non-official -- but the preset it was started with.

    Example:
        >>> protocol_label({}, {"preset": "official"}, official="official", other="non-official")
        "no scores: the run did not finish scoring (preset 'official')"
        >>> protocol_label({"official": False}, {"preset": "offline"}, official="official",
        ...                other="non-official")
        'non-official'
    """
    if summary:
        return official if summary.get("official") else other
    preset = scorer.get("preset")
    where = f" (preset {preset!r})" if preset else ""
    return f"no scores: the run did not finish scoring{where}"
