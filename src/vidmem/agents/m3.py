"""M3-Agent (Make the Missing Move): diagnose the last frame, rewrite the failed move, retry.

Seed 001 section 5, PROTOCOLS.md section 5. The agent wraps a frozen generator; it adds
no memory and trains nothing. Per task it makes at most ``k`` candidates, the original
instruction's clip included:

1. **generate** the original (try 0), or take the clip the caller hands in;
2. **read** its last frame and ask the diagnoser (a judge backend) for a failure mode
   (:data:`FAILURE_MODES`); ``success`` stops the loop;
3. **rewrite**: ask the rewriter (a ``rewriter`` backend) to change only the failed
   operation and its last-frame evidence clause; :func:`check_rewrite` rejects a text
   that drops the actor, the object or the container, changes or (when withheld)
   states the target, or reorders the events; a rejected rewrite is asked again, up to
   ``max_rejects`` more times, after which the old instruction is kept and logged;
4. **regenerate** with the same generator and score the clip with the caller's scorer;
5. keep the best-scored try, the original always eligible, earlier tries winning ties;
   the running best-of-k is recorded after each try.

Every rule is in :data:`PROTOCOL` (rule, reason, source), which each run carries.

Python API::

    from vidmem.agents.m3 import M3Agent, TaskRecord
    from vidmem.generators.loading import load_generator
    from vidmem.generators.requests import GenerationRequest
    from vidmem.models.loading import load_backend

    agent = M3Agent(load_generator("sim"),
                    diagnoser=load_backend("judge/openai", {...}, role="judge"),
                    rewriter=load_backend("rewriter/openai", {...}, role="rewriter"),
                    k=5, max_rejects=3, seed=0)
    run = agent.run(TaskRecord.from_mapping(card["task_record"]),
                    GenerationRequest(request_id="case-1", benchmark="mine",
                                      prompt="The cat opens the red box.",
                                      out_path="unused.mp4", start_image="gap_last.png",
                                      duration_seconds=5.0,
                                      extras={"shot": "reveal", "case_id": "case-1"}),
                    score=lambda clip: my_score(clip), out_dir=Path("runs/case-1"),
                    scene={"actor": "the cat", "container": {"noun": "red box"},
                           "objects": [...], "target": {"contents": [...]}},
                    withhold_target=False,
                    original=None)          # or (clip_path, its_score): not generated again
    run.best, run.running_best, run.to_dict()   # -> agent_run.json

``scene`` is the card block a judge reads (actor, container, objects) plus ``target``
(``{"contents": [{"noun", "count"}], "text"}``), which the invariant check needs; the
generator never sees it. Clips are written as ``out_dir/try_<k>.mp4`` and last frames as
``out_dir/try_<k>_last.png``; the request's own ``out_path`` is not used. Try ``k`` is
generated with ``seed = request.seed + agent seed + k`` and ``extras["try"] = k``, so
every try is a fresh, reproducible draw for any generator. The same loop is on the
command line as ``vidmem agent m3`` (:mod:`vidmem.cli.agent_commands`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vidmem.agents.m3_answers import FAILURE_MEANINGS, FAILURE_MODES, DiagnosisAnswer
from vidmem.agents.m3_calls import (
    ask_diagnosis,
    diagnosis_request,
    evidence_scorer,
    last_frame,
    load_agent_prompt,
    rewrite_request,
)
from vidmem.agents.m3_invariants import check_rewrite, target_terms
from vidmem.agents.m3_records import AgentRun, AgentStep, TaskRecord, pick_best, running_best
from vidmem.errors import UserInputError, VidmemError
from vidmem.generators.requests import GenerationRequest
from vidmem.values import is_int, is_number_like

__all__ = ["FAILURE_MEANINGS", "FAILURE_MODES", "PROTOCOL", "AgentRun", "AgentStep",
           "DiagnosisAnswer", "M3Agent", "TaskRecord", "check_rewrite", "evidence_scorer",
           "pick_best", "running_best"]

_SEED = "seed 001 section 5; PROTOCOLS.md section 5 (M3-Agent loop)"

PROTOCOL: dict[str, dict[str, str]] = {
    "candidates": {
        "rule": "at most k candidates per task, the original instruction's clip (try 0) "
                "included; k bounds the generator calls (k - 1 when the original is handed in)",
        "reason": "best-of-K compares arms at equal compute",
        "source": _SEED + " ('Keep-best over K candidates')"},
    "keep_best": {
        "rule": "keep the highest-scored try; the original is always eligible; ties go to "
                "the earlier try; unscored tries are not eligible",
        "reason": "a rewrite can break a correct case (R2-10), so it must beat the original",
        "source": _SEED + " ('the ORIGINAL always in the set')"},
    "oracle": {
        "rule": "the run is flagged oracle=true: keep-best uses the caller's scorer",
        "reason": "with the scorer that reports the result, keep-best is an oracle estimate, "
                  "not a deployable critic",
        "source": _SEED + " ('flag that keep-best with the reporting scorer is an oracle')"},
    "running_best": {
        "rule": "best-of-k after each try, over tries 0..k",
        "reason": "later tries are not better on average; the report shows the running best",
        "source": _SEED + " ('report running best-of-K per try')"},
    "diagnosis_input": {
        "rule": "the diagnoser sees the last frame only, with the task record, the instruction "
                "and the scene block; it names one of " + ", ".join(FAILURE_MODES),
        "reason": "diagnosis reads the rendered last frame once, never the generator's state",
        "source": _SEED},
    "stop": {
        "rule": "stop when the diagnoser answers success (no further candidate); every try, "
                "the last included, is diagnosed for the log; no rewrite after the last try",
        "reason": "a success needs no further move; the chain shows each clip's diagnosis",
        "source": "decided here (the seed stops at K; stopping at success saves calls)"},
    "unusable_diagnosis": {
        "rule": "an unusable diagnosis (judge error or unparsable) asks no rewrite: the next "
                "try reuses the instruction (logged as rewrite status 'skipped')",
        "reason": "a rewrite needs a named failure; the try still counts against k",
        "source": "decided here"},
    "rewrite_scope": {
        "rule": "a rewrite must keep the actor, object and container the old instruction "
                "names, keep the target terms it states and add no other count, keep the "
                "order of events both name (vidmem.agents.m3_invariants.check_rewrite)",
        "reason": "only the failed operation and its final-frame evidence clause may change",
        "source": _SEED + " ('actor, object, target state and temporal order are kept')"},
    "rejects": {
        "rule": "a rejected (or failed) rewrite is asked again with the rejected texts and "
                "reasons, at most max_rejects more times; then the old instruction is kept",
        "reason": "bounded calls; the log shows every rejected text and why",
        "source": "decided here"},
    "withheld_target": {
        "rule": "with the target withheld, a rewrite stating any target noun, colour or count "
                "is rejected, and the rewrite prompt shows the record, the diagnosis evidence "
                "and the rejected rewrites with those terms replaced by [withheld]",
        "reason": "the withheld arm forbids every target noun, colour and count; an LLM "
                  "rewriter should not be told the answer it must not say",
        "source": "seed 001 section 4 ('forbids every target noun, color, and count')"},
    "seeds": {
        "rule": "try k is generated with seed = request.seed + agent seed + k and "
                "extras['try'] = k",
        "reason": "each try is a fresh, reproducible draw, also for generators that read only "
                  "the seed, as in an equal-compute same-sentence resample",
        "source": "decided here"},
    "judge_evidence_scorer": {
        "rule": "the built-in judge-evidence scorer is the diagnosis question: success = 1, "
                "any failure mode = 0, unusable = unscored",
        "reason": "the last frame must show the record's required evidence",
        "source": _SEED + " ('the score here is the same check that reports the result')"},
}


def _info(backend: Any) -> Any:
    info = backend.info() if callable(getattr(backend, "info", None)) else {}
    return info.to_dict() if callable(getattr(info, "to_dict", None)) else info


def _as_score(value: Any, where: str) -> tuple[float | None, str | None]:
    if value is None:
        return None, None
    if not is_number_like(value) or not math.isfinite(float(value)):
        return None, f"{where}: the scorer returned {value!r}, expected a finite number or None"
    return float(value), None


class M3Agent:
    """The diagnose-rewrite-regenerate loop over one frozen generator (module docstring).

    Args:
        generator: a :class:`vidmem.generators.protocol.Generator`.
        diagnoser: a judge backend (``judge/openai``, ``judge/sim-cards``, ...).
        rewriter: a ``rewriter`` backend (``rewriter/openai``, ``rewriter/sim-grammar``).
        k: candidates per task, the original included (>= 1).
        max_rejects: how many times a rejected rewrite is asked again (>= 0).
        seed: added to every try's generation seed.
    """

    def __init__(self, generator: Any, *, diagnoser: Any, rewriter: Any, k: int = 5,
                 max_rejects: int = 3, seed: int = 0) -> None:
        for key, value, low in (("k", k, 1), ("max_rejects", max_rejects, 0), ("seed", seed, None)):
            if not is_int(value) or (low is not None and value < low):
                raise UserInputError(f"M3Agent: {key} must be an integer"
                                     + (f" >= {low}" if low is not None else "")
                                     + f", found {value!r}")
        if not callable(getattr(generator, "generate", None)):
            raise UserInputError("M3Agent: the generator has no generate(request) method",
                                 hint="see vidmem.generators.protocol.Generator")
        if not callable(getattr(diagnoser, "judge", None)):
            raise UserInputError("M3Agent: the diagnoser has no judge(request) method",
                                 hint="load a judge backend, e.g. load_backend('judge/openai', "
                                      "..., role='judge')")
        if not callable(getattr(rewriter, "rewrite", None)):
            raise UserInputError("M3Agent: the rewriter has no rewrite(request) method",
                                 hint="load a rewriter backend, e.g. "
                                      "load_backend('rewriter/openai', ..., role='rewriter')")
        self.generator, self.diagnoser, self.rewriter = generator, diagnoser, rewriter
        self.k, self.max_rejects, self.seed = int(k), int(max_rejects), int(seed)
        self.diagnose_prompt = load_agent_prompt("m3_diagnose")
        self.rewrite_prompt = load_agent_prompt("m3_rewrite")

    def protocol(self) -> dict[str, Any]:
        """The rules and settings a run records."""
        return {"rules": PROTOCOL, "k": self.k, "max_rejects": self.max_rejects,
                "seed": self.seed,
                "prompts": {"diagnose": self.diagnose_prompt.describe(),
                            "rewrite": self.rewrite_prompt.describe()}}

    def run(self, task: TaskRecord | Mapping[str, Any], request: GenerationRequest,
            score: Callable[[Path], float | None], out_dir: Path, scene: Mapping[str, Any],
            withhold_target: bool = False,
            original: tuple[Path, float | None] | None = None) -> AgentRun:
        """Run the loop on one task (module docstring); never raises for a model's or the
        generator's failure of one try: it is logged in the run (:meth:`AgentRun.failures`).

        Raises:
            UserInputError: bad arguments, e.g. a withheld target the scene does not give.
        """
        task = task if isinstance(task, TaskRecord) else TaskRecord.from_mapping(task)
        scene = dict(scene or {})
        if withhold_target and not target_terms(scene):
            raise UserInputError(
                "M3Agent.run: withhold_target needs the target to withhold, but scene has no "
                "'target'", hint="pass scene['target'] = {'contents': [{'noun', 'count'}], "
                "'text'} (the generator never sees it)")
        if not isinstance(request, GenerationRequest) or not request.prompt.strip():
            raise UserInputError("M3Agent.run: request must be a GenerationRequest whose prompt "
                                 "is the original instruction")
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        run = AgentRun(task=task, original_instruction=request.prompt,
                       withhold_target=bool(withhold_target), k=self.k,
                       max_rejects=self.max_rejects, protocol=self.protocol(),
                       backends={"generator": _info(self.generator),
                                 "diagnoser": _info(self.diagnoser),
                                 "rewriter": _info(self.rewriter)})
        instruction = request.prompt
        for t in range(self.k):
            step = self._try(t, instruction, request, score, out_dir, original, run)
            if step.clip is None:
                run.steps.append(step)
                run.stopped = "generation_error"
                break
            try:
                frame = last_frame(step.clip, out_dir / f"try_{t}_last.png")
            except VidmemError as exc:  # an unreadable clip is a failed generation
                run.steps.append(dataclasses.replace(
                    step, error=f"the clip has no readable last frame: {exc.message}"))
                run.stopped = "generation_error"
                break
            diagnosis = ask_diagnosis(self.diagnoser, diagnosis_request(
                self.diagnose_prompt, f"{request.request_id}/try_{t}/diagnose", frame, task,
                instruction, scene))
            success = diagnosis["failure_mode"] == "success"
            rewrite = None
            if not success and t < self.k - 1:
                rewrite = self._rewrite(instruction, task, diagnosis, scene, bool(withhold_target))
            run.steps.append(dataclasses.replace(
                step, last_frame=str(out_dir / f"try_{t}_last.png"), diagnosis=diagnosis,
                rewrite=rewrite))
            if success:
                run.stopped = "success"
                break
            if rewrite is not None:
                instruction = rewrite["new"]
        run.select()
        return run

    def _try(self, t: int, instruction: str, request: GenerationRequest,
             score: Callable[[Path], float | None], out_dir: Path,
             original: tuple[Path, float | None] | None, run: AgentRun) -> AgentStep:
        """Try ``t``'s clip and score (not yet diagnosed)."""
        if t == 0 and original is not None:
            clip, given = Path(original[0]), original[1]
            if not clip.is_file():
                raise UserInputError(f"M3Agent.run: the original clip {clip} does not exist",
                                     hint="pass original=(path of the generated clip, score)")
            value, error = _as_score(given, "the original's score")
            if error:
                raise UserInputError(f"M3Agent.run: {error}")
            return AgentStep(t, instruction, str(clip), None, None, None, value,
                             generated=False)
        seed = request.seed + self.seed + t
        req = dataclasses.replace(request, prompt=instruction, seed=seed,
                                  out_path=str(out_dir / f"try_{t}.mp4"),
                                  extras={**dict(request.extras), "try": t})
        run.generator_calls += 1
        try:
            result = self.generator.generate(req)
        except VidmemError as exc:  # a generator should return status="error"; some raise
            return AgentStep(t, instruction, None, None, None, None, None, seed=seed,
                             error=f"generation failed: {exc.message}")
        if result.status != "ok" or not result.video_path or not Path(result.video_path).is_file():
            return AgentStep(t, instruction, None, None, None, None, None, seed=seed,
                             error=f"generation failed: {result.error or 'no video written'}")
        try:
            value, error = _as_score(score(Path(result.video_path)), "score")
        except Exception as exc:  # the caller's scorer: logged, the run goes on
            value, error = None, f"score failed: {type(exc).__name__}: {exc}"
        return AgentStep(t, instruction, str(result.video_path), None, None, None, value,
                         seed=seed, error=error)

    def _rewrite(self, instruction: str, task: TaskRecord, diagnosis: Mapping[str, Any],
                 scene: Mapping[str, Any], withhold: bool) -> dict[str, Any]:
        """Ask for a rewrite until one passes :func:`check_rewrite` (PROTOCOL 'rejects')."""
        out: dict[str, Any] = {"old": instruction, "new": instruction, "status": "skipped",
                               "rejected": [], "attempts": 0}
        if diagnosis.get("status") != "ok":
            return out
        rejected: list[tuple[str | None, str]] = []
        for attempt in range(1, self.max_rejects + 2):
            answer = self.rewriter.rewrite(rewrite_request(
                self.rewrite_prompt, instruction, task, diagnosis, scene,
                withhold_target=withhold, attempt=attempt, rejected=rejected))
            text = (answer.text or "").strip() if answer.status == "ok" else ""
            if answer.status != "ok":
                rejected.append((None, f"rewriter error: {answer.error}"))
                continue
            problems = check_rewrite(instruction, text, task.to_dict(), scene=scene,
                                     withhold_target=withhold)
            if not problems and any(text == t for t, _ in rejected):
                problems = ["was rejected before"]
            if problems:
                rejected.append((text, "; ".join(problems)))
                continue
            return {**out, "new": text, "status": "ok", "rejected": rejected,
                    "attempts": attempt}
        return {**out, "status": "rejected", "rejected": rejected,
                "attempts": self.max_rejects + 1}
