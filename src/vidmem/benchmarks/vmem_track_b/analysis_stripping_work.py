"""The stripping analysis' work: regenerate a story's chosen segments without memory, stripped.

One stored work item per story (kind :data:`KIND`), so a killed analysis resumes story
by story; inside a story each clip is recorded in ``progress.json`` (its SHA-256 and
the prompt it was made from) right after it is written, so a story killed half way
regenerates only the clips it had not finished.

Rules:

* **Generation** is the loop's ``none`` condition (:func:`.loop.run_rollout`) with the
  stripped prompt: request id ``<story>/seg_NNN``, benchmark ``vmem_track_b``, the
  prompt text, no references, the segment's duration; clips in
  ``RUN/analyses/stripping/<story>/seg_NNN.mp4``. Segments are generated in segment
  order (a generator that reads its output folder -- the sim -- sees only earlier
  stripped clips there, never the run's rollout).
* **Judging** is the scorer's (:meth:`.scorer.TrackBScorer.score_story`):
  :func:`.question.segment_request` with the run's roster seed and the segment's
  ORIGINAL prompt as the plot hint, so the judge's question differs from the scored
  run's only in the clip; condition name :data:`CONDITION` in the question's item id;
  answers through the answer cache when one is given.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vidmem.benchmarks.vmem_track_b.loop import segment_name
from vidmem.benchmarks.vmem_track_b.loop_progress import finished, read_progress, write_progress
from vidmem.runners.execution_records import WorkItem

__all__ = ["CONDITION", "KIND", "make_item", "stripping_work"]

#: the item store's kind of a story's stripping work
KIND = "analysis:stripping"
#: the condition named in the judge question's item id (the cache keeps it apart)
CONDITION = "none_stripped"
#: bumped whenever a story's clips or verdicts would change for the same request
WORK_VERSION = "1"

_LOADED: dict[str, Any] = {}


def make_item(story: Any, targets: list[Any], *, gold_root: str, out_dir: Path,
              generator: str, generator_options: Mapping[str, Any],
              generator_info: Mapping[str, Any], scorer: Mapping[str, Any]) -> WorkItem:
    """The stored work of one story (the gold root and the output folder are not key)."""
    return WorkItem.make(story.story_id, KIND, {
        "story_id": story.story_id, "number": story.number, "gold_root": gold_root,
        "gold_sha256": dict(story.sha256), "out_dir": str(out_dir),
        "targets": [{"segment_id": t.segment_id, "stripped": t.stripped, "prompt": t.prompt,
                     "eids": list(t.eids),
                     "duration_seconds": float(story.segments[t.segment_id - 1].duration_seconds)}
                    for t in targets],
        "generator": generator, "generator_options": dict(generator_options),
        "generator_info": dict(generator_info), "scorer": dict(scorer),
        "condition": CONDITION, "version": WORK_VERSION,
    }, unkeyed=("gold_root", "out_dir"))


def _generator(spec: str, options: Mapping[str, Any]) -> Any:
    from vidmem.generators.loading import load_generator

    key = json.dumps(["generator", spec, dict(options)], sort_keys=True, default=str)
    if key not in _LOADED:
        _LOADED[key] = load_generator(spec, dict(options))
    return _LOADED[key]


def _judge(scorer: Mapping[str, Any], judge_cache: str | None) -> Any:
    from vidmem.benchmarks.vmem_track_b.config import ScorerConfig
    from vidmem.benchmarks.vmem_track_b.scorer import TrackBScorer

    key = json.dumps(["judge", dict(scorer), judge_cache], sort_keys=True, default=str)
    if key not in _LOADED:
        from vidmem.runners.judge_cache import asked_through_cache

        _LOADED[key] = asked_through_cache(TrackBScorer(ScorerConfig.from_dict(scorer)).judge,
                                           judge_cache)
    return _LOADED[key]


def _generate(req: Mapping[str, Any], folder: Path) -> dict[str, dict[str, Any]]:
    """Every target's clip, made or kept (``seg_NNN -> {clip, sha256, prompt}``)."""
    from vidmem.generators.requests import GenerationRequest
    from vidmem.io.hashing import file_sha256

    folder.mkdir(parents=True, exist_ok=True)
    identity = {"story_id": req["story_id"], "generator": req["generator"],
                "generator_options": req["generator_options"],
                "generator_info": req["generator_info"], "version": WORK_VERSION}
    progress = read_progress(folder)
    if progress is None or progress.get("identity") != identity:
        progress = {"identity": identity, "segments": {}}
    done = dict(progress["segments"])
    gen = None
    for t in sorted(req["targets"], key=lambda t: t["segment_id"]):
        name = segment_name(t["segment_id"])
        entry = done.get(name)
        if finished(folder, entry) and entry.get("prompt") == t["stripped"]:
            continue
        clip = folder / f"{name}.mp4"
        gen = gen or _generator(req["generator"], req["generator_options"])
        result = gen.generate(GenerationRequest(
            request_id=f"{req['story_id']}/{name}", benchmark="vmem_track_b",
            prompt=t["stripped"], out_path=str(clip), references=(),
            duration_seconds=float(t["duration_seconds"])))
        if getattr(result, "status", None) != "ok" or not clip.is_file():
            why = getattr(result, "error", None) or f"{clip} was not written"
            raise RuntimeError(f"stripping analysis, story {req['story_id']}, segment {name}: "
                               f"{why}")
        done[name] = {"clip": clip.name, "sha256": file_sha256(clip), "prompt": t["stripped"]}
        write_progress(folder, {"identity": identity, "segments": done})
    return done


def stripping_work(item: WorkItem, judge_cache: str | None = None) -> dict[str, Any]:
    """Generate and judge one story's stripped segments (picklable with ``partial``)."""
    from vidmem.benchmarks.vmem_track_b.answers import read_answer
    from vidmem.benchmarks.vmem_track_b.question import segment_request
    from vidmem.benchmarks.vmem_track_b.scorer import segment_verdict, verdicts_to_json
    from vidmem.benchmarks.vmem_track_b.stories import load_stories
    from vidmem.errors import UserInputError

    req = item.request
    (story,) = load_stories(req["gold_root"], int(req["number"]))
    if dict(story.sha256) != dict(req["gold_sha256"]):
        raise UserInputError(f"story {story.story_id}: its gold files changed after the run "
                             "scored them", hint="rerun the scored run on the current gold")
    folder = Path(req["out_dir"])
    clips = _generate(req, folder)
    gold = json.loads(Path(story.files["gt"]).read_text(encoding="utf-8"))
    asks, keys = [], []
    for t in req["targets"]:
        k = t["segment_id"] - 1
        ask, roster = segment_request(gold, k, folder / clips[segment_name(k + 1)]["clip"],
                                      seed=int(req["scorer"]["seed"]), condition=CONDITION,
                                      plot=t["prompt"])
        asks.append(ask)
        keys.append((t, roster))
    results = _judge(req["scorer"], judge_cache).judge_many(asks) if asks else []
    segments, answers = [], []
    for (t, roster), res in zip(keys, results, strict=True):
        seg = story.segments[t["segment_id"] - 1]
        judged = read_answer(res.data if res.status == "ok" else None, roster)
        segments.append(segment_verdict(story, seg, roster, judged))
        answers.append({"segment_id": seg.segment_id, "status": res.status, "error": res.error,
                        "data": res.data})
    verdicts = verdicts_to_json(segments)
    clip_of = {n: {"clip": str(folder / v["clip"]), "sha256": v["sha256"]} for n, v in clips.items()}
    return {"response": {"verdicts": verdicts, "answers": answers, "clips": clip_of},
            "score": {"story_id": story.story_id, "verdicts": verdicts, "clips": clip_of}}
