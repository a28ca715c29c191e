"""CMBench loader, validation, reference resolution, manifests and continuation lookup.

Datasets are written in the official schema into tmp_path, with tiny real MP4 files
(24 frames, 64x48, 8 fps: frame k is shown from k/8 s; the video lasts 3 s). Frames
carry their index in a frame code, so a resolved reference can be checked by decoding.
"""

from __future__ import annotations

import json
import shutil
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import pytest

from vidmem.benchmarks.cmbench.data import (
    OFFICIAL_COUNTS,
    CMBenchDataset,
    ResolvedReference,
    continuation_requests,
    dataset_stats,
    find_continuations,
    load_cmbench,
    read_kv_log,
    read_manifest,
    resolve_reference,
    resolve_references,
    validate_cmbench,
    write_manifest,
)
from vidmem.errors import UserInputError
from vidmem.generators.protocol import GenerationRequest
from vidmem.io.framecode import decode_index, iter_indexed_frames
from vidmem.io.video import probe, read_frames, write_video

W, H, N_FRAMES, FPS = 64, 48, 24, 8
VIDEO = "videos/synthetic/syn_001.mp4"
TID = "syn_001_reappear_01"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "clip.mp4"
    write_video(path, iter_indexed_frames(N_FRAMES, (W, H), seed=3), FPS, gop=6)
    return path


def task_row(task_id: str = TID, video: str = VIDEO, **over: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "type": "synthetic",
        "task_id": task_id,
        "scene": "kitchen",
        "video": video,
        "context_clip_prompts": [
            {"clip_id": f"{k:02d}", "clip_prompt": f"part {k} of the kitchen walk"}
            for k in range(1, 7)
        ],
        "continue_prompt": "The red mug on the counter comes back into view.",
        "task_type": "reappear",
        "target_label": "red mug",
        "target_aliases": ["mug", "cup"],
        "references": [
            {
                "timestamp_seconds": 1.0,
                "frame_index": 8,
                "bbox_xyxy_normalized": [0.1, 0.25, 0.55, 0.9],
            }
        ],
    }
    row.update(over)
    return row


def make_root(
    root: Path, rows: list[Any], template: Path, videos: tuple[str, ...] = (VIDEO,)
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for v in videos:
        (root / v).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(template, root / v)
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    (root / "metadata.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def errors_of(report) -> list[tuple[str, str]]:
    return [(p.where, p.field) for p in report.errors]


# --------------------------------------------------------------------------- loading


def test_valid_dataset_loads(tmp_path: Path, template: Path) -> None:
    rows = [task_row(), task_row("syn_001_revisit_01", task_type="revisit")]
    root = make_root(tmp_path / "cm", rows, template)
    report = validate_cmbench(root, probe_videos=True)
    assert report.ok and report.problems == () and report.n_rows == 2
    ds = load_cmbench(root)
    assert isinstance(ds, CMBenchDataset)
    assert ds.task_ids == (TID, "syn_001_revisit_01") and ds.warnings == ()
    assert ds.root == root.absolute() and ds.videos == (VIDEO,)
    t = ds.task(TID)
    assert t.video_id == "syn_001" and t.target_aliases == ("mug", "cup")
    assert [c.clip_id for c in t.context_clip_prompts] == ["01", "02", "03", "04", "05", "06"]
    assert t.references[0].bbox_xyxy_normalized == (0.1, 0.25, 0.55, 0.9)
    assert ds.video_path(TID) == root.absolute() / VIDEO
    with pytest.raises(UserInputError, match="did you mean 'syn_001_reappear_01'"):
        ds.task("syn_001_reappear_1")
    with pytest.raises(Exception):  # noqa: B017 - frozen pydantic model
        t.task_id = "x"  # type: ignore[misc]


def _drop(key: str):
    return lambda r: r.pop(key)


def _set(key: str, value: Any):
    return lambda r: r.__setitem__(key, value)


def _ref(key: str, value: Any):
    return lambda r: r["references"][0].__setitem__(key, value)


def _clip(k: int, key: str, value: Any):
    return lambda r: r["context_clip_prompts"][k].__setitem__(key, value)


RULES: list[tuple[str, Any, str, str]] = [
    # (case id, mutation, field, message fragment)
    *[
        (f"missing-{f}", _drop(f), f, "missing")
        for f in (
            "type",
            "scene",
            "video",
            "context_clip_prompts",
            "continue_prompt",
            "task_type",
            "target_label",
            "target_aliases",
            "references",
        )
    ],
    ("type-value", _set("type", "synthetc"), "type", "did you mean 'synthetic'"),
    ("type-not-string", _set("type", 3), "type", "expected one of ['synthetic', 'real']"),
    ("task_type-value", _set("task_type", "reapear"), "task_type", "did you mean 'reappear'"),
    ("scene-type", _set("scene", 5), "scene", "expected a string, found integer 5"),
    ("task_id-unsafe", _set("task_id", "syn_001/../../x"), "task_id", "not a safe file name"),
    ("video-absolute", _set("video", "/data/cm/syn_001.mp4"), "video", "absolute path"),
    ("video-windows-absolute", _set("video", "C:\\cm\\syn_001.mp4"), "video", "absolute path"),
    ("video-dotdot", _set("video", "videos/../../syn_001.mp4"), "video", "contains '..'"),
    (
        "video-missing-file",
        _set("video", "videos/synthetic/syn_009.mp4"),
        "video",
        "file not found",
    ),
    ("video-folder", _set("video", "videos/synthetic"), "video", "is a folder"),
    ("video-empty", _set("video", ""), "video", "must not be empty"),
    (
        "clips-not-array",
        _set("context_clip_prompts", {"01": "a"}),
        "context_clip_prompts",
        "expected an array of 6 objects",
    ),
    (
        "clips-five",
        lambda r: r["context_clip_prompts"].pop(),
        "context_clip_prompts",
        "expected exactly 6 clip prompts, found 5",
    ),
    (
        "clips-seven",
        lambda r: r["context_clip_prompts"].append({"clip_id": "07", "clip_prompt": "x"}),
        "context_clip_prompts",
        "found 7",
    ),
    (
        "clip-empty-prompt",
        _clip(2, "clip_prompt", "  "),
        "context_clip_prompts[2].clip_prompt",
        "must not be empty",
    ),
    (
        "clip-prompt-type",
        _clip(1, "clip_prompt", None),
        "context_clip_prompts[1].clip_prompt",
        "expected a string",
    ),
    (
        "clip-missing-id",
        lambda r: r["context_clip_prompts"][0].pop("clip_id"),
        "context_clip_prompts[0].clip_id",
        "missing",
    ),
    (
        "clip-id-type",
        _clip(0, "clip_id", 1),
        "context_clip_prompts[0].clip_id",
        "expected a string",
    ),
    (
        "clip-not-object",
        lambda r: r["context_clip_prompts"].__setitem__(4, "text"),
        "context_clip_prompts[4]",
        "expected an object",
    ),
    ("continue_prompt-empty", _set("continue_prompt", ""), "continue_prompt", "must not be empty"),
    ("target_label-blank", _set("target_label", "   "), "target_label", "must not be empty"),
    ("target_label-type", _set("target_label", ["mug"]), "target_label", "expected a string"),
    ("aliases-type", _set("target_aliases", "mug"), "target_aliases", "expected an array"),
    (
        "alias-item-type",
        _set("target_aliases", ["mug", 2]),
        "target_aliases[1]",
        "expected a string",
    ),
    ("references-empty", _set("references", []), "references", "must not be empty"),
    ("references-type", _set("references", {"t": 1}), "references", "expected an array"),
    (
        "reference-not-object",
        _set("references", [[0.1, 0.2]]),
        "references[0]",
        "expected an object",
    ),
    (
        "box-three",
        _ref("bbox_xyxy_normalized", [0.1, 0.2, 0.5]),
        "references[0].bbox_xyxy_normalized",
        "expected 4 numbers",
    ),
    (
        "box-nan",
        _ref("bbox_xyxy_normalized", [0.1, float("nan"), 0.5, 0.9]),
        "references[0].bbox_xyxy_normalized",
        "y0 = nan is not finite",
    ),
    (
        "box-inf",
        _ref("bbox_xyxy_normalized", [0.1, 0.2, float("inf"), 0.9]),
        "references[0].bbox_xyxy_normalized",
        "x1 = inf is not finite",
    ),
    (
        "box-outside",
        _ref("bbox_xyxy_normalized", [0.1, 0.2, 1.5, 0.9]),
        "references[0].bbox_xyxy_normalized",
        "x1 = 1.5 is outside [0, 1]",
    ),
    (
        "box-negative",
        _ref("bbox_xyxy_normalized", [-0.1, 0.2, 0.5, 0.9]),
        "references[0].bbox_xyxy_normalized",
        "x0 = -0.1 is outside [0, 1]",
    ),
    (
        "box-zero-width",
        _ref("bbox_xyxy_normalized", [0.5, 0.2, 0.5, 0.9]),
        "references[0].bbox_xyxy_normalized",
        "zero or negative width",
    ),
    (
        "box-inverted-height",
        _ref("bbox_xyxy_normalized", [0.1, 0.9, 0.5, 0.2]),
        "references[0].bbox_xyxy_normalized",
        "zero or negative height",
    ),
    (
        "box-string-item",
        _ref("bbox_xyxy_normalized", ["0.1", 0.2, 0.5, 0.9]),
        "references[0].bbox_xyxy_normalized",
        "x0 = '0.1' is not a number",
    ),
    (
        "box-bool-item",
        _ref("bbox_xyxy_normalized", [0.1, 0.2, True, 0.9]),
        "references[0].bbox_xyxy_normalized",
        "x1 = True is not a number",
    ),
    (
        "box-not-array",
        _ref("bbox_xyxy_normalized", "0.1 0.2 0.5 0.9"),
        "references[0].bbox_xyxy_normalized",
        "expected [x_min, y_min, x_max, y_max]",
    ),
    (
        "box-missing",
        lambda r: r["references"][0].pop("bbox_xyxy_normalized"),
        "references[0].bbox_xyxy_normalized",
        "missing",
    ),
    (
        "timestamp-negative",
        _ref("timestamp_seconds", -0.5),
        "references[0].timestamp_seconds",
        "finite number of seconds >= 0, found -0.5",
    ),
    (
        "timestamp-inf",
        _ref("timestamp_seconds", float("inf")),
        "references[0].timestamp_seconds",
        "found inf",
    ),
    (
        "timestamp-huge-int",  # too big for a float: math.isfinite raised OverflowError
        _ref("timestamp_seconds", 10**400),
        "references[0].timestamp_seconds",
        "finite number of seconds >= 0",
    ),
    (
        "timestamp-string",
        _ref("timestamp_seconds", "1.0"),
        "references[0].timestamp_seconds",
        "found '1.0'",
    ),
    (
        "timestamp-bool",
        _ref("timestamp_seconds", True),
        "references[0].timestamp_seconds",
        "found True",
    ),
    (
        "timestamp-missing",
        lambda r: r["references"][0].pop("timestamp_seconds"),
        "references[0].timestamp_seconds",
        "missing",
    ),
    (
        "frame_index-negative",
        _ref("frame_index", -1),
        "references[0].frame_index",
        "null or an integer >= 0, found integer -1",
    ),
    (
        "frame_index-float",
        _ref("frame_index", 8.0),
        "references[0].frame_index",
        "found number 8.0",
    ),
    (
        "frame_index-bool",
        _ref("frame_index", True),
        "references[0].frame_index",
        "found boolean True",
    ),
    (
        "frame_index-string",
        _ref("frame_index", "8"),
        "references[0].frame_index",
        "found string '8'",
    ),
]


@pytest.mark.parametrize(("case", "mutate", "field", "fragment"), RULES, ids=[r[0] for r in RULES])
def test_each_rule_names_task_and_field(tmp_path, template, case, mutate, field, fragment):
    bad = task_row()
    mutate(bad)
    good = task_row("syn_001_revisit_01", task_type="revisit")
    root = make_root(tmp_path / "cm", [good, bad], template)
    (root / "videos/synthetic").mkdir(exist_ok=True)
    report = validate_cmbench(root)
    where = bad["task_id"]
    matching = [p for p in report.errors if p.field == field]
    assert matching, report.format()
    p = matching[0]
    assert (p.where, p.line) == (where, 2), report.format()
    assert fragment in p.message, p.message
    assert all(e.where == where for e in report.errors), report.format()
    with pytest.raises(UserInputError) as err:
        load_cmbench(root)
    assert f"{where} (line 2): field '{field}'" in str(err.value)


def test_duplicate_task_id(tmp_path, template):
    root = make_root(tmp_path / "cm", [task_row(), task_row(), task_row()], template)
    report = validate_cmbench(root)
    assert [(p.where, p.field, p.line) for p in report.errors] == [
        (TID, "task_id", 2),
        (TID, "task_id", 3),
    ]
    assert "duplicate task id (first on line 1)" in report.errors[0].message


def test_rows_without_task_id_are_named_by_line(tmp_path, template):
    no_id = task_row()
    del no_id["task_id"]
    rows = [task_row(), no_id, {**task_row(), "task_id": 5}]
    root = make_root(tmp_path / "cm", rows, template)
    report = validate_cmbench(root)
    assert ("line 2", "task_id") in errors_of(report)
    assert ("line 3", "task_id") in errors_of(report)
    assert "expected a string, found integer 5" in str(report.errors[-1])


def test_bad_lines_and_missing_files(tmp_path, template):
    root = make_root(tmp_path / "cm", [task_row(), "{not json", "[1, 2]", ""], template)
    report = validate_cmbench(root)
    assert errors_of(report) == [("line 2", ""), ("line 3", "")]
    assert "not valid JSON" in report.errors[0].message
    assert "expected a JSON object, found array" in report.errors[1].message

    empty = make_root(tmp_path / "empty", [], template)
    (empty / "metadata.jsonl").write_text("\n\n", encoding="utf-8")
    assert "holds no task rows" in validate_cmbench(empty).errors[0].message

    no_meta = tmp_path / "no_meta"
    no_meta.mkdir()
    report = validate_cmbench(no_meta)
    assert report.errors[0].where == "metadata.jsonl" and "not found" in report.errors[0].message
    with pytest.raises(UserInputError, match=r"metadata.jsonl: not found in"):
        load_cmbench(no_meta)
    with pytest.raises(UserInputError, match="dataset folder not found"):
        load_cmbench(tmp_path / "nowhere")


def test_all_problems_are_reported_at_once(tmp_path, template):
    a = task_row(type="movie", continue_prompt="", target_aliases="mug")
    a["references"][0].update(frame_index=-3, bbox_xyxy_normalized=[0.6, 0.2, 0.5, 1.2])
    a["context_clip_prompts"] = a["context_clip_prompts"][:4]
    b = task_row("syn_001_revisit_01", task_type="revisit", video="../outside.mp4")
    del b["target_label"]
    root = make_root(tmp_path / "cm", [a, b, "oops"], template)
    report = validate_cmbench(root)
    assert errors_of(report) == [
        (TID, "type"),
        (TID, "continue_prompt"),
        (TID, "context_clip_prompts"),
        (TID, "target_aliases"),
        (TID, "references[0].frame_index"),
        (TID, "references[0].bbox_xyxy_normalized"),
        (TID, "references[0].bbox_xyxy_normalized"),
        ("syn_001_revisit_01", "target_label"),
        ("syn_001_revisit_01", "video"),
        ("line 3", ""),
    ]
    with pytest.raises(UserInputError) as err:
        load_cmbench(root)
    text = str(err.value)
    assert "10 error(s) in the CMBench dataset" in text
    assert text.count("\n  error: ") == 10
    assert "fix:" in text


def test_long_error_lists_are_cut_in_the_load_message(tmp_path, template):
    rows = [task_row(f"syn_001_reappear_{k:02d}", type="x") for k in range(1, 26)]
    root = make_root(tmp_path / "cm", rows, template)
    assert len(validate_cmbench(root).errors) == 25
    with pytest.raises(UserInputError) as err:
        load_cmbench(root)
    assert "25 error(s)" in str(err.value) and "... and 5 more error(s)" in str(err.value)
    assert str(err.value).count("\n  error: ") == 20


# --------------------------------------------------------------------------- warnings


def test_warnings_do_not_block_loading(tmp_path, template):
    rows = [
        task_row("kitchen_mug"),  # not {video_id}_{task_type}_{NN}
        task_row("syn_002_reappear_01"),  # wrong video id
        task_row("syn_001_revisit_01"),  # task type says reappear
        task_row("syn_001_reappear_1"),  # one digit
        task_row("syn_001_reappear_02", scene="", target_aliases=["mug", ""], license="cc-by"),
    ]
    rows[4]["context_clip_prompts"][3]["clip_id"] = "4"
    rows[4]["context_clip_prompts"][5]["camera"] = "static"
    del rows[4]["references"][0]["frame_index"]
    rows[4]["references"][0]["visibility"] = 0.8
    root = make_root(tmp_path / "cm", rows, template)
    report = validate_cmbench(root)
    assert report.ok
    pattern = [p for p in report.warnings if p.field == "task_id"]
    assert [p.where for p in pattern] == [
        "kitchen_mug",
        "syn_002_reappear_01",
        "syn_001_revisit_01",
        "syn_001_reappear_1",
    ]
    assert "expected syn_001_reappear_NN" in pattern[0].message
    others = {(p.where, p.field) for p in report.warnings} - {(p.where, p.field) for p in pattern}
    assert others == {
        ("syn_001_reappear_02", "scene"),
        ("syn_001_reappear_02", "target_aliases[1]"),
        ("syn_001_reappear_02", "license"),
        ("syn_001_reappear_02", "context_clip_prompts[3].clip_id"),
        ("syn_001_reappear_02", "context_clip_prompts[5].camera"),
        ("syn_001_reappear_02", "references[0].frame_index"),
        ("syn_001_reappear_02", "references[0].visibility"),
    }
    ds = load_cmbench(root)
    assert len(ds) == 5 and ds.warnings == report.warnings
    t = ds.task("syn_001_reappear_02")
    assert t.extra_fields == {"license": "cc-by"}
    assert t.references[0].frame_index is None
    assert t.references[0].model_extra == {"visibility": 0.8}
    assert t.context_clip_prompts[5].model_extra == {"camera": "static"}
    assert "warning: syn_001_reappear_02 (line 5): field 'scene': is empty" in report.format()


# --------------------------------------------------------------------------- references


def _one_task_ds(tmp_path, template, ref: dict[str, Any], video: str = VIDEO, src=None):
    root = make_root(tmp_path / "cm", [task_row(video=video, references=[ref])], template, ())
    (root / video).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src or template, root / video)
    ds = load_cmbench(root)
    return ds, ds.tasks[0], probe(root / video)


@pytest.mark.parametrize(
    ("timestamp", "expected"),
    [(0.0, 0), (1.0, 8), (1.06, 8), (1.124, 8), (1.125, 9), (2.999, 23)],
)
def test_timestamp_only_reference_uses_the_frame_on_screen(tmp_path, template, timestamp, expected):
    ref = {
        "timestamp_seconds": timestamp,
        "frame_index": None,
        "bbox_xyxy_normalized": [0, 0, 1, 1],
    }
    ds, task, info = _one_task_ds(tmp_path, template, ref)
    res = resolve_reference(task, task.references[0], info)
    assert (res.frame_index, res.source, res.note) == (expected, "timestamp", None)
    assert res.time_seconds == pytest.approx(expected / FPS)
    assert decode_index(read_frames(info.path, [res.frame_index])[0]) == expected


def test_frame_index_wins_and_box_is_floored_and_ceiled(tmp_path, template):
    ref = {
        "timestamp_seconds": 1.0,
        "frame_index": 8,
        "bbox_xyxy_normalized": [0.1, 0.25, 0.55, 0.9],
    }
    ds, task, info = _one_task_ds(tmp_path, template, ref)
    res = resolve_reference(task, 0, info)
    # 0.1*64 = 6.4 -> 6 ; 0.25*48 = 12 -> 12 ; 0.55*64 = 35.2 -> 36 ; 0.9*48 = 43.2 -> 44
    assert res == ResolvedReference(8, (6, 12, 36, 44), None, TID, 0, "frame_index", 1.0)
    assert resolve_references(ds, TID) == [res]


def test_box_snaps_float_noise(tmp_path, template):
    # 0.5 + 1e-10 -> 32.0000000064 px: snapped to 32 instead of growing to 33;
    # 0.3 * 48 = 14.399999999999999 is a genuine fraction -> floor 14; 1.0 * 48 = 48.
    ref = {
        "timestamp_seconds": 0.0,
        "frame_index": 0,
        "bbox_xyxy_normalized": [0.25, 0.3, 0.5 + 1e-10, 1.0],
    }
    _, task, info = _one_task_ds(tmp_path, template, ref)
    assert resolve_reference(task, 0, info).box_px == (16, 14, 32, 48)


@pytest.mark.parametrize(
    ("timestamp", "note"),
    [
        (1.125, None),  # frame 9: one frame away is tolerated
        (0.875, None),  # frame 7
        (1.25, "disagree by 2 frames"),  # frame 10
        (0.2, "disagree by 7 frames"),  # frame 1
        (3.5, "lies outside the video"),
    ],
)
def test_disagreement_between_index_and_timestamp_is_noted(tmp_path, template, timestamp, note):
    ref = {"timestamp_seconds": timestamp, "frame_index": 8, "bbox_xyxy_normalized": [0, 0, 1, 1]}
    ds, task, info = _one_task_ds(tmp_path, template, ref)
    res = resolve_reference(task, 0, info)
    assert res.frame_index == 8 and res.source == "frame_index"
    report = validate_cmbench(ds.root, probe_videos=True)
    assert report.ok
    if note is None:
        assert res.note is None and report.warnings == ()
    else:
        assert res.note is not None and note in res.note and "frame_index is used" in res.note
        assert [(p.where, p.field) for p in report.warnings] == [(TID, "references[0]")]
        assert note in report.warnings[0].message


def test_frame_index_out_of_range(tmp_path, template):
    ref = {"timestamp_seconds": 1.0, "frame_index": 24, "bbox_xyxy_normalized": [0, 0, 1, 1]}
    ds, task, info = _one_task_ds(tmp_path, template, ref)
    with pytest.raises(UserInputError) as err:
        resolve_reference(task, task.references[0], info)
    text = str(err.value)
    assert f"task {TID}: field 'references[0].frame_index'" in text
    assert "frame_index 24 is outside the video" in text and "24 frames (0..23)" in text
    report = validate_cmbench(ds.root, probe_videos=True)
    assert [(p.where, p.field) for p in report.errors] == [(TID, "references[0].frame_index")]
    with pytest.raises(UserInputError, match="references\\[0\\].frame_index"):
        load_cmbench(ds.root, probe_videos=True)


def test_timestamp_only_reference_past_the_end(tmp_path, template):
    ref = {"timestamp_seconds": 3.0, "frame_index": None, "bbox_xyxy_normalized": [0, 0, 1, 1]}
    ds, task, info = _one_task_ds(tmp_path, template, ref)
    with pytest.raises(
        UserInputError, match=r"field 'references\[0\].timestamp_seconds'.*0 <= t < 3"
    ):
        resolve_reference(task, 0, info)
    with pytest.raises(UserInputError, match="reference 1 does not exist"):
        resolve_reference(task, 1, info)


def test_unreadable_context_video_is_an_error_when_probing(tmp_path, template):
    root = make_root(tmp_path / "cm", [task_row()], template)
    (root / VIDEO).write_bytes(b"not a video at all")
    assert validate_cmbench(root).ok  # without probing, only existence is checked
    report = validate_cmbench(root, probe_videos=True)
    assert [(p.where, p.field) for p in report.errors] == [(TID, "video")]
    assert "cannot be opened" in report.errors[0].message


def _write_with_pts(path: Path, pts: list[int], time_base: Fraction) -> None:
    """Frame k carries code k and is shown at PTS ``pts[k]`` (``time_base`` units)."""
    container = av.open(str(path), "w")
    stream = container.add_stream("libx264", rate=30)
    stream.width, stream.height = W, H
    stream.pix_fmt = "yuv420p"
    stream.codec_context.time_base = time_base
    stream.options = {"crf": "20", "x264-params": "keyint=4:min-keyint=4:scenecut=0"}
    for p, frame in zip(pts, iter_indexed_frames(len(pts), (W, H), seed=5), strict=True):
        vf = av.VideoFrame.from_ndarray(frame, format="rgb24")
        vf.pts, vf.time_base = p, time_base
        for packet in stream.encode(vf):
            container.mux(packet)
    for packet in stream.encode(None):
        container.mux(packet)
    container.close()


def test_timestamp_seek_uses_real_pts_on_vfr_video(tmp_path, template):
    pts_ms = [0, 40, 80, 200, 240, 500, 520, 900, 1000, 1100]
    src = tmp_path / "vfr.mp4"
    _write_with_pts(src, pts_ms, Fraction(1, 1000))
    refs = [
        {"timestamp_seconds": t, "frame_index": None, "bbox_xyxy_normalized": [0, 0, 1, 1]}
        for t in (0.21, 0.51, 0.95)
    ]
    root = make_root(tmp_path / "cm", [task_row(references=refs)], template, ())
    (root / VIDEO).parent.mkdir(parents=True)
    shutil.copyfile(src, root / VIDEO)
    ds = load_cmbench(root)
    info = probe(root / VIDEO)
    assert info.is_vfr
    got = [r.frame_index for r in resolve_references(ds, TID)]
    # 0.21 s: frame 3 (0.200) is on screen; 0.51 s: frame 5 (0.500), frame 6 starts at
    # 0.520; 0.95 s: frame 7 (0.900). The average rate (~9.9 fps) would say 2, 5, 9.
    assert got == [3, 5, 7]
    assert [round(t * info.fps) for t in (0.21, 0.51, 0.95)] != got
    assert [decode_index(f) for f in read_frames(info.path, got)] == got


def test_timestamps_are_relative_to_the_first_frame_on_offset_pts(tmp_path, template):
    src = tmp_path / "offset.mp4"
    _write_with_pts(src, list(range(15, 15 + 20)), Fraction(1, 30))  # first frame at 0.5 s
    ref = {"timestamp_seconds": 0.1, "frame_index": 3, "bbox_xyxy_normalized": [0, 0, 1, 1]}
    ds, task, info = _one_task_ds(tmp_path, template, ref, src=src)
    assert info.first_pts_seconds == pytest.approx(0.5)
    res = resolve_reference(task, 0, info)
    assert (res.frame_index, res.note) == (3, None)  # 0.1 s after frame 0 = frame 3


# --------------------------------------------------------------------------- statistics


def test_dataset_stats_small(tmp_path, template):
    real = "videos/real/real_001.mp4"
    syn2 = "videos/synthetic/syn_002.mp4"
    rows = [
        task_row(),
        task_row("syn_001_revisit_01", task_type="revisit"),
        task_row("syn_002_reappear_01", video=syn2),
        task_row("real_001_reappear_01", video=real, type="real"),
    ]
    root = make_root(tmp_path / "cm", rows, template, (VIDEO, syn2, real))
    stats = dataset_stats(load_cmbench(root))
    assert (stats.tasks, stats.videos) == (4, 3)
    assert stats.by_type == {"synthetic": 3, "real": 1}
    assert stats.by_task_type == {"reappear": 3, "revisit": 1}
    assert stats.by_cell == {
        ("synthetic", "reappear"): 2,
        ("synthetic", "revisit"): 1,
        ("real", "reappear"): 1,
    }
    assert stats.videos_by_type == {"synthetic": 2, "real": 1}
    assert stats.table()[-1] == {
        "type": "total",
        "videos": 3,
        "reappear": 3,
        "revisit": 1,
        "tasks": 4,
    }
    assert "videos: 3 here, 58 in the official release" in stats.differences_from_official()


def test_dataset_stats_of_an_official_shaped_release(tmp_path, template):
    rows, videos = [], []
    for vtype, prefix, n_videos, n_reappear, n_revisit in (
        ("synthetic", "syn", 50, 67, 35),
        ("real", "real", 8, 10, 4),
    ):
        ids = [f"{prefix}_{k:03d}" for k in range(1, n_videos + 1)]
        for vid in ids:
            videos.append(f"videos/{vtype}/{vid}.mp4")
        for task_type, count in (("reappear", n_reappear), ("revisit", n_revisit)):
            for j in range(count):
                vid = ids[j % n_videos]
                nn = j // n_videos + 1
                rows.append(
                    task_row(
                        f"{vid}_{task_type}_{nn:02d}",
                        video=f"videos/{vtype}/{vid}.mp4",
                        type=vtype,
                        task_type=task_type,
                    )
                )
    root = make_root(tmp_path / "cm", rows, template, tuple(videos))
    ds = load_cmbench(root)
    assert ds.warnings == ()
    stats = dataset_stats(ds)
    assert stats.as_counts() == dict(OFFICIAL_COUNTS)
    assert stats.differences_from_official() == []


# --------------------------------------------------------------------------- requests


def test_requests_and_manifest_round_trip(tmp_path, template):
    rows = [
        task_row(),
        task_row("syn_001_revisit_01", task_type="revisit", continue_prompt="Go back."),
    ]
    ds = load_cmbench(make_root(tmp_path / "cm", rows, template))
    out = tmp_path / "gen"
    reqs = continuation_requests(ds, out, fps=16, duration_seconds=5.0, seed=3)
    assert [r.request_id for r in reqs] == [TID, "syn_001_revisit_01"]
    r = reqs[1]
    assert (r.benchmark, r.prompt, r.fps, r.duration_seconds, r.seed) == (
        "cmbench",
        "Go back.",
        16.0,
        5.0,
        3,
    )
    assert r.context_video == str((tmp_path / "cm" / VIDEO).absolute())
    assert r.out_path == str(out.absolute() / "syn_001_revisit_01.mp4")
    assert r.extras == {} and r.references == ()  # no target truth reaches the generator
    assert not out.exists()

    manifest = tmp_path / "m" / "requests.jsonl"
    assert write_manifest(reqs, manifest) == 2
    assert read_manifest(manifest) == reqs
    first = json.loads(manifest.read_text().splitlines()[0])
    assert first["request_id"] == TID and first["prompt"] == reqs[0].prompt

    assert continuation_requests(ds, "rel")[0].out_path == str(
        Path("rel").absolute() / f"{TID}.mp4"
    )
    with pytest.raises(UserInputError, match="fps must be a positive number"):
        continuation_requests(ds, out, fps=0)
    with pytest.raises(UserInputError, match="duration_seconds must be a positive number"):
        continuation_requests(ds, out, duration_seconds=float("nan"))
    with pytest.raises(UserInputError, match="seed must be an int"):
        continuation_requests(ds, out, seed=1.5)  # type: ignore[arg-type]
    with pytest.raises(UserInputError, match="appears twice"):
        write_manifest([reqs[0], reqs[0]], tmp_path / "dup.jsonl")
    with pytest.raises(UserInputError, match="item 0 is a dict"):
        write_manifest([reqs[0].to_dict()], tmp_path / "bad.jsonl")  # type: ignore[list-item]

    bad = tmp_path / "bad_manifest.jsonl"
    row = reqs[0].to_dict()
    bad.write_text(json.dumps(row) + "\n" + json.dumps({**row, "prompt": ""}) + "\n")
    with pytest.raises(UserInputError, match=r"bad_manifest.jsonl:2: field 'prompt'"):
        read_manifest(bad)
    bad.write_text(json.dumps(row) + "\n\n" + json.dumps(row) + "\n")
    with pytest.raises(UserInputError, match=r"request_id .* appears twice \(line 1 and line 3\)"):
        read_manifest(bad)
    assert GenerationRequest.from_dict(row) == reqs[0]


def test_find_continuations_lists_missing_by_task_id(tmp_path, template):
    ids = [
        "syn_001_reappear_01",
        "syn_001_reappear_02",
        "syn_001_reappear_03",
        "syn_001_reappear_04",
    ]
    ds = load_cmbench(make_root(tmp_path / "cm", [task_row(t) for t in ids], template))
    out = tmp_path / "gen"
    out.mkdir()
    shutil.copyfile(template, out / f"{ids[0]}.mp4")
    (out / f"{ids[2]}.mp4").write_bytes(b"")
    (out / f"{ids[3]}.mp4").write_bytes(b"\x00garbage" * 100)
    shutil.copyfile(template, out / "syn_001_reappear_2.mp4")  # misnamed
    scan = find_continuations(ds, out)
    found, missing = scan
    assert found == {ids[0]: out / f"{ids[0]}.mp4"}
    assert missing == ids[1:]
    assert "not found" in scan.reasons[ids[1]]
    assert "empty (0 bytes)" in scan.reasons[ids[2]]
    assert "cannot be opened as a video container" in scan.reasons[ids[3]]
    assert scan.unexpected == ["syn_001_reappear_2.mp4"]
    with pytest.raises(UserInputError) as err:
        scan.raise_if_missing()
    text = str(err.value)
    assert "3 of 4 continuation(s) missing or unreadable" in text
    assert all(f"  {t}: " in text for t in ids[1:]) and "syn_001_reappear_2.mp4" in text
    with pytest.raises(UserInputError, match="continuation folder not found"):
        find_continuations(ds, tmp_path / "nowhere")

    for t in ids[1:]:
        shutil.copyfile(template, out / f"{t}.mp4")
    complete = find_continuations(ds, out)
    assert complete.missing == [] and list(complete.found) == ids
    complete.raise_if_missing()


# --------------------------------------------------------------------------- KV log


def test_read_kv_log(tmp_path):
    path = tmp_path / "kv.jsonl"
    rows = [
        {
            "task_id": "t",
            "chunk": 1,
            "layer": 0,
            "head": 0,
            "k_visible": 3,
            "k_full": 8,
            "current": False,
        },
        {
            "task_id": "t",
            "chunk": 1,
            "layer": 0,
            "head": 1,
            "k_visible": 0,
            "k_full": 8,
            "current": False,
        },
        {
            "task_id": "t",
            "chunk": 2,
            "layer": 0,
            "head": 0,
            "k_visible": 8,
            "k_full": 8,
            "current": True,
        },
        {
            "task_id": "t",
            "event": "timing",
            "continuation_seconds": 2.0,
            "continuation_frames": 33,
            "context_prefix_seconds": 7.0,
        },
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    log = read_kv_log(path)
    assert log.pruning_ratios() == {"t": 1 - 3 / 16}
    assert log.fps() == 16.5 and log.source == str(path)

    lines = [json.dumps(rows[0]), "", json.dumps({**rows[1], "k_visible": 9})]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(UserInputError) as err:
        read_kv_log(path)
    text = str(err.value)
    assert f"{path}: 1 problem(s)" in text
    assert "line 3 (task 't'): field 'k_visible': 9 > k_full = 8" in text
    assert "docs/kv_log_format.md" in text
    path.write_text(json.dumps(rows[0]) + "\n{oops\n")
    with pytest.raises(UserInputError, match=r"kv.jsonl:2: not valid JSON"):
        read_kv_log(path)


# --------------------------------------------------------------------------- huge values


def test_messages_quote_a_bounded_excerpt_of_a_huge_value(tmp_path, template):
    big = "x" * 2_000_000
    bad = task_row(task_type="reappear" + big, target_aliases="mug " * 500_000)
    bad["z" * 1_000_000] = 1  # an unknown field with a huge name
    root = make_root(tmp_path / "cm", [bad, task_row("!" + big)], template)
    report = validate_cmbench(root)
    text = report.format()
    assert len(text) < 4_000, len(text)
    for p in report.problems:
        assert len(str(p)) < 600, str(p)[:300]
    by_field = {p.field: p.message for p in report.problems}
    assert "(2000008 characters)" in by_field["task_type"]  # the length is shown
    assert by_field["task_type"].startswith("expected one of ['reappear', 'revisit'], found "
                                            "'reappearxxx")
    assert "found string 'mug mug" in by_field["target_aliases"]
    assert "(2000000 characters)" in by_field["target_aliases"]
    assert any(f.startswith("zzzz") and f.endswith("(1000000 characters)") for f in by_field)
    unsafe = [p for p in report.errors if p.line == 2 and p.field == "task_id"]
    assert unsafe and unsafe[0].where.startswith("!xxx") and "(2000001 characters)" in unsafe[0].where
    with pytest.raises(UserInputError) as err:
        load_cmbench(root)
    assert len(str(err.value)) < 4_000


def test_excerpt_shows_start_length_and_ellipsis():
    from vidmem.benchmarks.jsonl_dataset import excerpt

    assert excerpt("short") == "'short'" and excerpt("short", quote=False) == "short"
    assert excerpt(5) == "5" and excerpt(None) == "None"
    long = excerpt("ab" * 10_000)
    assert long == f"'{'ab' * 40}...' (20000 characters)"
    assert excerpt("\x00" * 10_000).endswith("(10000 characters)")
    assert len(excerpt("\x00" * 10_000)) <= 80 + 40  # escapes do not widen it past the limit
    assert excerpt(list(range(100_000)), 20) == "[0, 1, 2, 3, 4, 5, 6... (100000 items)"
    assert excerpt("p" * 500, 10, quote=False) == "pppppppppp... (500 characters)"


# --------------------------------------------------------------------------- not UTF-8


def test_a_line_that_is_not_utf8_is_named_and_the_others_are_checked(tmp_path, template):
    root = make_root(tmp_path / "cm", [task_row()], template)
    good = json.dumps(task_row("syn_001_revisit_01", task_type="revisit")).encode()
    bad_type = json.dumps(task_row("syn_001_reappear_02", type="synthtic")).encode()
    latin1 = json.dumps(task_row("syn_001_reappear_03", scene="caf\u00e9"),
                        ensure_ascii=False).encode("latin-1")
    (root / "metadata.jsonl").write_bytes(b"\n".join([good, latin1, bad_type, b"\xff\xfe"]) + b"\n")
    report = validate_cmbench(root)
    assert report.n_rows == 2  # lines 1 and 3 were read and checked
    assert errors_of(report) == [("line 2", ""), ("syn_001_reappear_02", "type"), ("line 4", "")]
    assert report.errors[0].line == 2
    assert "not UTF-8" in report.errors[0].message and "0xe9" in report.errors[0].message
    assert "did you mean 'synthetic'" in report.errors[1].message
    with pytest.raises(UserInputError, match=r"line 2: not UTF-8"):
        load_cmbench(root)


def test_utf8_bom_and_unusual_line_breaks(tmp_path, template):
    # U+2028 inside a JSON string is not a line break of the file (json.dumps writes it
    # raw with ensure_ascii=False); a BOM at the start is allowed.
    row = task_row(continue_prompt="The red mug\u2028comes back.")
    root = make_root(tmp_path / "cm", [], template)
    data = json.dumps(row, ensure_ascii=False).encode("utf-8")
    (root / "metadata.jsonl").write_bytes(b"\xef\xbb\xbf" + data + b"\r\n")
    ds = load_cmbench(root)
    assert ds.task(TID).continue_prompt == "The red mug\u2028comes back."


def test_lines_that_break_the_json_parser_are_problems(tmp_path, template):
    root = make_root(tmp_path / "cm", [task_row(), "[" * 100_000, '{"n": ' + "9" * 5000 + "}"],
                     template)
    report = validate_cmbench(root)
    assert errors_of(report) == [("line 2", ""), ("line 3", "")]
    assert "nested too deeply" in report.errors[0].message
    assert "not valid JSON" in report.errors[1].message


# --------------------------------------------------------------------------- symbolic links


def test_a_video_linked_to_a_file_outside_the_root_is_an_error(tmp_path, template):
    outside = tmp_path / "elsewhere" / "syn_001.mp4"
    outside.parent.mkdir()
    shutil.copyfile(template, outside)
    root = make_root(tmp_path / "cm", [task_row()], template, videos=())
    (root / "videos/synthetic").mkdir(parents=True)
    (root / VIDEO).symlink_to(outside)
    report = validate_cmbench(root)
    assert errors_of(report) == [(TID, "video")]
    msg = report.errors[0].message
    assert "is a symbolic link to" in msg and str(outside.resolve()) in msg
    assert "outside the dataset root" in msg
    with pytest.raises(UserInputError, match=rf"{TID} \(line 1\): field 'video': .*symbolic link"):
        load_cmbench(root)

    # a linked folder on the way escapes just the same
    (root / VIDEO).unlink()
    (root / "videos/synthetic").rmdir()
    (root / "videos/synthetic").symlink_to(outside.parent, target_is_directory=True)
    report = validate_cmbench(root)
    assert errors_of(report) == [(TID, "video")]
    assert "leads through a symbolic link to" in report.errors[0].message

    # a link that stays inside the root is fine
    (root / "videos/synthetic").unlink()
    (root / "videos/synthetic").mkdir()
    shutil.copyfile(template, root / "videos" / "real.mp4")
    (root / VIDEO).symlink_to(Path("..") / "real.mp4")
    assert validate_cmbench(root, probe_videos=True).ok


def _hf_snapshot(cache: Path, repo: str, files: dict[str, bytes]) -> Path:
    """A Hugging Face hub cache repo: snapshot files are links to ../../blobs/<hash>."""
    import hashlib

    snapshot = cache / repo / "snapshots" / ("a" * 40)
    for rel, data in files.items():
        blob = cache / repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        link = snapshot / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(Path(*[".."] * (len(Path(rel).parts) + 1), "blobs", blob.name))
    return snapshot


def test_a_hugging_face_snapshot_of_links_into_its_blobs_is_accepted(tmp_path, template):
    cache = tmp_path / "hub"
    meta = json.dumps(task_row()).encode() + b"\n"
    root = _hf_snapshot(cache, "datasets--org--cmbench",
                        {"metadata.jsonl": meta, VIDEO: template.read_bytes()})
    assert (root / VIDEO).is_symlink()
    report = validate_cmbench(root, probe_videos=True)
    assert report.ok and report.problems == (), report.format()
    assert load_cmbench(root).task_ids == (TID,)

    # a root inside the snapshot (a sub-folder of the release) works too
    sub = _hf_snapshot(cache, "models--org--other",
                       {"cm/metadata.jsonl": meta, f"cm/{VIDEO}": template.read_bytes()})
    assert validate_cmbench(sub / "cm").ok

    # but a snapshot file linked into another repository's blobs escapes
    foreign = next((cache / "models--org--other" / "blobs").iterdir())
    (root / VIDEO).unlink()
    (root / VIDEO).symlink_to(foreign)
    report = validate_cmbench(root)
    assert errors_of(report) == [(TID, "video")] and str(foreign) in report.errors[0].message


def test_an_unusable_video_path_is_an_error_not_a_crash(tmp_path, template):
    rows = [task_row(video="videos/" + "v" * 300 + ".mp4"),
            task_row("syn_001_reappear_02", video="videos/a\u0000.mp4")]
    root = make_root(tmp_path / "cm", rows, template)
    report = validate_cmbench(root)
    assert [(p.where, p.field) for p in report.errors] == [
        (TID, "video"), ("syn_001_reappear_02", "video")]
    assert all("is not a usable path" in p.message for p in report.errors)
