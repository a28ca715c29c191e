"""The Track-B judge question of one segment: roster + frames of the generated clip.

:func:`segment_request` builds the blinded roster
(:func:`~vidmem.benchmarks.vmem_track_b.roster.build_roster`), picks the clip's frames
(:func:`clip_frames`) and renders ``prompts/segment.toml`` into a
:class:`~vidmem.models.protocols.JudgeRequest` whose ``payload["roster"]`` holds the
same lines in ``judge/sim-cards``' format (blind labels only). The answer is read with
:func:`~vidmem.benchmarks.vmem_track_b.answers.read_answer` and the returned roster.
Every rule of the question is in :data:`PROTOCOL` (for run.json's protocol block).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from vidmem.benchmarks.prompts import PromptTemplate, load_prompt
from vidmem.benchmarks.vmem_track_b import answers, roster
from vidmem.benchmarks.vmem_track_b.answers import answer_problem, segment_answer_model
from vidmem.benchmarks.vmem_track_b.gold_view import segment_of
from vidmem.benchmarks.vmem_track_b.roster import Roster, build_roster
from vidmem.errors import UserInputError
from vidmem.models.backends.judge_frames import sample_clip_frames
from vidmem.models.protocols import JudgeRequest

__all__ = ["JUDGE_FPS", "PACKAGE", "PROMPT_NAME", "PROTOCOL", "clip_frames", "segment_prompt",
           "segment_request"]

PACKAGE = "vidmem.benchmarks.vmem_track_b"
PROMPT_NAME = "segment"
#: frames shown per second of clip.
JUDGE_FPS = 2.0
_REF = "Suchenl/VMem-Bench src/vmem_bench/scoring"

#: every rule of the Track-B judge question (roster, answer and question rules).
PROTOCOL: dict[str, dict[str, Any]] = {
    **roster.PROTOCOL,
    **answers.PROTOCOL,
    "frames": {
        "value": f"{JUDGE_FPS:g} frames per second of clip (10 for a 5 s segment), evenly "
                 "spaced, each the middle of its slice (judge_frames.clip_frame_indices)",
        "reason": "the reference sends the whole clip and the server samples it at 2 fps",
        "source": f"{_REF}/judge_service.py DEFAULT_MM_PROCESSOR_KWARGS; end2end_coverage.py "
                  "score_segment (_vid)"},
    "plot_hint": {
        "value": "the segment's SUT prompt (else the gold 'action'), marked as a hint only",
        "reason": "the reference shows it, saying it does not mean every entry is there",
        "source": f"{_REF}/end2end_coverage.py _build_prompt, run"},
    "temperature": {"value": 0.0, "reason": "one deterministic call per segment",
                    "source": "PROTOCOLS.md sec. 4 (Judge)"},
    "prompt_language": {"value": "en", "reason": "vidmem asks its judges in English",
                        "source": "vidmem (the reference prompt is Chinese)"},
}


def segment_prompt() -> PromptTemplate:
    """The ``vmem_track_b/segment`` prompt file."""
    return load_prompt(PACKAGE, PROMPT_NAME)


def clip_frames(video_path: str | os.PathLike[str] | np.ndarray,
                n: int | None = None) -> tuple[np.ndarray, ...]:
    """The frames of a generated clip shown to the judge.

    Args:
        video_path: the clip (or its uint8 ``(T, H, W, 3)`` frames).
        n: how many evenly spaced frames; default :data:`JUDGE_FPS` per second of the
            clip (at least 1; for frames given as an array, 16 fps is assumed).

    Example:
        >>> clip = np.zeros((80, 4, 4, 3), np.uint8)   # 5 s at 16 fps
        >>> len(clip_frames(clip)), len(clip_frames(clip, 3))
        (10, 3)
    """
    if n is None:
        if isinstance(video_path, np.ndarray):
            seconds = video_path.shape[0] / 16.0 if video_path.ndim == 4 else 0.0
        else:
            from vidmem.io.video import probe

            if not os.path.isfile(video_path):
                raise UserInputError(f"Track-B judge: clip {os.fspath(video_path)} not found",
                                     hint="generate the segment first (or pass the right path)")
            seconds = probe(video_path).duration_seconds
        n = max(1, round(JUDGE_FPS * seconds))
    return sample_clip_frames(video_path, n)


def _prompt_lines(r: Roster) -> list[dict[str, Any]]:
    return [{"label": ln.label, "name": ln.name, "kind": ln.kind, "appearance": ln.appearance,
             "state_cue": ln.state_cue, "count_cue": ln.count_cue, "features": ln.features}
            for ln in r.lines]


def segment_request(story_gold: Mapping[str, Any], segment_index: int | str,
                    clip_path: str | os.PathLike[str] | np.ndarray, *, seed: int,
                    condition: str, plot: str | None = None,
                    n_frames: int | None = None) -> tuple[JudgeRequest, Roster]:
    """The judge question of one generated segment, and its roster.

    Args:
        story_gold: the parsed ``gt/<story_id>.json``.
        segment_index: position in ``segments[]`` (0 is ``seg_001``) or a segment id.
        clip_path: the condition's generated clip of this segment (or its frames).
        seed: run seed (the roster depends on seed, story id and segment id only).
        condition: the memory condition that generated the clip (part of ``item_id``).
        plot: the segment's SUT prompt (``sut_prompts/<id>_name_anchored.json``); by
            default the gold ``action`` text, as in the reference.
        n_frames: frames shown; default :func:`clip_frames`' rule.

    Returns:
        ``(request, roster)``; ``request.item_id`` is ``"<story>/<condition>/<segment>"``;
        ``request.accept`` refuses an answer in which no item names a roster label
        (:func:`~vidmem.benchmarks.vmem_track_b.answers.answer_problem`).
    """
    if not isinstance(condition, str) or not condition.strip():
        raise UserInputError(f"Track-B judge: condition must be a non-empty name, found "
                             f"{condition!r}", hint="e.g. condition='no_memory'")
    r = build_roster(story_gold, segment_index, seed=seed)
    if plot is None:
        plot = str(segment_of(story_gold, segment_index)[1].get("action", ""))
    frames = clip_frames(clip_path, n_frames)
    prompt = segment_prompt()
    request = prompt.request(
        f"{r.story_id}/{condition}/{r.segment_id}", frames,
        answer_model=segment_answer_model(r.labels), roster=_prompt_lines(r),
        pairs=[f"{a}/{b}" for a, b in r.pairs], plot=" ".join(plot.split()) or "(none)",
        n_frames=len(frames))
    # the accept rule is part of the contract: a change to it bumps segment.toml's version
    return replace(request, payload={"roster": r.payload()},
                   accept=functools.partial(answer_problem, labels=r.labels)), r
