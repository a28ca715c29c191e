"""The command line as a user meets it: exit codes, messages, JSON output."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from vidmem import __version__
from vidmem.cli import main


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    captured = capsys.readouterr()
    code = exc.value.code if isinstance(exc.value.code, int) else (0 if exc.value.code is None else 1)
    return code, captured.out, captured.err


def test_version(capsys):
    code, out, _ = run_cli(capsys, "--version")
    assert code == 0
    assert __version__ in out


def test_no_arguments_shows_help(capsys):
    code, out, err = run_cli(capsys)
    assert code != 0 or "Usage" in out
    assert "Usage" in out + err


def test_list_json_has_every_kind(capsys):
    code, out, _ = run_cli(capsys, "list", "--json")
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"benchmarks", "backends", "generators", "policies"}
    names = {row["name"] for row in data["benchmarks"]}
    assert {"cmbench", "memory_loop", "vmem_track_a", "vmem_track_b", "mist"} <= names


def test_list_one_kind(capsys):
    code, out, _ = run_cli(capsys, "list", "benchmarks", "--json")
    assert code == 0
    assert list(json.loads(out)) == ["benchmarks"]


def test_list_unknown_kind_suggests(capsys):
    code, _, err = run_cli(capsys, "list", "benchmark")
    assert code == 2
    assert "did you mean 'benchmarks'" in err


def test_unknown_benchmark_gets_did_you_mean(capsys):
    code, out, err = run_cli(capsys, "run", "cmbnch")
    assert code == 2
    assert "unknown benchmark 'cmbnch'" in err
    assert "did you mean 'cmbench'" in err
    assert "Traceback" not in err + out


def test_planned_benchmark_says_not_implemented(capsys, monkeypatch):
    from vidmem.registry import BENCHMARKS, Entry

    # every built-in benchmark is available now: declare a planned one for the test
    entry = Entry("benchmark", "planned_bench", None, "a planned benchmark", status="planned")
    monkeypatch.setitem(BENCHMARKS._entries, "planned_bench", entry)
    code, _, err = run_cli(capsys, "score", "planned_bench")
    assert code == 2
    assert "not implemented" in err


def test_unknown_option_is_a_usage_error(capsys):
    code, _, err = run_cli(capsys, "list", "--bogus")
    assert code == 2
    assert "--bogus" in err


def test_report_on_missing_dir(capsys, tmp_path):
    code, _, err = run_cli(capsys, "report", str(tmp_path / "nope"))
    assert code == 2
    assert "nope" in err
    assert "Traceback" not in err


def test_report_on_dir_without_run_json(capsys, tmp_path):
    code, _, err = run_cli(capsys, "report", str(tmp_path))
    assert code == 2
    assert "run.json" in err


def test_debug_shows_traceback(capsys):
    code, _, err = run_cli(capsys, "--debug", "run", "cmbnch")
    assert code == 2
    assert "Traceback" in err


def test_doctor_json(capsys, monkeypatch, tmp_path):
    # a clean environment: no judge endpoint, no model dir, an empty Hugging Face cache
    for var in ("VIDMEM_JUDGE_URL", "VIDMEM_JUDGE_MODEL", "VIDMEM_MODEL_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    code, out, _ = run_cli(capsys, "doctor", "--json")
    assert code == 0
    data = json.loads(out)
    assert all(data["core_packages"].values()), data["core_packages"]  # the core install is complete
    assert data["h264_encoder"] is True  # PyAV wheels ship libx264
    rows = {r["name"]: r for r in data["backends"]}
    from vidmem.registry import BACKENDS

    assert set(rows) == set(BACKENDS.names())
    assert rows["classic/sift"]["importable"] is True and rows["classic/sift"]["weights"] == "none needed"
    assert rows["dinov2/base"]["weights"].startswith("not found")  # tests never have real weights
    assert data["judge"] == {"url": None, "answers": None,
                             "detail": "no judge endpoint configured (--judge-url or VIDMEM_JUDGE_URL)"}


def test_console_script_exit_code():
    res = subprocess.run(
        [sys.executable, "-m", "vidmem.cli", "run", "no_such_benchmark"],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2
    assert "unknown benchmark" in res.stderr


#: demo parts whose own tests run them exactly as `vidmem demo` does (part.run, part.passed
#: against the sim truth, a second run served from the stores; Track-B's also prints and
#: renders its report section): the end-to-end demo test below leaves them out, and
#: README command 1 in CI runs the whole demo.
PARTS_TESTED_APART = {
    "vmem_track_b": "tests/benchmarks/vmem_track_b/test_demo.py::test_demo_part_on_the_sim_story",
    "mist": "tests/benchmarks/mist/test_mist_demo.py::test_demo_part_passes_and_reuses_its_run",
}


@pytest.mark.slow
@pytest.mark.timeout(1200)  # three demo parts: ~2 min alone, longer on a busy box
def test_demo_runs_end_to_end_and_reuses_its_run(capsys, tmp_path, monkeypatch):
    from vidmem.runners import demo as demo_runner

    parts = demo_runner.demo_parts()
    assert {b.name for b, _ in parts} == {"cmbench", "memory_loop", "vmem_track_a",
                                          *PARTS_TESTED_APART}
    kept = [(b, p) for b, p in parts if b.name not in PARTS_TESTED_APART]
    monkeypatch.setattr(demo_runner, "demo_parts", lambda: kept)

    out = tmp_path / "demo"
    code, stdout, err = run_cli(capsys, "demo", "--out", str(out), "--json")
    assert code == 0, err
    result = json.loads(stdout)
    assert result["all_checks_passed"] is True
    assert result["checks"]["index"]["exact"] == result["checks"]["index"]["requests"] > 0
    assert result["checks"]["time"]["exact"] == result["checks"]["time"]["requests"] > 0
    assert result["batched_read"]["frames_decoded"] < result["clip"]["n_frames"]
    cm = result["cmbench"]
    assert cm["perfect_beats_none_on_every_task"] is True
    assert cm["means"]["perfect"] > cm["means"]["none"] + 0.3
    assert cm["official"] is False
    ml = result["memory_loop"]
    assert ml["perfect_fidelity_higher"] is True
    assert ml["by_memory"]["perfect"]["fidelity"]["mean"] > ml["by_memory"]["decay:15"]["fidelity"]["mean"] + 0.1
    assert result["vmem_track_a"]["text_aware_beat_random"]
    assert not set(PARTS_TESTED_APART) & set(result)
    assert result["benchmarks_not_implemented"] == []
    assert (out / "run.json").is_file() and (out / "items.sqlite").is_file()
    html = (out / "report" / "report.html").read_text()
    assert "data:image/png;base64," in html
    first_computed = result["execution"]["computed"]
    assert first_computed == result["execution"]["total"]

    # again, as a user sees it: served from the stores, each part's table, the success line
    code, stdout, err = run_cli(capsys, "demo", "--out", str(out))
    assert code == 0, err
    assert "all checks passed" in stdout and "CHECKS FAILED" not in stdout
    for line in ("perfect memory beats no memory on every task: yes",
                 "Memory loop on the sim world",
                 "text-aware policies beat random in recall at K = 4: yes",
                 "the causal guard dropped nothing for the built-in policies: yes"):
        assert line in stdout, line
    again = json.loads((out / "summary.json").read_text("utf-8"))
    assert again["all_checks_passed"] is True
    assert again["execution"]["computed"] == 0
    assert again["execution"]["cached"] == first_computed

    code, stdout, _ = run_cli(capsys, "report", str(out), "--json")
    assert code == 0
    assert json.loads(stdout)["html"].endswith("report.html")


def test_report_on_newer_schema_is_refused(capsys, tmp_path):
    from vidmem.runners.store import RunDir, RunManifest

    out = tmp_path / "run"
    RunDir.create(out, RunManifest(benchmark="demo", benchmark_version="1"))
    data = json.loads((out / "run.json").read_text())
    data["schema_version"] = 99
    (out / "run.json").write_text(json.dumps(data))
    code, _, err = run_cli(capsys, "report", str(out))
    assert code == 2
    assert "newer" in err


def test_models_list_json_names_protocol_checkpoints(capsys):
    code, out, _ = run_cli(capsys, "models", "list", "--json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["dinov2/small"]["checkpoint"] == "facebook/dinov2-small"
    assert rows["owlvit/base-patch32"]["official"] is True
    assert rows["classic/sift"]["extra"] == "core"


def test_models_fetch_offline_is_a_clear_error(capsys, tmp_path):
    code, _, err = run_cli(capsys, "models", "fetch", "dinov2/small", "--to", str(tmp_path))
    assert code == 2
    assert "could not download" in err and "--model-dir" in err


def test_models_fetch_weight_free_backend(capsys, tmp_path):
    code, _, err = run_cli(capsys, "models", "fetch", "classic/sift", "--to", str(tmp_path))
    assert code == 2
    assert "weight-free" in err


def test_memory_loop_score_allow_missing_reaches_the_scorer(capsys, tmp_path):
    from vidmem.runners.sim_build import build

    build("memory_loop", tmp_path / "loops", n_cases=1)
    (tmp_path / "videos").mkdir()
    args = ["score", "memory_loop", "--root", str(tmp_path / "loops"), "--videos", str(tmp_path / "videos")]
    code, _, err = run_cli(capsys, *args, "--out", str(tmp_path / "r1"))
    assert code == 2 and "--allow-missing" in err
    assert not (tmp_path / "r1").exists()  # nothing half-made that would later need --resume
    code, out, err = run_cli(capsys, *args, "--out", str(tmp_path / "r2"), "--allow-missing", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert len(result["missing"]) == result["n_cases"] == 6


def test_error_text_with_brackets_is_printed_verbatim(capsys, tmp_path):
    code, _, err = run_cli(capsys, "report", str(tmp_path / "[run]" / "nope"))
    assert code == 2 and "[run]" in err


def test_backend_option_values_are_typed(capsys):
    from vidmem.benchmarks.options import parse_backend_option

    assert parse_backend_option("classic/sift:ratio=0.8") == ("classic/sift", "ratio", 0.8)
    assert parse_backend_option("x/y:weights=/m/[a]") == ("x/y", "weights", "/m/[a]")


def test_demo_exits_non_zero_when_a_check_fails(capsys, tmp_path, monkeypatch):
    """A failed verdict is a failure of the command (exit 1), not only a red line."""
    from types import SimpleNamespace

    from vidmem.runners import demo as demo_runner

    failing = SimpleNamespace(
        ANNOUNCE="a part that always fails", config=lambda: {"fails": True},
        run=lambda bench, out, quiet: {"ran": True}, passed=lambda result: False,
        print_result=lambda console, result: None,
        report_section=lambda rep, result, out, report_dir: None)
    monkeypatch.setattr(demo_runner, "demo_parts",
                        lambda: [(SimpleNamespace(name="always_fails"), failing)])
    code, stdout, _ = run_cli(capsys, "demo", "--out", str(tmp_path / "demo"))
    assert code == 1 and "CHECKS FAILED" in stdout
    code, stdout, _ = run_cli(capsys, "demo", "--out", str(tmp_path / "demo"), "--json")
    assert code == 1 and json.loads(stdout)["all_checks_passed"] is False
