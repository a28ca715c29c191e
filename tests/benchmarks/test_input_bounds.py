"""Every duration, count and size a dataset gives is bounded; empty datasets and files
linked from outside the dataset are refused (issue 23 items 5, 6, 8; issue 24 item 4).

Each case is a copy of a valid dataset (the official sample files or a sim build) with
one value changed, so the error can only come from that value.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vidmem.benchmarks.cmbench.data import validate_cmbench
from vidmem.benchmarks.cmbench.schema import MAX_REFERENCE_SECONDS
from vidmem.benchmarks.cmbench.sim_build import build_cmbench
from vidmem.benchmarks.memory_loop.data import validate_memory_loop
from vidmem.benchmarks.memory_loop.schema import MAX_DURATION_SECONDS, MAX_FPS
from vidmem.benchmarks.memory_loop.sim_build import build_memory_loop
from vidmem.benchmarks.mist.cards import validate_cards
from vidmem.benchmarks.mist.schema import MAX_COUNT as MIST_MAX_COUNT
from vidmem.benchmarks.mist.schema import MAX_SHOT_SECONDS
from vidmem.benchmarks.mist.sim_build import build_mist
from vidmem.benchmarks.vmem_track_a.schema import MAX_FILM_SECONDS
from vidmem.benchmarks.vmem_track_a.validate import validate_gold
from vidmem.benchmarks.vmem_track_b.schema import MAX_COUNT, MAX_SEGMENT_SECONDS
from vidmem.benchmarks.vmem_track_b.validate import validate_stories
from vidmem.cli import main

TESTS = Path(__file__).resolve().parent
TRACK_A_SAMPLE = TESTS / "vmem_track_a" / "data" / "vmem_track_a_sample"
TRACK_B_SAMPLE = TESTS / "vmem_track_b" / "data" / "vmem_track_b_sample"
STORY = "0001_lighthouse_keeper"


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for path in dst.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return dst


def _edit_json(path: Path, edit) -> None:
    data = json.loads(path.read_text("utf-8"))
    edit(data)
    path.write_text(json.dumps(data), "utf-8")


def _errors(report, field: str) -> list[str]:
    return [p.message for p in report.errors if p.field == field]


# --------------------------------------------------------------------------- the official data


def test_the_official_samples_stay_valid():
    """The limits refuse no row of the release's sample files."""
    assert validate_stories(TRACK_B_SAMPLE).ok
    report = validate_gold(TRACK_A_SAMPLE / "BlenderOpenMovies" / "spring", "zh")
    assert report.ok, report.format()
    report = validate_gold(TRACK_A_SAMPLE / "BlenderOpenMovies" / "caminandes_2_gran_dillama",
                           "en")
    assert report.ok, report.format()


# --------------------------------------------------------------------------- Track-B


@pytest.fixture()
def gold(tmp_path) -> Path:
    return _copy(TRACK_B_SAMPLE, tmp_path / "gold")


@pytest.mark.parametrize("value", [1e308, MAX_SEGMENT_SECONDS + 0.5])
def test_track_b_absurd_duration_is_an_error(gold, value):
    def edit(d):
        d["segments"][2]["duration_sec"] = value
    _edit_json(gold / "gt" / f"{STORY}.json", edit)
    msgs = _errors(validate_stories(gold), "segments[2].duration_sec")
    assert msgs and "less than or equal to 60" in msgs[0] and "input limits" in msgs[0]


def test_track_b_absurd_count_is_an_error(gold):
    def edit(d):
        seg = next(s for s in d["segments"] if any("count" in c for c in s["cast"]))
        item = next(c for c in seg["cast"] if "count" in c)
        item["count"] = 10**30
        edit.where = (d["segments"].index(seg), seg["cast"].index(item))
    _edit_json(gold / "gt" / f"{STORY}.json", edit)
    i, j = edit.where
    msgs = _errors(validate_stories(gold), f"segments[{i}].cast[{j}].count")
    assert msgs and f"less than or equal to {MAX_COUNT}" in msgs[0]


def test_track_b_duplicated_forbidden_entry_is_an_error(gold):
    """The official tally counts each ``forbidden`` entry: a repeat would count twice."""
    def edit(d):
        seg = next(s for s in d["segments"] if s["forbidden"])
        seg["forbidden"].append(dict(seg["forbidden"][0]))
        edit.where = (d["segments"].index(seg), len(seg["forbidden"]) - 1,
                      seg["forbidden"][0]["eid"])
    _edit_json(gold / "gt" / f"{STORY}.json", edit)
    i, j, eid = edit.where
    msgs = _errors(validate_stories(gold), f"segments[{i}].forbidden[{j}].eid")
    assert msgs and f"{eid} is forbidden twice" in msgs[0] and "list it once" in msgs[0]


def test_track_b_story_without_segments_is_an_error(gold):
    _edit_json(gold / "gt" / f"{STORY}.json", lambda d: d.update(segments=[]))
    msgs = _errors(validate_stories(gold), "segments")
    assert any("holds no segments" in m for m in msgs)


def test_track_b_gold_file_linked_from_outside_is_refused(gold, tmp_path):
    outside = tmp_path / "elsewhere.json"
    (gold / "gt" / f"{STORY}.json").rename(outside)
    (gold / "gt" / f"{STORY}.json").symlink_to(outside)
    report = validate_stories(gold)
    assert any(p.where == f"gt/{STORY}.json" and "symbolic link" in p.message
               and "outside the story root" in p.message for p in report.errors)


def test_track_b_a_linked_root_is_fine(gold, tmp_path):
    link = tmp_path / "linked"
    link.symlink_to(gold, target_is_directory=True)
    assert validate_stories(link).ok


# --------------------------------------------------------------------------- Track-A


@pytest.fixture()
def film(tmp_path) -> Path:
    root = _copy(TRACK_A_SAMPLE, tmp_path / "trackA")
    return root / "BlenderOpenMovies" / "spring"


@pytest.mark.parametrize("end", [1e308, MAX_FILM_SECONDS + 1])
def test_track_a_absurd_span_is_an_error(film, end):
    def edit(d):
        d["chunks"][-1]["seconds_span"][1] = end
    _edit_json(film / "gold" / "chunk_index.json", edit)
    report = validate_gold(film, "zh")
    assert any(p.field.endswith("seconds_span[1]") and "README, 'Input limits'" in p.message
               for p in report.errors), report.format()


def test_track_a_film_without_chunks_is_an_error(film):
    _edit_json(film / "gold" / "chunk_annotations.json", lambda d: d.update(chunks=[]))
    report = validate_gold(film, "zh")
    assert any(p.field == "chunks" and "holds no chunks" in p.message for p in report.errors)


def test_track_a_gold_linked_from_outside_is_refused(film, tmp_path):
    outside = tmp_path / "registry.json"
    (film / "gold" / "entity_registry.json").rename(outside)
    (film / "gold" / "entity_registry.json").symlink_to(outside)
    report = validate_gold(film.parent.parent, "zh")  # the whole root
    assert any(p.where == "spring/gold/entity_registry.json" and "symbolic link" in p.message
               for p in report.errors), report.format()


def test_track_a_unsafe_film_id_is_an_error(film):
    bad = film.with_name("spring evil")
    film.rename(bad)
    report = validate_gold(bad, "zh")
    assert any("not a safe file name" in p.message for p in report.errors)


# --------------------------------------------------------------------------- MIST


@pytest.fixture()
def cards(tmp_path) -> Path:
    root = tmp_path / "mist"
    build_mist(root, seed=0, n_cases=2)
    return root


def _edit_first_card(root: Path, edit) -> None:
    path = root / "cases.jsonl"
    lines = path.read_text("utf-8").splitlines()
    card = json.loads(lines[0])
    edit(card)
    path.write_text("\n".join([json.dumps(card), *lines[1:]]) + "\n", "utf-8")


@pytest.mark.parametrize("seconds", [100_000, MAX_SHOT_SECONDS + 1, float("inf")])
def test_mist_absurd_shot_is_an_error(cards, seconds):
    def edit(card):
        card["shots"][1]["duration_sec"] = seconds
    _edit_first_card(cards, edit)
    report = validate_cards(cards)
    assert _errors(report, "shots[1].duration_sec"), report.format()


def test_mist_absurd_count_is_an_error(cards):
    def edit(card):
        card["operations"] = [{"op": "put", "object": card["objects"][0]["id"],
                               "count": MIST_MAX_COUNT + 1, "from": None,
                               "to": card["reveal"]}]
    _edit_first_card(cards, edit)
    msgs = _errors(validate_cards(cards), "operations[0].count")
    assert msgs and "input limits" in msgs[0]


def test_mist_empty_cases_file_is_an_error_and_run_makes_no_run_dir(cards, tmp_path, capsys):
    (cards / "cases.jsonl").write_text("\n", "utf-8")
    report = validate_cards(cards)
    assert not report.ok and any("holds no card" in p.message for p in report.errors)
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as exc:
        main(["run", "mist", "--root", str(cards), "--generator", "sim", "--out", str(out),
              "--judge-cache", "off", "--quiet"])
    assert exc.value.code == 2
    assert "holds no card" in capsys.readouterr().err
    assert not out.exists()


def test_mist_cases_file_linked_from_outside_is_refused(cards, tmp_path):
    outside = tmp_path / "cases.jsonl"
    (cards / "cases.jsonl").rename(outside)
    (cards / "cases.jsonl").symlink_to(outside)
    report = validate_cards(cards)
    assert any(p.where == "cases.jsonl" and "symbolic link" in p.message for p in report.errors)


# --------------------------------------------------------------------------- CMBench, loop


def _edit_first_row(path: Path, edit) -> None:
    lines = path.read_text("utf-8").splitlines()
    row = json.loads(lines[0])
    edit(row)
    path.write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n", "utf-8")


def test_cmbench_absurd_reference_time_is_an_error(tmp_path):
    root = tmp_path / "cm"
    root.mkdir()
    build_cmbench(root, seed=0, n_cases=1)
    _edit_first_row(root / "metadata.jsonl",
                    lambda r: r["references"][0].update(timestamp_seconds=MAX_REFERENCE_SECONDS
                                                        + 1, frame_index=None))
    msgs = _errors(validate_cmbench(root), "references[0].timestamp_seconds")
    assert msgs and "input limit" in msgs[0]


@pytest.fixture()
def loop_root(tmp_path) -> Path:
    root = tmp_path / "ml"
    root.mkdir()
    build_memory_loop(root, seed=0, n_cases=1)
    return root


@pytest.mark.parametrize(("field", "value"), [("duration_seconds", MAX_DURATION_SECONDS * 10),
                                              ("fps", MAX_FPS + 1)])
def test_memory_loop_absurd_length_is_an_error(loop_root, field, value):
    _edit_first_row(loop_root / "cases.jsonl", lambda r: r.update({field: value}))
    msgs = _errors(validate_memory_loop(loop_root), field)
    assert msgs and "input limit" in msgs[0]


def test_memory_loop_empty_cases_file_makes_no_run_dir(loop_root, tmp_path, capsys):
    (loop_root / "cases.jsonl").write_text("", "utf-8")
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as exc:
        main(["run", "memory_loop", "--root", str(loop_root), "--generator", "sim", "--out",
              str(out), "--quiet"])
    assert exc.value.code == 2
    assert "holds no case rows" in capsys.readouterr().err
    assert not out.exists()


def test_track_b_empty_story_makes_no_run_dir(gold, tmp_path, capsys):
    _edit_json(gold / "gt" / f"{STORY}.json", lambda d: d.update(segments=[]))
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as exc:
        main(["run", "vmem_track_b", "--gold", str(gold), "--generator", "sim", "--out",
              str(out), "--judge-cache", "off", "--quiet"])
    assert exc.value.code == 2
    assert "holds no segments" in capsys.readouterr().err
    assert not out.exists()
