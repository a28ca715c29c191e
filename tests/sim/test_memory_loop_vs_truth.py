"""The memory-loop scorer checked against the sim world's truth, which it never reads.

Closed loop: build a sim memory-loop dataset (one start image, the six loops), let the
sim generator perform every loop with a perfect memory and with ``decay:TAU`` for
TAU = 4, 16 and 64 s, score each run with the offline path and the protocol's
pairing, then compare with the truth sidecars the generator wrote. Rollouts are 16 s
at 8 fps and 160 x 90 pixels to keep the test short.

What the protocol measures here, and what it does not (measured with this build):

* Pairs from the pose sidecars are exactly the generator's own revisit matches.
* Revisit fidelity follows the truth: on exact revisits it rises with the fraction of
  the view the generator remembered, and mean sample fidelity ranks the memories.
* The Memory Half-Life does **not** recover TAU on these rollouts. Causes found:
  (1) fixed: the pairing used to apply the excursion as a filter before choosing the
  nearest frame, so the first frames of every return were paired with a near miss up
  to 0.15 away (~0.75 fidelity under a perfect memory vs ~0.995 for exact revisits);
  the protocol's rule takes the nearest frame first and keeps the pair only if the
  excursion holds (:mod:`vidmem.metrics.revisit`), and now a perfect memory scores
  0.94 instead of 0.92 and never gets an official fit. (2) In the sim, the similarity
  of a forgotten view to the truth depends on the place, so the forgetting floor
  drifts along a loop; a linear drift is fitted as tau ~ 1e3-1e5 s (official, value
  1.0), and memory ``none`` still gets such fits. Replacing forgotten tiles by a
  neutral random-colour texture (with an ordered dither choosing the kept tiles)
  narrowed that drift for the offline embedder and ranked 4 < 16 < 64 on the two-image
  benchmark (median t_half 1.5 / 3.5 / 13 s vs truth 2.8 / 11 / 44 s), but on one
  image the ranking held for only 4 of 8 seeds, decay:64 ranged 0.1x-360x the truth,
  and with a colour-histogram cosine the floor then rose near the start view
  (``tests/sim/test_loop_memory.py`` monotonicity failed), so the sim keeps the
  upside-down copy. (3) Dominant: a 16 s loop's gaps span about 4.5-16 s, a factor
  of 2-3, which cannot pin the three-parameter curve's tau when tau is longer than
  the span (decay:16, decay:64); 60 s rollouts pin decay:64 better but leave decay:4
  entirely on the floor. Measured after fix (1), one image, build seeds 0-5: the
  ranking 4 < 16 < 64 held for seeds 0 and 4 only, medians from 1 s to 3e4 s.
  ``test_half_life_ranks_decay_and_lands_near_the_truth`` states the requirement and
  is expected to fail until (2) and (3) change; ``benchmarks/bench_memory_loop.py``
  measures it.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from scipy.stats import spearmanr

from vidmem.data.benchmarks.memory_loop_data import generation_requests, load_memory_loop
from vidmem.data.benchmarks.memory_loop_score import ScorerConfig
from vidmem.runners import memory_loop as runner
from vidmem.sim.generator import SimGenerator

SECONDS, FPS, W, H = 16.0, 8.0, 160, 90
MEMORIES = ("perfect", "decay:64", "decay:16", "decay:4")


@pytest.fixture(scope="module")
def runs(loop_root, tmp_path_factory):
    base = tmp_path_factory.mktemp("ml_truth")
    ds = load_memory_loop(loop_root)
    cfg = ScorerConfig.from_preset("offline")
    out = {}
    for memory in MEMORIES:
        videos = base / memory.replace(":", "_")
        gen = SimGenerator(memory=memory, duration_seconds=SECONDS, fps=FPS)
        for req in generation_requests(ds, videos):
            res = gen.generate(dataclasses.replace(req, width=W, height=H))
            assert res.status == "ok", res.error
        run = runner.open_run(ds, base / f"run_{memory.replace(':', '_')}", cfg, {"videos": str(videos)},
                              resume=False, overwrite=False, argv=None)
        result = runner.score(ds, run, videos, cfg, quiet=True)
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
    for memory in ("decay:64", "decay:16", "decay:4"):
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
    assert means["perfect"] > means["decay:64"] > means["decay:16"] > means["decay:4"]
    assert means["perfect"] > means["decay:4"] + 0.2


def test_half_life_diagnostics_are_complete(runs):
    for memory, (result, rows, resps, _) in runs.items():
        hl = result["overall"]["half_life"]
        assert hl["n_official"] + sum(hl["not_applicable"].values()) == len(rows), memory
        for r in rows:
            fit = resps[r["case_id"]]["half_life"]
            assert (r["half_life_value"] is None) == (fit["status"] != "official")
            if fit["status"] == "official":
                assert 0.0 <= r["half_life_value"] <= 1.0 and fit["details"]["r2"] >= 0.3
    # A perfect memory never decays: no case gets an official half-life.
    assert runs["perfect"][0]["overall"]["half_life"]["n_official"] == 0


@pytest.mark.xfail(strict=True, reason="sim forgetting floor drifts with the place and a 16 s "
                   "loop's gaps span a factor ~2-3: see module docstring; the half-life does "
                   "not recover TAU on these rollouts")
def test_half_life_ranks_decay_and_lands_near_the_truth(runs):
    est = {tau: runs[f"decay:{tau}"][0]["overall"]["half_life"]["median_t_half_seconds"]
           for tau in (4, 16, 64)}
    print("median official t_half (s):", est, "truth:", {t: round(t * np.log(2), 2) for t in est})
    assert all(v is not None for v in est.values()), "a run without any official fit"
    assert est[4] < est[16] < est[64]
    for tau, t_half in est.items():
        assert 0.25 <= t_half / (tau * np.log(2)) <= 4.0, (tau, t_half)  # within 4x


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
