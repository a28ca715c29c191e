"""``seg_frame``: coarse-to-fine. The top 5 past segments' 1 fps frames, re-ranked by
text-to-image similarity, fused with the segment order by reciprocal-rank fusion.

Two rankings of the same candidates are fused (reference ``SegFrameRerankRetriever``
with the runner's ``_rrf_fuse_rankings``):

* coarse: every candidate, segment by segment (best segment first), each segment's
  frames in time order; a frame's rank is its position in that list;
* fine: the candidates by text-to-image cosine (ties in coarse order), cut after
  ``fine_depth x budget`` frames;

and each frame scores ``sum 1 / (k + rank)`` over the lists it is in, ``k = 60``.
"""

from __future__ import annotations

import numpy as np

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
from vidmem.memory.ranking import rrf_fuse, stable_order
from vidmem.memory.store import FramePool, MemoryStore
from vidmem.models.protocols import ImageEmbedder, TextEmbedder

__all__ = ["PROTOCOL", "SegFramePolicy"]

#: Rules of this policy, for run.json.
PROTOCOL: dict[str, str] = {
    "seg_frame.segments": SEGMENT_RANKING + "; n = 5",
    "seg_frame.candidates": "the kept segments' frames on the 1 fps grid (reference uniform_fps = 1)",
    "seg_frame.coarse": "candidates segment-major (best segment first), each segment's frames in "
                        "time order; rank = position from 1 (reference coarse_refs; the runner's "
                        "RRF reads list positions, not the 1/segment-rank score)",
    "seg_frame.fine": "candidates by cosine(frame-text query embedding of the instruction, frame "
                      "image embedding), ties in coarse order, cut after 4 x budget (reference "
                      "limit max(budget*4, budget)); with one composition per segment for the "
                      "K = 1..16 sweep the cut is 4 x 16 = 64 for every K",
    "seg_frame.fusion": "RRF: score = sum over the two lists of 1 / (60 + rank); frames identified "
                        "by source time in ms; descending, ties in first-seen (coarse) order "
                        "(reference runner.py _rrf_fuse_rankings, k = 60)",
}


class SegFramePolicy(BuiltinPolicy):
    """The best past segments' frames, the segment order fused with a frame re-ranking.

    Args:
        segment_text_embedder: embeds the instruction (as a query) and segment texts.
        frame_text_embedder: text tower of the joint text-image space.
        frame_image_embedder: image tower of the same space.
        top_segments: how many segments to keep (5).
        fps: the candidate grid (1).
        rrf_k: the fusion constant (60).
        fine_depth: the fine list keeps ``fine_depth x budget`` frames (4).
    """

    name = "seg_frame"
    PROTOCOL = PROTOCOL

    def __init__(self, *, segment_text_embedder: TextEmbedder, frame_text_embedder: TextEmbedder,
                 frame_image_embedder: ImageEmbedder, top_segments: int = 5, fps: float = 1.0,
                 rrf_k: int = 60, fine_depth: int = 4) -> None:
        super().__init__()
        self.text = check_embedder(segment_text_embedder, "segment_text_embedder", "embed_texts",
                                   self.name)
        self.frame_text = check_embedder(frame_text_embedder, "frame_text_embedder", "embed_texts",
                                         self.name)
        self.image = check_embedder(frame_image_embedder, "frame_image_embedder", "embed_images",
                                    self.name)
        self.top_segments = check_count(top_segments, "top_segments", self.name)
        self.fps = check_fps(fps, self.name)
        self.rrf_k = check_count(rrf_k, "rrf_k", self.name, low=0)
        self.fine_depth = check_count(fine_depth, "fine_depth", self.name)
        self._params = {"top_segments": self.top_segments, "fps": self.fps, "rrf_k": self.rrf_k,
                        "fine_depth": self.fine_depth}
        self._backends = {"segment_text_embedder": self.text,
                          "frame_text_embedder": self.frame_text,
                          "frame_image_embedder": self.image}
        self._needs = [(self.image, self.fps)]

    def compose(self, instruction: str, segment_start: float, budget: int,
                store: MemoryStore) -> list[Reference]:
        budget = check_budget(budget, self.name)
        if budget == 0:
            return []
        ranked = rank_segments(store, self.text, instruction, before=segment_start,
                               top=self.top_segments)
        pools = [store.pool(self.fps, segment_index=s.index, before=segment_start)
                 for s, _ in ranked]
        if not any(len(p) for p in pools):
            return []
        cand = FramePool(*(np.concatenate([getattr(p, a) for p in pools])
                           for a in ("ids", "seconds", "segment_index")))
        query = store.query_embeddings(self.frame_text, [instruction])[0]
        cosine = store.image_scores(self.image, cand, query)
        fine = stable_order(cosine)[: self.fine_depth * budget]
        coarse_rank = {int(i): r for r, i in enumerate(cand.ids, start=1)}
        fine_rank = {int(cand.ids[p]): r for r, p in enumerate(fine, start=1)}
        position = {int(i): p for p, i in enumerate(cand.ids)}
        # Store ids stand for source times here: one id per distinct ms time in a store.
        fused = rrf_fuse([list(coarse_rank), list(fine_rank)], k=self.rrf_k)[:budget]
        at = np.array([position[i] for i, _ in fused], dtype=np.int64)
        infos = [{"coarse_rank": coarse_rank[i], "fine_rank": fine_rank.get(i),
                  "cosine": float(cosine[position[i]])} for i, _ in fused]
        return frame_refs(cand.seconds[at], cand.segment_index[at], [s for _, s in fused], infos)
