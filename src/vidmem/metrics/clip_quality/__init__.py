"""Per-clip quality controls in VBench's style, offline: kept apart from memory scores.

Track-B reports quality next to memory to ask whether quality could explain a memory
difference. Five per-clip metrics follow VBench's definitions (``Vchitect/VBench``
``vbench/*.py``); where VBench runs a trained model, a function passed in takes its
place, and :data:`PROTOCOL` says exactly which parts differ (entries whose rule starts
with ``DIFFERS``):

==========================  ==================================  ==========================
metric                      VBench                              here
==========================  ==================================  ==========================
subject consistency         DINO ViT-B/16 frame features        any ``embed`` callable
background consistency      CLIP ViT-B/32 frame features        any ``embed`` callable
temporal flickering         mean abs frame difference           same (every clip scored)
motion smoothness           AMT midpoint interpolation          flow-warped midpoints
dynamic degree              RAFT flow, top-5% magnitude         any ``flow`` (Farneback)
==========================  ==================================  ==========================

Everything is pure: frames (``(T, H, W, 3)`` RGB, 0..255) and callables in, numbers out.
The offline flow is ``vidmem.models.backends.classic_flow.FarnebackFlow`` (OpenCV); an
embedder is any ``ImageEmbedder.embed_images``.

Modules: :mod:`.frames` (the clip check and the callable types), :mod:`.consistency`,
:mod:`.flicker`, :mod:`.motion`, :mod:`.clip` (all five at once, flows shared),
:mod:`.correlation` (Spearman with per-clip recall), :mod:`.protocol`.

Example:
    >>> import numpy as np
    >>> frozen = np.full((6, 16, 16, 3), 120, np.uint8)
    >>> q = clip_quality(frozen, 16, flow=lambda a, b: np.zeros((16, 16, 2)))
    >>> q.temporal_flickering, q.motion_smoothness, q.dynamic_degree
    (1.0, 1.0, False)
"""

from vidmem.metrics.clip_quality.clip import METRICS, ClipQuality, clip_quality
from vidmem.metrics.clip_quality.consistency import (
    background_consistency,
    consistency_of,
    embedding_consistency,
    subject_consistency,
)
from vidmem.metrics.clip_quality.correlation import MIN_CLIPS, Spearman, spearman_with_recall
from vidmem.metrics.clip_quality.flicker import frame_differences, temporal_flickering
from vidmem.metrics.clip_quality.frames import Embed, Flow, as_clip
from vidmem.metrics.clip_quality.motion import (
    DynamicDegree,
    backward_warp,
    dynamic_degree,
    dynamic_degree_detail,
    flow_peak,
    midpoint_frame,
    motion_smoothness,
)
from vidmem.metrics.clip_quality.protocol import PROTOCOL

__all__ = [
    "METRICS",
    "MIN_CLIPS",
    "PROTOCOL",
    "ClipQuality",
    "DynamicDegree",
    "Embed",
    "Flow",
    "Spearman",
    "as_clip",
    "background_consistency",
    "backward_warp",
    "clip_quality",
    "consistency_of",
    "dynamic_degree",
    "dynamic_degree_detail",
    "embedding_consistency",
    "flow_peak",
    "frame_differences",
    "midpoint_frame",
    "motion_smoothness",
    "spearman_with_recall",
    "subject_consistency",
    "temporal_flickering",
]
