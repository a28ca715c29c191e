"""The diffusers generators on tiny random pipelines, offline (no hub, no GPU).

The pipelines are the real diffusers classes built from small configs
(:mod:`vidmem.generators.diffusers.tiny`), saved and loaded through
``from_pretrained(local_files_only=True)``. What is checked against what:

* determinism: the same request gives the same MP4 bytes from two fresh processes'
  worth of state (cache off, pipelines reloaded); another item id gives another seed;
* the generation cache: a repeated request calls no pipeline; a changed ``steps``
  misses every item, a changed prompt exactly the item it changes (counted on the
  pipeline calls, not on timings);
* the checks: a size or frame count the pipeline would round, weights that are missing
  or of the wrong model, and a reference FLUX.2 refuses are each one error, raised
  before any pipeline is loaded (the load counter stays at 0);
* the keyframe stack: FLUX.2's call receives the references, in rank order, pixel for
  pixel, and Wan's image-to-video call receives that keyframe.
"""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("diffusers")

from vidmem.errors import UserInputError  # noqa: E402
from vidmem.generators.diffusers import runtime  # noqa: E402
from vidmem.generators.diffusers.tiny import build_tiny  # noqa: E402
from vidmem.generators.loading import load_generator  # noqa: E402
from vidmem.generators.requests import GenerationRequest, ReferenceImage  # noqa: E402

SMALL = {"height": "32", "width": "32", "num_frames": "5", "steps": "2", "dtype": "float32",
         "device": "cpu", "max_sequence_length": "16"}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """One torch thread: tiny models gain nothing from more, and on a shared machine
    oversubscribed threads make them ten times slower."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny_pipelines")
    return {k: str(build_tiny(k, root / k)) for k in
            ("wan-ti2v-5b", "wan-t2v-a14b", "wan-i2v-a14b", "flux2-klein")}


@pytest.fixture
def calls(monkeypatch):
    """Every pipeline call made: (pipeline class name, kwargs)."""
    seen: list[tuple[str, dict]] = []
    real = runtime.call_pipeline

    def spy(pipe, kwargs):
        seen.append((type(pipe).__name__, dict(kwargs)))
        return real(pipe, kwargs)

    monkeypatch.setattr(runtime, "call_pipeline", spy)
    return seen


def _png(path, size, colour):
    Image.new("RGB", size, colour).save(path)
    return str(path)


def _req(out, rid="case_a", prompt="a red cube turns", **kw):
    return GenerationRequest(request_id=rid, benchmark="memory_loop", prompt=prompt,
                             out_path=str(out), **kw)


def _wan(tiny, **opts):
    return load_generator("wan2.2-ti2v-5b", {"weights": tiny["wan-ti2v-5b"], **SMALL, **opts})


def test_same_seed_same_bytes_and_another_item_another_draw(tiny, tmp_path):
    a = _wan(tiny, cache="off").generate(_req(tmp_path / "a.mp4"))
    runtime.clear_pipelines()  # as a fresh worker: the pipeline is loaded again
    b = _wan(tiny, cache="off").generate(_req(tmp_path / "b.mp4"))
    c = _wan(tiny, cache="off").generate(_req(tmp_path / "c.mp4", rid="case_b"))
    assert a.status == b.status == c.status == "ok", (a.error, b.error, c.error)
    assert (tmp_path / "a.mp4").read_bytes() == (tmp_path / "b.mp4").read_bytes()
    assert a.extras["seed"] == b.extras["seed"] != c.extras["seed"]
    assert (tmp_path / "a.mp4").read_bytes() != (tmp_path / "c.mp4").read_bytes()
    assert a.extras["n_frames"] == 5 and a.extras["mode"] == "text-to-video"


def test_the_cache_regenerates_exactly_what_a_change_changes(tiny, tmp_path, calls):
    cache = str(tmp_path / "cache")
    items = [("case_a", "a red cube turns"), ("case_b", "a blue ball rolls")]

    def run(folder, steps="2", prompts=None):
        gen = _wan(tiny, cache=cache, steps=steps)
        before = len(calls)
        res = [gen.generate(_req(tmp_path / folder / f"{rid}.mp4", rid, (prompts or {}).get(rid, p)))
               for rid, p in items]
        assert all(r.status == "ok" for r in res), [r.error for r in res]
        return [r.extras["cache_hit"] for r in res], len(calls) - before

    assert run("first") == ([False, False], 2)
    assert run("again") == ([True, True], 0)  # a repeated run generates nothing
    for rid, _ in items:
        assert ((tmp_path / "first" / f"{rid}.mp4").read_bytes()
                == (tmp_path / "again" / f"{rid}.mp4").read_bytes())
    assert run("steps", steps="3") == ([False, False], 2)  # a sampling setting: every item
    assert run("prompt", prompts={"case_b": "a blue ball stops"}) == ([True, False], 1)


def test_image_to_video_gets_the_start_image_and_shares_the_loaded_weights(tiny, tmp_path, calls):
    runtime.clear_pipelines()
    start = _png(tmp_path / "start.png", (48, 40), (220, 40, 10))
    gen = _wan(tiny, cache="off")
    text = gen.generate(_req(tmp_path / "t.mp4"))
    image = gen.generate(_req(tmp_path / "i.mp4", rid="case_i", start_image=start))
    assert text.status == image.status == "ok", (text.error, image.error)
    (t_cls, t_kw), (i_cls, i_kw) = calls
    assert (t_cls, i_cls) == ("WanPipeline", "WanImageToVideoPipeline")
    assert "image" not in t_kw and i_kw["image"].size == (32, 32)
    assert np.array_equal(np.asarray(i_kw["image"]),
                          np.asarray(Image.open(start).convert("RGB").resize((32, 32), Image.LANCZOS)))
    assert (i_kw["num_frames"], i_kw["num_inference_steps"], i_kw["height"]) == (5, 2, 32)
    # one set of weights, loaded once: the image pipeline shares the text pipeline's modules
    assert runtime.load_stats()["loads"] == 2  # the text pipeline + the sharing wrapper
    pipes = list(runtime._PIPELINES.values())
    assert pipes[0].transformer is pipes[1].transformer and pipes[1].config.expand_timesteps
    assert (tmp_path / "i.mp4.inputs" / "start.png").is_file()
    assert image.extras["mode"] == "image-to-video" and image.extras["start_from"] == "start_image"


def test_a14b_passes_both_experts_guidance_and_refuses_the_wrong_request(tiny, tmp_path, calls):
    t2v = load_generator("wan2.2-t2v-a14b", {"weights": tiny["wan-t2v-a14b"], **SMALL,
                                             "guidance_scale_2": "2.5", "cache": "off"})
    assert t2v.generate(_req(tmp_path / "t.mp4")).status == "ok"
    assert calls[-1][1]["guidance_scale"] == 4.0 and calls[-1][1]["guidance_scale_2"] == 2.5
    start = _png(tmp_path / "s.png", (64, 64), (0, 90, 0))
    bad = t2v.generate(_req(tmp_path / "x.mp4", start_image=start))
    assert bad.status == "error" and "text-to-video" in bad.error and "wan2.2-i2v-a14b" in bad.error
    i2v = load_generator("wan2.2-i2v-a14b", {"weights": tiny["wan-i2v-a14b"], **SMALL, "cache": "off"})
    assert i2v.generate(_req(tmp_path / "i.mp4", start_image=start)).status == "ok"
    assert calls[-1][0] == "WanImageToVideoPipeline" and calls[-1][1]["guidance_scale_2"] == 3.5
    none = i2v.generate(_req(tmp_path / "n.mp4"))
    assert none.status == "error" and "no start image" in none.error


@pytest.mark.parametrize("opts, words", [
    ({"height": "720", "width": "1280"}, ["multiple of 32", "height=704,width=1280"]),
    ({"num_frames": "120"}, ["4k+1", "num_frames=121"]),
    ({"weights": "/nowhere/wan"}, ["not found", "weights=DIR"]),
    ({"offload": "model"}, ["needs a CUDA device"]),
    ({"stepz": "3"}, ["unknown option", "steps"]),
])
def test_a_bad_setting_is_one_clear_error_before_anything_loads(tiny, opts, words):
    runtime.clear_pipelines()
    with pytest.raises(UserInputError) as err:
        load_generator("wan2.2-ti2v-5b", {"weights": tiny["wan-ti2v-5b"], **SMALL, **opts})
    text = str(err.value)
    assert all(w in text for w in words), text
    assert runtime.load_stats()["loads"] == 0


def test_weights_of_another_model_are_refused_by_what_they_hold(tiny):
    with pytest.raises(UserInputError, match="no second expert"):
        load_generator("wan2.2-t2v-a14b", {"weights": tiny["wan-ti2v-5b"], **SMALL})
    with pytest.raises(UserInputError, match="expand_timesteps"):
        load_generator("wan2.2-ti2v-5b", {"weights": tiny["wan-t2v-a14b"], **SMALL})
    # an A14B folder's own rule is 16 (VAE 8x, patch 2): 48 passes there, not for the 5B
    load_generator("wan2.2-t2v-a14b", {"weights": tiny["wan-t2v-a14b"], **SMALL, "height": "48"})
    with pytest.raises(UserInputError, match="multiple of 32"):
        _wan(tiny, height="48")


def _flux(tiny, **opts):
    return load_generator("flux2-wan", {"weights": tiny["wan-ti2v-5b"],
                                        "keyframe_weights": tiny["flux2-klein"],
                                        "keyframe_steps": "2", **SMALL, **opts})


def test_the_keyframe_receives_the_references_and_wan_the_keyframe(tiny, tmp_path, calls):
    refs = [_png(tmp_path / "r0.png", (96, 64), (200, 30, 30)),
            _png(tmp_path / "r1.png", (64, 80), (20, 30, 220))]
    req = GenerationRequest("s1/seg_002", "vmem_track_b", "Mira lifts the red lamp",
                            str(tmp_path / "seg_002.mp4"),
                            references=tuple(ReferenceImage(p) for p in refs))
    res = _flux(tiny, cache="off").generate(req)
    assert res.status == "ok", res.error
    (k_cls, k_kw), (w_cls, w_kw) = calls
    assert (k_cls, w_cls) == ("Flux2KleinPipeline", "WanImageToVideoPipeline")
    assert k_kw["prompt"] == w_kw["prompt"] == "Mira lifts the red lamp"
    assert [np.asarray(im).tolist() for im in k_kw["image"]] == [
        np.asarray(Image.open(p).convert("RGB")).tolist() for p in refs]
    keyframe = Image.open(tmp_path / "seg_002.mp4.keyframe.png").convert("RGB")
    assert np.array_equal(np.asarray(w_kw["image"]), np.asarray(keyframe))
    assert sorted(p.name for p in (tmp_path / "seg_002.mp4.inputs").iterdir()) == [
        "ref_00.png", "ref_01.png"]
    assert res.extras["references_used"] == 2 and res.extras["mode"] == "keyframe-to-video"
    # no references: the keyframe comes from the text alone
    calls.clear()
    assert _flux(tiny, cache="off").generate(
        GenerationRequest("s1/seg_000", "vmem_track_b", "A quiet room",
                          str(tmp_path / "seg_000.mp4"))).status == "ok"
    assert calls[0][1]["image"] is None


def test_flux2_wan_defaults_are_the_papers_and_bad_references_fail_first(tiny, tmp_path):
    gen = load_generator("flux2-wan", {"weights": tiny["wan-ti2v-5b"],
                                       "keyframe_weights": tiny["flux2-klein"]})
    info = gen.info()
    assert (info["height"], info["width"], info["num_frames"]) == (704, 1280, 121)
    assert gen.default_deliver() == (480, 832) and info["max_references"] == 3
    runtime.clear_pipelines()
    small = _png(tmp_path / "small.png", (40, 64), (1, 2, 3))
    wide = _png(tmp_path / "wide.png", (900, 100), (1, 2, 3))
    many = [_png(tmp_path / f"m{k}.png", (64, 64), (k, 0, 0)) for k in range(4)]
    for refs, words in (([small], "under 64 px"), ([wide], "8:1"), (many, "max_references=4")):
        res = _flux(tiny).generate(GenerationRequest(
            "s/seg_001", "vmem_track_b", "p", str(tmp_path / "x.mp4"),
            references=tuple(ReferenceImage(p) for p in refs)))
        assert res.status == "error" and words in res.error, res.error
    assert runtime.load_stats()["loads"] == 0


def test_any_pipeline_by_class_name(tiny, tmp_path, calls):
    gen = load_generator("diffusers", {"pipeline": "WanPipeline", "weights": tiny["wan-ti2v-5b"],
                                       **SMALL, "cache": "off"})
    res = gen.generate(_req(tmp_path / "a.mp4"))
    assert res.status == "ok", res.error
    assert res.extras["n_frames"] == 5
    assert calls[-1][0] == "WanPipeline" and calls[-1][1]["num_inference_steps"] == 2
    with pytest.raises(UserInputError, match="no pipeline class"):
        load_generator("diffusers", {"weights": tiny["wan-ti2v-5b"]})
    with pytest.raises(UserInputError, match="takes no argument"):
        load_generator("diffusers", {"pipeline": "WanPipeline", "weights": tiny["wan-ti2v-5b"],
                                     "not_an_arg": "1"})
