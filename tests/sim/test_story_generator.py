"""The sim generator's Track-B memory: perfect, none, references, decay and leaks, vs its truth."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from PIL import Image

from vidmem.errors import UserInputError
from vidmem.generators.protocol import GenerationRequest
from vidmem.generators.requests import ReferenceImage
from vidmem.generators.sim import SimGenerator
from vidmem.io.video import probe
from vidmem.sim.media import read_png_spec, read_video_spec
from vidmem.sim.story_memory import segment_key, write_reference_png

INTRO = "At the Old Quarry（A brick wall.）, Ada（A cat.） meets Zephyr（A rocket.）."
RECALL = "Ada waits at the Old Quarry."
CHANGE = "Ada（A cat wearing a party hat.） smiles."
GONE = "Ada sighs; Zephyr is gone."


def _run(folder: Path, memory: str, seg: int, prompt: str, refs=(), story="story") -> dict:
    req = GenerationRequest(f"{story}/seg_{seg:03d}", "vmem_track_b", prompt,
                            str(folder / f"seg_{seg:03d}.mp4"), references=tuple(refs), fps=2.0)
    res = SimGenerator(memory=memory, seed=0).generate(req)
    assert res.status == "ok", res.error
    return json.loads(Path(res.extras["truth_path"]).read_text("utf-8"))


def _item(truth: dict, name: str) -> dict | None:
    return next((e for e in truth["entities"] if e["name"] == name), None)


def _on_screen(truth: dict, name: str) -> bool:
    """The name's sprite is visible in every frame of the clip (the render's own truth)."""
    item = _item(truth, name)
    ids = set(item["track_ids"]) if item else set()
    return bool(ids) and all(ids & {e["id"] for e in f["entities"]} for f in truth["frames"])


@pytest.fixture(scope="module")
def rollouts(tmp_path_factory):
    """seg_001 (introductions) for each memory setting, each in its own rollout folder."""
    base = tmp_path_factory.mktemp("trackb_gen")
    out = {}
    for mem in ("perfect", "none", "decay:1000", "decay:0.001", "leaky:1", "leaky:0"):
        folder = base / mem.replace(":", "_")
        out[mem] = (folder, _run(folder, mem, 1, INTRO))
    return out


def test_introductions_are_drawn_as_written_whatever_the_memory(rollouts):
    for mem, (_, truth) in rollouts.items():
        assert truth["location"] == {"name": "Old Quarry", "place": "brick", "intended": "brick",
                                     "source": "prompt", "correct": True}, mem
        for name, asset in (("Ada", "cat"), ("Zephyr", "rocket")):
            item = _item(truth, name)
            assert (item["asset"], item["state"], item["count"], item["source"]) == (
                asset, "base", 1, "prompt") and item["appearance_correct"] is True, mem
            assert _on_screen(truth, name), (mem, name)


def test_perfect_remembers_none_draws_an_impostor(rollouts):
    perfect = _run(rollouts["perfect"][0], "perfect", 2, RECALL)
    none = _run(rollouts["none"][0], "none", 2, RECALL)
    ada = _item(perfect, "Ada")
    assert (ada["asset"], ada["source"], ada["appearance_correct"], ada["gap_segments"]) == (
        "cat", "memory", True, 0)
    assert perfect["location"]["source"] == "memory" and perfect["location"]["correct"] is True
    ada = _item(none, "Ada")
    assert ada["source"] == "impostor" and ada["appearance_correct"] is False
    assert ada["asset"] != "cat" and ada["intended"] == {"asset": "cat", "state": "base", "count": 1}
    assert none["location"]["correct"] is False
    assert _on_screen(none, "Ada") and _item(none, "Zephyr") is None  # not asked for: not drawn


def test_none_copies_a_recalled_entity_from_a_reference(rollouts, tmp_path):
    folder, _ = rollouts["none"]
    sim_png = write_reference_png(folder / "seg_001.mp4", 5, tmp_path / "ref.png")
    assert read_png_spec(sim_png).kind == "trackb_frame"
    via_png = _run(folder, "none", 2, RECALL, [ReferenceImage(str(sim_png))])
    ada = _item(via_png, "Ada")
    assert (ada["asset"], ada["source"], ada["appearance_correct"]) == ("cat", "reference", True)
    assert via_png["location"]["source"] == "reference" and via_png["location"]["correct"]
    # A plain PNG (no sim metadata) is read through its source segment in the rollout.
    plain = tmp_path / "plain.png"
    Image.open(sim_png).convert("RGB").save(plain)
    assert read_png_spec(plain) is None
    via_source = _run(folder, "none", 2, RECALL,
                      [ReferenceImage(str(plain), source_time_seconds=2.0, source="seg_001")])
    assert _item(via_source, "Ada")["source"] == "reference"
    lost = _run(folder, "none", 2, RECALL, [ReferenceImage(str(plain))])
    assert _item(lost, "Ada")["source"] == "impostor" and lost["unreadable_references"]


def test_decay_by_segment_time_gap(rollouts):
    slow = _run(rollouts["decay:1000"][0], "decay:1000", 2, RECALL)
    fast = _run(rollouts["decay:0.001"][0], "decay:0.001", 2, RECALL)
    assert _item(slow, "Ada")["appearance_correct"] is True
    assert _item(fast, "Ada")["appearance_correct"] is False


def test_state_changes_persist_in_memory(tmp_path):
    _run(tmp_path, "perfect", 1, INTRO)
    changed = _run(tmp_path, "perfect", 2, CHANGE)
    assert _item(changed, "Ada")["state"] == "accessory"
    later = _run(tmp_path, "perfect", 5, RECALL)  # seg_003/004 never generated: gap 2
    ada = _item(later, "Ada")
    assert (ada["state"], ada["appearance_correct"], ada["gap_segments"]) == ("accessory", True, 2)


def test_leaky_copies_a_forbidden_entity_from_a_reference(rollouts, tmp_path):
    outcomes = {}
    for mem in ("leaky:1", "leaky:0"):
        folder, _ = rollouts[mem]
        ref = write_reference_png(folder / "seg_001.mp4", 3, tmp_path / f"{mem[-1]}.png")
        truth = _run(folder, mem, 2, GONE, [ReferenceImage(str(ref))])
        assert truth["absent_mentions"] == ["Zephyr"]
        outcomes[mem] = truth
    leak = _item(outcomes["leaky:1"], "Zephyr")
    assert leak["source"] == "leak" and leak["asset"] == "rocket"
    assert outcomes["leaky:1"]["leaked"] == ["Zephyr"] and _on_screen(outcomes["leaky:1"], "Zephyr")
    assert _item(outcomes["leaky:0"], "Zephyr") is None and not outcomes["leaky:0"]["leaked"]
    # Without references nothing can leak, even at P = 1.
    bare = _run(rollouts["leaky:1"][0], "leaky:1", 3, GONE)
    assert _item(bare, "Zephyr") is None


def test_clip_format_spec_and_same_bytes(rollouts, tmp_path):
    folder, truth = rollouts["perfect"]
    clip = folder / "seg_001.mp4"
    info = probe(clip)
    assert (info.width, info.height, info.fps, info.n_frames) == (480, 270, 2.0, 10)
    spec = read_video_spec(clip)
    assert spec.kind == "trackb_segment" and spec.info["segment_index"] == 1
    assert set(spec.info["script"]) == {"Old Quarry", "Ada", "Zephyr"}
    again = _run(tmp_path / "again", "perfect", 1, INTRO)
    assert (tmp_path / "again" / "seg_001.mp4").read_bytes() == clip.read_bytes()
    assert again["entities"] == truth["entities"] and again["frames"] == truth["frames"]
    # Another story's clip in the same folder is not part of this rollout.
    shutil.copy(clip, tmp_path / "again" / "seg_002.mp4")
    other = _run(tmp_path / "again", "perfect", 3, RECALL, story="other")
    assert _item(other, "Ada")["source"] == "impostor" and _item(other, "Ada")["intended"] is None


def test_segment_ids_are_read_or_refused():
    assert segment_key("0001_sim_s0_seg_012") == ("0001_sim_s0", 12)
    assert segment_key("anything", {"story_id": "s", "segment_index": 3}) == ("s", 3)
    with pytest.raises(UserInputError, match="seg_NNN"):
        segment_key("0001_story_segment_twelve")
    res = SimGenerator().generate(GenerationRequest("no_segment", "vmem_track_b", INTRO,
                                                    "/tmp/never_written.mp4"))
    assert res.status == "error" and "seg_NNN" in res.error


def test_the_request_shape_not_its_benchmark_label_picks_the_story_path(tmp_path):
    """No context video and no start image: a story segment, whatever ``benchmark`` says;
    the segment's random stream does not depend on the label either."""
    clips = []
    for label in ("vmem_track_b", "any_story_benchmark"):
        folder = tmp_path / label
        req = GenerationRequest("s/seg_001", label, INTRO, str(folder / "seg_001.mp4"), fps=2.0)
        res = SimGenerator(memory="none", seed=4).generate(req)
        assert res.status == "ok" and res.extras["segment_index"] == 1, res.error
        clips.append(Path(res.video_path).read_bytes())
    assert clips[0] == clips[1]
    res = SimGenerator().generate(GenerationRequest("x", "vmem_track_b", INTRO,
                                                    str(tmp_path / "x.mp4")))
    assert res.status == "error" and "no context_video, no start_image" in res.error
