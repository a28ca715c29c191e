"""Identity analysis, the pairwise VLM check: is the returning one the same individual?

Only with ``--opt pair_judge=NAME``. For every unit of every condition, 3 frames of the
previous appearance's clip and 3 of the current clip (at 15%, 50% and 85% of each
clip's frames) go to the judge with the prompt ``prompts/identity_pair.toml``; the
answer says whether the entity is visible in each and, when in both, whether it is the
same individual. Reported per condition and family: visible-in-both rate, and the
same-individual rate among the pairs visible in both (abstentions left out and counted).

``judge/sim-cards`` cannot answer this question -- it matches each roster line's card
in one clip and has no notion of "the same individual as in another clip" -- so it is
refused, never imitated. With ``--judge-cache`` the answers are cached as elsewhere.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from vidmem.errors import UserInputError

__all__ = ["FRACTIONS", "PairAnswer", "check_pair_judge", "frame_indices", "pair_check"]

#: where in each clip the judge's frames are taken
FRACTIONS = (0.15, 0.50, 0.85)
_REFUSED = {"judge/sim-cards"}


class PairAnswer(BaseModel):
    """The judge's answer about one (previous, current) pair."""

    model_config = ConfigDict(strict=True)

    visible_earlier: bool
    visible_later: bool
    same_individual: bool | Literal["abstain"] | None = None


def frame_indices(n_frames: int) -> list[int]:
    """Frame indices at :data:`FRACTIONS` of a clip of ``n_frames`` frames.

    Example:
        >>> frame_indices(20), frame_indices(1)
        ([3, 10, 16], [0, 0, 0])
    """
    return [min(n_frames - 1, int(round(f * (n_frames - 1)))) for f in FRACTIONS]


def _frames(clip: str | None) -> list[np.ndarray] | None:
    if clip is None:
        return None
    from vidmem.io.video import probe, read_frames

    return list(read_frames(clip, frame_indices(probe(clip).n_frames)))


def check_pair_judge(name: str) -> None:
    """Refuse, before anything is measured, a judge that cannot answer the question."""
    if name in _REFUSED:
        raise UserInputError(
            f"identity analysis: {name} cannot answer the same-individual question (it "
            "matches one clip's roster cards; it has no notion of 'the same individual as "
            "in the other clip')",
            hint="--opt pair_judge=judge/openai (or another VLM judge); drop pair_judge "
                 "offline")


def _judge(name: str, options: Any) -> Any:
    from vidmem.models.loading import load_backend

    check_pair_judge(name)
    from vidmem.runners.judge_cache import asked_through_cache

    judge = load_backend(name, dict(options.backend_options).get(name), role="judge")
    return asked_through_cache(judge, options.judge_cache or None)


def pair_check(run: Any, options: Any, name: str,
               units: Mapping[str, Mapping[str, list[dict[str, Any]]]],
               scorer: Mapping[str, Any]) -> dict[str, Any]:
    """Ask the judge about every unit's pair; pooled rates per condition and family."""
    from vidmem.benchmarks.prompts import load_prompt
    from vidmem.benchmarks.vmem_track_b.run_items import scored_items
    from vidmem.benchmarks.vmem_track_b.stories import load_stories

    judge = _judge(name, options)
    prompt = load_prompt("vidmem.benchmarks.vmem_track_b", "identity_pair")
    stored = {it.story_id: it.request for it in scored_items(run)}
    asks, where = [], []
    for sid, conds in units.items():
        req = stored[sid]
        (story,) = load_stories(req["gold_root"], int(req["number"]))
        cache: dict[str, list[np.ndarray] | None] = {}
        by_key = {u.key: u for u in _units_of(story, scorer)}
        for cond, rows in conds.items():
            clips = dict(zip((s.segment_id for s in story.segments), req["clips"][cond],
                             strict=True))
            for r in rows:
                sides = []
                for seg in (r["previous_segment_id"], r["segment_id"]):
                    clip = clips.get(seg)
                    if clip not in cache:
                        cache[clip] = _frames(clip)
                    sides.append(cache[clip])
                if sides[0] is None or sides[1] is None:
                    continue
                ent = story.entities[r["eid"]]
                unit = by_key[r["key"]]
                asks.append(prompt.request(
                    f"{sid}/{cond}/{r['key']}", [*sides[0], *sides[1]],
                    n_frames=6, n_each=3, kind=ent.kind, name=ent.name,
                    previous_appearance=unit.previous_appearance, appearance=unit.appearance))
                where.append((cond, r["family"]))
    results = judge.judge_many(asks) if asks else []
    tally: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(
        lambda: {"asked": 0, "answered": 0, "visible_both": 0, "same": 0, "abstain": 0}))
    for (cond, fam), res in zip(where, results, strict=True):
        t = tally[cond][fam]
        t["asked"] += 1
        if res.status != "ok" or not isinstance(res.data, dict):
            continue
        t["answered"] += 1
        if res.data.get("visible_earlier") and res.data.get("visible_later"):
            t["visible_both"] += 1
            same = res.data.get("same_individual")
            t["same"] += same is True
            t["abstain"] += same == "abstain" or same is None
    rates = {cond: {fam: {**t, "visible_both_rate": t["visible_both"] / t["answered"]
                          if t["answered"] else None,
                          "same_individual_rate": t["same"] / (t["visible_both"] - t["abstain"])
                          if t["visible_both"] > t["abstain"] else None}
                    for fam, t in fams.items()} for cond, fams in tally.items()}
    return {"status": "ok", "judge": name, "prompt": prompt.describe(), "rates": rates}


def _units_of(story: Any, scorer: Mapping[str, Any]) -> list[Any]:
    from vidmem.benchmarks.vmem_track_b.analysis_identity_story import story_units

    return [u for _, u in story_units(story, seed=int(scorer.get("seed", 0)), locations=True)]
