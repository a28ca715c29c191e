"""The memory-loop scorer checked against the sim world's truth, which it never reads.

Closed loop: build a sim memory-loop dataset (two start images, the six loops each),
let the sim generator perform every loop with a perfect memory, no memory, and
``decay:TAU`` for TAU = 5, 15 and 45 s, score each run with the offline path and the
protocol's pairing, then compare with the truth sidecars the generator wrote. Rollouts
are the protocol's 60 s, at 4 fps and 160 x 90 pixels to keep the test short.

What is checked, and why these settings:

* Pairs from the pose sidecars are exactly the generator's own revisit matches.
* Revisit fidelity rises with the share of the view the generator remembered.
* Mean fidelity ranks the memories; a perfect memory and no memory never get an
  official half-life (nothing decays along the gaps).
* The median official ``t_half`` ranks the three decay settings and lands within a
  factor 3 of the truth ``TAU ln 2``. Measured with
  ``python benchmarks/bench_memory_loop.py --images 2 --seed S`` for build seeds 0-7
  on benchmark 1.3 (the reference's per-channel SSIM, earliest tie and bucket cap):
  the ranking held for all eight; the ratio to the truth spans 0.73-3.97 and is
  outside the factor 3 for build seed 4 (decay:5 13.8 s from 2 official fits,
  decay:45 119.8 s), so the factor-3 bound holds for the asserted build seed 0
  (ratios 2.73, 1.33, 1.65 for TAU 5, 15, 45) but not for every seed. Benchmark 1.2
  (luma SSIM, latest tie, target-gap cap) stayed within 0.83-2.4 on the same seeds.
  It is a factor and not a match because the offline similarity is not linear in the
  remembered share (its colour part goes like ``sqrt(f)``, its SSIM part faster than
  ``f``) and the three-parameter fit trades the floor against tau over gaps that
  span only 17-60 s per case (2 s for ``yaw_loop_360`` and ``square_loop``, which are
  then not applicable). TAU values far outside the gaps (decay:2, decay:200) are not
  measurable by this protocol on 60 s loops and are not asserted.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from scipy.stats import spearmanr

from vidmem.benchmarks.memory_loop import BENCHMARK as bench
from vidmem.benchmarks.memory_loop.data import generation_requests, load_memory_loop
from vidmem.benchmarks.memory_loop.scorer import ScorerConfig
from vidmem.generators.sim import SimGenerator
from vidmem.runners import benchmark_run as runner
from vidmem.runners.sim_build import build

SECONDS, FPS, W, H = 60.0, 4.0, 160, 90
TAUS = (5, 15, 45)
MEMORIES = ("perfect", "none", *(f"decay:{t}" for t in TAUS))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("ml_truth")
    build("memory_loop", base / "ds", seed=0, n_cases=2)
    ds = load_memory_loop(base / "ds")
    cfg = ScorerConfig.from_preset("offline")
    out = {}
    for memory in MEMORIES:
        videos = base / memory.replace(":", "_")
        gen = SimGenerator(memory=memory, duration_seconds=SECONDS, fps=FPS)
        for req in generation_requests(ds, videos):
            res = gen.generate(dataclasses.replace(req, width=W, height=H))
            assert res.status == "ok", res.error
        run = runner.open_run(bench, ds, base / f"run_{memory.replace(':', '_')}", cfg, {"videos": str(videos)},
                              resume=False, overwrite=False, argv=None)
        result = runner.score(bench, ds, run, videos, cfg, quiet=True)
        with run.items() as store:
            resps = {s.item_id: s.response for s in store.iter_items(kind="score", status="done")}
        truth = {cid: json.loads((videos / f"{cid}.mp4.truth.json").read_text())["frames"]
                 for cid in ds.case_ids}
        out[memory] = (result, run.scores(), resps, truth)
    return out


def test_pairs_are_the_generators_own_revisits(runs):
    for memory, (_, rows, resps, truth) in runs.items():
        assert all(r["status"] == "scored" and not r["diagnostic"] for r in rows), memory
        for cid, resp in resps.items():
            assert resp["pose_source"] == "sidecar" and 0 < len(resp["pairs"]) <= 24, cid
            for p in resp["pairs"]:
                t = truth[cid][p["j"]]
                assert t["match"] == p["i"], (memory, cid, p)
                assert math.isclose(t["gap_seconds"], p["gap_seconds"], abs_tol=1e-9)


def test_revisit_fidelity_follows_the_remembered_fraction(runs):
    fid, remembered = [], []
    for memory in (f"decay:{t}" for t in TAUS):
        _, _, resps, truth = runs[memory]
        for cid, resp in resps.items():
            for p in resp["pairs"]:
                if p["distance"] == 0:
                    fid.append(p["fidelity"])
                    remembered.append(truth[cid][p["j"]]["true_fraction"])
    rho = spearmanr(fid, remembered).correlation
    print(f"exact revisits: {len(fid)}, Spearman(fidelity, remembered fraction) = {rho:.3f}")
    assert len(fid) > 100 and rho > 0.8


def test_mean_fidelity_ranks_the_memories(runs):
    means = {m: runs[m][0]["overall"]["sample_fidelity"]["mean"] for m in MEMORIES}
    print("mean sample fidelity:", {m: round(v, 4) for m, v in means.items()})
    assert means["perfect"] > means["decay:45"] > means["decay:15"] > means["decay:5"]
    assert means["decay:5"] > means["none"]
    assert means["perfect"] > means["decay:5"] + 0.2


def test_half_life_diagnostics_are_complete(runs):
    for memory, (result, rows, resps, _) in runs.items():
        hl = result["overall"]["half_life"]
        assert hl["n_official"] + sum(hl["not_applicable"].values()) == len(rows), memory
        for r in rows:
            fit = resps[r["case_id"]]["half_life"]
            assert (r["half_life_value"] is None) == (fit["status"] != "official")
            if fit["status"] == "official":
                assert 0.0 <= r["half_life_value"] <= 1.0 and fit["details"]["r2"] >= 0.3
    # Neither a perfect memory nor no memory decays along the gaps: no official fit.
    for memory in ("perfect", "none"):
        assert runs[memory][0]["overall"]["half_life"]["n_official"] == 0, memory


def test_half_life_ranks_decay_and_lands_near_the_truth(runs):
    est = {tau: runs[f"decay:{tau}"][0]["overall"]["half_life"]["median_t_half_seconds"]
           for tau in TAUS}
    print("median official t_half (s):", est, "truth:", {t: round(t * np.log(2), 2) for t in est})
    assert all(v is not None for v in est.values()), "a run without any official fit"
    assert est[5] < est[15] < est[45]
    for tau, t_half in est.items():
        assert 1 / 3 <= t_half / (tau * np.log(2)) <= 3.0, (tau, t_half)
    # Fits below the shortest gap and beyond the longest are counted, and agree with
    # the per-case rows' own gaps. With TAU 5 (t_half 3.5 s, shorter than the 17-60 s
    # gaps of most loops) the fits that pass land below their gaps, so the vidmem
    # median "within the gaps" has nothing left: it is None, never a guess.
    hl = {tau: runs[f"decay:{tau}"][0]["overall"]["half_life"] for tau in TAUS}
    inside = {tau: h["median_t_half_within_gaps_seconds"] for tau, h in hl.items()}
    print("median t_half within the gaps (s):", inside,
          "below/beyond:", {t: (h["n_below_gaps"], h["n_beyond_gaps"]) for t, h in hl.items()})
    for tau, h in hl.items():
        rows = runs[f"decay:{tau}"][1]
        official = [r for r in rows if r["half_life_status"] == "official"]
        below = sum(r["t_half_seconds"] < r["gap_min_seconds"] for r in official)
        beyond = sum(r["t_half_seconds"] > r["gap_max_seconds"] for r in official)
        assert (h["n_below_gaps"], h["n_beyond_gaps"]) == (below, beyond), tau
        within = [r["t_half_seconds"] for r in official
                  if r["gap_min_seconds"] <= r["t_half_seconds"] <= r["gap_max_seconds"]]
        assert inside[tau] == (float(np.median(within)) if within else None), tau
    assert hl[5]["n_below_gaps"] >= 1


def test_model_level_half_life_ranks_decay_and_lands_near_the_truth(runs):
    # vidmem's model-level estimate (one decay time over the run's cases) on the same
    # runs ranks the settings. It is not closer to the truth than the per-case median:
    # benchmarks/bench_halflife_recovery.py (build seeds 0-3, decay:6/15/40) found it
    # within 1.23-3.25x (worst per seed) against 1.28-1.50x for the per-case median; here
    # (build seed 0, decay:5/15/45) 3.03x, 1.39x and 1.19x. The bound is a factor 4.
    est = {tau: runs[f"decay:{tau}"][0]["overall"]["model_half_life"] for tau in TAUS}
    print("model-level t_half (s):", {t: (round(m["t_half_seconds"] or -1, 2),
                                          m["ci_low_seconds"], m["ci_high_seconds"])
                                      for t, m in est.items()})
    assert all(m["status"] == "estimate" for m in est.values())
    t = {tau: m["t_half_seconds"] for tau, m in est.items()}
    assert t[5] < t[15] < t[45]
    for tau, t_half in t.items():
        assert 1 / 4 <= t_half / (tau * np.log(2)) <= 4.0, (tau, t_half)
    # Every sim rollout moves as planned: the camera gate passes all of them.
    for memory, (result, rows, *_) in runs.items():
        cam = result["overall"]["camera_gate"]
        assert cam["n_evaluable"] == cam["n_checked"] == len(rows), memory


def test_cli_run_with_the_sim_generator(loop_root, tmp_path, capsys):
    from vidmem.cli import main

    out = tmp_path / "run"
    with pytest.raises(SystemExit) as exc:
        main(["run", "memory_loop", "--root", str(loop_root), "--generator", "sim",
              "--generator-opt", "memory=decay:20", "--generator-opt", "duration_seconds=4",
              "--out", str(out), "--json"])
    captured = capsys.readouterr()
    assert (exc.value.code or 0) == 0, captured.err
    result = json.loads(captured.out)
    assert result["overall"]["n_scored"] == 6 and result["diagnostic_cases"] == []
    assert sorted(p.name for p in (out / "videos").glob("*.poses.json")) == sorted(
        f"{c}.mp4.poses.json" for c in load_memory_loop(loop_root).case_ids)
    assert (out / "report" / "report.html").is_file()
