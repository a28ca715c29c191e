"""The sim generator's `ignore_references=P`: a reference that shows a name is ignored with
probability P (an impostor, truth source `reference_ignored`), and P = 0 changes no byte."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from vidmem.errors import UserInputError
from vidmem.generators.loading import load_generator
from vidmem.generators.protocol import GenerationRequest
from vidmem.generators.requests import ReferenceImage
from vidmem.generators.sim import SimGenerator
from vidmem.sim.gen_story import _Planner
from vidmem.sim.memory import parse_memory
from vidmem.sim.story_memory import write_reference_png

INTRO = "At the Old Quarry（A brick wall.）, Ada（A cat.） meets Zephyr（A rocket.）."
RECALL = "Ada and Zephyr wait at the Old Quarry."


def _gen(folder: Path, seg: int, prompt: str, refs=(), **opts) -> tuple[dict, Path]:
    out = folder / f"seg_{seg:03d}.mp4"
    req = GenerationRequest(f"story/seg_{seg:03d}", "vmem_track_b", prompt, str(out),
                            references=tuple(refs), fps=2.0)
    res = SimGenerator(memory="none", seed=0, **opts).generate(req)
    assert res.status == "ok", res.error
    return json.loads(Path(res.extras["truth_path"]).read_text("utf-8")), out


def _item(truth: dict, name: str) -> dict:
    return next(e for e in truth["entities"] if e["name"] == name)


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    """seg_001 of one rollout and a reference frame of it that shows Ada and Zephyr."""
    folder = tmp_path_factory.mktemp("ignore_refs")
    _gen(folder, 1, INTRO)
    ref = write_reference_png(folder / "seg_001.mp4", 5, folder / "ref.png")
    return folder, ReferenceImage(str(ref))


def test_p1_ignores_every_shown_name_and_p0_copies_it(first, tmp_path):
    folder, ref = first
    copied, _ = _gen(folder, 2, RECALL, [ref], ignore_references=0)
    assert {_item(copied, n)["source"] for n in ("Ada", "Zephyr")} == {"reference"}
    assert "ignore_references" not in copied
    for p in (1, "1.0"):
        ignored, _ = _gen(folder, 2, RECALL, [ref], ignore_references=p)
        for name, asset in (("Ada", "cat"), ("Zephyr", "rocket")):
            e = _item(ignored, name)
            assert e["source"] == "reference_ignored" and e["appearance_correct"] is False
            assert e["asset"] != asset and e["intended"]["asset"] == asset
        assert ignored["location"]["source"] == "reference"  # locations follow their reference
        assert ignored["ignore_references"] == 1.0
    # a remembered name never looks at the reference, so there is nothing to ignore
    _gen(tmp_path, 1, INTRO)
    out = tmp_path / "seg_002.mp4"
    res = SimGenerator(memory="perfect", seed=0, ignore_references=1).generate(
        GenerationRequest("story/seg_002", "vmem_track_b", RECALL, str(out), references=(ref,),
                          fps=2.0))
    assert {d[4] for d in res.extras["drawn"]} == {"memory"}


def test_p0_writes_the_default_bytes_and_makes_no_draw(first, tmp_path):
    folder, ref = first
    _, clip_a = _gen(folder, 2, RECALL, [ref])
    bytes_a = clip_a.read_bytes()
    truth_a = clip_a.with_name(clip_a.name + ".truth.json").read_bytes()
    _, clip_b = _gen(folder, 2, RECALL, [ref], ignore_references="0")
    assert clip_b.read_bytes() == bytes_a
    assert clip_b.with_name(clip_b.name + ".truth.json").read_bytes() == truth_a
    assert "ignore_references" not in SimGenerator().info()
    assert SimGenerator(ignore_references=0.5).info()["ignore_references"] == 0.5

    class NoDraw:
        def random(self):
            raise AssertionError("drew from the stream at P = 0")

    plan = _Planner(parse_memory("none"), NoDraw(), 2, 5.0, {}, None, 0.0)
    assert plan.ignores_reference() is False


def test_p_half_is_seeded_and_gives_both_outcomes(first):
    folder, ref = first
    seen = []
    for k in range(12):  # different request ids: independent draws
        req = GenerationRequest(f"story{k}/seg_002", "vmem_track_b", RECALL,
                                str(folder / f"half{k}" / "x.mp4"), references=(ref,), fps=2.0)
        res = SimGenerator(memory="none", seed=3, ignore_references=0.5).generate(req)
        assert res.status == "ok", res.error
        seen.append(tuple(d[4] for d in res.extras["drawn"] if d[0] in ("Ada", "Zephyr")))
    flat = [s for row in seen for s in row]
    assert set(flat) == {"reference", "reference_ignored"}
    share = np.mean([s == "reference_ignored" for s in flat])
    assert 0.2 <= share <= 0.8, share
    again = SimGenerator(memory="none", seed=3, ignore_references=0.5).generate(
        GenerationRequest("story0/seg_002", "vmem_track_b", RECALL,
                          str(folder / "half0b" / "x.mp4"), references=(ref,), fps=2.0))
    assert tuple(d[4] for d in again.extras["drawn"] if d[0] in ("Ada", "Zephyr")) == seen[0]


@pytest.mark.parametrize("bad", ["x", "1.5", -0.1, True, "nan"])
def test_a_bad_probability_is_refused_by_name(bad):
    with pytest.raises(UserInputError, match="ignore_references"):
        SimGenerator(ignore_references=bad)
    with pytest.raises(UserInputError, match="probability in"):
        load_generator("sim", {"ignore_references": str(bad)})
