"""``text_frame``: rank every past frame by text-to-image similarity to the instruction.

Cross-modal: the instruction goes through the text tower and the frames through the
image tower of one joint embedding space (SigLIP 2 in the reference), so
``frame_text_embedder`` and ``frame_image_embedder`` must come from the same model.
"""

from __future__ import annotations

from vidmem.memory.policies._common import (
    BuiltinPolicy,
    check_budget,
    check_embedder,
    check_fps,
    frame_refs,
)
from vidmem.memory.policy import Reference
from vidmem.memory.ranking import stable_order
from vidmem.memory.store import MemoryStore
from vidmem.models.protocols import ImageEmbedder, TextEmbedder

__all__ = ["PROTOCOL", "TextFramePolicy"]

#: Rules of this policy, for run.json (reference: retrieval_baselines.py FrameTextRetriever).
PROTOCOL: dict[str, str] = {
    "text_frame.pool": "every eligible frame on the 1 fps grid (card: 1 fps; reference "
                       "FrameTextRetriever samples uniform_fps = 1 frames of every eligible segment)",
    "text_frame.score": "cosine(query embedding of the instruction from the frame model's text "
                        "tower, frame image embedding) (reference rank_frames_text)",
    "text_frame.order": "descending score; equal scores keep time order (reference: stable sort)",
}


class TextFramePolicy(BuiltinPolicy):
    """Past frames ranked by text-to-image cosine.

    Args:
        frame_text_embedder: text tower of the joint text-image space.
        frame_image_embedder: image tower of the same space.
        fps: the frame grid searched (1, as the protocol says).
    """

    name = "text_frame"
    PROTOCOL = PROTOCOL

    def __init__(self, *, frame_text_embedder: TextEmbedder,
                 frame_image_embedder: ImageEmbedder, fps: float = 1.0) -> None:
        super().__init__()
        self.text = check_embedder(frame_text_embedder, "frame_text_embedder", "embed_texts", self.name)
        self.image = check_embedder(frame_image_embedder, "frame_image_embedder", "embed_images",
                                    self.name)
        self.fps = check_fps(fps, self.name)
        self._params = {"fps": self.fps}
        self._backends = {"frame_text_embedder": self.text, "frame_image_embedder": self.image}
        self._needs = [(self.image, self.fps)]

    def compose(self, instruction: str, segment_start: float, budget: int,
                store: MemoryStore) -> list[Reference]:
        budget = check_budget(budget, self.name)
        pool = store.pool(self.fps, before=segment_start)
        if budget == 0 or len(pool) == 0:
            return []
        query = store.query_embeddings(self.text, [instruction])[0]
        scores = store.image_scores(self.image, pool, query)
        top = stable_order(scores)[:budget]
        return frame_refs(pool.seconds[top], pool.segment_index[top], scores[top],
                          [{"rank": r} for r in range(1, len(top) + 1)])

