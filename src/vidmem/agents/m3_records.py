"""The M3-Agent's records: the task record it reads, and the log of every try it made.

Rules:

* A :class:`TaskRecord` holds five non-empty strings (seed 001 section 5): the actor,
  the object, the binding it must end in, the operation, and the evidence the last
  frame must show. They come from the task card; the agent never invents them.
* An :class:`AgentRun` is plain data: :meth:`AgentRun.to_dict` is JSON (no NaN; an
  unscored try has ``score: null``) and :meth:`AgentRun.from_dict` reads it back
  unchanged, so a run can be reported or re-selected without regenerating anything.
* Keep-best (:func:`pick_best`): the highest score over every scored try, the original
  (try 0) included; ties go to the earlier try, so a rewrite must *beat* the original
  to replace it. :func:`running_best` is the best-of-k after each try. Both are chosen
  with the caller's scorer after generation: when that scorer is the one that reports
  the result, the kept score is an oracle estimate (seed 001 section 5), and the run
  says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from vidmem.errors import UserInputError

__all__ = ["RECORD_FIELDS", "AgentRun", "AgentStep", "TaskRecord", "pick_best", "running_best"]

RECORD_FIELDS = ("actor", "object", "binding", "operation", "required_last_frame_evidence")


@dataclass(frozen=True)
class TaskRecord:
    """What the clip must carry out: who, on what, with which binding and last-frame evidence."""

    actor: str
    object: str
    binding: str
    operation: str
    required_last_frame_evidence: str

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | Any, *, where: str = "task record") -> TaskRecord:
        """Build from a mapping (or an object with these attributes, e.g. a card's
        pydantic task record), naming a missing or empty field.

        Example:
            >>> TaskRecord.from_mapping({"actor": "the cat", "object": "coin", "binding":
            ...     "coin in the box", "operation": "open", "required_last_frame_evidence":
            ...     "the open box with a coin inside"}).actor
            'the cat'
        """
        if not isinstance(data, Mapping):
            data = {f: getattr(data, f, None) for f in RECORD_FIELDS}
        bad = [f for f in RECORD_FIELDS if not isinstance(data.get(f), str) or not data[f].strip()]
        if bad:
            raise UserInputError(
                f"{where}: field(s) {bad} must be non-empty strings; found "
                + ", ".join(f"{f}={data.get(f)!r}" for f in bad),
                hint="a task record holds " + ", ".join(RECORD_FIELDS))
        return cls(**{f: str(data[f]).strip() for f in RECORD_FIELDS})

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass(frozen=True)
class AgentStep:
    """One try: the instruction, the clip it gave, what the diagnoser saw, the rewrite
    that diagnosis led to, and the caller's score.

    Attributes:
        try_index: 0 for the original, then 1, 2, ...
        instruction: the prompt this try's clip was generated from.
        clip: the clip's path (``None`` when generation failed).
        last_frame: the PNG of its last frame the diagnoser read.
        diagnosis: ``{"failure_mode", "evidence", "status", "error"}``; ``status`` is the
            judge's (``ok``, ``unparsable``, ``error``), failure mode ``None`` unless ok.
        rewrite: the rewrite this diagnosis led to, ``{"old", "new", "status",
            "rejected": [[text, reason], ...], "attempts"}``; ``status`` is ``ok``,
            ``rejected`` (every attempt was rejected: ``new`` is ``old``) or ``skipped``
            (no usable diagnosis: ``new`` is ``old``). ``None`` after the last try or a
            success.
        score: the caller's score of the clip (``None``: not scored).
        generated: ``False`` when the caller handed the clip in (the original).
        seed: the generation seed used (``None`` for a handed-in clip).
        error: why the try failed (generation or scoring), else ``None``.
    """

    try_index: int
    instruction: str
    clip: str | None
    last_frame: str | None
    diagnosis: dict[str, Any] | None
    rewrite: dict[str, Any] | None
    score: float | None
    generated: bool = True
    seed: int | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if self.rewrite is not None:
            data["rewrite"]["rejected"] = [list(r) for r in self.rewrite.get("rejected", [])]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentStep:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})


def pick_best(scores: Sequence[float | None]) -> int | None:
    """Index of the best score (earliest on ties); ``None`` when nothing was scored.

    Example:
        >>> pick_best([0.5, 0.2, 0.5, None]), pick_best([None, 0.1]), pick_best([None])
        (0, 1, None)
    """
    best: int | None = None
    for k, s in enumerate(scores):
        if s is not None and (best is None or s > scores[best]):  # type: ignore[operator]
            best = k
    return best


def running_best(scores: Sequence[float | None]) -> list[float | None]:
    """Best-of-k after each try, the original (try 0) always in the pool.

    Example:
        >>> running_best([0.4, None, 0.2, 0.9, 0.5])
        [0.4, 0.4, 0.4, 0.9, 0.9]
        >>> running_best([None, 0.3])
        [None, 0.3]
    """
    out: list[float | None] = []
    for k in range(len(scores)):
        best = pick_best(scores[: k + 1])
        out.append(None if best is None else scores[best])
    return out


@dataclass
class AgentRun:
    """The whole loop on one task (fields are plain data; see :meth:`to_dict`).

    Attributes:
        task: the task record.
        original_instruction: the instruction of try 0.
        withhold_target: whether rewrites were forbidden to state the target.
        k: candidates allowed, the original included.
        max_rejects: rejected rewrites retried per step.
        steps: one :class:`AgentStep` per try, in order.
        best: index of the kept try (:func:`pick_best`), ``None`` if nothing scored.
        running_best: best-of-k after each try (:func:`running_best`).
        stopped: ``success`` (the diagnoser saw the evidence), ``k_reached`` or
            ``generation_error``.
        generator_calls: clips the agent generated (at most ``k``, ``k - 1`` when the
            original was handed in).
        backends: what the run used (generator, diagnoser, rewriter ``info()``).
        protocol: the agent's rules (:data:`vidmem.agents.m3.PROTOCOL`).
        oracle: keep-best chose with the caller's scorer; when that is the scorer that
            reports the result, the kept score is an oracle estimate.
    """

    task: TaskRecord
    original_instruction: str
    withhold_target: bool
    k: int
    max_rejects: int
    steps: list[AgentStep] = field(default_factory=list)
    best: int | None = None
    running_best: list[float | None] = field(default_factory=list)
    stopped: str = "k_reached"
    generator_calls: int = 0
    backends: dict[str, Any] = field(default_factory=dict)
    protocol: dict[str, Any] = field(default_factory=dict)
    oracle: bool = True

    def select(self) -> None:
        """Recompute :attr:`best` and :attr:`running_best` from the steps' scores."""
        scores = [s.score for s in self.steps]
        self.best = pick_best(scores)
        self.running_best = running_best(scores)

    @property
    def best_step(self) -> AgentStep | None:
        return None if self.best is None else self.steps[self.best]

    def failures(self) -> list[str]:
        """Every try that did not work as asked: a failed generation, an unusable
        diagnosis, a rewriter error or an unscored clip (a rejected rewrite is the
        check doing its job, not a failure)."""
        out: list[str] = []
        for s in self.steps:
            where = f"try {s.try_index}"
            if s.error:
                out.append(f"{where}: {s.error}")
            if s.diagnosis is not None and s.diagnosis.get("status") != "ok":
                out.append(f"{where}: diagnosis {s.diagnosis.get('status')}: "
                           f"{s.diagnosis.get('error')}")
            for text, reason in (s.rewrite or {}).get("rejected", []):
                if text is None:
                    out.append(f"{where}: rewriter: {reason}")
            if s.clip is not None and s.score is None and not s.error:
                out.append(f"{where}: the clip was not scored")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task.to_dict(),
            "original_instruction": self.original_instruction,
            "withhold_target": self.withhold_target,
            "k": self.k,
            "max_rejects": self.max_rejects,
            "steps": [s.to_dict() for s in self.steps],
            "best": self.best,
            "running_best": list(self.running_best),
            "stopped": self.stopped,
            "generator_calls": self.generator_calls,
            "backends": dict(self.backends),
            "protocol": dict(self.protocol),
            "oracle": self.oracle,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentRun:
        """Read :meth:`to_dict` back (an ``agent_run.json``)."""
        try:
            return cls(
                task=TaskRecord.from_mapping(data["task"], where="agent run 'task'"),
                original_instruction=str(data["original_instruction"]),
                withhold_target=bool(data["withhold_target"]),
                k=int(data["k"]), max_rejects=int(data["max_rejects"]),
                steps=[AgentStep.from_dict(s) for s in data.get("steps", [])],
                best=data.get("best"), running_best=list(data.get("running_best", [])),
                stopped=str(data.get("stopped", "k_reached")),
                generator_calls=int(data.get("generator_calls", 0)),
                backends=dict(data.get("backends", {})), protocol=dict(data.get("protocol", {})),
                oracle=bool(data.get("oracle", True)))
        except (KeyError, TypeError, ValueError) as exc:
            raise UserInputError(f"agent run: not an agent_run.json record ({exc!r})",
                                 hint="read files written by AgentRun.to_dict") from None
