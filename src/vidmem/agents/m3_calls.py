"""The M3-Agent's questions: read a last frame, ask the diagnoser, ask the rewriter.

Rules:

* The diagnoser reads the LAST frame of the clip only (seed 001 section 5: it reads the
  rendered last frame once, never the generator's state), written to a PNG beside the
  clip so that the log can show it.
* The diagnosis question is the prompt file ``agents/prompts/m3_diagnose.toml`` with
  ``payload = {"task": "m3_diagnose", "record", "instruction", "scene",
  "failure_modes"}`` (the same facts the prompt states, for judges that are not VLMs);
  an answer that is not ``ok`` leaves ``failure_mode`` ``None``.
* The rewrite question is ``agents/prompts/m3_rewrite.toml``. With the target withheld,
  every target term in the record, the diagnosis evidence and the rejected texts and
  reasons is replaced by ``[withheld]`` in the prompt text, so an LLM rewriter is never
  told the answer it must not state;
  :class:`~vidmem.models.protocols.RewriteRequest` keeps the full record for rule-based
  rewriters, which are code, not a channel to the generator.
* The ``judge-evidence`` scorer (:func:`evidence_scorer`) is the diagnosis question
  itself: 1.0 when the diagnoser answers ``success``, 0.0 for any failure mode, ``None``
  when the answer is unusable.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from vidmem.agents.m3_answers import FAILURE_MEANINGS, FAILURE_MODES
from vidmem.agents.m3_invariants import target_terms
from vidmem.agents.m3_records import TaskRecord
from vidmem.models.backends.judge_frames import sample_clip_frames
from vidmem.models.prompt_files import PromptTemplate, load_prompt
from vidmem.models.protocols import JudgeRequest, JudgeResult, RewriteRequest

__all__ = ["WITHHELD", "ask_diagnosis", "diagnosis_request", "evidence_scorer", "last_frame",
           "load_agent_prompt", "mask_terms", "rewrite_prompt", "rewrite_request"]

WITHHELD = "[withheld]"
_PACKAGE = "vidmem.agents"  # its prompts/ folder holds the agent prompt files


def load_agent_prompt(name: str) -> PromptTemplate:
    """``agents/prompts/<name>.toml`` (``m3_diagnose``, ``m3_rewrite``)."""
    return load_prompt(_PACKAGE, name)


def last_frame(clip: str | Path, png: str | Path | None = None) -> np.ndarray:
    """The last frame of ``clip`` as ``(H, W, 3)`` uint8 RGB, also written to ``png``.

    Read with the judges' frame sampler (position 1.0 is the last frame, decoded exactly).

    Raises:
        VidmemError: the clip cannot be read or holds no frame.
    """
    frame = sample_clip_frames(clip, 1, positions=[1.0])[0]
    if png is not None:
        from PIL import Image

        Path(png).parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(frame).save(png)
    return frame


def diagnosis_request(prompt: PromptTemplate, item_id: str, frame: np.ndarray,
                      task: TaskRecord, instruction: str,
                      scene: Mapping[str, Any]) -> JudgeRequest:
    """The diagnosis question about one last frame (module docstring)."""
    record = task.to_dict()
    scene = dict(scene)
    request = prompt.request(item_id, [frame], record=record, instruction=instruction,
                             scene=scene, failure_modes=FAILURE_MEANINGS, n_frames=1)
    payload = {"task": "m3_diagnose", "record": record, "instruction": instruction,
               "scene": scene, "failure_modes": list(FAILURE_MODES)}
    return JudgeRequest(item_id=request.item_id, prompt=request.prompt, images=request.images,
                        required_keys=request.required_keys, payload=payload,
                        answer_model=request.answer_model, contract=request.contract)


def _diagnosis(result: JudgeResult) -> dict[str, Any]:
    out: dict[str, Any] = {"failure_mode": None, "evidence": "", "status": result.status,
                           "error": result.error, "judge": result.judge}
    if result.status != "ok":
        return out
    data = result.data or {}
    mode = data.get("failure_mode")
    if mode not in FAILURE_MODES:  # a judge that skips the answer model's validation
        return {**out, "status": "unparsable",
                "error": f"failure_mode {mode!r} is not one of {', '.join(FAILURE_MODES)}"}
    return {**out, "failure_mode": mode, "evidence": str(data.get("evidence", ""))}


def ask_diagnosis(diagnoser: Any, request: JudgeRequest) -> dict[str, Any]:
    """Ask and read one diagnosis: ``{"failure_mode", "evidence", "status", "error",
    "judge"}``; never raises for a model's failure (it is the ``status``)."""
    many = getattr(diagnoser, "judge_many", None)
    result = many([request])[0] if callable(many) else diagnoser.judge(request)
    return _diagnosis(result)


def mask_terms(text: str, terms: list[str] | tuple[str, ...]) -> str:
    """``text`` with every term (whole words, any case, longest first) replaced by
    :data:`WITHHELD`.

    Example:
        >>> mask_terms("the open red box with two snake signs inside",
        ...            ["2", "snake sign", "snake signs", "two"])
        'the open red box with [withheld] [withheld] inside'
    """
    for term in sorted(terms, key=len, reverse=True):
        words = [re.escape(w) for w in re.split(r"[\s-]+", term.strip()) if w]
        if words:
            text = re.sub(r"(?<!\w)" + r"[\s-]+".join(words) + r"(?!\w)", WITHHELD, text,
                          flags=re.IGNORECASE)
    return text


def rewrite_prompt(prompt: PromptTemplate, instruction: str, task: TaskRecord,
                   failure_mode: str, evidence: str, scene: Mapping[str, Any], *,
                   withhold_target: bool, rejected: list[tuple[str | None, str]]) -> str:
    """The rewrite question's text (module docstring: the record is masked when the
    target is withheld)."""
    record = task.to_dict()
    shown = [(t, r) for t, r in rejected if t is not None]
    if withhold_target:  # the record, the diagnosis and rejected texts all state it
        terms = list(target_terms(scene))
        record = {k: mask_terms(v, terms) for k, v in record.items()}
        evidence = mask_terms(evidence, terms)
        shown = [(mask_terms(t, terms), mask_terms(r, terms)) for t, r in shown]
    return prompt.render(
        instruction=instruction, record=record, failure_mode=failure_mode,
        failure_meaning=FAILURE_MEANINGS.get(failure_mode, failure_mode), evidence=evidence,
        withhold_target=withhold_target,
        rejected=[{"text": t, "reason": r} for t, r in shown])


def rewrite_request(prompt: PromptTemplate, instruction: str, task: TaskRecord,
                    diagnosis: Mapping[str, Any], scene: Mapping[str, Any], *,
                    withhold_target: bool, attempt: int,
                    rejected: list[tuple[str | None, str]]) -> RewriteRequest:
    """One rewrite question, structured fields and rendered prompt together."""
    mode, evidence = str(diagnosis["failure_mode"]), str(diagnosis.get("evidence", ""))
    return RewriteRequest(
        instruction=instruction, record=task.to_dict(), failure_mode=mode, evidence=evidence,
        withhold_target=withhold_target, attempt=attempt,
        rejected=[t for t, _ in rejected if t is not None],
        prompt=rewrite_prompt(prompt, instruction, task, mode, evidence, scene,
                              withhold_target=withhold_target, rejected=rejected),
        contract=prompt.contract)


def evidence_scorer(diagnoser: Any, task: TaskRecord | Mapping[str, Any], instruction: str,
                    scene: Mapping[str, Any] | None = None, *,
                    frames_dir: str | Path | None = None) -> Callable[[Path], float | None]:
    """The ``judge-evidence`` scorer: ``score(clip)`` is 1.0 when the diagnoser says the
    last frame shows the required evidence (``success``), 0.0 otherwise, ``None`` when
    its answer is unusable. ``instruction`` is the original one (the scorer sees only
    the clip); last frames go to ``frames_dir`` when given."""
    record = task if isinstance(task, TaskRecord) else TaskRecord.from_mapping(task)
    prompt = load_agent_prompt("m3_diagnose")
    scene = dict(scene or {})

    def score(clip: Path) -> float | None:
        clip = Path(clip)
        png = None if frames_dir is None else Path(frames_dir) / f"{clip.stem}_scored_last.png"
        frame = last_frame(clip, png)
        answer = ask_diagnosis(diagnoser, diagnosis_request(
            prompt, f"{clip.stem}/evidence", frame, record, instruction, scene))
        if answer["status"] != "ok":
            return None
        return 1.0 if answer["failure_mode"] == "success" else 0.0

    return score
