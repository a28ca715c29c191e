"""A judge that fails never yields a finished run (issue: judge failures).

Track-B scored with ``judge/openai`` against a local server that misbehaves in one way
per case (:mod:`misbehaving_judge`): each case must end with exit code 1 and a message
naming what went wrong, and a ``--resume`` against the same server, now healthy, must
ask exactly the questions that got no usable answer and end with the scores of a clean
run, byte for byte.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from misbehaving_judge import MODEL, MisbehavingJudge  # noqa: E402

pytestmark = pytest.mark.slow

#: one story of the session's sim world, condition ``none`` only: 14 questions
N_QUESTIONS = 14

#: mode -> (what the failed run's error must say, questions asked again on resume)
CASES = {
    "500": ("1 of 1 stories failed to score", N_QUESTIONS),
    "429": ("got no answer", N_QUESTIONS),
    "hang": ("got no answer", N_QUESTIONS),
    "trickle": ("got no answer", N_QUESTIONS),
    "html": ("the server's reply is not a chat completion", N_QUESTIONS),
    "broken_json": ("unusably, more than --max-unparsable 0.2", N_QUESTIONS),
    "nan": ("unusably, more than --max-unparsable 0.2", N_QUESTIONS),
    "foreign_ids": ("unusably, more than --max-unparsable 0.2", N_QUESTIONS),
    "empty_items": ("unusably, more than --max-unparsable 0.2", N_QUESTIONS),
    # posts 1, 4, 7, 10 and 13 of the 14 fail (no retries): five questions unanswered
    "one_in_three": ("5 of 14 judge questions got no answer", 5),
}


@pytest.fixture(scope="module")
def server():
    s = MisbehavingJudge()
    yield s
    s.close()


@pytest.fixture(scope="module")
def story(track_b_world):
    return track_b_world.gold(1), track_b_world.brought({"none": "none"})


def _score(story, server, out: Path, cache: Path, *extra: str) -> tuple[int, str]:
    from vidmem.cli import main

    gold, rollouts = story
    opts = {"base_url": server.url, "model": MODEL, "timeout_seconds": 1.0, "max_retries": 0,
            "max_total_seconds": 3.0, "backoff_base_seconds": 0.01, "concurrency": 4}
    args = ["score", "vmem_track_b", "--gold", str(gold), "--rollouts", str(rollouts),
            "--conditions", "none", "--judge", "judge/openai", "--judge-cache", str(cache),
            "--out", str(out), "--bootstrap-resamples", "50", "--quiet", *extra]
    for k, v in opts.items():
        args += ["--backend-opt", f"judge/openai:{k}={v}"]
    try:
        main(args)
    except SystemExit as exc:
        return (exc.code if isinstance(exc.code, int) else 1), ""
    return 0, ""


@pytest.fixture(scope="module")
def clean(story, server, tmp_path_factory):
    server.set_mode("healthy")
    out = tmp_path_factory.mktemp("clean") / "run"
    code, _ = _score(story, server, out, out.parent / "answers.sqlite")
    assert code == 0 and server.posts == N_QUESTIONS
    return out


def _same_scores(run: Path, clean: Path) -> None:
    assert (run / "scores.jsonl").read_text() == (clean / "scores.jsonl").read_text()
    keep = ("metrics", "judge_health")
    a, b = (json.loads((p / "summary.json").read_text()) for p in (run, clean))
    assert {k: a.get(k) for k in keep if k != "judge_health"} == \
        {k: b.get(k) for k in keep if k != "judge_health"}
    assert a["judge_health"]["unparsable"] == 0


@pytest.mark.parametrize("mode", sorted(CASES))
def test_a_failing_judge_fails_the_run_and_resume_recovers(mode, story, server, clean, tmp_path,
                                                           capsys):
    said, asked_again = CASES[mode]
    server.set_mode(mode)
    out, cache = tmp_path / "run", tmp_path / "answers.sqlite"
    code, _ = _score(story, server, out, cache)
    err = capsys.readouterr().err
    assert code == 1, err
    assert said in " ".join(err.split()), err
    status = json.loads((out / "run.json").read_text())["status"]
    assert status == "failed"

    server.set_mode("healthy")
    code, _ = _score(story, server, out, cache, "--resume")
    assert code == 0, capsys.readouterr().err
    assert server.posts == asked_again
    _same_scores(out, clean)


def test_a_plain_rerun_of_a_failed_run_is_not_served_the_failure(story, server, clean, tmp_path):
    """``--overwrite`` against a healthy judge after empty answers asks every question
    again: nothing unusable was cached."""
    server.set_mode("empty_items")
    out, cache = tmp_path / "run", tmp_path / "answers.sqlite"
    assert _score(story, server, out, cache)[0] == 1
    server.set_mode("healthy")
    assert _score(story, server, out, cache, "--overwrite")[0] == 0
    assert server.posts == N_QUESTIONS
    _same_scores(out, clean)
