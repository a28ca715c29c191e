"""A judge-asking benchmark defined in this folder: the runner's answer cache end to end,
against a local scripted judge server that counts the requests reaching it."""

from __future__ import annotations

import json
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
def toy_judge_registered():
    sys.path.insert(0, str(HERE))
    BENCHMARKS.add("toy_judge", "toy_judge_benchmark:BENCHMARK", "a test-only judged benchmark")
    yield
    BENCHMARKS._entries.pop("toy_judge")
    sys.path.remove(str(HERE))


@pytest.fixture()
def server(monkeypatch):
    from colour_server import ColourServer

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    s = ColourServer()
    yield s
    s.close()


@pytest.fixture()
def dataset(tmp_path):
    root = tmp_path / "toy"
    root.mkdir()
    (root / "items.jsonl").write_text("".join(json.dumps({"id": k, "rgb": v}) + "\n" for k, v in COLOURS.items()))
    videos = tmp_path / "videos"
    videos.mkdir()
    for k, rgb in COLOURS.items():
        write_video(videos / f"{k}.mp4", [np.full((32, 32, 3), rgb, np.uint8)] * 4, 8)
    return root, videos


def _score(capsys, root, videos, out, server, *extra):
    with pytest.raises(SystemExit) as exc:
        main(["score", "toy_judge", "--root", str(root), "--videos", str(videos), "--out", str(out),
              "--judge-url", server.url, "--json", *extra])
    captured = capsys.readouterr()
    return exc.value.code, captured.out, captured.err


def test_second_run_is_answered_from_the_cache(dataset, server, tmp_path, capsys):
    root, videos = dataset
    cache = tmp_path / "answers.sqlite"
    code, out, err = _score(capsys, root, videos, tmp_path / "run1", server, "--judge-cache", str(cache))
    assert code in (0, None), err
    first = json.loads(out)
    assert server.posts == 6  # 3 items x 2 frames
    assert first["judge_answers"]["asked"] == 6 and first["judge_answers"]["from_cache"] == 0
    assert first["mean"] > 0.97

    code, out, err = _score(capsys, root, videos, tmp_path / "run2", server, "--judge-cache", str(cache))
    assert code in (0, None), err
    second = json.loads(out)
    assert server.posts == 6  # zero requests reached the server
    assert second["judge_answers"] == {**first["judge_answers"], "asked": 0, "from_cache": 6}
    assert second["mean"] == first["mean"]

    # a rescore of the same run reuses its stored items: no question is even looked up
    code, out, _ = _score(capsys, root, videos, tmp_path / "run2", server, "--judge-cache", str(cache), "--resume")
    assert code in (0, None) and server.posts == 6
    assert json.loads(out)["judge_answers"]["items_scored_now"] == 0

    # with the cache off every question is asked
    code, out, _ = _score(capsys, root, videos, tmp_path / "run3", server, "--judge-cache", "off")
    assert code in (0, None) and server.posts == 12
    assert json.loads(out)["judge_answers"]["cache"] is None


def test_changed_pixels_are_a_new_question(dataset, server, tmp_path, capsys):
    root, videos = dataset
    cache = tmp_path / "answers.sqlite"
    assert _score(capsys, root, videos, tmp_path / "run1", server, "--judge-cache", str(cache))[0] in (0, None)
    # grey's frames are grey's question, wherever they are: answered from the cache
    write_video(videos / "red.mp4", [np.full((32, 32, 3), 128, np.uint8)] * 4, 8)
    write_video(videos / "teal.mp4", [np.full((32, 32, 3), (60, 60, 200), np.uint8)] * 4, 8)
    code, out, _ = _score(capsys, root, videos, tmp_path / "run2", server, "--judge-cache", str(cache))
    assert code in (0, None)
    assert server.posts == 8  # only teal's two frames are asked again
    rows = {json.loads(x)["id"]: json.loads(x)["score"] for x in (tmp_path / "run2" / "scores.jsonl").read_text().splitlines()}
    assert rows["teal"] == pytest.approx(1 - np.abs(np.subtract(COLOURS["teal"], (60, 60, 200))).mean() / 255, abs=0.01)
    assert rows["red"] == pytest.approx(1 - np.abs(np.subtract(COLOURS["red"], 128)).mean() / 255, abs=0.01)


def test_unparsable_answers_are_not_cached(dataset, server, tmp_path, capsys):
    root, videos = dataset
    cache = tmp_path / "answers.sqlite"
    server.garble_frames = {0}
    code, _, err = _score(capsys, root, videos, tmp_path / "run", server, "--judge-cache", str(cache))
    assert code == 1 and "failed to score" in err
    # frame 0: the question and its JSON-only follow-up; frame 3: one usable answer
    assert server.posts == 3 * 2 + 3
    server.garble_frames = set()
    code, out, err = _score(capsys, root, videos, tmp_path / "run", server, "--judge-cache", str(cache), "--resume")
    assert code in (0, None), err
    assert server.posts == 9 + 3  # only the unparsable questions are asked again
    assert json.loads(out)["judge_answers"] == {"asked": 3, "from_cache": 3, "unparsable": 0,
                                                "items_scored_now": 3, "cache": str(cache.resolve())}
