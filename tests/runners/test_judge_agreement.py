"""`vidmem judge-agreement`: a judged toy run is replayed (its first judge answering from
the cache) and its questions put to a second scripted judge server.

Colours are greys whose values survive H.264 and JPEG exactly (0, 64, 128), and each
item asks two questions (its first and last frame), so the tables are small enough to
work out by hand.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from vidmem.cli import main
from vidmem.io.video import write_video
from vidmem.registry import BENCHMARKS
from vidmem.runners.store import RunDir

TOY = Path(__file__).resolve().parents[1] / "benchmarks" / "toy"
COLOURS = {"black": [0, 0, 0], "dim": [64, 64, 64], "grey": [128, 128, 128]}
FIELDS = ["rgb[0]", "rgb[1]", "rgb[2]"]


@pytest.fixture(scope="module", autouse=True)
def toy_benchmarks_registered():
    sys.path.insert(0, str(TOY))
    added = []
    for name, target in (("toy_judge", "toy_judge_benchmark:BENCHMARK"),
                         ("toy", "toy_benchmark:BENCHMARK")):
        if name not in BENCHMARKS:
            BENCHMARKS.add(name, target, "a test-only benchmark")
            added.append(name)
    yield
    for name in added:
        BENCHMARKS._entries.pop(name)
    sys.path.remove(str(TOY))


@pytest.fixture()
def servers(monkeypatch):
    from colour_server import ColourServer

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    first, second = ColourServer(), ColourServer()
    yield first, second
    first.close()
    second.close()


@pytest.fixture()
def scored(tmp_path, servers, capsys):
    """A toy_judge run scored against the first server, its answers in the cache."""
    first, _ = servers
    root, videos = tmp_path / "toy", tmp_path / "videos"
    root.mkdir()
    videos.mkdir()
    (root / "items.jsonl").write_text(
        "".join(json.dumps({"id": k, "rgb": v}) + "\n" for k, v in COLOURS.items()))
    for k, rgb in COLOURS.items():
        write_video(videos / f"{k}.mp4", [np.full((32, 32, 3), rgb, np.uint8)] * 4, 8)
    run, cache = tmp_path / "run", tmp_path / "answers.sqlite"
    code, _, err = _cli(capsys, "score", "toy_judge", "--root", str(root), "--videos", str(videos),
                        "--out", str(run), "--judge-url", first.url, "--judge-cache", str(cache),
                        "--json")
    assert code in (0, None), err
    assert first.posts == 6  # 3 items x 2 frames
    return run, cache, videos


def _cli(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    captured = capsys.readouterr()
    return exc.value.code, captured.out, captured.err


def _agree(capsys, run, server, *extra, model="second-vlm", json_out=True):
    code, out, err = _cli(capsys, "judge-agreement", str(run), "--second-judge", "judge/openai",
                          "--second-judge-opt", f"base_url={server.url}",
                          "--second-judge-opt", f"model={model}",
                          "--second-judge-opt", "max_retries=0", *extra,
                          *(["--json"] if json_out else []))
    return code, (json.loads(out) if json_out and code in (0, None) else out), err


def _fields(record):
    return {f["field"]: f for f in record["fields"]}


def test_identical_judges_agree_everywhere(scored, servers, capsys):
    run, cache, _ = scored
    code, record, err = _agree(capsys, run, servers[1], "--judge-cache", str(cache))
    assert code in (0, None), err
    assert record["questions"] == record["pairs"] == 6 and record["n_items"] == 3
    assert record["first_not_ok"] == record["second_not_ok"] == 0
    fields = _fields(record)
    assert sorted(fields) == FIELDS
    for f in fields.values():
        assert f["kind"] == "categorical" and f["n"] == 6 and f["n_clusters"] == 3
        assert f["agreement"] == 1.0 and f["agreement_ci"] == [1.0, 1.0]
        assert f["kappa"] == pytest.approx(1.0)
    assert record["first_judges"][0]["settings"]["model"] == "colour-vlm"
    assert record["second_judge"]["settings"]["model"] == "second-vlm"
    assert record["protocol"].startswith("cluster sample of whole items")
    written = run / "judge_agreement" / "judge-openai.json"
    assert Path(record["written"]) == written
    assert json.loads(written.read_text()) == {k: v for k, v in record.items() if k != "written"}


def test_offset_judge_disagrees_by_a_known_amount(scored, servers, capsys):
    run, cache, _ = scored
    servers[1].offset = 64  # 0 -> 64, 64 -> 128, 128 -> 192 on every channel
    code, record, err = _agree(capsys, run, servers[1], "--judge-cache", str(cache))
    assert code in (0, None), err
    store = RunDir.open(run).items()
    stored = {s.item_id: s.response["answers"] for s in store.iter_items(kind="score")}
    store.close()
    assert stored == {k: [{"rgb": v}, {"rgb": v}] for k, v in COLOURS.items()}  # exact greys
    # Per channel, first judge 0,0,64,64,128,128 vs second 64,64,128,128,192,192: no
    # question agrees; marginals (1/3, 1/3, 1/3, 0) and (0, 1/3, 1/3, 1/3) over
    # (0, 64, 128, 192), so p_e = 2/9 and kappa = (0 - 2/9) / (1 - 2/9) = -2/7.
    for f in _fields(record).values():
        assert f["n"] == 6 and f["agreement"] == 0.0 and f["agreement_ci"] == [0.0, 0.0]
        assert f["kappa"] == pytest.approx(-2 / 7)
        lo, hi = f["kappa_ci"]
        assert -1.0 <= lo <= -2 / 7 <= hi <= 0.0


def test_replay_asks_the_first_judge_nothing_when_cached(scored, servers, capsys):
    run, cache, _ = scored
    first, second = servers
    code, record, err = _agree(capsys, run, second, "--judge-cache", str(cache))
    assert code in (0, None), err
    assert first.posts == 6  # only the scoring's requests: the replay was all cache hits
    assert second.posts == 6
    assert record["first_judge_answers"] == {"from_cache": 6, "asked": 0}
    assert record["second_judge_answers"] == {"from_cache": 0, "asked": 6}
    # again: both judges answer from the cache
    code, again, _ = _agree(capsys, run, second, "--judge-cache", str(cache))
    assert code in (0, None) and first.posts == 6 and second.posts == 6
    assert again["second_judge_answers"] == {"from_cache": 6, "asked": 0}
    assert again["fields"] == record["fields"]
    # with the cache off both are asked again
    code, off, _ = _agree(capsys, run, second, "--judge-cache", "off")
    assert code in (0, None) and first.posts == 12 and second.posts == 12
    assert off["judge_cache"] is None and off["first_judge_answers"]["asked"] == 6


def test_same_seed_same_sample_of_whole_items(scored, servers, capsys):
    run, cache, _ = scored
    servers[1].offset = 64
    runs = [_agree(capsys, run, servers[1], "--judge-cache", str(cache), "--sample", "3",
                   "--seed", "5") for _ in range(2)]
    assert all(code in (0, None) for code, _, _ in runs)
    a, b = runs[0][1], runs[1][1]
    # 2 questions per item: the second item brings the sample to 4 >= 3, whole items only
    order = [sorted(COLOURS)[i] for i in np.random.default_rng(5).permutation(3)]
    assert a["items"] == order[:2] and a["n_items"] == 2 and a["items_in_run"] == 3
    assert a["questions"] == 4 and a["sample_reached"] is True
    assert all(f["n"] == 4 and f["n_clusters"] == 2 for f in a["fields"])
    assert a["fields"] == b["fields"] and a["items"] == b["items"]
    # a sample larger than the run takes every item and says so
    code, whole, _ = _agree(capsys, run, servers[1], "--judge-cache", str(cache), "--sample", "50")
    assert code in (0, None) and whole["questions"] == 6 and whole["sample_reached"] is False


def test_unusable_second_answers_are_counted(scored, servers, capsys):
    run, cache, _ = scored
    servers[1].garble_frames = {0}
    code, record, err = _agree(capsys, run, servers[1], "--judge-cache", str(cache))
    assert code in (0, None), err
    assert record["questions"] == 6 and record["pairs"] == 3
    assert record["first_not_ok"] == 0 and record["second_not_ok"] == 3
    assert {e["status"] for e in record["not_ok_examples"]["second"]} == {"unparsable"}
    assert all(f["n"] == 3 for f in record["fields"])


def test_table_says_it_is_a_cluster_sample(scored, servers, capsys):
    run, cache, _ = scored
    code, out, err = _agree(capsys, run, servers[1], "--judge-cache", str(cache), json_out=False)
    assert code in (0, None), err
    assert "cluster sample" in out and "rgb[0]" in out and "kappa" in out
    assert "judge-openai.json" in out


def test_run_of_a_benchmark_without_a_judge_is_refused(tmp_path, capsys):
    root, videos = tmp_path / "toy", tmp_path / "videos"
    root.mkdir()
    videos.mkdir()
    (root / "items.jsonl").write_text(json.dumps({"id": "grey", "rgb": [128] * 3}) + "\n")
    write_video(videos / "grey.mp4", [np.full((32, 32, 3), 128, np.uint8)] * 4, 8)
    code, _, err = _cli(capsys, "score", "toy", "--root", str(root), "--videos", str(videos),
                        "--out", str(tmp_path / "run"), "--json")
    assert code in (0, None), err
    code, _, err = _cli(capsys, "judge-agreement", str(tmp_path / "run"), "--second-judge",
                        "judge/openai", "--judge-cache", "off")
    assert code == 1
    assert "asks no judge" in err and "fix:" in err


def test_deleted_video_names_the_item_and_the_fix(scored, servers, capsys):
    run, cache, videos = scored
    (videos / "dim.mp4").unlink()
    code, _, err = _agree(capsys, run, servers[1], "--judge-cache", str(cache))
    assert code == 1
    assert "'dim'" in err and "dim.mp4" in err and "put it back" in err
    assert not (run / "judge_agreement").exists()


def test_second_judge_that_is_the_first_one_is_refused_with_the_cache_on(scored, servers, capsys):
    run, cache, _ = scored
    code, _, err = _agree(capsys, run, servers[1], "--judge-cache", str(cache), model="colour-vlm")
    assert code == 1 and "answers as the first judge" in err and "--judge-cache off" in err
    assert servers[1].posts == 0


def test_bad_second_judge_names_and_options(scored, servers, capsys):
    run, cache, _ = scored
    code, _, err = _cli(capsys, "judge-agreement", str(run), "--second-judge", "judge/opnai")
    assert code == 1 and "did you mean 'judge/openai'" in err
    code, _, err = _cli(capsys, "judge-agreement", str(run), "--second-judge", "dinov2/small")
    assert code == 1 and "expected a judge backend" in err
    code, _, err = _cli(capsys, "judge-agreement", str(run), "--second-judge", "judge/openai",
                        "--second-judge-opt", "no-equals-sign")
    assert code == 1 and "key=value" in err
    code, _, err = _agree(capsys, run, servers[1], "--judge-cache", str(cache),
                          "--second-judge-opt", "temprature=0")
    assert code == 1 and "temprature" in err and servers[1].posts == 0
    code, _, err = _cli(capsys, "judge-agreement", str(run / "nope"), "--second-judge", "judge/openai")
    assert code == 1 and "expected a run directory" in err
