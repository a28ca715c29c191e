"""``seg_dino_key``: the top 5 past segments, 3 diverse 2 fps keyframes from each.

Keyframes are chosen per segment by greedy farthest-point selection on the cosine of
image embeddings (DINO in the reference) over the segment's 2 fps frames; they depend
only on the segment, so they are chosen once, when the segment is observed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vidmem.memory.frames import Segment
from vidmem.memory.policies._common import (
    SEGMENT_RANKING,
    BuiltinPolicy,
    check_budget,
    check_count,
    check_embedder,
    check_fps,
    frame_refs,
    rank_segments,
)
from vidmem.memory.policy import FilmContext, Reference
from vidmem.memory.ranking import farthest_point, segment_frame_score
from vidmem.memory.store import FramePool, MemoryStore
from vidmem.models.protocols import ImageEmbedder, TextEmbedder

__all__ = ["PROTOCOL", "SegDinoKeyPolicy"]

#: Rules of this policy, for run.json (reference: retrieval_baselines.py SegDinoKeyRetriever
#: and MemoryRetrievalStore.keyframes_for_segment).
PROTOCOL: dict[str, str] = {
    "seg_dino_key.segments": SEGMENT_RANKING + "; n = 5",
    "seg_dino_key.candidates": "each kept segment's frames on the 2 fps grid (reference dense_fps = 2)",
    "seg_dino_key.keyframes": "3 per segment by greedy farthest-point on keyframe-embedding cosine: "
                              "start at the segment's earliest 2 fps frame, add the frame whose "
                              "highest cosine to the chosen ones is lowest (ties: earliest); a "
                              "segment with <= 3 such frames gives them all; chosen frames are "
                              "put in time order (reference keyframes_for_segment)",
    "seg_dino_key.score": "segment cosine - 1e-6 * (segment rank + keyframe rank in time order), "
                          "sorted descending, ties keep that order (reference SegDinoKeyRetriever)",
}


class SegDinoKeyPolicy(BuiltinPolicy):
    """The best past segments' most diverse keyframes.

    Args:
        segment_text_embedder: embeds the instruction (as a query) and segment texts.
        keyframe_embedder: image embedder of the diversity space (DINO).
        top_segments: how many segments to keep (5).
        keyframes_per_segment: keyframes chosen per segment (3).
        fps: the candidate grid (2).
    """

    name = "seg_dino_key"
    PROTOCOL = PROTOCOL

    def __init__(self, *, segment_text_embedder: TextEmbedder, keyframe_embedder: ImageEmbedder,
                 top_segments: int = 5, keyframes_per_segment: int = 3, fps: float = 2.0) -> None:
        super().__init__()
        self.text = check_embedder(segment_text_embedder, "segment_text_embedder", "embed_texts",
                                   self.name)
        self.keys = check_embedder(keyframe_embedder, "keyframe_embedder", "embed_images", self.name)
        self.top_segments = check_count(top_segments, "top_segments", self.name)
        self.per_segment = check_count(keyframes_per_segment, "keyframes_per_segment", self.name)
        self.fps = check_fps(fps, self.name)
        self._params = {"top_segments": self.top_segments,
                        "keyframes_per_segment": self.per_segment, "fps": self.fps}
        self._backends = {"segment_text_embedder": self.text, "keyframe_embedder": self.keys}
        self._needs = [(self.keys, self.fps)]
        self._chosen: dict[int, FramePool] = {}
        self._store: MemoryStore | None = None

    def reset(self, context: FilmContext) -> None:
        super().reset(context)
        self._chosen = {}
        self._store = None

    def keyframes(self, store: MemoryStore, segment_index: int) -> FramePool:
        """The chosen keyframes of one stored segment, in time order (cached per store)."""
        if store is not self._store:
            self._store, self._chosen = store, {}
        found = self._chosen.get(segment_index)
        if found is None:
            pool = store.pool(self.fps, segment_index=segment_index)
            if len(pool) > self.per_segment:
                picked = farthest_point(store.image_embeddings(self.keys, pool), self.per_segment)
                pool = pool.take(np.sort(np.asarray(picked, dtype=np.int64)))
            found = self._chosen[segment_index] = pool
        return found

    def observe(self, segment: Segment, store: MemoryStore) -> None:
        super().observe(segment, store)
        self.keyframes(store, segment.index)

    def compose(self, instruction: str, segment_start: float, budget: int,
                store: MemoryStore) -> list[Reference]:
        budget = check_budget(budget, self.name)
        if budget == 0:
            return []
        ranked = rank_segments(store, self.text, instruction, before=segment_start,
                               top=self.top_segments)
        refs: list[Reference] = []
        for seg_rank, (segment, seg_score) in enumerate(ranked, start=1):
            pool = self.keyframes(store, segment.index)
            ranks = range(1, len(pool) + 1)
            infos: list[dict[str, Any]] = [
                {"segment_rank": seg_rank, "keyframe_rank": f, "segment_score": seg_score}
                for f in ranks]
            refs += frame_refs(pool.seconds, pool.segment_index,
                               [segment_frame_score(seg_score, seg_rank, f) for f in ranks], infos)
        refs.sort(key=lambda r: r.score, reverse=True)  # stable: ties keep segment order
        return refs[:budget]
