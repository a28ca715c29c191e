"""``random`` (control): past frames in a seeded random order.

The draw for a segment depends only on the seed, the film id and the index of the
segment being composed (and on the causal pool, which those determine), so a run is
reproducible and the draw for one segment does not depend on which segments, films
or policies ran before it.
"""

from __future__ import annotations

import hashlib
import random

from vidmem.errors import UserInputError
from vidmem.memory.policies._common import BuiltinPolicy, check_budget, check_fps, frame_refs
from vidmem.memory.policy import Reference
from vidmem.memory.store import MemoryStore
from vidmem.values import is_int_like

__all__ = ["PROTOCOL", "RandomPolicy", "draw_seed"]

#: Rules of this policy, for run.json (reference: retrieval_baselines.py RandomRetriever).
PROTOCOL: dict[str, str] = {
    "random.pool": "every eligible frame on the 1 fps grid, in time order (reference uniform_fps = 1)",
    "random.draw": "random.Random(first 8 bytes, big-endian, of sha256('{seed}:{film_id}:"
                   "{segment_index}')).shuffle(pool); score 1 / rank. The reference hashes "
                   "'{seed}:{query}:{as_of_seconds}'; vidmem keys the draw by film and segment "
                   "index so that two films with the same prompt and start draw independently",
}


def draw_seed(seed: int, film_id: str, segment_index: int) -> int:
    """The 64-bit seed of one segment's draw.

    Example:
        >>> draw_seed(0, "spring", 3) == draw_seed(0, "spring", 3) != draw_seed(0, "spring", 4)
        True
    """
    material = f"{int(seed)}:{film_id}:{int(segment_index)}".encode()
    return int.from_bytes(hashlib.sha256(material).digest()[:8], "big")


class RandomPolicy(BuiltinPolicy):
    """Past frames in a seeded random order.

    Args:
        seed: the run's seed.
        fps: the frame grid (1).
    """

    name = "random"
    PROTOCOL = PROTOCOL

    def __init__(self, *, seed: int = 0, fps: float = 1.0) -> None:
        super().__init__()
        if isinstance(seed, bool) or not is_int_like(seed):
            raise UserInputError(f"random: seed must be an int, found {seed!r}")
        self.seed = int(seed)
        self.fps = check_fps(fps, self.name)
        self._params = {"seed": self.seed, "fps": self.fps}

    def compose(self, instruction: str, segment_start: float, budget: int,
                store: MemoryStore) -> list[Reference]:
        del instruction  # a control: the text plays no part
        budget = check_budget(budget, self.name)
        pool = store.pool(self.fps, before=segment_start)
        film = self.context.film_id if self.context is not None else store.film_id
        order = list(range(len(pool)))
        random.Random(draw_seed(self.seed, film, store.next_segment_index)).shuffle(order)
        top = order[:budget]
        ranks = range(1, len(top) + 1)
        return frame_refs(pool.seconds[top], pool.segment_index[top], [1.0 / r for r in ranks],
                          [{"rank": r} for r in ranks])
