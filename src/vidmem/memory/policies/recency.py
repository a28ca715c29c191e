"""``recency`` (control): the most recent past frames, latest first."""

from __future__ import annotations

from vidmem.memory.policies._common import BuiltinPolicy, check_budget, check_fps, frame_refs
from vidmem.memory.policy import Reference
from vidmem.memory.ranking import stable_order
from vidmem.memory.store import MemoryStore

__all__ = ["PROTOCOL", "RecencyPolicy"]

#: Rules of this policy, for run.json (reference: retrieval_baselines.py RecencyRetriever).
PROTOCOL: dict[str, str] = {
    "recency.pool": "every eligible frame on the 1 fps grid (reference uniform_fps = 1)",
    "recency.order": "by source time, latest first; score 1 / rank (reference RecencyRetriever)",
}


class RecencyPolicy(BuiltinPolicy):
    """The latest past frames.

    Args:
        fps: the frame grid (1).
    """

    name = "recency"
    PROTOCOL = PROTOCOL

    def __init__(self, *, fps: float = 1.0) -> None:
        super().__init__()
        self.fps = check_fps(fps, self.name)
        self._params = {"fps": self.fps}

    def compose(self, instruction: str, segment_start: float, budget: int,
                store: MemoryStore) -> list[Reference]:
        del instruction  # a control: the text plays no part
        budget = check_budget(budget, self.name)
        pool = store.pool(self.fps, before=segment_start)
        top = stable_order(pool.seconds)[:budget]
        ranks = range(1, len(top) + 1)
        return frame_refs(pool.seconds[top], pool.segment_index[top], [1.0 / r for r in ranks],
                          [{"rank": r} for r in ranks])
