"""`vidmem agent m3` end to end: a task file, a module:Class generator, a module:function
scorer, and scripted judge and rewriter servers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_fakes import MODEL, diagnosis

from vidmem.cli import main

RECORD = {"actor": "the cat", "object": "snake sign", "binding": "snake sign in the red box",
          "operation": "count what is inside",
          "required_last_frame_evidence": "the open red box with two snake signs visible inside"}
SCENE = {"actor": "the cat", "container": {"noun": "red box"},
         "objects": [{"noun": "snake sign", "plural": "snake signs"}],
         "target": {"contents": [{"noun": "snake sign", "count": 2}], "text": "two snake signs"}}
HOLD = "The cat opens the red box and holds the lid open."


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out = capsys.readouterr()
    code = exc.value.code if isinstance(exc.value.code, int) else (0 if exc.value.code is None else 1)
    return code, out.out, out.err


@pytest.fixture
def task_file(tmp_path) -> Path:
    (tmp_path / "gap_last.png").write_bytes(b"")  # the path is handed on, never read here
    path = tmp_path / "case-7.json"
    path.write_text(json.dumps({
        "task_record": RECORD, "instruction": "The cat opens the red box.",
        "request": {"start_image": "gap_last.png", "duration_seconds": 1.0, "seed": 3,
                    "extras": {"shot": "reveal"}},
        "scene": SCENE}))
    return path


@pytest.fixture
def scorer_module(tmp_path, monkeypatch) -> str:
    folder = tmp_path / "scorers"
    folder.mkdir()
    (folder / "h3c_scores.py").write_text(
        "from agent_fakes import pixel_score\n\n"
        "def reveal_score(clip):\n    return pixel_score(clip)\n")
    monkeypatch.syspath_prepend(str(folder))
    return "h3c_scores:reveal_score"


def args(task_file, out, judge_server, rewriter_server, score, *extra) -> list[str]:
    return ["agent", "m3", "--task", str(task_file), "--generator", "agent_fakes:PixelGenerator",
            "--diagnoser", "judge/openai", "--diagnoser-opt", f"base_url={judge_server.url}",
            "--diagnoser-opt", f"model={MODEL}", "--diagnoser-opt", "timeout_seconds=2",
            "--rewriter", "rewriter/openai", "--rewriter-opt", f"base_url={rewriter_server.url}",
            "--rewriter-opt", f"model={MODEL}", "--score", score, "--out", str(out), *extra]


def test_the_chain_runs_end_to_end_with_a_module_function_scorer(
        capsys, tmp_path, task_file, scorer_module, judge_server, rewriter_server):
    judge_server.script = [diagnosis("no_action"), diagnosis("success", "two signs inside")]
    rewriter_server.script = [{"content": f'"{HOLD}"'}]
    out = tmp_path / "out"
    code, stdout, stderr = run_cli(capsys, *args(task_file, out, judge_server, rewriter_server,
                                                 scorer_module, "-k", "4"))
    assert code == 0, stderr
    assert "M3-Agent chain" in stdout and "success" in stdout and "oracle" in stdout
    log = json.loads((out / "agent_run.json").read_text())
    assert log["stopped"] == "success" and log["generator_calls"] == 2
    assert [s["score"] for s in log["steps"]] == [0.3, 0.8]
    assert log["best"] == 1 and log["running_best"] == [0.3, 0.8]
    assert log["steps"][0]["rewrite"]["new"] == HOLD and log["scorer"] == scorer_module
    assert log["task"] == RECORD and log["backends"]["generator"]["name"] == "test/pixel"
    assert all(Path(s["clip"]).is_file() and Path(s["last_frame"]).is_file()
               for s in log["steps"])
    assert [s["seed"] for s in log["steps"]] == [3, 4]
    # a second run into the same folder is refused without --overwrite
    code, _, stderr = run_cli(capsys, *args(task_file, out, judge_server, rewriter_server,
                                            scorer_module))
    assert code == 2 and "--overwrite" in stderr


def test_the_judge_evidence_scorer_scores_success_as_one(
        capsys, tmp_path, task_file, judge_server, rewriter_server):
    # per try: the scorer's question, then the diagnosis
    judge_server.script = [diagnosis("no_action"), diagnosis("no_action"),
                           diagnosis("success"), diagnosis("success")]
    rewriter_server.script = [{"content": HOLD}]
    out = tmp_path / "out"
    code, _, stderr = run_cli(capsys, *args(task_file, out, judge_server, rewriter_server,
                                            "judge-evidence", "--json"))
    assert code == 0, stderr
    log = json.loads((out / "agent_run.json").read_text())
    assert [s["score"] for s in log["steps"]] == [0.0, 1.0] and log["best"] == 1
    assert len(judge_server.requests) == 4


def test_failed_diagnoses_reach_the_exit_code_after_the_log_is_written(
        capsys, tmp_path, task_file, scorer_module, judge_server, rewriter_server):
    judge_server.default = {"status": 400}
    out = tmp_path / "out"
    code, _, stderr = run_cli(capsys, *args(task_file, out, judge_server, rewriter_server,
                                            scorer_module, "-k", "2", "--quiet"))
    assert code == 1 and "diagnosis error" in stderr
    log = json.loads((out / "agent_run.json").read_text())
    assert len(log["steps"]) == 2 and rewriter_server.requests == []


@pytest.mark.parametrize(("change", "match"), [
    ({"score": "no_such_module_h3c:fn"}, "cannot import module"),
    ({"score": "nonsense"}, "neither 'judge-evidence' nor module:function"),
    ({"task": {"instruction": "x"}}, "task_record"),
    ({"task": {"task_record": RECORD, "instruction": "x", "request": {"prompt": "y"}}},
     "request.prompt is set by the agent"),
    ({"task": {"task_record": {**RECORD, "actor": ""}, "instruction": "x"}}, "actor"),
    ({"task": {"task_record": RECORD, "instruction": "x", "scene": {}, "withhold_target": True}},
     "withhold_target needs the target"),
])
def test_bad_input_is_named(capsys, tmp_path, task_file, judge_server, rewriter_server,
                            change, match):
    if "task" in change:
        task_file.write_text(json.dumps(change["task"]))
    code, _, stderr = run_cli(capsys, *args(task_file, tmp_path / "out", judge_server,
                                            rewriter_server, change.get("score", "judge-evidence")))
    assert code == 2 and match in " ".join(stderr.split()), stderr
