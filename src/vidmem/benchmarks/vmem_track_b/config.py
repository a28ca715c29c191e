"""Track-B's scorer configuration: which conditions, which judge, which stories, by preset.

Two presets:

* ``official``: ``judge/openai`` (point it at the paper's judge, a Qwen3-VL server),
  the card's six conditions and every protocol default.
* ``offline``: the sim world's card judge ``judge/sim-cards``; its weights are the sim
  card deck (:func:`vidmem.sim.cards.write_card_deck`): on the command line
  ``GOLD/_cards`` where ``vidmem sim build`` writes it, or ``--backend-opt
  judge/sim-cards:weights=DIR`` (:mod:`vidmem.benchmarks.sim_deck`). Its default
  conditions are the four an offline run can generate (:data:`OFFLINE_CONDITIONS`).

``vidmem score`` without ``--conditions`` scores the card's conditions found in the
rollouts folder and names the others (:func:`present_conditions`).

The configuration is the content key of every stored story: a changed judge, seed,
condition list, index base or bootstrap setting scores again (the judge answer cache
still serves every question asked before).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from vidmem.benchmarks.vmem_track_b.loop_config import NEEDS_FRAME_EMBEDDER
from vidmem.benchmarks.vmem_track_b.schema import parse_cohort
from vidmem.errors import UserInputError
from vidmem.io.safe_paths import SAFE_ID_RULE, id_problem
from vidmem.stats.paired_bootstrap import DEFAULT_SEED

__all__ = ["BASELINE", "DEFAULT_CONDITIONS", "OFFLINE_CONDITIONS", "PRESETS", "PRIVILEGED",
           "ScorerConfig", "parse_conditions", "present_conditions"]

#: the card's conditions: no memory, the four retrieval policies, the privileged diagnostic
DEFAULT_CONDITIONS = ("none", "text_frame", "seg_uniform", "seg_dino_key", "seg_frame",
                      "last_seen")
#: the control every difference is taken against
BASELINE = "none"
#: conditions that see information a deployable policy cannot (reported, marked)
PRIVILEGED = frozenset({"last_seen"})

#: the card's conditions an offline run can generate: text_frame and seg_frame rank frames
#: against text, and vidmem has no weight-free text-image embedder (the offline retrieval
#: setting has none; a made-up proxy would have no protocol behind it), so the offline
#: preset leaves them out by default, as Track-A's offline preset does with its policies
OFFLINE_CONDITIONS = tuple(c for c in DEFAULT_CONDITIONS if c not in NEEDS_FRAME_EMBEDDER)

#: each preset's judge and default conditions (``--conditions`` replaces the latter)
PRESETS: dict[str, dict[str, Any]] = {
    "official": {"judge": "judge/openai", "conditions": DEFAULT_CONDITIONS},
    "offline": {"judge": "judge/sim-cards", "conditions": OFFLINE_CONDITIONS},
}


@dataclass(frozen=True)
class ScorerConfig:
    """Everything that decides a Track-B story's numbers (its content key).

    Attributes:
        preset: ``official`` or ``offline``.
        conditions: condition folder names, in report order; ``none`` is the baseline.
        judge: the judge backend (``family/variant``).
        seed: the roster seed (decoys and order; see ``roster.PROTOCOL``).
        stories: a cohort selector (``"0001-0030"``), ``None``: every story of the gold.
        index_base: 1 (files ``seg_001``/``001``/``1`` are segment 1) or 0 (file ``k`` is
            segment ``k + 1``).
        n_resamples, bootstrap_seed, confidence: the paired story bootstrap.
        backend_options: per backend name, its constructor options.
        absent_conditions: conditions of the default that ``vidmem score`` left out
            because no story's rollouts folder has them (:func:`present_conditions`);
            ``()`` when ``--conditions`` was given or every one was there.
    """

    preset: str = "offline"
    conditions: tuple[str, ...] = OFFLINE_CONDITIONS
    judge: str = "judge/sim-cards"
    seed: int = 0
    stories: str | None = None
    index_base: int = 1
    n_resamples: int = 2000
    bootstrap_seed: int = DEFAULT_SEED
    confidence: float = 0.95
    backend_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    absent_conditions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        where = "vmem_track_b"
        if not self.conditions:
            raise UserInputError(f"{where}: no conditions given",
                                 hint=f"e.g. --conditions {','.join(DEFAULT_CONDITIONS)}")
        if len(set(self.conditions)) != len(self.conditions):
            raise UserInputError(f"{where}: a condition is named twice in {list(self.conditions)}")
        bad = [c for c in self.conditions if id_problem(c) is not None]
        if bad:
            raise UserInputError(f"{where}: condition names must be safe folder names "
                                 f"({SAFE_ID_RULE}), found {bad}",
                                 hint="name each condition as its folder under <rollouts>/<story>/")
        if self.index_base not in (0, 1):
            raise UserInputError(f"{where}: index base must be 0 or 1, found {self.index_base!r}",
                                 hint="--index-base 1 (seg_001 is the first segment, the "
                                 "release's spelling) or --index-base 0")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise UserInputError(f"{where}: seed must be an integer, found {self.seed!r}")
        if not (isinstance(self.n_resamples, int) and self.n_resamples >= 1):
            raise UserInputError(f"{where}: bootstrap resamples must be an int >= 1, found "
                                 f"{self.n_resamples!r}", hint="the protocol draws 2000")
        if not 0.0 < float(self.confidence) < 1.0:
            raise UserInputError(f"{where}: confidence must be in (0, 1), found {self.confidence!r}")
        parse_cohort(self.stories)  # raises on a bad selector

    @classmethod
    def from_preset(cls, preset: str = "offline", **overrides: Any) -> ScorerConfig:
        if preset not in PRESETS:
            raise UserInputError(f"vmem_track_b: unknown preset {preset!r}",
                                 hint=f"choose one of {', '.join(PRESETS)}")
        values = {**PRESETS[preset], **{k: v for k, v in overrides.items() if v is not None}}
        if "conditions" in values:
            values["conditions"] = tuple(values["conditions"])
        return cls(preset=preset, **values)

    @property
    def protocol_defaults(self) -> bool:
        """The card's conditions, seed-independent settings and bootstrap, unchanged."""
        return (self.judge == PRESETS.get(self.preset, {}).get("judge")
                and self.conditions == DEFAULT_CONDITIONS and self.n_resamples == 2000
                and self.bootstrap_seed == DEFAULT_SEED and self.confidence == 0.95)

    def selected(self) -> frozenset[int] | None:
        """The story ids of :attr:`stories` (``None``: every story)."""
        return parse_cohort(self.stories)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["conditions"] = list(self.conditions)
        data["backend_options"] = {k: dict(v) for k, v in self.backend_options.items()}
        # only when set: a configuration without it keeps the content key it had before
        if self.absent_conditions:
            data["absent_conditions"] = list(self.absent_conditions)
        else:
            del data["absent_conditions"]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScorerConfig:
        values = dict(data)
        # a stored configuration without conditions predates the per-preset defaults
        values["conditions"] = tuple(values.get("conditions", DEFAULT_CONDITIONS))
        values["absent_conditions"] = tuple(values.get("absent_conditions", ()))
        return cls(**values)


def parse_conditions(value: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """``--conditions a,b,c`` as a tuple (``None``: the card's six).

    Example:
        >>> parse_conditions("none, seg_uniform")
        ('none', 'seg_uniform')
    """
    if value is None:
        return None
    parts = value.split(",") if isinstance(value, str) else list(value)
    return tuple(p.strip() for p in parts if p.strip())


def present_conditions(config: ScorerConfig, rollouts: Path) -> ScorerConfig:
    """``config`` scoring the card's conditions that ``rollouts`` holds, for ``vidmem score``
    without ``--conditions``: the card's six whatever the preset (scoring needs no
    retrieval encoder), less any that no story folder has, which are named in
    ``absent_conditions`` (said in the summary) instead of failing the whole run.

    A condition some stories have and others lack stays, so the missing folder is still
    an error by name (or ``--allow-missing``); when no condition of the card is found the
    configuration is returned as it is, and the missing folders are reported as before.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     for cond in ("none", "last_seen"):
        ...         (Path(tmp) / "0001" / cond).mkdir(parents=True)
        ...     got = present_conditions(ScorerConfig(), Path(tmp))
        >>> got.conditions, got.absent_conditions
        (('none', 'last_seen'), ('text_frame', 'seg_uniform', 'seg_dino_key', 'seg_frame'))
    """
    if not rollouts.is_dir():
        return config
    found = {cond.name for story in rollouts.iterdir() if story.is_dir()
             for cond in story.iterdir() if cond.is_dir()}
    kept = tuple(c for c in DEFAULT_CONDITIONS if c in found)
    if not kept:
        return config
    absent = tuple(c for c in DEFAULT_CONDITIONS if c not in found)
    return replace(config, conditions=kept, absent_conditions=absent)
