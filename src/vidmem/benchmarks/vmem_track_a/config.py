"""Track-A's scorer configuration: which policies, budget, encoders and judge, by preset.

Two presets:

* ``official``: the encoder families the VMem-Bench release names
  (``RETR_TEXT_PROVIDER=qwen3_embedding``, ``RETR_FRAME_PROVIDER=siglip2``,
  ``RETR_KEYFRAME_PROVIDER=dinov3``; the release fixes no size, vidmem takes the
  smallest Qwen3-Embedding and the base SigLIP 2 and DINOv3), the protocol's six
  policies, and ``judge/openai`` (point it at the paper's judge, Qwen3-VL-32B-Instruct).
* ``offline``: classic backends that need no weights (``classic/tfidf`` for segment
  text, ``classic/hsv-lbp`` for keyframes and R_S) and the sim world's card judge. No
  classic backend puts text and images in one space, so ``text_frame`` and
  ``seg_frame`` are not offered offline; a run says so in its protocol block.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from vidmem.errors import UserInputError

__all__ = ["DEFAULT_POLICIES", "PRESETS", "ScorerConfig"]

#: the protocol's policies, controls last
DEFAULT_POLICIES = ("text_frame", "seg_uniform", "seg_dino_key", "seg_frame", "recency", "random")
#: policies that rank frames against the instruction's text (need a text-image embedder)
CROSS_MODAL = frozenset({"text_frame", "seg_frame"})

PRESETS: dict[str, dict[str, Any]] = {
    "official": {
        "segment_text_embedder": "qwen3-embedding/0.6b",
        "frame_embedder": "siglip2/base-patch16-224",
        "keyframe_embedder": "dinov3/vitb16",
        "similarity_embedder": "dinov3/vitb16",
        "judge": "judge/openai",
        "policies": DEFAULT_POLICIES,
        "same_view": True,
    },
    "offline": {
        "segment_text_embedder": "classic/tfidf",
        "frame_embedder": None,
        "keyframe_embedder": "classic/hsv-lbp",
        "similarity_embedder": "classic/hsv-lbp",
        "judge": "judge/sim-cards",
        "policies": tuple(p for p in DEFAULT_POLICIES if p not in CROSS_MODAL),
        "same_view": False,
    },
}


@dataclass(frozen=True)
class ScorerConfig:
    """Everything that decides a Track-A film's numbers (its content key).

    Attributes:
        preset: ``official`` or ``offline``.
        policies: built-in names or ``module:Class``, in report order.
        budget: the largest K of the sweep; each policy composes once with it.
        segment_text_embedder, frame_embedder, keyframe_embedder, similarity_embedder:
            backend names (``frame_embedder`` embeds both texts and images; ``None``
            when no policy needs it).
        judge: the judge backend.
        same_view: ask the judge the pairwise ``same_view`` question, for R_V and SelEff
            (off: both reported as undefined).
        seed: the ``random`` control's seed.
        lang: the gold language (``zh``, ``en``).
        judge_image_side: references are shrunk so their longer side is at most this
            before they are judged (the reference scorer's 384).
        backend_options: per backend name, its constructor options.
    """

    preset: str = "offline"
    policies: tuple[str, ...] = PRESETS["offline"]["policies"]
    budget: int = 16
    segment_text_embedder: str = "classic/tfidf"
    frame_embedder: str | None = None
    keyframe_embedder: str = "classic/hsv-lbp"
    similarity_embedder: str = "classic/hsv-lbp"
    judge: str = "judge/sim-cards"
    same_view: bool = False
    seed: int = 0
    lang: str = "zh"
    judge_image_side: int = 384
    backend_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.policies:
            raise UserInputError("vmem_track_a: no policies given",
                                 hint=f"e.g. --policies {','.join(DEFAULT_POLICIES)}")
        if len(set(self.policies)) != len(self.policies):
            raise UserInputError(f"vmem_track_a: a policy is named twice in {list(self.policies)}")
        if not (isinstance(self.budget, int) and 1 <= self.budget <= 64):
            raise UserInputError(f"vmem_track_a: budget must be an integer in 1..64, found "
                                 f"{self.budget!r}", hint="the protocol sweeps K = 1..16")
        if self.lang not in ("zh", "en"):
            raise UserInputError(f"vmem_track_a: lang must be zh or en, found {self.lang!r}")
        needs_frames = [p for p in self.policies if p in CROSS_MODAL]
        if needs_frames and self.frame_embedder is None:
            raise UserInputError(
                f"vmem_track_a: {', '.join(needs_frames)} rank frames by text-to-image "
                "similarity, and this configuration has no text-image embedder",
                hint="use --preset official (SigLIP 2), or --frame-embedder NAME, or leave "
                "them out of --policies")

    @classmethod
    def from_preset(cls, preset: str = "offline", **overrides: Any) -> ScorerConfig:
        if preset not in PRESETS:
            raise UserInputError(f"vmem_track_a: unknown preset {preset!r}",
                                 hint=f"choose one of {', '.join(PRESETS)}")
        values = {**PRESETS[preset], **{k: v for k, v in overrides.items() if v is not None}}
        values["policies"] = tuple(values["policies"])
        return cls(preset=preset, **values)

    @property
    def protocol_defaults(self) -> bool:
        """The preset's encoders, policies and judge question, unchanged."""
        base = PRESETS.get(self.preset, {})
        return (self.budget == 16 and self.judge_image_side == 384
                and all(getattr(self, k) == (tuple(v) if isinstance(v, tuple) else v)
                        for k, v in base.items()))

    def backend_names(self) -> list[str]:
        names = [self.segment_text_embedder, self.frame_embedder, self.keyframe_embedder,
                 self.similarity_embedder, self.judge]
        return list(dict.fromkeys(n for n in names if n))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["policies"] = list(self.policies)
        data["backend_options"] = {k: dict(v) for k, v in self.backend_options.items()}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScorerConfig:
        values = dict(data)
        values["policies"] = tuple(values.get("policies", ()))
        return cls(**values)


def parse_policies(value: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """``--policies a,b,c`` as a tuple (``None``: the preset's).

    Example:
        >>> parse_policies("seg_uniform, random")
        ('seg_uniform', 'random')
    """
    if value is None:
        return None
    parts = value.split(",") if isinstance(value, str) else list(value)
    return tuple(p.strip() for p in parts if p.strip())
