"""The encoders of Track-B's retrieval conditions (part of every rollout's content key).

Rules: a preset names the three encoders (``offline``: classic backends and no
text-image embedder; ``official``: the card's models); a condition that ranks frames
against text is refused before anything is generated when the setting has no
text-image embedder; the encoders are loaded once per process and offered to the
policies by parameter name. Moved out of :mod:`.loop` unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from vidmem.errors import UserInputError

__all__ = ["NEEDS_FRAME_EMBEDDER", "RETRIEVAL_PRESETS", "RetrievalConfig", "load_encoders"]

#: policies that rank frames against text (need a joint text-image embedder)
NEEDS_FRAME_EMBEDDER = frozenset({"text_frame", "seg_frame"})

RETRIEVAL_PRESETS: dict[str, dict[str, Any]] = {
    "official": {"segment_text_embedder": "qwen3-embedding/0.6b",
                 "frame_embedder": "siglip2/base-patch16-224",
                 "keyframe_embedder": "dinov3/vitb16"},
    "offline": {"segment_text_embedder": "classic/tfidf", "frame_embedder": None,
                "keyframe_embedder": "classic/hsv-lbp"},
}


@dataclass(frozen=True)
class RetrievalConfig:
    """The encoders the retrieval policies get (part of every rollout's content key).

    Attributes:
        preset: ``offline`` (classic backends, no text-image embedder) or ``official``.
        segment_text_embedder, frame_embedder, keyframe_embedder: backend names
            (``frame_embedder`` embeds texts and images in one space; ``None``: none).
        backend_options: per backend name, its constructor options.
        seed: offered to policies that draw (a random control).
    """

    preset: str = "offline"
    segment_text_embedder: str = "classic/tfidf"
    frame_embedder: str | None = None
    keyframe_embedder: str = "classic/hsv-lbp"
    backend_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    seed: int = 0

    @classmethod
    def from_preset(cls, preset: str | None = "offline", **overrides: Any) -> RetrievalConfig:
        preset = preset or "offline"
        if preset not in RETRIEVAL_PRESETS:
            raise UserInputError(f"vmem_track_b: unknown retrieval preset {preset!r}",
                                 hint=f"choose one of {', '.join(RETRIEVAL_PRESETS)}")
        values = {**RETRIEVAL_PRESETS[preset], **{k: v for k, v in overrides.items() if v is not None}}
        return cls(preset=preset, **values)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["backend_options"] = {k: dict(v) for k, v in self.backend_options.items()}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RetrievalConfig:
        return cls(**dict(data))

    def check(self, conditions: Sequence[str]) -> None:
        """Refuse conditions these encoders cannot run, before anything is generated."""
        text_image = sorted(set(conditions) & NEEDS_FRAME_EMBEDDER)
        if text_image and self.frame_embedder is None:
            raise UserInputError(
                f"vmem_track_b: condition(s) {text_image} rank frames against text, and the "
                f"{self.preset!r} retrieval setting has no text-image embedder",
                hint="pass --retrieval-preset official (SigLIP 2), or --frame-embedder NAME, "
                     "or leave text_frame/seg_frame out of --conditions")


_ENCODERS: dict[str, dict[str, Any]] = {}


def load_encoders(config: RetrievalConfig) -> dict[str, Any]:
    """The loaded encoders, offered to the policies by parameter name (once per process)."""
    key = json.dumps(config.to_dict(), sort_keys=True)
    if key not in _ENCODERS:
        from vidmem.models.loading import load_backend

        opts = {k: dict(v) for k, v in config.backend_options.items()}
        text = load_backend(config.segment_text_embedder, opts.get(config.segment_text_embedder),
                            role="text_embedder")
        frame = (None if config.frame_embedder is None else
                 load_backend(config.frame_embedder, opts.get(config.frame_embedder),
                              role="image_embedder"))
        keyframe = load_backend(config.keyframe_embedder, opts.get(config.keyframe_embedder),
                                role="image_embedder")
        _ENCODERS[key] = {"segment_text_embedder": text, "frame_text_embedder": frame,
                          "frame_image_embedder": frame, "keyframe_embedder": keyframe,
                          "seed": config.seed}
    return _ENCODERS[key]
