"""``seg_uniform``: the top 5 past segments by text similarity, all their 1 fps frames."""

from __future__ import annotations

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
from vidmem.memory.policy import Reference
from vidmem.memory.ranking import segment_frame_score
from vidmem.memory.store import MemoryStore
from vidmem.models.protocols import TextEmbedder

__all__ = ["PROTOCOL", "SegUniformPolicy"]

#: Rules of this policy, for run.json (reference: retrieval_baselines.py SegUniformRetriever).
PROTOCOL: dict[str, str] = {
    "seg_uniform.segments": SEGMENT_RANKING + "; n = 5",
    "seg_uniform.frames": "each kept segment's frames on the 1 fps grid, in time order",
    "seg_uniform.score": "segment cosine - 1e-6 * (segment rank + frame rank), ranks from 1, "
                         "sorted descending, ties keep that order (reference SegUniformRetriever)",
}


class SegUniformPolicy(BuiltinPolicy):
    """The best past segments' uniformly sampled frames, segment by segment.

    Args:
        segment_text_embedder: embeds the instruction (as a query) and segment texts.
        top_segments: how many segments to keep (5).
        fps: the frame grid returned (1).
    """

    name = "seg_uniform"
    PROTOCOL = PROTOCOL

    def __init__(self, *, segment_text_embedder: TextEmbedder, top_segments: int = 5,
                 fps: float = 1.0) -> None:
        super().__init__()
        self.text = check_embedder(segment_text_embedder, "segment_text_embedder", "embed_texts",
                                   self.name)
        self.top_segments = check_count(top_segments, "top_segments", self.name)
        self.fps = check_fps(fps, self.name)
        self._params = {"top_segments": self.top_segments, "fps": self.fps}
        self._backends = {"segment_text_embedder": self.text}

    def compose(self, instruction: str, segment_start: float, budget: int,
                store: MemoryStore) -> list[Reference]:
        budget = check_budget(budget, self.name)
        if budget == 0:
            return []
        ranked = rank_segments(store, self.text, instruction, before=segment_start,
                               top=self.top_segments)
        refs: list[Reference] = []
        for seg_rank, (segment, seg_score) in enumerate(ranked, start=1):
            pool = store.pool(self.fps, segment_index=segment.index, before=segment_start)
            ranks = range(1, len(pool) + 1)
            refs += frame_refs(
                pool.seconds, pool.segment_index,
                [segment_frame_score(seg_score, seg_rank, f) for f in ranks],
                [{"segment_rank": seg_rank, "frame_rank": f, "segment_score": seg_score}
                 for f in ranks])
        refs.sort(key=lambda r: r.score, reverse=True)  # stable: ties keep segment order
        return refs[:budget]
