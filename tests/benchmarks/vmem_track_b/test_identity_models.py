"""The identity analysis through real model backends with tiny random weights (issue 15).

`vidmem analyze vmem_track_b RUN --only identity` on a one-story, one-condition sim run,
with ``owlvit/*`` + ``dinov3/*`` and with ``grounding-dino/*`` + a ``module:Class``
place embedder defined here, each loaded from a tiny randomly initialised model saved
to a temp dir (the user's ``from_pretrained`` path). Random weights make the boxes and
similarities meaningless, so only what must hold whatever the weights is checked: the
analysis completes; each unit has a score exactly when it was found on both sides;
every crop is the detector's best box clipped into its frame; each detector call got
all sampled frames of a clip and one query, the entity's name and gold appearance;
embeddings are finite; the result names the backends and their weights; a rerun is
served from the item store.
"""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from vidmem.benchmarks.vmem_track_b import analysis_identity_story as story_mod
from vidmem.benchmarks.vmem_track_b.analysis_identity_measure import text_query
from vidmem.benchmarks.vmem_track_b.benchmark import TrackB
from vidmem.benchmarks.vmem_track_b.sim_build import build_track_b
from vidmem.benchmarks.vmem_track_b.stories import load_stories
from vidmem.cli import main
from vidmem.generators.protocol import GenerationRequest
from vidmem.generators.sim import SimGenerator
from vidmem.io.video import probe
from vidmem.runners.store import RunDir
from vidmem.sim.cards import write_card_deck

pytest.importorskip("torch")
pytest.importorskip("transformers")

# building the run and loading the models takes ~15 s, each analysis ~10-20 s on a busy CPU
pytestmark = [pytest.mark.models, pytest.mark.slow]

MODULE = "vidmem.benchmarks.vmem_track_b.analysis_identity"
OWL, GDINO, DINO = "owlvit/base-patch32", "grounding-dino/tiny", "dinov3/vits16"
FRAMES = 3
PLACE = f"{__name__}:TinyPlace"


class TinyPlace:
    """A place-embedder plugin: a grey-level histogram of the whole frame; it keeps the
    shape of each image it was given and its bins (class-wide: the analysis builds it)."""

    seen: list[tuple[int, ...]] = []

    def __init__(self, bins: int = 4) -> None:
        self.bins = bins

    def embed_images(self, images):
        TinyPlace.seen += [(*im.shape, self.bins) for im in images]
        return np.stack([np.histogram(im, bins=self.bins, range=(0, 256))[0] + 1.0
                         for im in images])


def cli(capsys, *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    err = capsys.readouterr().err
    return (exc.value.code if isinstance(exc.value.code, int) else int(bool(exc.value.code))), err


@pytest.fixture(autouse=True)
def _declared(monkeypatch):
    monkeypatch.setattr(TrackB, "analyses", {"identity": MODULE})


@pytest.fixture(scope="module")
def sim_run(tmp_path_factory):
    """One 14-segment sim story (the builder's minimum), rolled out with memory 'perfect'."""
    base = tmp_path_factory.mktemp("identity_models")
    gold = base / "gold"
    gold.mkdir()
    built = build_track_b(gold, seed=0, n_cases=1, n_segments=14, gap_long_threshold=8)
    deck = write_card_deck(base / "deck")
    (sid,) = built.extras["story_ids"]
    prompts = json.loads((gold / "sut_prompts" / f"{sid}_name_anchored.json").read_text("utf-8"))
    gen = SimGenerator(memory="perfect", seed=0)
    out = base / "rollouts" / sid / "perfect"
    out.mkdir(parents=True)
    for p in prompts["segments"]:
        res = gen.generate(GenerationRequest(f"{sid}/{p['segment_id']}", "vmem_track_b",
                                             p["prompt"], str(out / f"{p['segment_id']}.mp4"),
                                             fps=4.0))
        assert res.status == "ok", res.error
    try:
        main(["score", "vmem_track_b", "--gold", str(gold), "--rollouts", str(base / "rollouts"),
              "--conditions", "perfect", "--out", str(base / "run"), "--backend-opt",
              f"judge/sim-cards:weights={deck}", "--bootstrap-resamples", "50", "--quiet"])
    except SystemExit as exc:
        assert not exc.code, exc.code
    (story,) = load_stories(gold)
    return base, story


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from vidmem.models.tiny import tiny_dinov3, tiny_grounding_dino, tiny_owlvit

    root = tmp_path_factory.mktemp("tiny")
    return {OWL: tiny_owlvit(root / "owl"), GDINO: tiny_grounding_dino(root / "gdino"),
            DINO: tiny_dinov3(root / "dino")}


def _spy(monkeypatch, cls, method: str, log: list, tag: str) -> None:
    """Wrap ``cls.method`` so each call appends ``(tag, args, kwargs, result)`` to ``log``."""
    real = getattr(cls, method)

    @functools.wraps(real)  # keeps the signature: the measurer asks it whether masks= is taken
    def spy(self, *args, **kwargs):
        result = real(self, *args, **kwargs)
        log.append((tag, args, kwargs, result))
        return result

    monkeypatch.setattr(cls, method, spy)


def _analyse(capsys, monkeypatch, run: Path, detector_cls, *args: str) -> tuple[dict, list]:
    from vidmem.models.backends.dinov3 import Dinov3Embedder

    log: list = []
    _spy(monkeypatch, detector_cls, "detect", log, "detect")
    _spy(monkeypatch, Dinov3Embedder, "embed_images", log, "embed")
    code, err = cli(capsys, "analyze", "vmem_track_b", str(run), "--only", "identity",
                    "--opt", f"frames={FRAMES}", *args, "--quiet")
    assert code == 0, err
    return json.loads((run / "analyses" / "identity.json").read_text("utf-8")), log


def _check_units(res: dict, story) -> list[dict]:
    """Every unit: a finite score exactly when found on both sides; returns the rows."""
    rows = res["units"][story.story_id]["perfect"]
    expected = story_mod.story_units(story, seed=0, locations=True)
    assert [r["key"] for r in rows] == [u.key for _, u in expected]
    for r in rows:
        both = r["found_current"] and r["found_previous"]
        assert (r["score"] is not None) == both, r
        assert r["score"] is None or -1.0 <= r["score"] <= 1.0
    return rows


def _check_detections(log: list, story, *, exact_pixels: bool) -> int:
    """Each detect call: all sampled frames, one name + appearance query; the embed call
    after it gets the best box of each frame clipped into the frame. Returns the crops."""
    queries = {text_query(u.name, a) for _, u in story_mod.story_units(story, seed=0,
                                                                      locations=False)
               for a in (u.appearance, u.previous_appearance)}
    asked, n_crops, i = set(), 0, 0
    while i < len(log):
        tag, args, kwargs, hits = log[i]
        assert tag == "detect"
        (frames,) = args
        assert len(frames) == FRAMES and len(hits) == FRAMES  # one call for the clip
        (query,) = kwargs["text_queries"]
        asked.add(query)
        boxes = []
        for frame, found in zip(frames, hits, strict=True):
            if found:
                h, w = frame.shape[:2]
                x0, y0, x1, y1 = found[0].box
                c = (max(0, int(np.floor(x0))), max(0, int(np.floor(y0))),
                     min(w, int(np.ceil(x1))), min(h, int(np.ceil(y1))))
                if c[2] - c[0] >= 2 and c[3] - c[1] >= 2:
                    boxes.append((frame, c))
        i += 1
        if not boxes:
            assert i == len(log) or log[i][0] == "detect"
            continue
        tag, (crops,), _, emb = log[i]
        assert tag == "embed" and len(crops) == len(boxes)
        for crop, (frame, (x0, y0, x1, y1)) in zip(crops, boxes, strict=True):
            assert 0 <= x0 < x1 <= frame.shape[1] and 0 <= y0 < y1 <= frame.shape[0]
            assert crop.shape == (y1 - y0, x1 - x0, 3)
            if exact_pixels:  # segmenter none: the crop is the frame's pixels in the box
                assert np.array_equal(crop, frame[y0:y1, x0:x1])
        emb = np.asarray(emb)
        assert emb.shape[0] == len(crops) and np.isfinite(emb).all() and emb.shape[1] > 0
        n_crops += len(crops)
        i += 1
    assert asked == queries  # every side was searched, each with its name + appearance
    return n_crops


def _check_rerun(capsys, monkeypatch, run: Path, res: dict, *args: str) -> None:
    def no_measuring(item):
        raise AssertionError("measured again")

    monkeypatch.setattr(story_mod, "measure_story", no_measuring)
    code, err = cli(capsys, "analyze", "vmem_track_b", str(run), "--only", "identity",
                    "--opt", f"frames={FRAMES}", *args, "--quiet")
    assert code == 0, err
    with RunDir.open(run).items() as store:
        assert store.counts(kind=story_mod.KIND) == {"total": 1, "done": 1, "error": 0}
    again = json.loads((run / "analyses" / "identity.json").read_text("utf-8"))["result"]
    assert again["table"] == res["table"] and again["units"] == res["units"]


def test_owlvit_and_dinov3(sim_run, tiny, tmp_path, capsys, monkeypatch):
    from vidmem.models.backends.owlvit import OwlVitDetector

    base, story = sim_run
    run = tmp_path / "run"
    shutil.copytree(base / "run", run)
    args = ("--opt", f"detector={OWL}", "--opt", f"crop_embedder={DINO}",
            "--backend-opt", f"{OWL}:weights={tiny[OWL]}",
            "--backend-opt", f"{DINO}:weights={tiny[DINO]}")
    data, log = _analyse(capsys, monkeypatch, run, OwlVitDetector, *args)
    res = data["result"]
    rows = _check_units(res, story)
    # default segmenter classic/grabcut: DINOv3 takes no masks, so the crops are grey-filled
    n_crops = _check_detections(log, story, exact_pixels=False)
    assert n_crops > 0 and any(r["score"] is not None and r["kind"] != "location" for r in rows)
    s = res["settings"]
    assert (s["detector"], s["crop_embedder"], s["segmenter"]) == (OWL, DINO, "classic/grabcut")
    assert s["backend_options"] == {OWL: {"weights": str(tiny[OWL])},
                                    DINO: {"weights": str(tiny[DINO])}}
    assert "name and description" in data["protocol"]["measure"]["localise_text"]["source"]
    _check_rerun(capsys, monkeypatch, run, res, *args)


def test_grounding_dino_with_a_place_embedder_plugin(sim_run, tiny, tmp_path, capsys,
                                                     monkeypatch):
    from vidmem.models.backends.grounding_dino import GroundingDinoDetector

    base, story = sim_run
    run = tmp_path / "run"
    shutil.copytree(base / "run", run)
    monkeypatch.setattr(TinyPlace, "seen", [])
    args = ("--opt", f"detector={GDINO}", "--opt", f"crop_embedder={DINO}",
            "--opt", "segmenter=none", "--opt", f"place_embedder={PLACE}",
            "--backend-opt", f"{GDINO}:weights={tiny[GDINO]}",
            "--backend-opt", f"{DINO}:weights={tiny[DINO]}",
            "--backend-opt", f"{PLACE}:bins=8")  # a plugin name holds a ':' too
    data, log = _analyse(capsys, monkeypatch, run, GroundingDinoDetector, *args)
    res = data["result"]
    rows = _check_units(res, story)
    assert _check_detections(log, story, exact_pixels=True) > 0
    places = [r for r in rows if r["kind"] == "location"]
    assert places and all(r["score"] is not None for r in places)  # whole frames: always there
    info = probe(base / "rollouts" / story.story_id / "perfect" / "seg_001.mp4")
    assert TinyPlace.seen and set(TinyPlace.seen) == {(info.height, info.width, 3, 8)}
    s = res["settings"]
    assert (s["detector"], s["place_embedder"], s["segmenter"]) == (GDINO, PLACE, None)
    assert s["backend_options"][PLACE] == {"bins": 8}
    _check_rerun(capsys, monkeypatch, run, res, *args)
