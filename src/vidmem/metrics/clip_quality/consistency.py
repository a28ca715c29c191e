"""Subject and background consistency: VBench's embedding formula, any embedder.

Part of :mod:`vidmem.metrics.clip_quality` (the overview and rules are there).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vidmem.errors import UserInputError
from vidmem.metrics.clip_quality.frames import Embed, as_clip

#: the norm below which a vector counts as zero (torch's F.normalize eps)
_EPS = 1e-12


def embedding_consistency(vectors: np.ndarray | Sequence[Sequence[float]]) -> float:
    """VBench's consistency of one clip's frame embeddings ``(T, D)``.

    For frames ``i >= 1``: the mean of ``max(0, cos(e[i-1], e[i]))`` and
    ``max(0, cos(e[0], e[i]))``; the clip's score is the mean over ``i`` (1.0 for a
    single frame, as VBench returns when there is no pair).

    Example:
        >>> embedding_consistency([[1, 0], [1, 0], [0, 1]])
        0.5
    """
    v = np.asarray(vectors, dtype=np.float64)
    if v.ndim != 2 or v.shape[0] == 0:
        raise UserInputError(f"consistency: expected (T, D) frame embeddings, found shape "
                             f"{v.shape}", hint="the embedder must return one row per frame")
    if not np.isfinite(v).all():
        raise UserInputError("consistency: frame embeddings hold NaN or inf",
                             hint="check the embedder's output")
    if v.shape[0] == 1:
        return 1.0
    v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), _EPS)
    prev = np.maximum(0.0, np.einsum("ij,ij->i", v[:-1], v[1:]))
    first = np.maximum(0.0, v[1:] @ v[0])
    return float(np.mean((prev + first) / 2.0))


def consistency_of(frames: np.ndarray | Sequence[np.ndarray], embed: Embed,
                   what: str = "consistency") -> float:
    """:func:`embedding_consistency` of ``embed(frames)``, its shape checked."""
    clip = as_clip(frames, min_frames=1, what=what)
    vectors = np.asarray(embed(list(clip)))
    if vectors.ndim != 2 or vectors.shape[0] != clip.shape[0]:
        raise UserInputError(f"{what}: the embedder returned shape {vectors.shape} for "
                             f"{clip.shape[0]} frames",
                             hint="pass a callable frames -> (T, D) vectors")
    return embedding_consistency(vectors)


def subject_consistency(frames: np.ndarray | Sequence[np.ndarray], embed: Embed) -> float:
    """VBench subject consistency of one clip with ``embed`` in DINO's place.

    Example:
        >>> clip = np.zeros((3, 4, 4, 3), np.uint8); clip[2] = 255
        >>> subject_consistency(clip, lambda fs: [[1.0, f.mean() / 255] for f in fs])
        0.8535...
    """
    return consistency_of(frames, embed, "subject consistency")


def background_consistency(frames: np.ndarray | Sequence[np.ndarray], embed: Embed) -> float:
    """VBench background consistency of one clip with ``embed`` in CLIP's place.

    Example:
        >>> background_consistency(np.zeros((3, 4, 4, 3), np.uint8), lambda fs: [[1.0]] * 3)
        1.0
    """
    return consistency_of(frames, embed, "background consistency")
