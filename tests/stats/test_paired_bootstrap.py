"""Paired story-clustered bootstrap against a plain-Python loop and closed-form cases."""

from __future__ import annotations

import numpy as np
import pytest

from vidmem.errors import UserInputError
from vidmem.metrics.track_b import (
    EntryVerdict,
    SegmentVerdict,
    parsed_in_both,
    pooled_rates,
    story_counts,
)
from vidmem.stats.paired_bootstrap import (
    DEFAULT_SEED,
    PROTOCOL,
    multiplicities,
    paired_story_bootstrap,
)


def random_arms(n_stories=12, seed=3):
    rng = np.random.default_rng(seed)
    a, b = {}, {}
    for i in range(n_stories):
        den = rng.integers(5, 40, size=3)
        a[f"{i:04d}"] = np.stack([rng.integers(0, den + 1), den], axis=1)
        den = rng.integers(5, 40, size=3)
        b[f"{i:04d}"] = np.stack([rng.integers(0, den + 1), den], axis=1)
    return a, b


def slow_reference(arm_a, arm_b, n_resamples, seed, confidence=0.95):
    """The bootstrap written as plain loops over stories, from the same rng draws."""
    stories = sorted(arm_a)
    s = len(stories)
    index = np.random.default_rng(seed).integers(0, s, size=(n_resamples, s))
    draws = []
    for row in index:
        diff = []
        for j in range(3):
            na = da = nb = db = 0
            for i in row:
                sid = stories[int(i)]
                na += int(arm_a[sid][j][0])
                da += int(arm_a[sid][j][1])
                nb += int(arm_b[sid][j][0])
                db += int(arm_b[sid][j][1])
            ra = na / da if da else float("nan")
            rb = nb / db if db else float("nan")
            diff.append(ra - rb)
        draws.append(diff)
    draws = np.array(draws)
    alpha = (1 - confidence) / 2
    lo, hi = [], []
    for j in range(3):
        col = draws[:, j][~np.isnan(draws[:, j])]
        lo.append(float(np.percentile(col, 100 * alpha)))
        hi.append(float(np.percentile(col, 100 * (1 - alpha))))
    return draws, lo, hi


def test_matches_slow_loop_draw_for_draw():
    a, b = random_arms()
    r = paired_story_bootstrap(a, b, n_resamples=300, seed=DEFAULT_SEED)
    draws, lo, hi = slow_reference(a, b, 300, DEFAULT_SEED)
    assert r.draws.shape == (300, 3)
    assert np.array_equal(r.draws, draws)  # exact: integer counts pooled in float64
    assert list(r.low) == lo and list(r.high) == hi
    # point estimate: all stories once
    tot_a = sum(a.values())
    tot_b = sum(b.values())
    for j in range(3):
        assert r.difference[j] == tot_a[j, 0] / tot_a[j, 1] - tot_b[j, 0] / tot_b[j, 1]
        assert r.rate_a[j] == tot_a[j, 0] / tot_a[j, 1]
    assert r.n_undefined == (0, 0, 0) and r.n_stories == 12 and r.seed == DEFAULT_SEED


def test_input_order_does_not_matter_and_seed_does():
    a, b = random_arms()
    r1 = paired_story_bootstrap(a, b, n_resamples=200)
    r2 = paired_story_bootstrap(dict(reversed(list(a.items()))), b, n_resamples=200)
    assert np.array_equal(r1.draws, r2.draws) and r1 == r2
    r3 = paired_story_bootstrap(a, b, n_resamples=200, seed=1)
    assert not np.array_equal(r1.draws, r3.draws)


def test_identical_arms_give_exact_zero_intervals():
    a, _ = random_arms()
    r = paired_story_bootstrap(a, {k: v.copy() for k, v in a.items()})
    assert r.difference == (0.0, 0.0, 0.0)
    assert r.low == (0.0, 0.0, 0.0) and r.high == (0.0, 0.0, 0.0)
    assert r.n_resamples == 2000 and r.confidence == 0.95


def _segments(story, n_segments, p_hit, rng):
    """A story whose segments each require one prop, judged present with prob. p_hit."""
    return [SegmentVerdict(story, i, True, [
        EntryVerdict(story, i, "A", "prop", "required", bool(rng.random() < p_hit),
                     op="recall", gap=1)]) for i in range(1, n_segments + 1)]


def test_stories_not_segments_are_resampled():
    # 30 stories x 60 segments; the arm effect differs a lot between stories
    # (+0.5 in half of them, -0.3 in the other half) but is homogeneous within a story.
    rng = np.random.default_rng(0)
    arm_a, arm_b = [], []
    for i in range(30):
        sid = f"{i:04d}"
        effect = 0.5 if i % 2 else -0.3
        arm_a += _segments(sid, 60, 0.4 + effect, rng)
        arm_b += _segments(sid, 60, 0.4, rng)
    story = paired_story_bootstrap(story_counts(arm_a), story_counts(arm_b))

    def per_segment(segs):  # every segment its own cluster
        return {f"{k}/{s.segment_id}": v for s in segs
                for k, v in story_counts([s]).items()}

    segment = paired_story_bootstrap(per_segment(arm_a), per_segment(arm_b))
    assert story.difference[0] == pytest.approx(segment.difference[0])
    w_story = story.high[0] - story.low[0]
    w_segment = segment.high[0] - segment.low[0]
    assert w_story > 2 * w_segment, (w_story, w_segment)
    # precision and avoid-ok: no forbidden entry anywhere -> every avoid-ok draw undefined
    assert story.n_undefined[2] == 2000 and story.low[2] is None
    assert story.difference[2] is None
    # the point estimates are the pooled rates
    pa, pb = pooled_rates(arm_a), pooled_rates(arm_b)
    assert story.rate_a[0] == pa.recall.value and story.rate_b[0] == pb.recall.value


def test_undefined_draws_are_counted_and_dropped():
    # avoid-ok is defined only in story "b": draws that miss "b" are undefined for it
    a = {"a": [[1, 2], [1, 1], [0, 0]], "b": [[2, 2], [2, 3], [1, 2]], "c": [[0, 1], [0, 1], [0, 0]]}
    b = {"a": [[0, 2], [0, 1], [0, 0]], "b": [[1, 2], [1, 1], [2, 2]], "c": [[1, 1], [1, 2], [0, 0]]}
    r = paired_story_bootstrap(a, b, n_resamples=400, seed=5)
    index = np.random.default_rng(5).integers(0, 3, size=(400, 3))
    misses_b = int(np.sum(~np.any(index == 1, axis=1)))
    assert 0 < misses_b < 400
    assert r.n_undefined == (0, 0, misses_b)
    assert np.isnan(r.draws[:, 2]).sum() == misses_b
    assert r.low[2] is not None and r.difference[2] == 0.5 - 1.0


def test_parsed_in_both_bootstrap():
    rng = np.random.default_rng(1)
    arm_a = _segments("s1", 10, 0.7, rng) + _segments("s2", 10, 0.7, rng)
    arm_b = _segments("s1", 10, 0.5, rng) + _segments("s2", 10, 0.5, rng)
    arm_a[3] = SegmentVerdict.unparsable("s1", 4, arm_a[3].entries)
    fa, fb = parsed_in_both(arm_a, arm_b)
    assert len(fa) == len(fb) == 19
    ca, cb = story_counts(fa), story_counts(fb)
    assert ca["s1"][0, 1] == cb["s1"][0, 1] == 9
    r = paired_story_bootstrap(ca, cb, n_resamples=100)
    assert r.n_stories == 2


def test_multiplicities_rows_sum_to_n():
    idx = np.random.default_rng(0).integers(0, 7, size=(50, 7))
    m = multiplicities(idx, 7)
    assert m.shape == (50, 7) and np.all(m.sum(axis=1) == 7)
    assert np.array_equal(m[3], np.bincount(idx[3], minlength=7))


def test_to_dict():
    a, b = random_arms(4)
    d = paired_story_bootstrap(a, b, n_resamples=50).to_dict()
    assert d["difference"] == "a - b" and set(d["rates"]) == {"recall", "precision", "avoid_ok"}
    assert set(d["rates"]["recall"]) == {"difference", "ci_low", "ci_high", "rate_a", "rate_b",
                                         "n_undefined"}


@pytest.mark.parametrize("arm_b, kw, match", [
    ({"x": [[1, 2], [1, 2], [1, 2]]}, {}, "same stories"),
    ({"s": [[1, 2], [1, 2]]}, {}, "shape"),
    ({"s": [[3, 2], [1, 2], [1, 2]]}, {}, "numerator <= denominator"),
    ({"s": [[-1, 2], [1, 2], [1, 2]]}, {}, "numerator <= denominator"),
    ({"s": [[1, 2], [1, 2], [1, 2]]}, {"confidence": 1.5}, "confidence"),
    ({"s": [[1, 2], [1, 2], [1, 2]]}, {"n_resamples": 0}, "n_resamples"),
    ({"s": [[1, 2], [1, 2], [1, 2]]}, {"seed": 1.5}, "seed"),
    ({"s": [[1, 2], [1, 2], [1, 2]]}, {"names": ("r", "p")}, "shape"),
])
def test_validation(arm_b, kw, match):
    with pytest.raises(UserInputError, match=match):
        paired_story_bootstrap({"s": [[1, 2], [1, 2], [1, 2]]}, arm_b, **kw)
    with pytest.raises(UserInputError, match="mapping"):
        paired_story_bootstrap([[1, 2]], {}, n_resamples=1)
    with pytest.raises(UserInputError, match="at least one story"):
        paired_story_bootstrap({}, {})


def test_protocol_entries_have_reason_and_source():
    for name, entry in PROTOCOL.items():
        assert set(entry) == {"rule", "reason", "source"}, name
