"""The causal guard: adversarial policies can never get a future frame through."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memory_fakes import SyntheticFilm

from vidmem.errors import UserInputError
from vidmem.memory.guard import DROP_REASONS, replay
from vidmem.memory.policy import FilmContext, Reference
from vidmem.memory.store import Segment

KINDS = ("past", "present", "future", "nan", "inf", "-inf", "bool_time", "str_time",
         "not_a_reference")
EXPECTED_REASON = {"present": "future", "future": "future", "nan": "bad_time",
                   "inf": "bad_time", "-inf": "bad_time", "bool_time": "bad_time",
                   "str_time": "bad_time", "not_a_reference": "not_a_reference"}


class Adversary:
    """Returns past, present, future and malformed items in an order hypothesis picks,
    and records the order of its calls."""

    name = "adversary"

    def __init__(self, data: st.DataObject, log: list) -> None:
        self.data = data
        self.log = log
        self.plans: dict[int, list[tuple[str, object]]] = {}

    def reset(self, context: FilmContext) -> None:
        self.log.append(("reset", context.film_id))

    def _item(self, kind: str, start: float) -> object:
        d = self.data
        if kind == "past":
            t = d.draw(st.floats(0, start, exclude_max=True)) if start > 0 else None
            return None if t is None else Reference(t, d.draw(st.floats(allow_nan=True)))
        if kind == "present":
            return Reference(start, 1.0)
        if kind == "future":
            return Reference(d.draw(st.floats(start, start + 1e6, exclude_min=True)), 1.0)
        if kind in ("nan", "inf", "-inf"):
            return Reference(float(kind), 1.0)
        if kind == "bool_time":
            return Reference(False, 1.0)  # type: ignore[arg-type]
        if kind == "str_time":
            return Reference("3.0", 1.0)  # type: ignore[arg-type]
        return d.draw(st.sampled_from([None, 3.0, "frame", {"source_seconds": 0.0}]))

    def compose(self, instruction, segment_start, budget, store):
        index = store.next_segment_index
        self.log.append(("compose", index))
        # The store holds nothing of this segment or later ones.
        assert all(s.index < index for s in store.segments)
        assert all(f.segment_index < index for f in store.frames)
        kinds = self.data.draw(st.lists(st.sampled_from(KINDS), max_size=24))
        plan = [(k, self._item(k, segment_start)) for k in kinds]
        plan = [(k, it) for k, it in plan if not (k == "past" and it is None)]
        self.plans[index] = plan
        return [it for _, it in plan]

    def observe(self, segment, store):
        self.log.append(("observe", segment.index))
        assert store.segments[-1] == segment


@st.composite
def films(draw):
    n = draw(st.integers(1, 7))
    t, segs = 0.0, []
    for i in range(n):
        t += draw(st.sampled_from([0.0, 0.5, 1.0, 3.0]))  # gaps between segments
        d = draw(st.sampled_from([0.0, 0.3, 1.0, 2.5, 4.0]))
        segs.append(Segment(i, t, t + d, f"text {i}"))
        t += d
    return segs


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(segments=films(), budget=st.integers(1, 16), data=st.data())
def test_every_future_item_is_dropped_and_counted_and_no_past_one_lost(segments, budget, data):
    log: list = []
    film = SyntheticFilm("adversarial", log=log)
    policy = Adversary(data, log)
    results = replay(policy, segments, film, budget)

    # compose(n) strictly before the store observes n, then the policy's observe.
    expected = [("reset", "adversarial")]
    for s in segments:
        expected += [("compose", s.index), ("source", s.index), ("observe", s.index)]
    assert log == expected

    for seg, res in zip(segments, results, strict=True):
        plan = policy.plans[seg.index]
        past = [it for k, it in plan if k == "past"]
        assert res.references == tuple(past[:budget])  # in the policy's order, none lost
        assert res.truncated == max(0, len(past) - budget)
        want = {r: sum(EXPECTED_REASON.get(k) == r for k, _ in plan) for r in DROP_REASONS}
        assert dict(res.dropped_by_reason) == want
        assert res.dropped == len(plan) - len(past) == sum(want.values())
        assert res.returned == len(plan)
        assert all(math.isfinite(r.source_seconds) and r.source_seconds < seg.start_seconds
                   for r in res.references)
        for k in range(1, budget + 1):
            assert res.at_budget(k) == res.references[:k]


def test_budget_and_segment_order_are_checked():
    film = SyntheticFilm()
    segs = [Segment(0, 0.0, 2.0), Segment(1, 2.0, 4.0)]

    class Empty:
        name = "empty"

        def reset(self, context): ...
        def compose(self, *a): return []
        def observe(self, *a): ...

    for bad in (0, -1, 2.5, True, "16"):
        with pytest.raises(UserInputError, match="budget must be an int >= 1"):
            replay(Empty(), segs, film, bad)
    with pytest.raises(UserInputError, match="follows segment"):
        replay(Empty(), segs[::-1], film, 4)
    res = replay(Empty(), segs, film, 4)
    with pytest.raises(UserInputError, match="1..4"):
        res[0].at_budget(5)


def test_a_compose_that_returns_no_list_is_an_error():
    class Bad:
        name = "bad"

        def reset(self, context): ...
        def compose(self, *a): return None
        def observe(self, *a): ...

    with pytest.raises(UserInputError, match="policy bad returned a NoneType for segment 0"):
        replay(Bad(), [Segment(0, 0.0, 1.0)], SyntheticFilm(), 3)
