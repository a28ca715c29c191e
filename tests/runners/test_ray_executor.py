"""The Ray executor: the same bytes as the local one, lost workers retried, drivers resumed.

One local Ray instance (``ray.init(num_cpus=2)``) serves the whole module. Truth is the
local executor's output (itself checked against the sim truth elsewhere): CMBench sim
scoring and a short sim Track-B closed loop must give byte-identical ``scores.jsonl``
and ``summary.json`` under both executors and 1 or 2 workers. Crashes are real: the
work function ``os._exit``s its worker process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

import ray_helpers as helpers  # noqa: E402

from vidmem.cli import main  # noqa: E402
from vidmem.errors import UserInputError  # noqa: E402
from vidmem.runners import execution_spec as es  # noqa: E402
from vidmem.runners.execute import ExecutorSpec, WorkItem, execute  # noqa: E402
from vidmem.runners.store import ItemStore, RunDir, RunManifest  # noqa: E402

pytestmark = pytest.mark.slow

HELPERS_DIR = str(Path(helpers.__file__).resolve().parent)
OUTPUTS = ("scores.jsonl", "summary.json")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A local Ray instance whose workers import the helpers and use the test cache."""
    if ray.is_initialized():
        ray.shutdown()
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "VIDMEM_CACHE_DIR")}
    # the raylet hands its environment to every worker it starts
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (HELPERS_DIR, saved["PYTHONPATH"]) if p)
    os.environ["VIDMEM_CACHE_DIR"] = str(tmp_path_factory.getbasetemp() / "vidmem-cache")
    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    print(f"ray.init(num_cpus=2): {time.perf_counter() - t0:.1f} s")
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _cli(capsys, *args: str) -> int:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    captured = capsys.readouterr()
    code = exc.value.code if isinstance(exc.value.code, int) else (0 if exc.value.code is None else 1)
    assert code == 0, captured.err[-3000:]
    return code


def _outputs(run: Path) -> dict[str, bytes]:
    return {name: (run / name).read_bytes() for name in OUTPUTS}


def _manifest(n: int) -> RunManifest:
    return RunManifest(benchmark="toy", benchmark_version="1", config={"n_items": n}, seeds={},
                       command=["pytest"])


def _items(n: int, **extra) -> list[WorkItem]:
    return [WorkItem.make(f"item-{i:03d}", "toy", {"i": i, **extra}) for i in range(n)]


# ------------------------------------------------------------------- byte-identical output


@pytest.fixture(scope="module")
def cmbench_sim(tmp_path_factory):
    """A 4-task sim CMBench and its perfect-memory continuations (generated locally)."""
    from vidmem.benchmarks.cmbench import BENCHMARK as bench
    from vidmem.benchmarks.cmbench.data import load_cmbench
    from vidmem.benchmarks.cmbench.scorer import ScorerConfig
    from vidmem.runners import benchmark_run as runner
    from vidmem.runners.sim_build import build

    root = tmp_path_factory.mktemp("ray_cmb")
    build("cmbench", root / "data", seed=0, n_cases=2)
    ds = load_cmbench(root / "data")
    cfg = ScorerConfig.from_preset("offline")
    run = runner.open_run(bench, ds, root / "gen", cfg, {}, resume=False, overwrite=False,
                          argv=None)
    gen = runner.generate(bench, ds, run, "sim", {"memory": "perfect"}, quiet=True)
    assert gen["summary"]["errors"] == 0
    return root / "data", gen["dir"]


def test_cmbench_scores_are_byte_identical_across_executors_and_workers(
        cluster, cmbench_sim, tmp_path, capsys):
    data, videos = cmbench_sim
    outputs = {}
    for executor, workers in (("local", 1), ("local", 2), ("ray", 1), ("ray", 2)):
        out = tmp_path / f"{executor}-{workers}"
        t0 = time.perf_counter()
        _cli(capsys, "score", "cmbench", "--root", str(data), "--continuations", str(videos),
             "--preset", "offline", "--out", str(out), "--executor", executor,
             "--workers", str(workers), "--quiet")
        print(f"{executor} x{workers}: {time.perf_counter() - t0:.1f} s")
        outputs[(executor, workers)] = _outputs(out)
    rows = [json.loads(line) for line in outputs[("local", 1)]["scores.jsonl"].splitlines()]
    assert len(rows) == 4 and all(r["status"] == "scored" for r in rows)
    for key, got in outputs.items():
        assert got == outputs[("local", 1)], f"{key} differs from local x1"
    run_json = json.loads((tmp_path / "ray-2" / "run.json").read_text("utf-8"))
    assert run_json["protocol"]["execution"] == es.PROTOCOL
    assert "--executor" in run_json["command"]
    # on Ray the driver loads no model: the record of the backends comes from a worker
    # and is the local one's, word for word
    local = json.loads((tmp_path / "local-1" / "run.json").read_text("utf-8"))
    assert run_json["backends"] == local["backends"] and local["backends"]


def test_on_ray_the_driver_loads_no_model(cluster, cmbench_sim, tmp_path, capsys):
    from vidmem.runners import benchmark_run as runner

    data, videos = cmbench_sim
    runner._BACKENDS.clear()
    _cli(capsys, "score", "cmbench", "--root", str(data), "--continuations", str(videos),
         "--preset", "offline", "--out", str(tmp_path / "ray"), "--executor", "ray",
         "--workers", "2", "--quiet")
    assert not runner._BACKENDS, "the driver loaded the scorer's models"
    assert json.loads((tmp_path / "ray" / "run.json").read_text("utf-8"))["backends"]


def test_each_actor_runs_the_warmup_once_before_its_items(cluster, tmp_path):
    n = 6
    run = RunDir.create(tmp_path / "run", _manifest(n))
    with run.items() as store:
        summary = execute(store, _items(n), helpers.crash_once_fn, quiet=True,
                          executor=ExecutorSpec(kind="ray", workers=2), warmup=helpers.pid_warmup)
    assert summary.computed == n and summary.prepared["pid"] != os.getpid()
    run2 = RunDir.create(tmp_path / "run2", _manifest(n))
    with run2.items() as store:
        with pytest.raises(UserInputError) as err:
            execute(store, _items(n), helpers.crash_once_fn, quiet=True,
                    executor=ExecutorSpec(kind="ray", workers=2),
                    warmup=helpers.failing_warmup)
        assert not list(store.iter_items())  # nothing computed
    assert "could not prepare" in str(err.value) and "weights not found" in str(err.value)
    assert "load the models" in err.value.hint


def test_track_b_closed_loop_is_byte_identical_across_executors_and_workers(
        cluster, tmp_path, capsys):
    from vidmem.benchmarks.vmem_track_b.sim_build import build_track_b
    from vidmem.sim.cards import write_card_deck

    gold = tmp_path / "gold"
    gold.mkdir()
    build_track_b(gold, seed=0, n_cases=1, n_segments=14, gap_long_threshold=8)
    deck = write_card_deck(tmp_path / "deck")
    outputs = {}
    # ray x1 is left out here (the CMBench test above has all four): 1 vs 2 workers under
    # both executors is covered by local x1, local x2 and ray x2, for 25 s less
    for executor, workers in (("local", 1), ("ray", 2), ("local", 2)):
        out = tmp_path / f"{executor}-{workers}"
        t0 = time.perf_counter()
        _cli(capsys, "run", "vmem_track_b", "--gold", str(gold), "--generator", "sim",
             "--generator-opt", "memory=perfect", "--generator-opt", "fps=4",
             "--conditions", "none,seg_dino_key",  # seg_dino_key embeds clips in the worker
             "--backend-opt", f"judge/sim-cards:weights={deck}", "--judge-cache", "off",
             "--bootstrap-resamples", "100", "--out", str(out), "--executor", executor,
             "--workers", str(workers), "--quiet")
        print(f"{executor} x{workers}: {time.perf_counter() - t0:.1f} s")
        rollouts = out / "rollouts"
        outputs[(executor, workers)] = {**_outputs(out), **{  # + every clip and progress file
            str(f.relative_to(rollouts)): f.read_bytes() for f in sorted(rollouts.rglob("*"))
            if f.suffix == ".mp4" or f.name == "progress.json"}}
        assert len(list(rollouts.rglob("seg_*.mp4"))) == 28
    for key, got in outputs.items():
        assert got == outputs[("local", 1)], f"{key} differs from local x1"


# ------------------------------------------------------------------------ lost workers


def test_a_worker_killed_mid_task_is_retried_and_every_item_appears_once(cluster, tmp_path):
    marker, log, n = tmp_path / "crashed", tmp_path / "calls.log", 12
    items = _items(n, crash=5, marker=str(marker), log=str(log), sleep=0.05)
    run = RunDir.create(tmp_path / "run", _manifest(n))
    with run.items() as store:
        summary = execute(store, items, helpers.crash_once_fn, quiet=True,
                          executor=ExecutorSpec(kind="ray", workers=2, batch_size=3))
        stored = list(store.iter_items())
    assert marker.exists(), "the worker never crashed: the test tested nothing"
    assert (summary.computed, summary.errors, summary.cached) == (n, 0, 0)
    assert sorted(s.item_id for s in stored) == [it.item_id for it in items]
    assert all(s.status == "done" and s.attempts == 1 for s in stored)  # written once each
    assert {s.item_id: s.response["i"] for s in stored} == {it.item_id: it.request["i"]
                                                            for it in items}
    calls = Counter(log.read_text().split())
    assert set(calls) == {it.item_id for it in items}


def test_an_item_that_keeps_crashing_is_an_error_for_that_item_only(cluster, tmp_path,
                                                                   monkeypatch):
    monkeypatch.setattr(es, "MAX_TASK_RETRIES", 1)  # two tries are enough to keep failing
    n = 8
    items = _items(n, crash=3)
    run = RunDir.create(tmp_path / "run", _manifest(n))
    with run.items() as store:
        summary = execute(store, items, helpers.crash_always_fn, quiet=True,
                          executor=ExecutorSpec(kind="ray", workers=2, batch_size=4))
        stored = {s.item_id: s for s in store.iter_items()}
    assert (summary.computed, summary.errors) == (n - 1, 1)
    assert len(stored) == n
    bad = stored["item-003"]
    assert bad.status == "error" and "died 2 times" in bad.error, bad.error
    assert all(s.status == "done" for k, s in stored.items() if k != "item-003")


def test_the_driver_killed_and_resumed_recomputes_nothing_finished(cluster, tmp_path):
    run_dir, log, n, sleep = tmp_path / "run", tmp_path / "calls.log", 30, 0.2
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import ray_helpers as h; "
              "h.killable_ray_run(sys.argv[2], sys.argv[3], int(sys.argv[4]), "
              "float(sys.argv[5]), sys.argv[6])")
    err = (tmp_path / "driver.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-c", script, HELPERS_DIR, str(run_dir), str(log),
                             str(n), str(sleep), cluster], stdout=subprocess.DEVNULL, stderr=err)
    items_path = run_dir / "items.sqlite"
    deadline = time.monotonic() + 120
    try:
        while True:
            assert proc.poll() is None, (tmp_path / "driver.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the driver never got 5 items done"
            if items_path.exists() and (run_dir / "run.json").exists():
                with ItemStore(items_path) as store:
                    if store.counts()["done"] >= 5:
                        break
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
        err.close()

    items = _items(n, sleep=sleep, log=str(log))
    by_key = {it.key: it.item_id for it in items}
    with ItemStore(items_path) as store:
        done_before = {by_key[k] for k in store.done_keys()}
    assert 5 <= len(done_before) < n
    calls_before = Counter(log.read_text().split())

    run = RunDir.create(run_dir, _manifest(n), resume=True)
    with run.items() as store:
        summary = execute(store, items, helpers.crash_once_fn, quiet=True,
                          executor=ExecutorSpec(kind="ray", workers=2, batch_size=1))
        assert store.counts() == {"total": n, "done": n, "error": 0}
    assert (summary.cached, summary.computed) == (len(done_before), n - len(done_before))
    calls_after = Counter(log.read_text().split()) - calls_before
    assert not set(calls_after) & done_before, "finished items were computed again"
    assert set(calls_after) | done_before == {it.item_id for it in items}


# ---------------------------------------------------------------------------- sharing


def test_a_worker_that_cannot_see_the_run_files_stops_the_run_naming_the_fix(cluster, tmp_path):
    run = RunDir.create(tmp_path / "run", _manifest(2))
    spec = ExecutorSpec(kind="ray", workers=1).sharing(tmp_path / "not-mounted")
    with run.items() as store, pytest.raises(UserInputError, match="same path on every node"):
        execute(store, _items(2), helpers.crash_once_fn, quiet=True, executor=spec)
    assert not list((tmp_path / "run").glob(".vidmem-ray-probe-*"))  # the token is cleaned up


def test_a_worker_the_cluster_has_no_room_for_is_refused_at_once(cluster, tmp_path):
    run = RunDir.create(tmp_path / "run", _manifest(1))
    spec = ExecutorSpec(kind="ray", workers=1, gpus_per_worker=0.5)  # the instance has no GPU
    with run.items() as store, pytest.raises(UserInputError, match="0 GPU in all"):
        execute(store, _items(1), helpers.crash_once_fn, quiet=True, executor=spec)
    spec = ExecutorSpec(kind="ray", workers=3)  # two CPUs
    with run.items() as store, pytest.raises(UserInputError, match="lower --workers to 2"):
        execute(store, _items(3), helpers.crash_once_fn, quiet=True, executor=spec)


def test_executor_flags_are_checked_before_anything_runs(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["score", "cmbench", "--root", str(tmp_path), "--continuations", str(tmp_path),
              "--out", str(tmp_path / "run"), "--gpus-per-worker", "0.5"])
    assert exc.value.code == 2
    assert "needs --executor ray" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_doctor_reports_the_cluster_and_each_nodes_backends(cluster):
    from vidmem.runners.doctor import diagnose

    report = diagnose(executor="ray")["ray"]
    assert report["ray_version"] == ray.__version__ and report["cpus"] == 2
    (node,) = report["nodes"]
    assert node["alive"] and node["cpus"] == 2 and node["vidmem_version"]
    names = {b["name"]: b for b in node["backends"]}
    assert names["classic/sift"]["importable"] and names["classic/sift"]["weights"] == \
        "none needed"
