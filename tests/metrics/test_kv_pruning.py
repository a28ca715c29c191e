"""KV pruning ratio, FPS and speedup against hand-computed answers; KV-log validation."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from vidmem.metrics.kv_log import KVLog, parse_kv_log
from vidmem.metrics.kv_pruning import (
    KVLogError,
    KVRow,
    fps,
    mean_pruning_ratio,
    pooled_pruning_ratio,
    pruning_ratio,
    speedup,
)


def kv(task: str, chunk: int, layer: int, head: int | None, vis: int, full: int, current=False):
    row = {"task_id": task, "chunk": chunk, "layer": layer, "k_visible": vis, "k_full": full}
    if head is not None:
        row["head"] = head
    row["current"] = current
    return row


def timing(task: str, seconds: float, frames: int, prefix: float | None = None) -> dict:
    row = {
        "task_id": task,
        "event": "timing",
        "continuation_seconds": seconds,
        "continuation_frames": frames,
    }
    if prefix is not None:
        row["context_prefix_seconds"] = prefix
    return row


# One task, 2 historical chunks x 2 layers x 2 heads, plus the current chunk 2.
#   chunk 0: L0H0 10/16, L0H1 0/16 (sees nothing), L1H0 16/16, L1H1 6/16 -> 32 / 64
#   chunk 1: L0H0 20/32, L0H1 12/32,               L1H0 32/32, L1H1 8/32 -> 72 / 128
#   chunk 2 (current, excluded): 40/48 in every head
# PR = 1 - (32 + 72) / (64 + 128) = 1 - 104/192 = 88/192 = 11/24
ONE_TASK = [
    kv("t", 0, 0, 0, 10, 16),
    kv("t", 0, 0, 1, 0, 16),
    kv("t", 0, 1, 0, 16, 16),
    kv("t", 0, 1, 1, 6, 16),
    kv("t", 1, 0, 0, 20, 32),
    kv("t", 1, 0, 1, 12, 32),
    kv("t", 1, 1, 0, 32, 32),
    kv("t", 1, 1, 1, 8, 32),
    *(kv("t", 2, layer, head, 40, 48, current=True) for layer in (0, 1) for head in (0, 1)),
]


def test_one_task_hand_computed():
    log = parse_kv_log(ONE_TASK)
    assert log.pruning_ratios() == {"t": pytest.approx(float(Fraction(11, 24)), abs=1e-15)}
    vis = [r["k_visible"] for r in ONE_TASK]
    full = [r["k_full"] for r in ONE_TASK]
    cur = [r["current"] for r in ONE_TASK]
    assert pruning_ratio(vis, full, cur) == pytest.approx(11 / 24, abs=1e-15)
    # Including the current chunk would give 1 - (104 + 160) / (192 + 192) = 120/384.
    assert pruning_ratio(vis, full) == pytest.approx(120 / 384, abs=1e-15)


def test_a_head_that_sees_nothing_counts_fully():
    # Dropping the blind head's row (0 of 16) would give 1 - 104/176, not 1 - 104/192.
    without_blind = [
        r for r in ONE_TASK if not (r["chunk"] == 0 and r.get("head") == 1 and r["layer"] == 0)
    ]
    assert parse_kv_log(without_blind).pruning_ratios()["t"] == pytest.approx(72 / 176)
    assert parse_kv_log(ONE_TASK).pruning_ratios()["t"] == pytest.approx(88 / 192)


def test_two_tasks_mean_of_ratios_differs_from_pooled():
    # small: sees 0 of 10 -> PR 1.0 ; large: sees 900 of 1000 -> PR 0.1
    rows = [kv("small", 1, 0, None, 0, 10), kv("large", 1, 0, None, 900, 1000)]
    log = parse_kv_log(rows)
    per_task = log.pruning_ratios()
    assert per_task == {"small": 1.0, "large": pytest.approx(0.1)}
    assert mean_pruning_ratio(per_task) == pytest.approx(0.55)  # (1.0 + 0.1) / 2
    assert log.mean_pruning_ratio() == pytest.approx(0.55)
    # pooled: 1 - 900 / 1010 = 110 / 1010 = 11 / 101
    assert pooled_pruning_ratio(log.rows) == pytest.approx(11 / 101)
    assert log.pooled_pruning_ratio() == pytest.approx(11 / 101)


def test_per_layer_rows_are_sums_over_heads():
    per_head = [kv("t", 1, 0, h, v, 8) for h, v in enumerate([2, 4, 6, 8])]
    per_layer = [kv("t", 1, 0, None, 20, 32)]
    assert parse_kv_log(per_head).pruning_ratios() == parse_kv_log(per_layer).pruning_ratios()
    assert parse_kv_log(per_layer).pruning_ratios()["t"] == pytest.approx(12 / 32)


def test_undefined_ratios_are_none_and_left_out_of_the_mean():
    all_current = [kv("t", 0, 0, 0, 5, 5, current=True), kv("t", 0, 0, 1, 3, 5, current=True)]
    assert parse_kv_log(all_current).pruning_ratios() == {"t": None}
    assert pruning_ratio([5, 3], [5, 5], [True, True]) is None
    assert pruning_ratio([], [], []) is None
    assert pruning_ratio([0], [0]) is None  # no history at all
    assert mean_pruning_ratio({"t": None}) is None
    assert mean_pruning_ratio({}) is None
    assert mean_pruning_ratio({"a": 0.5, "b": None, "c": 0.25}) == pytest.approx(0.375)
    assert pooled_pruning_ratio([]) is None


def test_historical_and_current_rows_may_share_chunk_layer_head():
    rows = [kv("t", 3, 0, 0, 6, 8), kv("t", 3, 0, 0, 4, 4, current=True)]
    assert parse_kv_log(rows).pruning_ratios() == {"t": 0.25}


def test_fps_and_speedup():
    assert fps(120, 4.0) == 30.0
    assert fps(0, 2.0) == 0.0
    assert fps(120, 0) is None
    assert fps(None, 4.0) is None and fps(120, None) is None
    assert speedup(60.0, 30.0) == 2.0
    assert speedup(60.0, 0.0) is None
    assert speedup(None, 30.0) is None and speedup(60.0, None) is None
    assert speedup(0.0, 30.0) == 0.0
    with pytest.raises(ValueError, match="frames must be >= 0"):
        fps(-1, 2.0)
    with pytest.raises(ValueError, match="seconds must be >= 0"):
        fps(10, -2.0)
    with pytest.raises(ValueError, match="frames must be an int"):
        fps(True, 2.0)
    with pytest.raises(ValueError, match="fps_run must be >= 0"):
        speedup(-1.0, 2.0)


def test_log_fps_pools_frames_and_seconds_on_chosen_tasks():
    run = parse_kv_log([timing("a", 2.0, 40, prefix=30.0), timing("b", 6.0, 80)])
    base = parse_kv_log([timing("a", 4.0, 40), timing("b", 12.0, 80), timing("c", 1.0, 5)])
    assert run.fps() == 15.0  # (40 + 80) / (2 + 6); the prefix is not counted
    assert run.fps_by_task() == {"a": 20.0, "b": pytest.approx(80 / 6)}
    assert run.timings["a"].context_prefix_seconds == 30.0
    common = [t for t in base.task_ids if t in run.timings]
    assert common == ["a", "b"]
    assert speedup(run.fps(common), base.fps(common)) == pytest.approx(2.0)
    with pytest.raises(KeyError, match="no timing row for task"):
        run.fps(["c"])
    assert parse_kv_log([timing("z", 0.0, 10)]).fps() is None


def test_task_ids_and_rows_for():
    log = parse_kv_log([kv("b", 0, 0, None, 1, 2), kv("a", 0, 0, None, 1, 2), timing("c", 1, 1)])
    assert log.task_ids == ("b", "a", "c")
    assert [r.task_id for r in log.rows_for("a")] == ["a"]
    assert isinstance(log, KVLog) and log.rows[0] == KVRow("b", 0, 0, None, 1, 2, False, 1)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("row", "field", "message"),
    [
        (kv("t", 0, 0, 0, -1, 8), "k_visible", "expected an int >= 0, found -1"),
        (kv("t", 0, 0, 0, 1, -8), "k_full", "expected an int >= 0, found -8"),
        (kv("t", 0, 0, 0, 9, 8), "k_visible", "9 > k_full = 8"),
        (kv("t", -1, 0, 0, 1, 8), "chunk", "expected an int >= 0"),
        (kv("t", 0, 0, -2, 1, 8), "head", "expected an int >= 0"),
        ({**kv("t", 0, 0, 0, 1, 8), "chunk": True}, "chunk", "found True"),
        ({**kv("t", 0, 0, 0, 1, 8), "k_full": 8.0}, "k_full", "found 8.0"),
        ({**kv("t", 0, 0, 0, 1, 8), "current": 0}, "current", "expected true or false"),
        ({**kv("t", 0, 0, 0, 1, 8), "task_id": ""}, "task_id", "non-empty string"),
        ({k: v for k, v in kv("t", 0, 0, 0, 1, 8).items() if k != "current"}, "current", "missing"),
        ({k: v for k, v in kv("t", 0, 0, 0, 1, 8).items() if k != "layer"}, "layer", "missing"),
        (
            {k: v for k, v in timing("t", 1.0, 4).items() if k != "continuation_frames"},
            "continuation_frames",
            "missing",
        ),
        (timing("t", -1.0, 4), "continuation_seconds", "finite number >= 0"),
        (timing("t", 1.0, 4, prefix=float("nan")), "context_prefix_seconds", "finite"),
        ({**timing("t", 1.0, 4), "event": "memory"}, "event", "expected one of ['timing']"),
    ],
)
def test_bad_row_names_line_and_field(row, field, message):
    good = kv("t", 5, 0, 0, 1, 2)
    with pytest.raises(KVLogError) as err:
        parse_kv_log([good, row], source="run/kv.jsonl")
    text = str(err.value)
    assert text.startswith("run/kv.jsonl: 1 problem(s)")
    assert "line 2" in text and f"field '{field}'" in text and message in text
    assert err.value.problems[0].startswith("line 2")


def test_duplicates_and_mixed_granularity_name_both_lines():
    with pytest.raises(KVLogError) as err:
        parse_kv_log([kv("t", 0, 1, 2, 1, 8), kv("u", 0, 1, 2, 1, 8), kv("t", 0, 1, 2, 3, 8)])
    assert "line 3 (task 't'): field 'head': duplicate row for chunk 0, layer 1, head 2" in str(
        err.value
    )
    assert "first on line 1" in str(err.value)
    with pytest.raises(KVLogError, match=r"line 2 .*mixes a per-layer row .*line 1"):
        parse_kv_log([kv("t", 0, 1, None, 1, 8), kv("t", 0, 1, 0, 1, 8)])
    with pytest.raises(
        KVLogError, match=r"second timing row for this task \(the first is on line 1"
    ):
        parse_kv_log([timing("t", 1.0, 4), timing("t", 2.0, 4)])


def test_all_problems_reported_at_once_with_file_line_numbers():
    rows = [
        (2, kv("t", 0, 0, 0, -1, 8)),
        (5, {**kv("t", 0, 0, 1, 3, 2), "chunk": "0"}),
        (9, ["not", "an", "object"]),
    ]
    with pytest.raises(KVLogError) as err:
        parse_kv_log(rows)
    problems = err.value.problems
    assert len(problems) == 3
    assert problems[0].startswith("line 2 (task 't'): field 'k_visible'")
    assert problems[1].startswith("line 5 (task 't'): field 'chunk'")
    assert problems[2] == "line 9: expected a JSON object, found list"


def test_long_problem_lists_are_cut():
    rows = [kv("t", i, 0, None, -1, 1) for i in range(25)]
    with pytest.raises(KVLogError) as err:
        parse_kv_log(rows)
    assert "25 problem(s)" in str(err.value) and "... and 5 more" in str(err.value)
    assert len(err.value.problems) == 25


def test_unknown_fields_are_ignored():
    log = parse_kv_log([{**kv("t", 1, 0, 0, 3, 4), "step": 7, "note": "x"}])
    assert log.pruning_ratios() == {"t": 0.25}


def test_pruning_ratio_rejects_bad_arrays():
    with pytest.raises(ValueError, match="k_visible has 2 rows but k_full has 1"):
        pruning_ratio([1, 2], [3])
    with pytest.raises(ValueError, match="integer counts"):
        pruning_ratio([1.5], [3])
    with pytest.raises(ValueError, match=r"row 1: k_visible = 4 > k_full = 3"):
        pruning_ratio([1, 4], [3, 3])
    with pytest.raises(ValueError, match=r"k_full\[0\] = -3"):
        pruning_ratio([0], [-3])
    with pytest.raises(ValueError, match="one flag per row"):
        pruning_ratio([1], [3], [True, False])
    with pytest.raises(ValueError, match="must lie in"):
        mean_pruning_ratio({"a": 1.5})
    assert pruning_ratio(np.array([1, 2]), np.array([4, 4]), np.array([False, False])) == 0.625
