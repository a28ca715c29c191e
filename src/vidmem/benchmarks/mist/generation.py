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
   clip, ties by inside): an oracle, as the protocol says
   (:mod:`~vidmem.benchmarks.mist.generation_agent`).

Every request carries only the prompt, the start image (a PNG of the previous shot's
last frame, with the video's container tags as PNG text, so a generator's own metadata
travels with its frame), the format (5 s, fps/size from the configuration), a seed
derived from (run seed, case, arm, try) and ``extras = {"shot", "case_id", "arm",
"try"}`` -- never the card's target, operations or truth.

**Resume**, per clip (:mod:`~vidmem.benchmarks.mist.generation_files`):
``progress.json`` records for each file the content key of the
request that made it (prompt, seed, format, start image's SHA-256, generator identity)
and the file's SHA-256, written atomically after each clip. A clip is generated again
only when its key changed or its file is gone or was edited; an M3-Agent arm is redone
as a whole (its steps depend on each other) when its original, the configuration or a
clip of its run changed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from vidmem.benchmarks.contract import Rollout
from vidmem.benchmarks.mist.config import AGENT_ARMS, MistConfig, derive_seed
from vidmem.benchmarks.mist.generation_agent import agent_backends, run_agent_arm
from vidmem.benchmarks.mist.generation_files import (
    LOOP_VERSION,
    PROGRESS,
    Progress,
    generate_clip,
    last_frame_png,
    read_progress,
)
from vidmem.benchmarks.mist.questions import clip_id
from vidmem.benchmarks.mist.schema import Card
from vidmem.benchmarks.mist.scorer import LOCKED, try_name
from vidmem.errors import UserInputError
from vidmem.generators.requests import GenerationRequest
from vidmem.io.hashing import content_hash
from vidmem.io.safe_paths import check_id, inside

__all__ = ["LOOP_VERSION", "PROGRESS", "PROTOCOL", "arm_prompt", "make_rollouts",
           "read_progress", "run_rollout"]

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
            # the case id names the folder: it must stay under out_dir (validation
            # refuses an unsafe id; a card built in Python is checked here too)
            out_path=str(inside(out_dir, Path(out_dir) / check_id(card.case_id, "MIST case_id")
                                / PROGRESS)),
            extras={"case_id": card.case_id, "card": data, "config": config.to_dict(),
                    "loop_version": LOOP_VERSION, "benchmark_version": version})
        out.append(Rollout(request, {"card_sha256": content_hash(data, length=64)}))
    return out


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


def run_rollout(rollout: Rollout, generator: Any, ctx: Mapping[str, Any] | None = None, *,
                backends: Callable[[MistConfig], tuple[Any, Any]] | None = None
                ) -> dict[str, Any]:
    """Generate one case (steps in the module docstring), resuming per clip.

    Args:
        rollout: from :func:`make_rollouts`.
        generator: a :class:`~vidmem.generators.protocol.Generator`.
        ctx: ``generator_key`` (the generator's identity: part of every clip's key);
            ``judge_cache`` (optional: the run's judge answer cache file, which the
            M3-Agent arms ask their judge through; no key holds it).
        backends: ``config -> (judge, rewriter)`` for the M3-Agent arms (default: load
            the configuration's backends once per process).

    Returns:
        ``{"case_id", "generated", "clips": {relative path: sha256}, "agent": {arm:
        {"candidates", "best", "judge_answers"?}}}`` (``judge_answers`` with a cache,
        when the arm ran now).

    Raises:
        RuntimeError: a generation failed (finished clips are kept).
    """
    ex = dict(rollout.request.extras)
    card = Card.model_validate(ex["card"])
    config = MistConfig.from_dict(ex["config"])
    gkey = (ctx or {}).get("generator_key")
    judge_cache = (ctx or {}).get("judge_cache")
    folder = Path(rollout.request.out_path).parent
    if folder.name != check_id(card.case_id, "MIST case_id"):  # an edited stored request
        raise UserInputError(f"MIST case {card.case_id}: its rollout folder {folder} is not "
                             "named after the case", hint="rerun with --overwrite")
    inside(folder.parent, folder)  # no link out of the rollouts folder
    folder.mkdir(parents=True, exist_ok=True)
    progress = Progress(folder)
    clips: list[str] = []

    start = None
    for shot in ("setup", "gap"):
        req = _shot_request(card, config, folder, shot, LOCKED, 0, card.shot_prompt(shot),
                            start, folder / LOCKED / f"{shot}.mp4")
        rel = generate_clip(generator, req, progress, gkey)
        clips.append(rel)
        start = last_frame_png(progress, rel)
    gap_png = start
    agent: dict[str, Any] = {}
    for arm in config.arms:
        if arm in AGENT_ARMS:
            continue
        prompt = arm_prompt(card, arm)
        for k in range(config.tries(arm)):
            req = _shot_request(card, config, folder, "reveal", arm, k, prompt,  # type: ignore[arg-type]
                                gap_png, folder / arm / try_name(k))
            clips.append(generate_clip(generator, req, progress, gkey))
    for arm in config.arms:
        if arm in AGENT_ARMS:
            request = _shot_request(card, config, folder, "reveal", arm, 0,
                                    arm_prompt(card, arm), gap_png,  # type: ignore[arg-type]
                                    folder / arm / try_name(0))
            agent[arm] = run_agent_arm(card, config, arm, folder, gap_png, request, generator,
                                       progress, gkey, backends or agent_backends,
                                       judge_cache=judge_cache)
            clips += agent[arm].pop("clips")
    return {"case_id": card.case_id, "generated": progress.generated,
            "clips": {rel: progress.entries[rel]["sha256"] for rel in clips}, "agent": agent}
