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
* The Memory Half-Life does **not** recover TAU on these rollouts. Three causes, none
  of them in the scorer: (1) the pairing rule itself pairs the first frames of every
  return with a frame up to 0.15 away (the excursion boundary), and a view a few
  degrees off loses most of its SSIM even with a perfect memory, so the shortest gaps
  (always kept by the 24-pair cap) read as *low* fidelity and the fit finds "no
  decay"; (2) in the sim, the similarity of a forgotten view to the truth depends on
  the place, so on yaw loops the forgetting floor drifts with the gap and a plain
  linear drift is fitted as tau ~ 1e4-1e5 s (official, value 1.0) -- memory ``none``
  gets such a fit too; (3) a loop's gaps span a factor of about two, which cannot
  pin the three-parameter curve's tau unless it is shorter than the span.
  ``test_half_life_ranks_decay_and_lands_near_the_truth`` states the requirement and
  is expected to fail until one of these changes.
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


@pytest.mark.xfail(strict=True, reason="protocol pairing + sim forgetting floor: see module "
                   "docstring; the half-life does not recover TAU on these rollouts")
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
