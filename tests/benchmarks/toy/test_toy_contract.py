"""A benchmark defined only in this folder runs through the ordinary CLI, touching no file
under src/: validate, run (command generator), score (bring your own videos), report."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from vidmem.cli import main
from vidmem.io.video import write_video
from vidmem.registry import BENCHMARKS

HERE = Path(__file__).parent
COLOURS = {"red": [200, 30, 30], "teal": [20, 160, 150], "grey": [128, 128, 128]}


@pytest.fixture(scope="module", autouse=True)
def toy_registered():
    sys.path.insert(0, str(HERE))
    BENCHMARKS.add("toy", "toy_benchmark:BENCHMARK", "a test-only benchmark")
    yield
    BENCHMARKS._entries.pop("toy")
    sys.path.remove(str(HERE))


@pytest.fixture()
def root(tmp_path):
    root = tmp_path / "toy"
    root.mkdir()
    (root / "items.jsonl").write_text("".join(json.dumps({"id": k, "rgb": v}) + "\n" for k, v in COLOURS.items()))
    return root


def _cli(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_validate_reports_a_bad_row_and_exits_1(root, capsys):
    assert _cli(capsys, "validate", "toy", "--root", str(root))[0] in (0, None)
    with (root / "items.jsonl").open("a") as f:
        f.write(json.dumps({"id": "bad", "rgb": [1, 2]}) + "\n")
    code, out, _ = _cli(capsys, "validate", "toy", "--root", str(root), "--json")
    assert code == 1
    problems = json.loads(out)["problems"]
    assert [(p["where"], p["field"]) for p in problems] == [("bad", "rgb")]


def test_run_with_the_command_generator_then_rescore_and_report(root, tmp_path, capsys):
    template = f"{sys.executable} {HERE / 'paint.py'} {{prompt}} {{out}}"
    code, out, err = _cli(capsys, "run", "toy", "--root", str(root), "--out", str(tmp_path / "run"),
                          "--generator", "command", "--generator-opt", f"template={template}", "--json")
    assert code in (0, None), err
    summary = json.loads(out)
    # flat colours survive H.264 nearly exactly: every item scores close to 1
    assert summary["n_items"] == 3 and summary["mean"] > 0.97
    rows = [json.loads(line) for line in (tmp_path / "run" / "scores.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == sorted(COLOURS)
    run_json = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run_json["benchmark"] == "toy" and run_json["protocol"]["stride"] == 1

    # bring your own videos: the same clips with one colour swapped must score lower there
    videos = tmp_path / "videos"
    shutil.copytree(tmp_path / "run" / "videos", videos)
    write_video(videos / "teal.mp4", [np.full((32, 32, 3), 128, np.uint8)] * 4, 8)
    code, out, err = _cli(capsys, "score", "toy", "--root", str(root), "--out", str(tmp_path / "byo"),
                          "--videos", str(videos), "--json")
    assert code in (0, None), err
    byo = {json.loads(x)["id"]: json.loads(x)["score"] for x in (tmp_path / "byo" / "scores.jsonl").read_text().splitlines()}
    teal_error = np.abs(np.asarray(COLOURS["teal"]) - 128).mean()
    assert byo["teal"] == pytest.approx(1 - teal_error / 255, abs=0.01)
    assert byo["red"] > 0.97

    code, out, err = _cli(capsys, "report", str(tmp_path / "byo"))
    assert code in (0, None), err
    assert "teal" in (tmp_path / "byo" / "report" / "report.md").read_text()


def test_a_missing_video_is_refused_naming_the_item(root, tmp_path, capsys):
    videos = tmp_path / "videos"
    videos.mkdir()
    write_video(videos / "red.mp4", [np.full((32, 32, 3), 1, np.uint8)] * 4, 8)
    code, _, err = _cli(capsys, "score", "toy", "--root", str(root), "--out", str(tmp_path / "r"),
                        "--videos", str(videos))
    assert code not in (0, None)
    assert "teal" in err and "grey" in err


def test_a_failed_item_reaches_the_exit_code_and_the_others_are_kept(root, tmp_path, capsys):
    videos = tmp_path / "videos"
    videos.mkdir()
    for name, rgb in COLOURS.items():
        write_video(videos / f"{name}.mp4", [np.full((32, 32, 3), rgb, np.uint8)] * (1 if name == "teal" else 4), 8)
    code, out, err = _cli(capsys, "score", "toy", "--root", str(root), "--out", str(tmp_path / "r"),
                          "--videos", str(videos), "--json")
    assert code == 1
    assert "1 of 3 items failed to score and are left out of the mean; first: teal:" in err
    summary = json.loads(out)
    assert summary["errors"][0][0] == "teal" and summary["n_items"] == 3
    rows = {json.loads(x)["id"]: json.loads(x) for x in (tmp_path / "r" / "scores.jsonl").read_text().splitlines()}
    assert rows["teal"]["status"] == "error" and rows["red"]["status"] == "scored"
    # the failed item is retried on --resume; the scored ones are served from the store
    write_video(videos / "teal.mp4", [np.full((32, 32, 3), COLOURS["teal"], np.uint8)] * 4, 8)
    code, out, err = _cli(capsys, "score", "toy", "--root", str(root), "--out", str(tmp_path / "r"),
                          "--videos", str(videos), "--json", "--resume")
    assert code in (0, None), err
    assert json.loads(out)["errors"] == []


def _run_toy(capsys, root, out, *extra):
    template = f"{sys.executable} {HERE / 'paint.py'} {{prompt}} {{out}}"
    return _cli(capsys, "run", "toy", "--root", str(root), "--out", str(out), "--generator", "command",
                "--generator-opt", f"template={template}", "--json", *extra)


def _stored_keys(run_dir):
    import sqlite3

    with sqlite3.connect(run_dir / "items.sqlite") as db:
        return {row[0] for row in db.execute("SELECT key FROM items")}


def test_a_run_directory_copied_elsewhere_is_served_from_its_store(root, tmp_path, capsys):
    code, _, err = _run_toy(capsys, root, tmp_path / "run")
    assert code in (0, None), err
    keys = _stored_keys(tmp_path / "run")
    assert len(keys) == 6  # 3 generations + 3 scores
    shutil.copytree(tmp_path / "run", tmp_path / "moved" / "run")
    code, out, err = _run_toy(capsys, root, tmp_path / "moved" / "run", "--resume")
    assert code in (0, None), err
    # keys hold content, not paths: nothing new was generated or scored
    assert _stored_keys(tmp_path / "moved" / "run") == keys
    assert json.loads((tmp_path / "moved" / "run" / "run.json").read_text())["counts"]["computed"] == 0


def test_an_edited_generated_video_is_generated_again_and_partials_are_removed(root, tmp_path, capsys):
    run_dir = tmp_path / "run"
    code, _, err = _run_toy(capsys, root, run_dir)
    assert code in (0, None), err
    write_video(run_dir / "videos" / "red.mp4", [np.full((32, 32, 3), 128, np.uint8)] * 4, 8)
    partial = run_dir / "videos" / ".teal.partial-123-456.mp4"
    partial.write_bytes(b"half a video")
    code, out, err = _run_toy(capsys, root, run_dir, "--resume")
    assert code in (0, None), err
    assert "regenerating" in err and "red" in err and "changed after it was generated" in err
    rows = {json.loads(x)["id"]: json.loads(x)["score"] for x in (run_dir / "scores.jsonl").read_text().splitlines()}
    assert rows["red"] > 0.97  # painted red again, not the grey edit
    assert not partial.exists()


def test_analyze_writes_the_result_renders_its_section_and_fails_loudly(root, tmp_path, capsys):
    videos = tmp_path / "videos"
    videos.mkdir()
    for name, rgb in COLOURS.items():
        shown = [128, 128, 128] if name == "red" else rgb  # red is the worst by far
        write_video(videos / f"{name}.mp4", [np.full((32, 32, 3), shown, np.uint8)] * 4, 8)
    run = tmp_path / "r"
    code, _, err = _cli(capsys, "score", "toy", "--root", str(root), "--out", str(run),
                        "--videos", str(videos), "--json")
    assert code in (0, None), err
    scores = {json.loads(x)["id"]: json.loads(x)["score"]
              for x in (run / "scores.jsonl").read_text().splitlines()}
    code, out, err = _cli(capsys, "analyze", "toy", str(run), "--json")
    assert code in (0, None), err
    mean = sum(scores.values()) / 3
    assert json.loads(out)["worst"] == {"worst": "red", "score": scores["red"],
                                        "below_mean": pytest.approx(mean - scores["red"])}
    assert not (run / "analyses" / "generating.json").exists()  # generates: only by name
    record = json.loads((run / "analyses" / "worst.json").read_text())
    assert record["protocol"]["worst"]["rule"].startswith("lowest")
    assert "worst item (analysis)" in (run / "report" / "report.md").read_text()
    # a later `vidmem report` keeps the section
    assert _cli(capsys, "report", str(run))[0] in (0, None)
    assert "worst item (analysis)" in (run / "report" / "report.md").read_text()

    code, out, err = _cli(capsys, "analyze", "toy", str(run), "--only", "generating", "--json")
    assert code in (0, None), err
    assert json.loads(out) == {"generating": {"ran": True}}
    code, _, err = _cli(capsys, "analyze", "toy", str(run), "--only", "nope")
    assert code == 2 and "no analysis 'nope'" in err
    code, _, err = _cli(capsys, "analyze", "toy", str(run), "--opt", "fail=1")
    assert code not in (0, None)
    assert json.loads((run / "analyses" / "worst.json").read_text()) == record  # kept


def test_an_analysis_flag_runs_it_after_a_clean_run_only(root, tmp_path, capsys, monkeypatch):
    toy = BENCHMARKS.load("toy")
    monkeypatch.setattr(type(toy), "analysis_flags",
                        {"--then-worst": "worst", "--then-generating": "generating"})
    from vidmem.cli.benchmark_commands import make_command

    # `score` has no generator: the generating analysis' flag is only on `run`
    score_flags = {o for p in make_command("score", toy).params for o in p.opts}
    run_flags = {o for p in make_command("run", toy).params for o in p.opts}
    assert "--then-worst" in score_flags and "--then-generating" not in score_flags
    assert {"--then-worst", "--then-generating"} <= run_flags

    videos = tmp_path / "videos"
    videos.mkdir()
    for name, rgb in COLOURS.items():
        shown = [128, 128, 128] if name == "teal" else rgb
        write_video(videos / f"{name}.mp4", [np.full((32, 32, 3), shown, np.uint8)] * 4, 8)
    run = tmp_path / "r"
    code, _, err = _cli(capsys, "score", "toy", "--root", str(root), "--out", str(run),
                        "--videos", str(videos), "--then-worst", "--quiet")
    assert code in (0, None), err
    record = json.loads((run / "analyses" / "worst.json").read_text())
    assert record["result"]["worst"] == "teal"  # the grey clip, as analyze would say
    assert "worst item (analysis)" in (run / "report" / "report.md").read_text()
    code, out, err = _cli(capsys, "analyze", "toy", str(run), "--only", "worst", "--json")
    assert code in (0, None) and json.loads(out)["worst"] == record["result"]

    # a failed item: the run exits non-zero and the analysis is not run on a partial run
    write_video(videos / "red.mp4", [np.full((32, 32, 3), 128, np.uint8)], 8)  # 1 frame
    bad = tmp_path / "bad"
    code, _, err = _cli(capsys, "score", "toy", "--root", str(root), "--out", str(bad),
                        "--videos", str(videos), "--then-worst", "--quiet")
    assert code not in (0, None) and "failed to score" in err
    assert not (bad / "analyses").exists()


def test_a_run_that_fails_before_its_first_item_says_failed_not_running(root, tmp_path, capsys,
                                                                      monkeypatch):
    """A scorer that cannot load (bad option, missing weights) fails the command; run.json
    must not be left 'running' (which reads as a live run or a killed one)."""
    from vidmem.errors import UserInputError
    from vidmem.runners import benchmark_run

    def refuse(*args, **kwargs):
        raise UserInputError("judge/x: no such weights", hint="pass weights=DIR")

    monkeypatch.setattr(benchmark_run, "_score", refuse)
    videos = tmp_path / "videos"
    videos.mkdir()
    for k, rgb in COLOURS.items():
        write_video(videos / f"{k}.mp4", [np.full((32, 32, 3), rgb, np.uint8)] * 4, 8)
    code, _, err = _cli(capsys, "score", "toy", "--root", str(root), "--videos", str(videos),
                        "--out", str(tmp_path / "run"))
    assert code == 2 and "no such weights" in err
    assert json.loads((tmp_path / "run" / "run.json").read_text())["status"] == "failed"
