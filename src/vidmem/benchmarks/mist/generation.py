"""MIST generation: per case the two locked shots once, then each arm's reveal shot.

One rollout per case (:func:`make_rollouts`; the case is the cluster of the paired
statistics, and every arm shares its locked shots). :func:`run_rollout` writes, under
``RUN/rollouts/<case>/`` (layout in :mod:`vidmem.benchmarks.mist.scorer`):

1. ``locked/setup.mp4`` -- the setup prompt, from nothing; its last frame
   ``locked/setup.last.png``;
2. ``locked/gap.mp4`` -- the gap prompt, from the setup's last frame; its last frame
   ``locked/gap.last.png``;
3. per fixed arm (``baseline``: one try, the original; ``answer_only``,
   ``open_and_hold``, ``same_sentence_resample``: K tries) ``<arm>/try_<k>.mp4`` -- the
   arm's reveal prompt from the gap's last frame. ``same_sentence_resample`` is the
   card's ``reveal_prompts.same_sentence_resample`` when it has one, else the baseline
   sentence: new seeds only (the equal-compute control);
4. per M3-Agent arm (``diagnosis_rewrite``; ``target_withheld_rewrite`` with the target
   withheld) the agent's K candidates, the original (the baseline's try 0, copied to
   ``<arm>/try_0.mp4``) being candidate 0; its log ``<arm>/agent_run.json``. The
   agent's keep score is the reporting scorer's (the gate judge's reveal on the
   clip, ties by inside): an oracle, as the protocol says.

Every request carries only the prompt, the start image (a PNG of the previous shot's
last frame, with the video's container tags as PNG text, so a generator's own metadata
travels with its frame), the format (5 s, fps/size from the configuration), a seed
derived from (run seed, case, arm, try) and ``extras = {"shot", "case_id", "arm",
"try"}`` -- never the card's target, operations or truth.

**Resume**, per clip: ``progress.json`` records for each file the content key of the
request that made it (prompt, seed, format, start image's SHA-256, generator identity)
and the file's SHA-256, written atomically after each clip. A clip is generated again
only when its key changed or its file is gone or was edited; an M3-Agent arm is redone
as a whole (its steps depend on each other) when its original, the configuration or a
clip of its run changed.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from vidmem.benchmarks.contract import Rollout
from vidmem.benchmarks.mist.config import AGENT_ARMS, BASELINE, MistConfig, derive_seed
from vidmem.benchmarks.mist.questions import clip_id, read_answer, reveal_requests, scene_block
from vidmem.benchmarks.mist.schema import Card
from vidmem.benchmarks.mist.scorer import AGENT_RUN, LOCKED, try_name
from vidmem.errors import UserInputError
from vidmem.generators.requests import GenerationRequest
from vidmem.io.hashing import content_hash, file_sha256
from vidmem.metrics.mist_gates import clip_gates

__all__ = ["LOOP_VERSION", "PROGRESS", "PROTOCOL", "arm_prompt", "keep_score",
           "make_rollouts", "read_progress", "run_rollout", "write_last_frame"]

LOOP_VERSION = "1"
PROGRESS = "progress.json"
WITHHELD = "target_withheld_rewrite"

PROTOCOL: dict[str, dict[str, str]] = {
    "locked_shots": {
        "rule": "setup from nothing and gap from the setup's last frame, generated once per "
                "case and reused by every arm and try",
        "reason": "all reveal comparisons reuse the same locked first two shots",
        "source": "PROTOCOLS.md section 5; seed 001 section 3",
    },
    "reveal_shot": {
        "rule": "only the reveal shot is regenerated per arm and try, from the gap's last "
                "frame (a PNG), with the arm's reveal prompt",
        "reason": "the paired reveal analysis freezes the first two shots",
        "source": "seed 001 section 3",
    },
    "tries": {
        "rule": "baseline: 1 (the original); other fixed arms: K; M3-Agent arms: K "
                "candidates including the original (K - 1 new clips); K = 5 by default",
        "reason": "the baseline is one clip per case; the arms get the same five tries",
        "source": "seed 001 sections 4-5; interface section 5",
    },
    "seeds": {
        "rule": "each clip's seed = first 31 bits of SHA-256(run seed, case, arm, try); "
                "locked shots: (run seed, case, 'locked', shot); M3-Agent: (run seed, case, "
                "arm) for the agent",
        "reason": "seeded and reproducible; the same-sentence resample draws new seeds",
        "source": "decided here (the paper names a seed class only)",
    },
    "same_sentence": {
        "rule": "same_sentence_resample: reveal_prompts.same_sentence_resample when the card "
                "has it, else the baseline sentence, with new seeds",
        "reason": "the equal-compute control; the card may name its own sentence",
        "source": "interface section 2 of issue 16; seed 001 section 3",
    },
    "agent_score": {
        "rule": "M3-Agent keeps by reveal + 1e-3 inside_last + 1e-6 inside of the gate judge "
                "(unreadable -> 0): the order of aggregate.keep_best",
        "reason": "the score that selects is the check that reports: an oracle estimate",
        "source": "seed 001 section 5 and App. A",
    },
    "start_image": {
        "rule": "the previous shot's last frame as PNG, with the video's container tags as "
                "PNG text chunks",
        "reason": "TI2V generators continue from an image; a generator's own metadata "
                  "travels with its frame",
        "source": "interface section 1 of issue 16",
    },
    "resume": {
        "rule": "per clip: progress.json holds the request's content key and the file's "
                "SHA-256; M3-Agent arms resume as a whole",
        "reason": "a killed run regenerates nothing finished; agent steps depend on each other",
        "source": "decided here (as Track-B's loop)",
    },
}


# --------------------------------------------------------------------------- rollouts


def arm_prompt(card: Card, arm: str) -> str | None:
    """The reveal prompt ``arm`` sends (``None``: the card has none for it)."""
    prompts = card.arm_prompts()
    if arm == "same_sentence_resample":
        return prompts.get(arm, prompts["baseline"])
    if arm in AGENT_ARMS:
        return prompts["baseline"]  # M3-Agent starts from the original instruction
    return prompts.get(arm)


def _check(cards: Sequence[Card], config: MistConfig) -> None:
    problems = []
    for card in cards:
        for arm in config.arms:
            if arm_prompt(card, arm) is None:
                problems.append(f"case {card.case_id}: no reveal_prompts.{arm}")
            if arm in AGENT_ARMS and card.task_record is None:
                problems.append(f"case {card.case_id}: arm {arm} needs the card's task_record")
    if problems:
        raise UserInputError("mist: cards lack what the chosen arms need:\n  "
                             + "\n  ".join(dict.fromkeys(problems)),
                             hint="add the prompts / task records to the cards, or leave those "
                             "arms out with --arms")


def make_rollouts(cards: Sequence[Card], out_dir: Path, config: MistConfig, *,
                  benchmark: str, version: str) -> list[Rollout]:
    """One :class:`Rollout` per case, writing under ``out_dir/<case_id>/``.

    The request is a record of the work, never sent to a generator: its ``out_path`` is
    the progress file, its ``extras`` hold the card and the configuration.
    """
    _check(cards, config)
    out = []
    for card in cards:
        data = card.model_dump(mode="json", by_alias=True, exclude_none=True)
        request = GenerationRequest(
            request_id=card.case_id, benchmark=benchmark,
            prompt=f"MIST case {card.case_id}: locked setup and gap, then the reveal shot of "
                   f"{len(config.arms)} arm(s)",
            out_path=str(Path(out_dir) / card.case_id / PROGRESS),
            extras={"case_id": card.case_id, "card": data, "config": config.to_dict(),
                    "loop_version": LOOP_VERSION, "benchmark_version": version})
        out.append(Rollout(request, {"card_sha256": content_hash(data, length=64)}))
    return out


# --------------------------------------------------------------------------- files


def read_progress(folder: Path) -> dict[str, Any]:
    """The case's progress entries (``{}`` when there is no usable progress file)."""
    try:
        data = json.loads((Path(folder) / PROGRESS).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("loop_version") != LOOP_VERSION:
        return {}
    return dict(data.get("clips") or {})


def _write_json(path: Path, data: Any) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_last_frame(clip: str | os.PathLike[str], png: str | os.PathLike[str]) -> Path:
    """Write the last frame of ``clip`` as ``png``, its container tags as PNG text.

    Returns:
        The PNG path (written atomically).
    """
    import av
    from PIL import Image, PngImagePlugin

    from vidmem.io.video import probe, read_frames

    info = probe(clip)
    frame = read_frames(clip, [info.n_frames - 1])[0]
    with av.open(str(clip)) as container:
        tags = {str(k): str(v) for k, v in container.metadata.items()}
    meta = PngImagePlugin.PngInfo()
    for key, value in sorted(tags.items()):
        meta.add_text(key, value, zip=True)
    out = Path(png)
    tmp = out.with_name(f".{out.name}.partial.png")
    Image.fromarray(frame).save(tmp, format="PNG", pnginfo=meta)
    os.replace(tmp, out)
    return out


class _Progress:
    """The case's progress file: per file its request key and SHA-256."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.entries = read_progress(folder)
        self.generated = 0

    def done(self, rel: str, key: str) -> bool:
        e = self.entries.get(rel)
        path = self.folder / rel
        return (isinstance(e, dict) and e.get("key") == key and path.is_file()
                and file_sha256(path) == e.get("sha256"))

    def record(self, rel: str, key: str, **extra: Any) -> None:
        self.entries[rel] = {"key": key, "sha256": file_sha256(self.folder / rel), **extra}
        _write_json(self.folder / PROGRESS, {"loop_version": LOOP_VERSION,
                                             "clips": self.entries})


def _request_key(request: GenerationRequest, generator_key: Any) -> str:
    data = request.to_dict()
    data.pop("out_path")
    start = data.pop("start_image")
    data["start_image_sha256"] = file_sha256(start) if start else None
    return content_hash({"request": data, "generator": generator_key}, length=64)


def _generate(generator: Any, request: GenerationRequest, progress: _Progress,
              generator_key: Any) -> str:
    """Generate one clip unless it is finished; return its path relative to the case."""
    rel = Path(request.out_path).relative_to(progress.folder).as_posix()
    key = _request_key(request, generator_key)
    if progress.done(rel, key):
        return rel
    Path(request.out_path).parent.mkdir(parents=True, exist_ok=True)
    result = generator.generate(request)
    if getattr(result, "status", None) != "ok" or not Path(request.out_path).is_file():
        why = getattr(result, "error", None) or f"{request.out_path} was not written"
        raise RuntimeError(f"MIST {request.request_id}: {why}")
    progress.generated += 1
    progress.record(rel, key)
    return rel


def _last_frame(progress: _Progress, rel: str) -> Path:
    clip = progress.folder / rel
    png = clip.with_suffix(".last.png")
    sha = file_sha256(clip)
    prel = png.relative_to(progress.folder).as_posix()
    e = progress.entries.get(prel)
    if not (isinstance(e, dict) and e.get("source_sha256") == sha and png.is_file()
            and file_sha256(png) == e.get("sha256")):
        write_last_frame(clip, png)
        progress.record(prel, "last_frame", source_sha256=sha)
    return png


# --------------------------------------------------------------------------- backends

_BACKENDS: dict[str, tuple[Any, Any]] = {}


def _agent_backends(config: MistConfig) -> tuple[Any, Any]:
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


def keep_score(judge: Any, card: Card, clip: str | os.PathLike[str], name: str,
               threshold: float = 0.5) -> float:
    """M3-Agent's keep score of one reveal clip (rule ``agent_score`` of :data:`PROTOCOL`)."""
    answers = judge.judge_many(reveal_requests(card, clip, name))
    r = [read_answer(a)["reading"] for a in answers]
    g = clip_gates(None, None, r[:6], r[6:], threshold=threshold)
    return ((g.reveal or 0.0) + 1e-3 * (g.inside_last or 0.0) + 1e-6 * (g.inside or 0.0))


# --------------------------------------------------------------------------- the case


def _shot_request(card: Card, config: MistConfig, folder: Path, shot: str, arm: str, k: int,
                  prompt: str, start: Path | None, out: Path) -> GenerationRequest:
    duration = next(s.duration_sec for s in card.shots if s.shot == shot)
    parts = (card.case_id, LOCKED, shot) if arm == LOCKED else (card.case_id, arm, k)
    return GenerationRequest(
        request_id=clip_id(card.case_id, arm, k) if arm != LOCKED else
        f"{card.case_id}/{LOCKED}/{shot}",
        benchmark="mist", prompt=prompt, out_path=str(out),
        start_image=None if start is None else str(start),
        duration_seconds=float(duration), fps=config.fps, width=config.width,
        height=config.height, seed=derive_seed(config.seed, *parts),
        extras={"shot": shot, "case_id": card.case_id, "arm": arm, "try": int(k)})


def _link(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.exists() and file_sha256(dst) == file_sha256(src):
        return
    tmp = dst.with_name(f".{dst.name}.partial")
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def run_rollout(rollout: Rollout, generator: Any, ctx: Mapping[str, Any] | None = None, *,
                backends: Callable[[MistConfig], tuple[Any, Any]] | None = None
                ) -> dict[str, Any]:
    """Generate one case (steps in the module docstring), resuming per clip.

    Args:
        rollout: from :func:`make_rollouts`.
        generator: a :class:`~vidmem.generators.protocol.Generator`.
        ctx: ``generator_key`` (the generator's identity: part of every clip's key).
        backends: ``config -> (judge, rewriter)`` for the M3-Agent arms (default: load
            the configuration's backends once per process).

    Returns:
        ``{"case_id", "generated", "clips": {relative path: sha256}, "agent": {arm:
        {"candidates", "best"}}}``.

    Raises:
        RuntimeError: a generation failed (finished clips are kept).
    """
    ex = dict(rollout.request.extras)
    card = Card.model_validate(ex["card"])
    config = MistConfig.from_dict(ex["config"])
    gkey = (ctx or {}).get("generator_key")
    folder = Path(rollout.request.out_path).parent
    folder.mkdir(parents=True, exist_ok=True)
    progress = _Progress(folder)
    clips: list[str] = []

    start = None
    for shot in ("setup", "gap"):
        req = _shot_request(card, config, folder, shot, LOCKED, 0, card.shot_prompt(shot),
                            start, folder / LOCKED / f"{shot}.mp4")
        rel = _generate(generator, req, progress, gkey)
        clips.append(rel)
        start = _last_frame(progress, rel)
    gap_png = start
    agent: dict[str, Any] = {}
    for arm in config.arms:
        if arm in AGENT_ARMS:
            continue
        prompt = arm_prompt(card, arm)
        for k in range(config.tries(arm)):
            req = _shot_request(card, config, folder, "reveal", arm, k, prompt,  # type: ignore[arg-type]
                                gap_png, folder / arm / try_name(k))
            clips.append(_generate(generator, req, progress, gkey))
    for arm in config.arms:
        if arm in AGENT_ARMS:
            agent[arm] = _run_agent(card, config, arm, folder, gap_png, generator, progress,
                                    gkey, backends or _agent_backends)
            clips += agent[arm].pop("clips")
    return {"case_id": card.case_id, "generated": progress.generated,
            "clips": {rel: progress.entries[rel]["sha256"] for rel in clips}, "agent": agent}


def _run_agent(card: Card, config: MistConfig, arm: str, folder: Path, gap_png: Path,
               generator: Any, progress: _Progress, gkey: Any,
               backends: Callable[[MistConfig], tuple[Any, Any]]) -> dict[str, Any]:
    """Run M3-Agent for one arm (or keep its finished run); its clips as ``try_<k>.mp4``."""
    original = folder / BASELINE / try_name(0)
    adir = folder / arm
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
    request = _shot_request(card, config, folder, "reveal", arm, 0, arm_prompt(card, arm),  # type: ignore[arg-type]
                            gap_png, adir / try_name(0))

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
        dst = adir / try_name(step.try_index)
        _link(Path(step.clip), dst)
        rel = dst.relative_to(folder).as_posix()
        ckey = content_hash({"run": key, "try": step.try_index}, length=64)
        progress.record(rel, ckey)
        clip_keys[rel] = ckey
    for stale in adir.glob("try_*.mp4"):  # a longer earlier run must not leave tries behind
        if stale.relative_to(folder).as_posix() not in clip_keys:
            stale.unlink()
    progress.generated += run.generator_calls
    _write_json(adir / AGENT_RUN, run.to_dict())
    progress.record(rel_run, key, clip_keys=clip_keys, best=run.best)
    return {"clips": list(clip_keys), "candidates": len(run.steps), "best": run.best}
