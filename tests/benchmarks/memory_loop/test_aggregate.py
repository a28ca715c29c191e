"""Memory-loop aggregates on hand-made rows: extrapolation flags and camera coverage."""

from __future__ import annotations

import pytest

from vidmem.benchmarks.memory_loop.aggregate import group_summary


def _row(t_half, below, beyond, *, fid=0.8, camera="evaluable", cid="c"):
    official = t_half is not None
    return {"case_id": cid, "status": "scored", "sample_fidelity": fid,
            "half_life_status": "official" if official else "not_applicable",
            "half_life_check": None if official else "r2",
            "half_life_reason": None if official else "r2: low",
            "half_life_value": min(t_half / 60, 1) if official else None,
            "t_half_seconds": t_half, "t_half_beyond_gaps": beyond,
            "t_half_below_gaps": below, "diagnostic": False, "n_pairs": 24,
            "return_gate_passed": True, "camera_gate_status": camera,
            "camera_gate_reason": None if camera == "evaluable" else "near_static: still",
            "pair_gap_fidelity": []}


def test_fits_below_and_beyond_the_gaps_are_counted_and_left_out_of_the_vidmem_median():
    # Official t_half 2 (below its gaps), 20, 30 (inside), 90, 100 (beyond).
    rows = [_row(2.0, True, False), _row(20.0, False, False), _row(30.0, False, False),
            _row(90.0, False, True), _row(100.0, False, True), _row(None, None, None)]
    hl = group_summary(rows)["half_life"]
    assert hl["n_official"] == 5
    assert hl["median_t_half_seconds"] == 30.0  # the official median keeps all five
    assert (hl["n_below_gaps"], hl["n_beyond_gaps"]) == (1, 2)
    assert hl["median_t_half_within_gaps_seconds"] == 25.0  # median of 20 and 30
    # Rows scored before the below flag existed: no count and no median, never a guess.
    old = [{**r, "t_half_below_gaps": None} for r in rows]
    hl_old = group_summary(old)["half_life"]
    assert hl_old["n_below_gaps"] is None and hl_old["median_t_half_within_gaps_seconds"] is None
    assert hl_old["n_beyond_gaps"] == 2


def test_camera_coverage_stands_beside_fidelity_and_never_changes_it():
    rows = [_row(None, None, None, fid=0.6), _row(None, None, None, fid=0.7),
            _row(None, None, None, fid=0.98, camera="not_evaluable"),
            _row(None, None, None, fid=0.9, camera=None)]  # scored before the gate
    g = group_summary(rows)
    assert g["sample_fidelity"]["mean"] == pytest.approx((0.6 + 0.7 + 0.98 + 0.9) / 4)
    cam = g["camera_gate"]
    assert (cam["n_checked"], cam["n_evaluable"], cam["n_unchecked"]) == (3, 2, 1)
    assert cam["coverage"] == pytest.approx(2 / 3, abs=1e-4)
    assert cam["not_evaluable"] == {"near_static": 1}
    assert g["sample_fidelity_camera_evaluable"]["mean"] == pytest.approx(0.65)
    assert g["model_half_life"]["status"] == "not_applicable"
