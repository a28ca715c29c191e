"""Model roles (protocols) and their backends.

Backends live in ``vidmem.models.backends.<family>`` and are registered in
:mod:`vidmem.catalog` under ``family/variant``. torch and transformers are imported only
inside the transformers-based backend modules, never here.
"""

from vidmem.models.protocols import (
    BackendInfo,
    Detection,
    Detector,
    ImageEmbedder,
    Judge,
    JudgeRequest,
    JudgeResult,
    Segmenter,
    TextEmbedder,
)

__all__ = [
    "BackendInfo",
    "Detection",
    "Detector",
    "ImageEmbedder",
    "Judge",
    "JudgeRequest",
    "JudgeResult",
    "Segmenter",
    "TextEmbedder",
]
