"""MIST's configuration: which arms, how many tries, which judge and rewriter, by preset.

Two presets:

* ``official``: ``judge/openai`` (point it at the paper's fixed VLM judge) and
  ``rewriter/openai`` (an OpenAI-compatible text LLM for M3-Agent's rewrites), the six
  arms, K = 5 and every protocol default;
* ``offline``: the sim world's ``judge/sim-cards`` (its weights are the sim card deck:
  on the command line ``ROOT/_cards`` where ``vidmem sim build`` writes it, or
  ``--backend-opt judge/sim-cards:weights=DIR``; :mod:`vidmem.benchmarks.sim_deck`) and
  the deterministic ``rewriter/sim-grammar`` for the sim's controlled prompt grammar.

The configuration drives both halves of a run: generation (arms, K, seed, the shot
format, the judge that scores M3-Agent's candidates, the rewriter) and scoring (the
judge, the frames shown, the bootstrap). It is the content key of every stored case, so
a change scores again (the judge answer cache still serves every question asked before).

Rules: ``baseline`` is always one of the arms (every difference is taken against it and
it is M3-Agent's original); an arm name must be one of :data:`~.schema.ARMS`; K >= 1;
the seeds are integers.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from vidmem.benchmarks.mist.schema import ARMS
from vidmem.errors import UserInputError

__all__ = ["AGENT_ARMS", "BASELINE", "DEFAULT_K", "FIXED_ARMS", "MistConfig", "PRESETS",
           "derive_seed", "parse_arms"]

#: the arm every difference is taken against, and M3-Agent's original (its try 0)
BASELINE = "baseline"
#: arms whose candidates come from M3-Agent (diagnose, rewrite, regenerate)
AGENT_ARMS = ("diagnosis_rewrite", "target_withheld_rewrite")
#: arms whose reveal prompt is fixed by the card (resampled with new seeds)
FIXED_ARMS = tuple(a for a in ARMS if a not in AGENT_ARMS)
#: tries per arm (candidates per case)
DEFAULT_K = 5

PRESETS: dict[str, dict[str, Any]] = {
    "official": {"judge": "judge/openai", "rewriter": "rewriter/openai"},
    "offline": {"judge": "judge/sim-cards", "rewriter": "rewriter/sim-grammar"},
}


def derive_seed(seed: int, *parts: object) -> int:
    """A generation seed for one clip: SHA-256 of the run seed and the clip's coordinates.

    Every (case, arm, try) gets its own seed, so the same-sentence resample never
    repeats the baseline's draw even with the same prompt and start image.

    Example:
        >>> derive_seed(0, "case", "baseline", 0) == derive_seed(0, "case", "baseline", 0)
        True
        >>> derive_seed(0, "case", "baseline", 0) != derive_seed(0, "case", "baseline", 1)
        True
        >>> 0 <= derive_seed(7, "x") < 2**31
        True
    """
    text = "\x1f".join([str(int(seed)), *(str(p) for p in parts)])
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:4], "big") & 0x7FFFFFFF


def parse_arms(value: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """``--arms a,b,c`` as a tuple in :data:`ARMS` order (``None``: all six).

    Example:
        >>> parse_arms("open_and_hold, baseline")
        ('baseline', 'open_and_hold')
    """
    if value is None:
        return None
    parts = value.split(",") if isinstance(value, str) else list(value)
    names = [p.strip() for p in parts if p.strip()]
    for n in names:
        if n not in ARMS:
            close = difflib.get_close_matches(n, ARMS, 1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise UserInputError(f"mist: unknown arm {n!r}",
                                 hint=f"{hint}the arms are {', '.join(ARMS)}")
    return tuple(a for a in ARMS if a in names)


@dataclass(frozen=True)
class MistConfig:
    """Everything that decides a MIST case's clips and numbers (its content key).

    Attributes:
        preset: ``official`` or ``offline``.
        arms: the arms, in :data:`ARMS` order; ``baseline`` always among them.
        k: tries per arm (the baseline has one: the original clip).
        seed: the run seed every clip's generation seed derives from.
        judge: the gate judge (and M3-Agent's diagnoser), ``family/variant``.
        rewriter: M3-Agent's rewriter, ``family/variant``.
        max_rejects: rewrites refused by M3-Agent's invariant check before a step gives up.
        fps, width, height: the requested shot format (``None``: the generator's own).
        setup_frames, leak_frames: frames of the first / gap shot shown for setup / leak.
        threshold: the class threshold of :mod:`vidmem.metrics.mist_gates`.
        n_resamples, bootstrap_seed, confidence: the paired case bootstrap.
        backend_options: per backend name, its constructor options.
    """

    preset: str = "offline"
    arms: tuple[str, ...] = ARMS
    k: int = DEFAULT_K
    seed: int = 0
    judge: str = "judge/sim-cards"
    rewriter: str = "rewriter/sim-grammar"
    max_rejects: int = 3
    fps: float | None = None
    width: int | None = None
    height: int | None = None
    setup_frames: int = 3
    leak_frames: int = 4
    threshold: float = 0.5
    n_resamples: int = 4000
    bootstrap_seed: int = 0
    confidence: float = 0.95
    backend_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        where = "mist"
        if self.preset not in PRESETS:
            raise UserInputError(f"{where}: unknown preset {self.preset!r}",
                                 hint=f"choose one of {', '.join(PRESETS)}")
        arms = tuple(self.arms)
        if not arms or BASELINE not in arms:
            raise UserInputError(f"{where}: the arms {list(arms)} leave out {BASELINE!r}",
                                 hint="every difference is taken against the baseline and "
                                 "M3-Agent starts from its clip; keep baseline in --arms")
        parse_arms(arms)  # unknown names raise
        if len(set(arms)) != len(arms):
            raise UserInputError(f"{where}: an arm is named twice in {list(arms)}")
        object.__setattr__(self, "arms", tuple(a for a in ARMS if a in arms))
        for name in ("k", "max_rejects", "setup_frames", "leak_frames", "n_resamples"):
            v = getattr(self, name)
            low = 0 if name == "max_rejects" else 1
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise UserInputError(f"{where}: {name} must be an integer >= {low}, found {v!r}")
        for name in ("seed", "bootstrap_seed"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise UserInputError(f"{where}: {name} must be an integer, found {v!r}")
        for name in ("width", "height"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 16):
                raise UserInputError(f"{where}: {name} must be an integer >= 16 pixels, "
                                     f"found {v!r}", hint="or leave it out: the generator's own")
        if self.fps is not None and not float(self.fps) > 0:
            raise UserInputError(f"{where}: fps must be > 0, found {self.fps!r}")
        if not 0.0 < float(self.threshold) < 1.0:
            raise UserInputError(f"{where}: threshold must be in (0, 1), found {self.threshold!r}")
        if not 0.0 < float(self.confidence) < 1.0:
            raise UserInputError(f"{where}: confidence must be in (0, 1), found {self.confidence!r}")

    @classmethod
    def from_preset(cls, preset: str = "offline", **overrides: Any) -> MistConfig:
        if preset not in PRESETS:
            raise UserInputError(f"mist: unknown preset {preset!r}",
                                 hint=f"choose one of {', '.join(PRESETS)}")
        values = {**PRESETS[preset], **{k: v for k, v in overrides.items() if v is not None}}
        if "arms" in values:
            values["arms"] = tuple(values["arms"])
        return cls(preset=preset, **values)

    @property
    def protocol_defaults(self) -> bool:
        """The protocol's arms, K, bootstrap and the preset's backends, unchanged."""
        preset = PRESETS[self.preset]
        return (self.judge == preset["judge"] and self.rewriter == preset["rewriter"]
                and self.arms == ARMS and self.k == DEFAULT_K and self.n_resamples == 4000
                and self.bootstrap_seed == 0 and self.confidence == 0.95
                and self.threshold == 0.5)

    def tries(self, arm: str) -> int:
        """How many candidates ``arm`` has per case: 1 for the baseline, else K."""
        return 1 if arm == BASELINE else self.k

    def generation_key(self) -> dict[str, Any]:
        """The fields that change what is generated (not how it is scored)."""
        opts = {n: dict(self.backend_options.get(n, {})) for n in (self.judge, self.rewriter)}
        return {"k": self.k, "seed": self.seed, "fps": self.fps, "width": self.width,
                "height": self.height, "judge": self.judge, "rewriter": self.rewriter,
                "max_rejects": self.max_rejects, "threshold": self.threshold,
                "backend_options": opts}

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["arms"] = list(self.arms)
        data["backend_options"] = {k: dict(v) for k, v in self.backend_options.items()}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MistConfig:
        values = dict(data)
        values["arms"] = tuple(values.get("arms", ARMS))
        return cls(**values)
