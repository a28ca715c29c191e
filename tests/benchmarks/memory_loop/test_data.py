"""Memory-loop data: manifest validation, loading, requests, pose tracks and the loop plans."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from vidmem.benchmarks.memory_loop.data import (
    generation_requests,
    load_memory_loop,
    read_manifest,
    read_pose_track,
    validate_memory_loop,
    write_manifest,
)
from vidmem.errors import UnknownNameError, UserInputError
from vidmem.metrics.loop_paths import (
    LOOP_IDS,
    LOOPS,
    loop_for_prompt,
    loop_offsets,
    planned_c2w,
)
from vidmem.metrics.revisit import pose_distance_matrix, revisit_pairs
from vidmem.sim.loops import loop_c2w
from vidmem.sim.world import Pose


def _case(case_id: str, loop_id: str = "yaw_loop_180", **kw) -> dict:
    row = {"case_id": case_id, "start_image": "start_images/a.png", "loop_id": loop_id,
           "prompt": LOOPS[loop_id].prompt if loop_id in LOOPS else "Turn.",
           "duration_seconds": 16.0, "fps": 8.0}
    row.update(kw)
    return row


def _write(root: Path, rows: list, extra_lines: tuple[str, ...] = ()) -> Path:
    (root / "start_images").mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (32, 18), (120, 30, 200)).save(root / "start_images" / "a.png")
    lines = [json.dumps(r) for r in rows] + list(extra_lines)
    (root / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def test_a_valid_dataset_loads(tmp_path):
    (tmp_path / "poses").mkdir()
    (tmp_path / "poses" / "b.json").write_text(json.dumps({"c2w": [np.eye(4).tolist()] * 3}))
    root = _write(tmp_path, [_case("a"), _case("b", "dolly_loop", poses="poses/b.json")])
    ds = load_memory_loop(root)
    assert ds.case_ids == ("a", "b") and not ds.warnings
    assert ds.case("b").difficulty == "medium" and ds.poses_path("a") is None
    assert ds.poses_path("b") == root / "poses" / "b.json"
    assert ds.start_image_path("a").is_file()
    with pytest.raises(UserInputError, match="no case 'c'"):
        ds.case("c")


def test_validation_reports_every_problem_at_once(tmp_path):
    rows = [
        _case("ok"),
        _case("ok"),  # duplicate
        _case("bad-loop", "yaw_loop_18"),
        _case("no-image", start_image="start_images/missing.png"),
        _case("numbers", duration_seconds=0, fps=True),
        _case("nan", fps=float("inf")),
        {k: v for k, v in _case("short").items() if k != "prompt"},
        _case("../escape"),
        _case("abs", start_image="/etc/passwd"),
        _case("up", start_image="../a.png"),
        _case("poses", poses="poses/none.json"),
        _case("extra", colour="blue"),
        _case("other-prompt", prompt="Fly to the moon."),
    ]
    root = _write(tmp_path, rows, ("{not json", "[1, 2]"))
    report = validate_memory_loop(root)
    assert not report.ok and report.n_cases == len(rows)
    text = report.format()
    found = {(p.where, p.field, p.severity) for p in report.problems}
    assert ("ok", "case_id", "error") in found
    assert ("bad-loop", "loop_id", "error") in found and "did you mean 'yaw_loop_180'" in text
    assert ("no-image", "start_image", "error") in found and "missing.png" in text
    assert ("numbers", "duration_seconds", "error") in found
    assert ("numbers", "fps", "error") in found and "boolean True" in text
    assert ("nan", "fps", "error") in found
    assert ("short", "prompt", "error") in found
    assert ("../escape", "case_id", "error") in found
    assert ("abs", "start_image", "error") in found and "absolute path" in text
    assert ("up", "start_image", "error") in found and "'..'" in text
    assert ("poses", "poses", "error") in found
    assert ("extra", "colour", "warning") in found
    assert ("other-prompt", "prompt", "warning") in found
    assert any(p.where.startswith("line 14") and "not valid JSON" in p.message for p in report.problems)
    assert any("expected a JSON object, found array" in p.message for p in report.problems)
    assert "duplicate case id (first on line 1)" in text
    with pytest.raises(UserInputError) as exc:
        load_memory_loop(root)
    msg = exc.value.message
    assert "error(s) in the memory-loop dataset" in msg and "bad-loop" in msg and "loop_id" in msg
    assert "vidmem validate memory_loop" in (exc.value.hint or "")


def test_warnings_do_not_block_loading(tmp_path):
    root = _write(tmp_path, [_case("x", colour="blue", prompt="Turn around, then come back.")])
    ds = load_memory_loop(root)
    assert len(ds) == 1 and {p.field for p in ds.warnings} == {"colour", "prompt"}
    assert ds.case("x").extra_fields == {"colour": "blue"}


def test_missing_root_empty_file_and_deep_checks(tmp_path):
    assert "dataset folder not found" in validate_memory_loop(tmp_path / "nope").format()
    assert "not found in" in validate_memory_loop(tmp_path).format()
    root = _write(tmp_path / "empty", [])
    assert "holds no case rows" in validate_memory_loop(root).format()
    root = tmp_path / "deep"
    (root / "poses").mkdir(parents=True)
    (root / "poses" / "p.json").write_text(json.dumps({"c2w": [[1, 2, 3]]}))
    _write(root, [_case("a", poses="poses/p.json")])
    (root / "start_images" / "a.png").write_bytes(b"not a png")
    assert validate_memory_loop(root).ok  # shallow: files exist
    deep = validate_memory_loop(root, deep=True)
    assert {(p.where, p.field) for p in deep.errors} == {("a", "start_image"), ("a", "poses")}
    assert "expected shape (N, 4, 4)" in deep.format()


def test_generation_requests_and_manifest_roundtrip(tmp_path):
    root = _write(tmp_path / "ds", [_case("a"), _case("b", "double_yaw_loop")])
    ds = load_memory_loop(root)
    reqs = generation_requests(ds, tmp_path / "videos", seed=3)
    assert [r.request_id for r in reqs] == ["a", "b"]
    r = reqs[1]
    assert r.benchmark == "memory_loop" and r.prompt == LOOPS["double_yaw_loop"].prompt
    assert r.out_path == str((tmp_path / "videos" / "b.mp4").absolute())
    assert Path(r.start_image).is_file() and r.duration_seconds == 16.0 and r.fps == 8.0
    assert r.seed == 3 and r.context_video is None
    assert write_manifest(reqs, tmp_path / "m.jsonl") == 2
    assert read_manifest(tmp_path / "m.jsonl") == reqs
    with pytest.raises(UserInputError, match="seed must be an int"):
        generation_requests(ds, tmp_path, seed=1.5)


def test_read_pose_track_accepts_the_sim_sidecar_and_a_bare_list(tmp_path):
    m = np.tile(np.eye(4), (3, 1, 1))
    (tmp_path / "a.json").write_text(json.dumps({"c2w": m.tolist(), "fps": 8}))
    (tmp_path / "b.json").write_text(json.dumps(m.tolist()))
    assert read_pose_track(tmp_path / "a.json").shape == (3, 4, 4)
    assert np.array_equal(read_pose_track(tmp_path / "b.json"), m)
    (tmp_path / "c.json").write_text(json.dumps({"poses": []}))
    with pytest.raises(UserInputError, match="case X: .*no 'c2w' key"):
        read_pose_track(tmp_path / "c.json", where="case X")
    bad = m.tolist()
    bad[1][0][0] = None
    (tmp_path / "d.json").write_text(json.dumps({"c2w": bad}))
    with pytest.raises(UserInputError, match="pose of frame 1 holds NaN"):
        read_pose_track(tmp_path / "d.json")
    with pytest.raises(UserInputError, match="not found"):
        read_pose_track(tmp_path / "none.json")


# --------------------------------------------------------------------------- plans


def test_the_six_loops_and_their_prompts():
    assert LOOP_IDS == ("yaw_loop_360", "yaw_loop_180", "dolly_loop", "palindrome_loop",
                        "square_loop", "double_yaw_loop")
    assert LOOPS["double_yaw_loop"].prompt == "Turn away and back to the start twice in a row."
    assert all(loop_for_prompt(d.prompt.upper()) == d.id for d in LOOPS.values())
    with pytest.raises(UnknownNameError, match="did you mean 'dolly_loop'"):
        loop_offsets("doly_loop", 10)
    with pytest.raises(UserInputError, match="n_frames must be an int >= 2"):
        planned_c2w("dolly_loop", 1)


@pytest.mark.parametrize("n", [128, 129, 480])
@pytest.mark.parametrize("loop_id", LOOP_IDS)
def test_plan_is_the_sim_trajectory_up_to_the_start_rotation(loop_id, n):
    start = Pose(yaw=210.0)
    rot = np.eye(4)
    rot[:3, :3] = start.rotation()
    plan = planned_c2w(loop_id, n)
    assert np.allclose(rot @ plan, loop_c2w(loop_id, start, n), atol=1e-12)
    assert np.array_equal(plan[0], np.eye(4)) and np.allclose(plan[-1], plan[0], atol=1e-12)


@pytest.mark.parametrize("n", [128, 129])
def test_out_and_back_loops_revisit_exact_poses_whatever_the_frame_count(n):
    # Each return pairs with a pose that is bit-identical, except on the band next to
    # the excursion boundary that the pairing rule itself creates (distance > 0.01).
    for loop_id in ("yaw_loop_180", "dolly_loop", "palindrome_loop", "double_yaw_loop"):
        pairs = revisit_pairs(planned_c2w(loop_id, n), 8.0, max_pairs=10**6)
        d = np.array([p.distance for p in pairs])
        assert (d == 0).sum() >= 0.7 * len(d), loop_id
        assert not np.any((d > 0) & (d < 0.01)), (loop_id, sorted(d[d > 0])[:3])
    m = planned_c2w("double_yaw_loop", n)
    period = (n - 1) // 2
    assert np.array_equal(m[:period], m[period:2 * period])
    assert pose_distance_matrix(m)[0].max() > 0.45


# --------------------------------------------------------------------------- huge values


def test_a_huge_prompt_is_quoted_as_a_bounded_excerpt(tmp_path):
    # A 6.4 MB prompt used to be quoted whole in the warning (and rich then wrapped it in
    # quadratic time); every message quotes at most an excerpt now.
    prompt = "walk around the room and look " * 100_000
    rows = [_case("big", prompt=prompt), _case("nums", fps=list(range(200_000))),
            _case("!" + "c" * 1_000_000), _case("img", start_image="s" * 1_000_000 + ".tif")]
    root = _write(tmp_path, rows)
    report = validate_memory_loop(root)
    assert len(report.format()) < 4_000
    for p in report.problems:
        assert len(str(p)) < 600, str(p)[:300]
    (warning,) = [p for p in report.warnings if p.where == "big"]
    assert warning.field == "prompt"
    assert warning.message.startswith("'walk around the room and look walk")
    assert f"...' ({len(prompt)} characters)" in warning.message
    assert any(p.field == "fps" and "(200000 items)" in p.message for p in report.errors)
    assert any(p.where.startswith("!ccc") and "(1000001 characters)" in p.message
               for p in report.errors)
    assert any(p.where == "img" and p.field == "start_image" for p in report.errors)
    with pytest.raises(UserInputError) as err:
        load_memory_loop(root)
    assert len(str(err.value)) < 4_000


# --------------------------------------------------------------------------- not UTF-8


def test_a_line_that_is_not_utf8_is_named_and_the_others_are_checked(tmp_path):
    root = _write(tmp_path, [])
    lines = [json.dumps(_case("a")).encode(),
             json.dumps(_case("b", prompt="Tourne \u00e0 droite."), ensure_ascii=False)
             .encode("latin-1"),
             json.dumps(_case("c", fps=0)).encode(),
             json.dumps(_case("d")).encode()]
    (root / "cases.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    report = validate_memory_loop(root)
    assert report.n_cases == 3
    assert [(p.where, p.field, p.line) for p in report.errors] == [
        ("line 2", "", 2), ("c", "fps", 3)]
    assert "not UTF-8" in report.errors[0].message and "0xe0" in report.errors[0].message
    with pytest.raises(UserInputError, match="line 2: not UTF-8"):
        load_memory_loop(root)


def test_the_raising_jsonl_reader_names_the_line_that_is_not_utf8(tmp_path):
    from vidmem.io.jsonl import read_jsonl

    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"a": 1}\n\n{"b": "\xff"}\n')
    rows = read_jsonl(path)
    assert next(rows) == (1, {"a": 1})
    with pytest.raises(UserInputError, match=r"rows.jsonl:3: not UTF-8 text \(byte 0xff"):
        next(rows)


def test_a_prompt_holding_a_unicode_line_separator_stays_on_its_line(tmp_path):
    root = _write(tmp_path, [])
    row = _case("a", prompt="Turn.\u2028Then come back.")
    (root / "cases.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n",
                                      encoding="utf-8")
    ds = load_memory_loop(root)
    assert ds.case("a").prompt == "Turn.\u2028Then come back."


# --------------------------------------------------------------------------- symbolic links


def test_start_image_and_poses_linked_outside_the_root_are_errors(tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    Image.new("RGB", (8, 8)).save(outside / "img.png")
    (outside / "p.json").write_text(json.dumps({"c2w": [np.eye(4).tolist()]}))
    root = _write(tmp_path / "ds", [_case("a", start_image="start_images/link.png",
                                          poses="poses/p.json")])
    (root / "start_images" / "link.png").symlink_to(outside / "img.png")
    (root / "poses").symlink_to(outside, target_is_directory=True)
    report = validate_memory_loop(root)
    errors = {(p.where, p.field): p.message for p in report.errors}
    assert set(errors) == {("a", "start_image"), ("a", "poses")}
    assert "'start_images/link.png' is a symbolic link to" in errors[("a", "start_image")]
    assert str((outside / "img.png").resolve()) in errors[("a", "start_image")]
    assert "'poses/p.json' leads through a symbolic link to" in errors[("a", "poses")]
    assert str((outside / "p.json").resolve()) in errors[("a", "poses")]
    with pytest.raises(UserInputError, match=r"a \(line 1\): field 'start_image': .*outside"):
        load_memory_loop(root)


def test_a_hugging_face_snapshot_layout_is_accepted(tmp_path):
    import hashlib
    import io

    repo = tmp_path / "hub" / "datasets--org--memory-loop"
    snapshot = repo / "snapshots" / ("0" * 40)
    buf = io.BytesIO()
    Image.new("RGB", (32, 18), (1, 2, 3)).save(buf, format="PNG")
    files = {"cases.jsonl": (json.dumps(_case("a", poses="poses/a.json")) + "\n").encode(),
             "start_images/a.png": buf.getvalue(),
             "poses/a.json": json.dumps({"c2w": [np.eye(4).tolist()] * 2}).encode()}
    for rel, data in files.items():
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        (snapshot / rel).parent.mkdir(parents=True, exist_ok=True)
        (snapshot / rel).symlink_to(Path(*[".."] * (rel.count("/") + 2), "blobs", blob.name))
    assert (snapshot / "start_images" / "a.png").resolve().parent == (repo / "blobs").resolve()
    report = validate_memory_loop(snapshot, deep=True)
    assert report.ok and report.problems == (), report.format()
    assert load_memory_loop(snapshot).case_ids == ("a",)

    # outside the cache repository is still outside
    stray = tmp_path / "stray.png"
    stray.write_bytes(buf.getvalue())
    (snapshot / "start_images" / "a.png").unlink()
    (snapshot / "start_images" / "a.png").symlink_to(stray)
    report = validate_memory_loop(snapshot)
    assert [(p.where, p.field) for p in report.errors] == [("a", "start_image")]
    assert str(stray) in report.errors[0].message


def test_an_integer_too_big_for_a_float_is_an_error_not_a_crash(tmp_path):
    # math.isfinite(10**400) raises OverflowError; validation must name the field instead
    report = validate_memory_loop(_write(tmp_path, [_case("huge", duration_seconds=10**400)]))
    assert ("huge", "duration_seconds", "error") in {(p.where, p.field, p.severity) for p in report.problems}
