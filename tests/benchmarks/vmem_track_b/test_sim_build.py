"""Sim Track-B stories are written in the official format: same keys, same types, same rules."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from vidmem.errors import UserInputError
from vidmem.runners.sim_build import build
from vidmem.sim.story_compile import CLOSE, OPEN, compile_story, name_anchored
from vidmem.sim.story_grammar import name_kind, parse_appearance, parse_mentions

#: unchanged copies of the official Track-B sample files (attribution next to them).
SAMPLE = Path(__file__).parent / "data" / "vmem_track_b_sample"
SAMPLE_ID = "0001_lighthouse_keeper"
#: dict nodes whose keys are data (ids, labels, counters), not schema.
ID_MAPS = {"entities", "state_machines", "states", "features", "kind_counts", "op_counts",
           "probe_counts", "hard_probe_balance", "gap_histogram"}

def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _shapes(obj, path="$", out=None):
    """path -> {"keys": [key sets seen], "types": {type names}} over a whole document."""
    out = {} if out is None else out
    node = out.setdefault(path, {"keys": [], "types": set()})
    node["types"].add("number" if isinstance(obj, (int, float)) and not isinstance(obj, bool)
                      else type(obj).__name__)
    if isinstance(obj, dict):
        wild = path.rsplit(".", 1)[-1] in ID_MAPS
        if not wild:
            node["keys"].append(set(obj))
        for k, v in obj.items():
            _shapes(v, f"{path}.{'*' if wild else k}", out)
    elif isinstance(obj, list):
        for v in obj:
            _shapes(v, f"{path}[]", out)
    return out


def _assert_same_schema(mine: dict, official: dict, what: str) -> None:
    ref, got = _shapes(official), _shapes(mine)
    for path, node in got.items():
        assert path in ref, f"{what}: {path} does not exist in the official sample"
        bad = node["types"] - ref[path]["types"] - ({"NoneType"} if path.endswith("longest_gap")
                                                    else set())
        assert not bad, f"{what}: {path} has types {bad}, official {ref[path]['types']}"
        if ref[path]["keys"]:
            allowed = set().union(*ref[path]["keys"])
            always = set.intersection(*ref[path]["keys"])
            for keys in node["keys"]:
                assert keys <= allowed, f"{what}: {path} has unknown keys {keys - allowed}"
                assert always <= keys, f"{what}: {path} lacks keys {always - keys}"


@pytest.fixture(scope="module")
def story_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sim_track_b")
    build("vmem_track_b", root, seed=0, n_cases=2)
    return root


def _story(root: Path, sid: str) -> tuple[dict, dict, dict, dict]:
    return (_load(root / "gt_source" / f"{sid}.json"), _load(root / "gt" / f"{sid}.json"),
            _load(root / "sut_prompts" / f"{sid}_name_anchored.json"),
            _load(root / "_truth" / f"{sid}.json"))


def test_the_compiler_reproduces_the_official_sample_exactly():
    src = _load(SAMPLE / "gt_source" / f"{SAMPLE_ID}.json")
    gt = _load(SAMPLE / "gt" / f"{SAMPLE_ID}.json")
    sut = _load(SAMPLE / "sut_prompts" / f"{SAMPLE_ID}_name_anchored.json")
    mine = compile_story(src)
    assert json.dumps(mine, ensure_ascii=False) == json.dumps(gt, ensure_ascii=False)
    assert name_anchored(gt) == sut


def test_sim_stories_have_the_official_keys_and_types(story_root):
    gt_off = _load(SAMPLE / "gt" / f"{SAMPLE_ID}.json")
    sut_off = _load(SAMPLE / "sut_prompts" / f"{SAMPLE_ID}_name_anchored.json")
    src_off = _load(SAMPLE / "gt_source" / f"{SAMPLE_ID}.json")
    for sid in ("0001_sim_s0", "0002_sim_s0"):
        src, gt, sut, _ = _story(story_root, sid)
        assert list(gt) == list(gt_off) and list(sut) == list(sut_off) and list(src) == list(src_off)
        _assert_same_schema(gt, gt_off, f"gt/{sid}")
        _assert_same_schema(sut, sut_off, f"sut_prompts/{sid}")
        _assert_same_schema(src, src_off, f"gt_source/{sid}")
        assert gt["story_id"] == sut["story_id"] == src["story_id"] == sid
        assert [s["segment_id"] for s in gt["segments"]] == [f"seg_{k:03d}" for k in range(1, 41)]
        assert sut["n_segments"] == 40 and [s["segment_id"] for s in sut["segments"]] == [
            s["segment_id"] for s in gt["segments"]]


def test_stories_exercise_every_memory_probe_they_promise(story_root):
    _, gt, _, truth = _story(story_root, "0001_sim_s0")
    ops = {c["op"] for s in gt["segments"] for c in s["cast"]}
    assert ops == {"introduce", "recall", "recall_after_gap", "transform", "persist"}
    reasons = {f["reason"] for s in gt["segments"] for f in s["forbidden"]}
    assert reasons == {"destroyed", "lookalike_absent"}
    assert any(f.get("reference_indirect") for s in gt["segments"] for f in s["forbidden"])
    assert any("count" in c and c["op"] != "introduce" for s in gt["segments"] for c in s["cast"])
    assert gt["summary"]["longest_gap"]["gap"] >= 30 == gt["params"]["gap_long_threshold"]
    assert gt["summary"]["gap_histogram"][">=30"] >= 1
    # Every entity maps to a sim asset or place; kinds match the name vocabulary.
    for eid, e in truth["entities"].items():
        assert ("asset" in e) != ("place" in e), eid
        kind = name_kind(e["name"])
        assert {"group": "prop"}.get(kind, kind) == e["kind"] == gt["entities"][eid]["kind"]


def test_prompts_carry_appearance_only_at_introduction_or_change(story_root):
    _, gt, sut, truth = _story(story_root, "0002_sim_s0")
    names = {eid: e["name"] for eid, e in gt["entities"].items()}
    for seg, prompt in zip(gt["segments"], sut["segments"], strict=True):
        text = prompt["prompt"]
        bracketed = {m.name: m for m in parse_mentions(text) if m.appearance is not None}
        expected = {names[c["eid"]]: c for c in seg["cast"] if c["op"] in ("introduce", "transform")}
        assert set(bracketed) == set(expected), seg["segment_id"]
        assert text.count(OPEN) == text.count(CLOSE) == len(expected)
        for name, m in bracketed.items():
            c, e = expected[name], truth["entities"][expected[name]["eid"]]
            assert m.parsed is not None, f"{seg['segment_id']}: {m.appearance!r}"
            label = c["state"]["label"] if "state" in c else next(iter(e["states"]))
            if "place" in e:
                assert m.parsed.place == e["place"]
            else:
                assert (m.parsed.asset, m.parsed.state, m.parsed.count) == (
                    e["asset"], e["states"][label], e["count"])
        # Destroyed entities named later are named as gone, never as present.
        for f in seg["forbidden"]:
            if f.get("reference_indirect"):
                assert [m.present for m in parse_mentions(text) if m.name == names[f["eid"]]] == [False]
    assert not sut["warnings"]
    assert all(parse_appearance(t) for e in gt["entities"].values()
               for t in (e.get("states") or {"x": e.get("appearance")}).values())


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_same_seed_same_bytes_and_parameters(tmp_path, story_root):
    build("vmem_track_b", tmp_path / "a", seed=0, n_cases=2)
    assert _tree(tmp_path / "a") == _tree(story_root)
    build("vmem_track_b", tmp_path / "b", seed=1, n_cases=1)
    other = _tree(tmp_path / "b")
    assert other["gt/0001_sim_s1.json"] != _tree(story_root)["gt/0001_sim_s0.json"]
    from vidmem.benchmarks.vmem_track_b.sim_build import build_track_b

    s = build_track_b(tmp_path / "c", seed=0, n_cases=1, n_segments=16, gap_long_threshold=10)
    gt = _load(tmp_path / "c" / "gt" / "0001_sim_s0.json")
    assert len(gt["segments"]) == 16 and gt["params"]["gap_long_threshold"] == 10
    assert gt["summary"]["longest_gap"]["gap"] == 12 and s.extras["n_segments"] == 16
    assert "recall_after_gap" in {c["op"] for seg in gt["segments"] for c in seg["cast"]}
    with pytest.raises(UserInputError, match="n_segments must be an int >= 14"):
        build_track_b(tmp_path / "d", n_segments=5)
    assert re.fullmatch(r"\d{4}_sim_s0", gt["story_id"])
