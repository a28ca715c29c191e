"""Delayed-reveal gate arithmetic on hand-labelled judge readings."""

from __future__ import annotations

import pytest

from vidmem.metrics.mist_gates import REVEAL_POSITIONS, clip_gates, summarize_gates


def test_positions():
    assert REVEAL_POSITIONS == (0.90, 0.93, 0.95, 0.97, 0.99, 0.995)


@pytest.mark.parametrize(("reveal", "inside", "factor", "label"), [
    ([0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0], 0.0, "never_open"),          # lid stays down
    ([0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 1, 1], 1 / 3, "never_open"),        # opens too late
    ([0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 1], 0.5, "correct"),             # half: opened
    ([1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 0], 1.0, "open_but_wrong"),      # last frame wrong
    ([1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0], 1.0, "open_but_wrong"),
    ([1, None, 1, None, 1, None], [0, None, 0, None, 1, None], 1.0, "correct"),  # last readable
    ([True, True, False, True, True, True], [1] * 6, 5 / 6, "correct"),
])
def test_hand_labelled_classes(reveal, inside, factor, label):
    g = clip_gates(1.0, 0.0, reveal, inside)
    assert g.reveal == pytest.approx(factor) and g.label == label


def test_inside_is_reported_apart_from_the_class():
    g = clip_gates(0.9, 0.0, [1] * 6, [0, 0, 0, 0, 1, 1])
    assert g.inside == pytest.approx(1 / 3) and g.inside_last == 1.0 and g.label == "correct"
    assert g.setup == 0.9 and g.leak == 0.0 and g.n_readable == 6


def test_mapping_and_unreadable():
    g = clip_gates(1, 0, {0.99: 1, 0.995: 1}, {0.995: 1})
    assert g.n_readable == 2 and g.reveal == 1.0 and g.label == "correct"
    assert clip_gates(1, 0, [None] * 6, [1] * 6).label == "unscored"
    assert clip_gates(1, 0, [float("nan")] * 6, [1] * 6).opened is None


@pytest.mark.parametrize("bad", [[0.5] * 5, [1.5] * 6, ["yes"] * 6, {0.5: 1}])
def test_bad_readings_raise(bad):
    with pytest.raises(ValueError):
        clip_gates(1, 0, bad, [0] * 6)


def test_summary_counts_per_family_and_factors_apart():
    clips = [
        clip_gates(1.0, 0.0, [0] * 6, [0] * 6),              # R0 never_open
        clip_gates(0.8, 0.0, [1] * 6, [1] * 6),              # R0 correct
        clip_gates(1.0, 1.0, [1] * 6, [0] * 6),              # R1 open_but_wrong, leak
        clip_gates(0.6, 0.0, [0, 0, 0, 0, 0, 1], [0] * 6),   # R2 never_open
        clip_gates(None, None, [None] * 6, [None] * 6),      # R2 unscored
    ]
    s = summarize_gates(clips, ["R0", "R0", "R1", "R2", "R2"])
    assert s["n"] == 5 and s["n_unscored"] == 1 and s["n_leak"] == 1
    assert s["labels"] == {"never_open": 2, "open_but_wrong": 1, "correct": 1}
    assert s["setup"] == pytest.approx(0.85) and s["leak"] == pytest.approx(0.25)
    assert s["reveal"] == pytest.approx((0 + 1 + 1 + 1 / 6) / 4)
    assert s["inside"] == pytest.approx(0.25)
    assert "product" not in s and not any("product" in k for k in s)
    fam = s["by_family"]
    assert fam["R0"]["labels"] == {"never_open": 1, "open_but_wrong": 0, "correct": 1}
    assert fam["R1"]["labels"]["open_but_wrong"] == 1
    assert fam["R2"]["n"] == 2 and fam["R2"]["n_unscored"] == 1
    with pytest.raises(ValueError):
        summarize_gates(clips, ["R0"])
