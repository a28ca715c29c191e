"""MIST generation of the M3-Agent arms: diagnose, rewrite, regenerate, keep the best.

For ``diagnosis_rewrite`` and ``target_withheld_rewrite`` (the target withheld from every
rewrite) :func:`run_agent_arm` runs :class:`vidmem.agents.m3.M3Agent` on the case's
reveal shot with the same frozen generator: the original is the baseline's try 0
(copied to ``<arm>/try_0.mp4``), the agent writes ``<arm>/try_<k>.mp4`` for k >= 1 and
its log ``<arm>/agent_run.json``. The diagnoser is the gate judge; the keep score is the
reporting scorer's (:func:`keep_score`): an oracle, as the protocol says. The arm is
redone as a whole when its original, the gap frame, the card, the configuration or one
of its clips changed (its steps depend on each other).

When the run has a judge answer cache (``ctx["judge_cache"]``, the file scoring uses)
the agent asks its judge through it (:func:`cached_judge`). Its keep questions are the
scorer's own reveal questions of the same clip: the answer key holds no item id, so the
``keep`` name differs from scoring's without changing the key, and scoring finds the
answers about the agent's clips in the cache (summary.json's ``judge_answers.from_cache``;
what the agent itself asked and was served is the arm's ``judge_answers`` in the
rollout's stored summary). A repeated run with the same cache asks none of the agent's questions again.
The cache is never part of a key: a run resumed with another cache, or with
``--judge-cache off`` (the agent then asks directly, and scoring asks again), resumes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vidmem.benchmarks.mist.config import BASELINE, MistConfig
from vidmem.benchmarks.mist.generation_files import (
    LOOP_VERSION,
    Progress,
    copy_clip,
    write_json,
)
from vidmem.benchmarks.mist.questions import read_answer, reveal_requests, scene_block
from vidmem.benchmarks.mist.schema import Card
from vidmem.benchmarks.mist.scorer import AGENT_RUN, try_name
from vidmem.generators.requests import GenerationRequest
from vidmem.io.hashing import content_hash, file_sha256
from vidmem.io.safe_paths import inside
from vidmem.metrics.mist_gates import clip_gates

__all__ = ["WITHHELD", "agent_backends", "cached_judge", "keep_score", "run_agent_arm"]

WITHHELD = "target_withheld_rewrite"

_BACKENDS: dict[str, tuple[Any, Any]] = {}
#: open answer caches by file, one connection per process (shared by every arm)
_CACHES: dict[str, Any] = {}


def agent_backends(config: MistConfig) -> tuple[Any, Any]:
    """The judge (diagnoser and keep scorer) and the rewriter, once per process."""
    key = json.dumps([config.judge, config.rewriter, config.to_dict()["backend_options"]],
                     sort_keys=True)
    if key not in _BACKENDS:
        from vidmem.models.loading import load_backend

        opts = {k: dict(v) for k, v in config.backend_options.items()}
        judge = load_backend(config.judge, opts.get(config.judge), role="judge")
        rewriter = load_backend(config.rewriter, opts.get(config.rewriter), role="rewriter")
        _BACKENDS[key] = (judge, rewriter)
    return _BACKENDS[key]


def cached_judge(judge: Any, path: str | os.PathLike[str] | None) -> Any:
    """``judge`` asked through the answer cache file ``path`` (``None``: no cache): a fresh
    :class:`~vidmem.runners.judge_cache.CachedJudge` (its counts are one arm's), the
    file opened once per process; a question without an answer raises either way."""
    from vidmem.runners.judge_cache import AnswerCache, CachedJudge

    if path is None:
        return CachedJudge(judge, None)
    where = str(Path(path).expanduser().resolve())
    if where not in _CACHES:
        _CACHES[where] = AnswerCache(where)
    return CachedJudge(judge, _CACHES[where])


def keep_score(judge: Any, card: Card, clip: str | os.PathLike[str], name: str,
               threshold: float = 0.5) -> float:
    """M3-Agent's keep score of one reveal clip (rule ``agent_score`` of :data:`PROTOCOL`)."""
    answers = judge.judge_many(reveal_requests(card, clip, name))
    r = [read_answer(a)["reading"] for a in answers]
    g = clip_gates(None, None, r[:6], r[6:], threshold=threshold)
    return ((g.reveal or 0.0) + 1e-3 * (g.inside_last or 0.0) + 1e-6 * (g.inside or 0.0))


def run_agent_arm(card: Card, config: MistConfig, arm: str, folder: Path, gap_png: Path,
                  request: GenerationRequest, generator: Any, progress: Progress, gkey: Any,
                  backends: Callable[[MistConfig], tuple[Any, Any]], *,
                  judge_cache: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Run M3-Agent for one arm (or keep its finished run); its clips as ``try_<k>.mp4``.

    With ``judge_cache`` the judge is asked through that answer cache, and the result
    holds ``judge_answers`` (``from_cache``, ``asked``) of this run of the arm.
    """
    original = folder / BASELINE / try_name(0)
    adir = inside(folder, folder / arm)
    rel_run = f"{arm}/{AGENT_RUN}"
    key = content_hash({"arm": arm, "original": file_sha256(original),
                        "gap": file_sha256(gap_png), "card": card.model_dump(mode="json"),
                        "config": config.generation_key(), "generator": gkey,
                        "loop_version": LOOP_VERSION}, length=64)
    e = progress.entries.get(rel_run)
    if progress.done(rel_run, key) and all(
            progress.done(c, e["clip_keys"][c]) for c in e.get("clip_keys", {})):
        return {"clips": list(e["clip_keys"]), "candidates": len(e["clip_keys"]),
                "best": e.get("best")}
    from vidmem.agents.m3 import M3Agent, TaskRecord

    judge, rewriter = backends(config)
    judge = cached_judge(judge, judge_cache)

    def score(clip: Path) -> float:
        return keep_score(judge, card, clip, f"{card.case_id}/{arm}/keep/{Path(clip).stem}",
                          config.threshold)

    # the request carries the derived seed; the agent adds its try index to it
    agent = M3Agent(generator, diagnoser=judge, rewriter=rewriter, k=config.k,
                    max_rejects=config.max_rejects, seed=0)
    scene = {**scene_block(card), "target": {
        "contents": [{"noun": c.noun, "count": c.count} for c in card.target.contents],
        "text": card.target.text}}
    run = agent.run(TaskRecord.from_mapping(card.task_record.model_dump()),  # type: ignore[union-attr]
                    request, score, adir, scene, withhold_target=arm == WITHHELD,
                    original=(original, score(original)))
    if run.stopped == "generation_error":
        why = next((s.error for s in run.steps if s.error), "generation failed")
        raise RuntimeError(f"MIST {card.case_id}/{arm} (M3-Agent): {why}")
    clip_keys = {}
    for step in run.steps:
        dst = inside(folder, adir / try_name(step.try_index))
        copy_clip(Path(step.clip), dst)
        rel = dst.relative_to(folder).as_posix()
        ckey = content_hash({"run": key, "try": step.try_index}, length=64)
        progress.record(rel, ckey)
        clip_keys[rel] = ckey
    for stale in adir.glob("try_*.mp4"):  # a longer earlier run must not leave tries behind
        if stale.relative_to(folder).as_posix() not in clip_keys:
            stale.unlink()
    progress.generated += run.generator_calls
    write_json(adir / AGENT_RUN, run.to_dict())
    progress.record(rel_run, key, clip_keys=clip_keys, best=run.best)
    out = {"clips": list(clip_keys), "candidates": len(run.steps), "best": run.best}
    if judge_cache is not None:
        out["judge_answers"] = judge.answer_counts()
    return out
