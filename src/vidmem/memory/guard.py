"""The causal guard: replay a policy over a film so that it can only retrieve the past.

For each segment n, in time order, :func:`replay`

1. asks ``policy.compose(g_n, start_n, budget, store)`` while the store holds only
   segments before n (the store has not seen n yet);
2. drops, and counts by reason, every returned item that is not a
   :class:`~vidmem.memory.policy.Reference`, has no finite source time, or lies at
   or after ``start_n``, whatever the policy claims;
3. keeps the first ``budget`` of the rest, in the policy's order;
4. only then lets the store observe segment n, and calls ``policy.observe``.

The budget sweep K = 1..16 is a truncation of one ranking per (policy, segment):
replay once with ``budget = 16`` and read :meth:`SegmentResult.at_budget`.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from vidmem.errors import UserInputError
from vidmem.memory.frames import FrameSource, Segment
from vidmem.memory.policy import FilmContext, Policy, Reference
from vidmem.memory.store import MemoryStore
from vidmem.values import is_int_like, is_number_like

__all__ = ["DROP_REASONS", "PROTOCOL", "SegmentResult", "prepare", "replay"]

#: Why a returned item was dropped.
DROP_REASONS = ("future", "not_a_reference", "bad_time")

#: The guard's rules, for run.json.
PROTOCOL: dict[str, str] = {
    "guard.order": "per segment n: compose(g_n) while the store holds segments < n, then the "
                   "store observes n, then policy.observe (reference runner.py run_movie: "
                   "compose before observe_segment)",
    "guard.future": "a reference with source time >= segment n's start is dropped and counted "
                    "('future'; the segment's own start counts as future) (reference "
                    "frame_materializer.py: seconds >= cur_t0 dropped, n_future_dropped)",
    "guard.invalid": "an item that is not a Reference ('not_a_reference') or whose time is not a "
                     "finite number ('bad_time') is dropped and counted; the reference skips "
                     "items without a time silently",
    "guard.budget": "after the drops, the first `budget` references in the policy's list order are "
                    "kept; the reference runner cuts to B (score-sorted) before its materializer "
                    "drops future items, so there a future item costs a slot",
    "guard.sweep": "compose is called once per segment with budget = max K = 16; K = 1..16 are "
                   "prefixes of that ranking (card: truncate each policy's own ranking)",
    "guard.ranking": "the list order is the ranking; scores are not re-sorted (the reference "
                     "runner re-sorts by score, stably: the same order for the built-ins)",
    "guard.duplicates": "a frame returned twice is kept twice (the policy's choice)",
}


@dataclass(frozen=True)
class SegmentResult:
    """What the guard kept of one segment's composition.

    Attributes:
        segment_index: the composed segment.
        segment_start: its start, seconds.
        references: the kept references, best first, at most ``budget``.
        budget: the budget compose was called with.
        returned: how many items the policy returned.
        dropped: how many of them the guard dropped.
        dropped_by_reason: ``reason -> count`` over :data:`DROP_REASONS` (zeros kept).
        truncated: valid references beyond the budget (not counted as dropped).
        compose_seconds: wall time of compose, seconds.
        observe_seconds: wall time of observing the segment (store + policy), seconds.
    """

    segment_index: int
    segment_start: float
    references: tuple[Reference, ...]
    budget: int
    returned: int
    dropped: int
    dropped_by_reason: Mapping[str, int] = field(default_factory=dict, hash=False)
    truncated: int = 0
    compose_seconds: float = 0.0
    observe_seconds: float = 0.0

    def at_budget(self, k: int) -> tuple[Reference, ...]:
        """The references kept at budget ``k`` (``1 <= k <= budget``): a prefix."""
        if isinstance(k, bool) or not is_int_like(k) or not 1 <= k <= self.budget:
            raise UserInputError(
                f"segment {self.segment_index}: budget k must be an int in 1..{self.budget} "
                f"(the budget compose ran with), found {k!r}",
                hint="replay once with the largest budget of the sweep")
        return self.references[: int(k)]


def _why_dropped(item: object, start: float) -> str | None:
    if not isinstance(item, Reference):
        return "not_a_reference"
    t = item.source_seconds
    if isinstance(t, bool) or not is_number_like(t) or not math.isfinite(float(t)):
        return "bad_time"
    return "future" if float(t) >= start else None


def _check_segments(segments: Sequence[Segment]) -> list[Segment]:
    out = list(segments)
    for pos, seg in enumerate(out):
        if not isinstance(seg, Segment):
            raise UserInputError(f"replay: segments[{pos}] is a {type(seg).__name__}, not a Segment",
                                 hint="build vidmem.memory.store.Segment(index, start, end, text)")
        if pos and (seg.index <= out[pos - 1].index
                    or seg.start_seconds < out[pos - 1].start_seconds):
            raise UserInputError(
                f"replay: segment {seg.index} (start {seg.start_seconds} s) follows segment "
                f"{out[pos - 1].index} (start {out[pos - 1].start_seconds} s)",
                hint="give segments in time order with increasing indices")
    return out


def prepare(store_source: FrameSource, policies: Iterable[Policy]) -> None:
    """Tell a source that decodes (``FilmFrames``) every embedding the policies will need,
    so that replaying all of them decodes each segment once."""
    require = getattr(store_source, "require", None)
    for policy in policies:
        needs = getattr(policy, "needs", None)
        if callable(require) and callable(needs):
            for embedder, fps in needs():
                require(embedder, fps)


def replay(policy: Policy, segments: Sequence[Segment], store_source: FrameSource, budget: int,
           *, context: FilmContext | None = None) -> list[SegmentResult]:
    """Run ``policy`` over ``segments`` causally (see the module docstring).

    Args:
        policy: the policy; it is reset first.
        segments: the film's segments in time order (indices increasing).
        store_source: the film's frames and embedding cache; a fresh
            :class:`~vidmem.memory.store.MemoryStore` is built on it.
        budget: references kept per segment, ``>= 1`` (16 for the K sweep).
        context: what the policy is told at reset (default: the source's film id).

    Returns:
        One :class:`SegmentResult` per segment, in order.

    Raises:
        UserInputError: bad budget or segments, or compose returned something that is
            not a list of items.
    """
    if isinstance(budget, bool) or not is_int_like(budget) or budget < 1:
        raise UserInputError(f"replay: budget must be an int >= 1, found {budget!r}",
                             hint="use the largest budget of the sweep (16)")
    segments = _check_segments(segments)
    prepare(store_source, [policy])
    store = MemoryStore(store_source)
    name = getattr(policy, "name", type(policy).__name__)
    policy.reset(context if context is not None else FilmContext(store.film_id))
    results: list[SegmentResult] = []
    for seg in segments:
        store.next_segment_index = seg.index
        t0 = time.perf_counter()
        returned = policy.compose(seg.text, float(seg.start_seconds), int(budget), store)
        t1 = time.perf_counter()
        if returned is None or isinstance(returned, (str, bytes, Mapping)) or not isinstance(
                returned, Iterable):
            raise UserInputError(
                f"replay: policy {name} returned a {type(returned).__name__} for segment "
                f"{seg.index}, expected a list of Reference", hint="return [] when nothing fits")
        items = list(returned)
        reasons: Counter[str] = Counter({r: 0 for r in DROP_REASONS})
        valid: list[Reference] = []
        for item in items:
            why = _why_dropped(item, float(seg.start_seconds))
            if why is None:
                valid.append(item)  # type: ignore[arg-type]
            else:
                reasons[why] += 1
        t2 = time.perf_counter()
        store.observe(seg)  # only now is segment n revealed
        policy.observe(seg, store)
        t3 = time.perf_counter()
        results.append(SegmentResult(
            segment_index=seg.index, segment_start=float(seg.start_seconds),
            references=tuple(valid[:budget]), budget=int(budget), returned=len(items),
            dropped=len(items) - len(valid), dropped_by_reason=dict(reasons),
            truncated=max(0, len(valid) - budget), compose_seconds=t1 - t0,
            observe_seconds=t3 - t2))
    return results
