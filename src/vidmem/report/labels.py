"""Labels every report carries: whether its numbers follow the protocol, and which
generator made the videos and which judge scored them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["generator_label", "judge_label", "name_generator_and_judge", "protocol_label"]


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


def _options(options: Mapping[str, Any]) -> str:
    return "" if not options else " (" + ", ".join(f"{k}={v}" for k, v in options.items()) + ")"


def generator_label(config: Mapping[str, Any]) -> str:
    """Who made the scored videos, from a run's ``config``: the generator with its
    options, or the folder of brought videos.

    Example:
        >>> generator_label({"generator": {"name": "sim", "options": {"memory": "perfect"}}})
        'sim (memory=perfect)'
        >>> generator_label({"videos": "/data/clips"})
        'brought videos: /data/clips'
        >>> generator_label({})
        'not recorded'
    """
    gen = config.get("generator")
    if isinstance(gen, Mapping) and gen.get("name"):
        return f"{gen['name']}{_options(gen.get('options') or {})}"
    for key in ("videos", "rollouts"):
        if config.get(key):
            return f"brought videos: {config[key]}"
    return "not recorded"


def judge_label(backends: Mapping[str, Any], scorer: Mapping[str, Any]) -> str:
    """What judged the videos, from a run's ``backends`` (run.json) and scorer config: the
    judge backend, or, for a benchmark scored without one, its scoring backends.

    Example:
        >>> judge_label({"judge": {"name": "judge/sim-cards"}}, {})
        'judge/sim-cards'
        >>> judge_label({"detector": {"name": "classic/sift"},
        ...              "embedder": {"name": "classic/hsv-lbp"}}, {"preset": "offline"})
        'no VLM judge: detector classic/sift, embedder classic/hsv-lbp (preset offline)'
    """
    judge = backends.get("judge")
    if isinstance(judge, Mapping) and judge.get("name"):
        return str(judge["name"])
    if isinstance(scorer.get("judge"), str):
        return str(scorer["judge"])
    parts = [f"{role} {b['name']}" for role, b in backends.items()
             if isinstance(b, Mapping) and b.get("name")]
    preset = f" (preset {scorer['preset']})" if scorer.get("preset") else ""
    return f"no VLM judge: {', '.join(parts)}{preset}" if parts else "not recorded"


def name_generator_and_judge(report: Any, manifest: Any) -> None:
    """Give ``report.meta`` a ``generator`` and a ``judge`` fact from the run's manifest
    where its builder set none (or set ``None``), so every report names both."""
    config = getattr(manifest, "config", None) or {}
    backends = getattr(manifest, "backends", None) or {}
    if report.meta.get("generator") is None:
        report.meta["generator"] = generator_label(config)
    if report.meta.get("judge") is None:
        report.meta["judge"] = judge_label(backends, config.get("scorer") or {})
