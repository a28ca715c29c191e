"""Transformers detection/segmentation backends on tiny random models (no network).

Every model is built by :mod:`vidmem.models.tiny` from a tiny config, saved with
``save_pretrained`` (plus the tokenizer / preprocessor files the backend reads) and
loaded through the backend's public constructor, exactly as a user loads real weights.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from vidmem.errors import UserInputError  # noqa: E402
from vidmem.models.backends.grounding_dino import (  # noqa: E402
    GroundingDinoTiny,
    build_caption,
    grounding_dino_pixels,
    resized_size,
    token_phrase_map,
)
from vidmem.models.backends.owlvit import (  # noqa: E402
    CLIP_MEAN,
    CLIP_STD,
    Owlv2BasePatch16Ensemble,
    OwlVitBasePatch32,
    finalize_detections,
    greedy_nms,
    owlv2_pixels,
    owlvit_pixels,
    padded_square_boxes_to_pixels,
    relative_boxes_to_pixels,
)
from vidmem.models.backends.sam import (  # noqa: E402
    Sam2Tiny,
    SamVitBase,
    longest_side_size,
    sam_pixels,
    upsample_mask_logits,
)
from vidmem.models.protocols import Detection, Detector, Segmenter  # noqa: E402

pytestmark = pytest.mark.models

IMAGE = 64  # the tiny models' input side (vidmem.models.tiny)


# --------------------------------------------------------------------------------------
# fixtures: frames (the tiny models' *_dir fixtures are in conftest.py)
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def frames() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    sizes = [(48, 80), (64, 64), (90, 40), (48, 80)]  # (H, W); first and last share a size
    return [rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8) for h, w in sizes]


# --------------------------------------------------------------------------------------
# checks
# --------------------------------------------------------------------------------------


def _check_detections(result, frames, labels=None):
    assert isinstance(result, list) and len(result) == len(frames)
    for dets, frame in zip(result, frames, strict=True):
        h, w = frame.shape[:2]
        assert isinstance(dets, list)
        scores = [d.score for d in dets]
        assert scores == sorted(scores, reverse=True)
        for d in dets:
            assert isinstance(d, Detection)
            assert isinstance(d.score, float) and 0.0 <= d.score <= 1.0
            assert isinstance(d.label, str)
            if labels is not None:
                assert d.label in labels
            x0, y0, x1, y1 = d.box
            assert all(isinstance(v, float) for v in d.box)
            assert 0.0 <= x0 < x1 <= w and 0.0 <= y0 < y1 <= h


def _same(a, b, atol=1e-5):
    """Detections equal up to float noise (labels and count exactly)."""
    assert len(a) == len(b)
    for da, db in zip(a, b, strict=True):
        assert len(da) == len(db)
        for x, y in zip(da, db, strict=True):
            assert x.label == y.label
            assert x.score == pytest.approx(y.score, abs=atol)
            np.testing.assert_allclose(x.box, y.box, atol=1e-3)


def _check_info(backend, name, official):
    info = backend.info()
    assert info.name == name
    assert info.official is official
    assert re.fullmatch(r"[0-9a-f]{64}", info.weights_sha256 or "")
    assert info.settings  # thresholds, sizes... recorded for the run log


# --------------------------------------------------------------------------------------
# box maths (hand-computed)
# --------------------------------------------------------------------------------------


def test_owlvit_box_mapping_non_square_frame():
    # frame W=200, H=100; OWL-ViT stretches it to the square input, so x scales by W, y by H
    boxes = np.array([[0.5, 0.5, 0.2, 0.4], [0.25, 0.25, 0.1, 0.2], [0.5, 0.5, 1.0, 1.0]])
    got = relative_boxes_to_pixels(boxes, 200, 100)
    np.testing.assert_allclose(
        got, [[80, 30, 120, 70], [40, 15, 60, 35], [0, 0, 200, 100]], atol=1e-9
    )


def test_owlv2_box_mapping_padded_square():
    # frame W=200, H=100 is padded (bottom) to 200 x 200: both axes scale by 200
    boxes = np.array([[0.25, 0.25, 0.1, 0.2], [0.5, 0.25, 1.0, 0.5], [0.5, 0.75, 1.0, 0.5]])
    got = padded_square_boxes_to_pixels(boxes, 200, 100)
    np.testing.assert_allclose(
        got, [[40, 30, 60, 70], [0, 0, 200, 100], [0, 100, 200, 200]], atol=1e-9
    )
    # portrait frame W=50, H=100: padding on the right, scale 100
    got = padded_square_boxes_to_pixels(np.array([[0.25, 0.5, 0.5, 1.0]]), 50, 100)
    np.testing.assert_allclose(got, [[0, 0, 50, 100]], atol=1e-9)
    # the last landscape box lies entirely in the padding: dropped after clipping
    dets = finalize_detections(
        padded_square_boxes_to_pixels(boxes, 200, 100),
        np.array([0.5, 0.9, 0.7]),
        ["a", "b", "c"],
        200,
        100,
    )
    assert [(d.label, d.box) for d in dets] == [
        ("b", (0.0, 0.0, 200.0, 100.0)),
        ("a", (40.0, 30.0, 60.0, 70.0)),
    ]


def test_owlv2_preprocessing_puts_frame_top_left():
    frame = np.full((30, 60, 3), 255, dtype=np.uint8)  # H=30, W=60 -> square side 60
    px = owlv2_pixels(frame, IMAGE, pad_value=0.5)
    assert px.shape == (3, IMAGE, IMAGE) and px.dtype == np.float32
    white = (1.0 - np.array(CLIP_MEAN)) / np.array(CLIP_STD)
    grey = (0.5 - np.array(CLIP_MEAN)) / np.array(CLIP_STD)
    # rows 0..31 of 64 hold the frame (30/60 of the square), the rest is padding
    np.testing.assert_allclose(
        px[:, :30, :], np.broadcast_to(white[:, None, None], (3, 30, IMAGE)), atol=1e-4
    )
    np.testing.assert_allclose(
        px[:, 34:, :], np.broadcast_to(grey[:, None, None], (3, 30, IMAGE)), atol=1e-4
    )


def test_nms_and_finalize():
    boxes = np.array([[0, 0, 10, 10], [1, 1, 10, 10], [20, 20, 30, 30], [0, 0, 10, 10]], float)
    assert greedy_nms(boxes, np.array([0.5, 0.8, 0.7, 0.1]), 0.5).tolist() == [1, 2]
    dets = finalize_detections(
        np.array([[-4, -4, 5, 5], [3, 3, 3, 9]], float), np.array([0.3, 0.9]), ["x", "y"], 8, 6
    )
    assert dets == [Detection((0.0, 0.0, 5.0, 5.0), 0.3, "x")]  # zero-width box dropped


# --------------------------------------------------------------------------------------
# preprocessing agrees with the transformers PIL image processors
# --------------------------------------------------------------------------------------


def _processor(name):
    cls = getattr(transformers, name, None)
    if cls is None:
        pytest.skip(f"transformers {transformers.__version__} has no {name}")
    return cls


def test_preprocessing_matches_transformers(frames):
    frame = frames[2]  # 90 x 40, portrait
    owl = _processor("OwlViTImageProcessorPil")(
        size={"height": IMAGE, "width": IMAGE}, do_center_crop=False
    )
    ref = owl(images=[frame], return_tensors="np")["pixel_values"][0]
    np.testing.assert_allclose(owlvit_pixels(frame, IMAGE), ref, atol=1e-5)

    v2 = _processor("Owlv2ImageProcessorPil")(size={"height": IMAGE, "width": IMAGE})
    ref = v2(images=[frame], return_tensors="np")["pixel_values"][0]
    np.testing.assert_allclose(owlv2_pixels(frame, IMAGE, pad_value=0.0), ref, atol=1e-4)

    sam = _processor("SamImageProcessorPil")(
        size={"longest_edge": IMAGE}, pad_size={"height": IMAGE, "width": IMAGE}
    )
    ref = sam(images=[frame], return_tensors="np")["pixel_values"][0]
    np.testing.assert_allclose(sam_pixels(frame, IMAGE), ref, atol=1e-5)

    gd = _processor("GroundingDinoImageProcessorPil")(
        size={"shortest_edge": 48, "longest_edge": 80}
    )
    ref = gd(images=[frame], return_tensors="np")["pixel_values"][0]
    mine = grounding_dino_pixels(frame, resized_size(90, 40, 48, 80))
    assert mine.shape == ref.shape
    np.testing.assert_allclose(mine, ref, atol=1e-5)


def test_resize_sizes_match_transformers():
    from transformers.image_transforms import get_size_with_aspect_ratio

    for h, w in [(480, 640), (1080, 1920), (400, 1600), (1600, 400), (800, 800), (33, 57)]:
        assert resized_size(h, w, 800, 1333) == get_size_with_aspect_ratio((h, w), 800, 1333)
    assert longest_side_size(1080, 1920, 1024) == (576, 1024)


def test_sam_mask_postprocessing_matches_transformers():
    proc = _processor("SamImageProcessorPil")()
    logits = torch.randn(3, 256, 256, generator=torch.Generator().manual_seed(1))
    h, w = 480, 640
    new = longest_side_size(h, w, 1024)
    ref = proc.post_process_masks([logits[None]], [(h, w)], [new], binarize=False)[0][0]
    mine = upsample_mask_logits(logits, (h, w), padded_size=(1024, 1024), valid_size=new)
    torch.testing.assert_close(mine, ref)


# --------------------------------------------------------------------------------------
# OWL-ViT / OWLv2
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "fixture", "name", "official"),
    [
        (OwlVitBasePatch32, "owlvit_dir", "owlvit/base-patch32", True),
        (Owlv2BasePatch16Ensemble, "owlv2_dir", "owlv2/base-patch16-ensemble", False),
    ],
)
def test_owl_text_and_image_queries(cls, fixture, name, official, frames, request):
    path = request.getfixturevalue(fixture)
    det = cls(weights=path, batch_size=4)
    assert isinstance(det, Detector) and det.supports_text and det.supports_image_query
    _check_info(det, name, official)
    assert det.info().settings["image_size"] == IMAGE

    queries = ["a cat", "Dog"]
    out = det.detect(frames, text_queries=queries, threshold=0.0)
    _check_detections(out, frames, labels=set(queries))
    assert sum(len(d) for d in out) > 0
    assert all(len(d) <= (IMAGE // 16) ** 2 for d in out)  # one box per patch at most
    _same(out, det.detect(frames, text_queries=queries, threshold=0.0), atol=0)  # deterministic
    one = cls(weights=path, batch_size=1)
    _same(out, one.detect(frames, text_queries=queries, threshold=0.0))  # batch-size invariant
    assert det.detect(frames, text_queries=queries, threshold=1.0) == [[] for _ in frames]
    assert det.detect([], text_queries=queries) == []

    crop = frames[1][8:40, 8:40]
    img = det.detect(frames, image_query=crop, threshold=0.0)
    _check_detections(img, frames, labels={"image_query"})
    _same(img, one.detect(frames, image_query=crop, threshold=0.0))


@pytest.mark.parametrize("family", ["owlvit", "owlv2"])
def test_owl_box_mapping_end_to_end(family, request, tmp_path):
    """With the box head's last layer zeroed, every predicted box is its patch's prior box
    (centre at the patch's bottom-right grid corner, size one patch), so the pixel boxes
    on a 48 x 80 frame can be written down by hand."""
    src = request.getfixturevalue(f"{family}_dir")
    cls = OwlVitBasePatch32 if family == "owlvit" else Owlv2BasePatch16Ensemble
    model_cls = (
        transformers.OwlViTForObjectDetection
        if family == "owlvit"
        else transformers.Owlv2ForObjectDetection
    )
    model = model_cls.from_pretrained(str(src))
    torch.nn.init.zeros_(model.box_head.dense2.weight)
    torch.nn.init.zeros_(model.box_head.dense2.bias)
    model.save_pretrained(tmp_path)
    transformers.AutoTokenizer.from_pretrained(str(src)).save_pretrained(tmp_path)
    det = cls(weights=tmp_path)
    frame = np.zeros((48, 80, 3), dtype=np.uint8)
    dets = det.detect([frame], text_queries=["x"], threshold=0.0)[0]
    got = sorted(d.box for d in dets)
    xs = [(10, 30), (30, 50), (50, 70), (70, 80)]  # centres 0.25..1.0 of 80, clipped at 80
    # OWL-ViT stretches the frame: y in units of H = 48. OWLv2 pads it to 80 x 80: y in
    # units of 80, and the last two patch rows lie in the padding (dropped).
    stretched = [(6, 18), (18, 30), (30, 42), (42, 48)]
    ys = stretched if family == "owlvit" else [(10, 30), (30, 48)]
    want = sorted((x0, y0, x1, y1) for x0, x1 in xs for y0, y1 in ys)
    assert len(got) == len(want)
    np.testing.assert_allclose(np.array(got), np.array(want, float), atol=0.05)


def test_owl_errors(owlvit_dir, frames):
    det = OwlVitBasePatch32(weights=owlvit_dir)
    with pytest.raises(
        UserInputError, match="exactly one of text_queries= or image_query=, found neither"
    ):
        det.detect(frames)
    with pytest.raises(UserInputError, match="found both"):
        det.detect(frames, text_queries=["a"], image_query=frames[0])
    with pytest.raises(UserInputError, match=r"image 1 must be uint8 with shape \(H, W, 3\)"):
        det.detect([frames[0], frames[1].astype(np.float32)], text_queries=["a"])
    with pytest.raises(UserInputError, match=r"threshold must be in \[0, 1\]"):
        det.detect(frames, text_queries=["a"], threshold=1.5)
    with pytest.raises(UserInputError, match="text_queries is empty"):
        det.detect(frames, text_queries=[])
    with pytest.raises(UserInputError, match="are a 'owlvit' model, expected model_type 'owlv2'"):
        Owlv2BasePatch16Ensemble(weights=owlvit_dir)


# --------------------------------------------------------------------------------------
# Grounding DINO
# --------------------------------------------------------------------------------------


def test_grounding_dino_caption_and_tokens(gdino_dir):
    caption, spans = build_caption(["Red Car", " person. ", "cats"])
    assert caption == "red car . person . cats ."
    tok = transformers.AutoTokenizer.from_pretrained(str(gdino_dir))
    enc = tok(caption, return_offsets_mapping=True, return_special_tokens_mask=True)
    assert enc["input_ids"] == [101, 201, 202, 1012, 203, 1012, 204, 207, 1012, 102]
    phrase = token_phrase_map(enc["offset_mapping"], enc["special_tokens_mask"], spans)
    assert phrase.tolist() == [-1, 0, 0, -1, 1, -1, 2, 2, -1, -1]
    with pytest.raises(UserInputError, match="contains '.'"):
        build_caption(["a.b"])


def test_grounding_dino_detect(gdino_dir, frames):
    det = GroundingDinoTiny(weights=gdino_dir, batch_size=4, threshold=0.0, text_threshold=0.0)
    assert isinstance(det, Detector) and det.supports_text and not det.supports_image_query
    _check_info(det, "grounding-dino/tiny", False)
    queries = ["red car", "person", "cat"]
    out = det.detect(frames, text_queries=queries)
    _check_detections(out, frames, labels=set(queries))
    assert sum(len(d) for d in out) > 0
    assert all(len(d) <= 20 for d in out)  # num_queries
    _same(out, det.detect(frames, text_queries=queries), atol=0)
    one = GroundingDinoTiny(weights=gdino_dir, batch_size=1, threshold=0.0, text_threshold=0.0)
    _same(out, one.detect(frames, text_queries=queries))
    assert det.detect(frames, text_queries=queries, threshold=1.0) == [[] for _ in frames]

    with pytest.raises(UserInputError, match="does not support image queries") as err:
        det.detect(frames, image_query=frames[0])
    assert "owlvit/base-patch32" in str(err.value)
    with pytest.raises(UserInputError, match="the model reads at most 32"):
        det.detect(frames, text_queries=["red car"] * 12)


# --------------------------------------------------------------------------------------
# SAM 2 / SAM
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "fixture", "name", "official"),
    [(Sam2Tiny, "sam2_dir", "sam2/tiny", True), (SamVitBase, "sam_dir", "sam/vit-base", False)],
)
def test_segmenters(cls, fixture, name, official, frames, request):
    path = request.getfixturevalue(fixture)
    seg = cls(weights=path, batch_size=4)
    assert isinstance(seg, Segmenter)
    _check_info(seg, name, official)

    f0, f1, f2 = frames[0], frames[1], frames[2]
    images = [f0, f1, f0, f2, f0]
    boxes = [(5, 5, 40, 30), (0, 0, 64, 64), (30.5, 10.25, 79, 47), (2, 50, 38, 88), (0, 0, 80, 48)]
    masks = seg.segment(images, boxes)
    assert len(masks) == len(images)
    for m, img in zip(masks, images, strict=True):
        assert isinstance(m, np.ndarray) and m.dtype == np.bool_ and m.shape == img.shape[:2]

    # deterministic; batch-size invariant
    again = seg.segment(images, boxes)
    assert all(np.array_equal(a, b) for a, b in zip(masks, again, strict=True))
    one = cls(weights=path, batch_size=1)
    single = one.segment(images, boxes)
    agree = [np.mean(a == b) for a, b in zip(masks, single, strict=True)]
    assert min(agree) >= 0.999

    # identity grouping: 3 distinct image objects -> one encoder pass of 3 images, and the
    # shared embedding gives the same masks as separate copies of the frame
    calls = []
    original = seg._embed

    def spy(pixel_values):
        calls.append(pixel_values.shape[0])
        return original(pixel_values)

    seg._embed = spy
    grouped = seg.segment(images, boxes)
    assert calls == [3]
    calls.clear()
    copies = [img.copy() for img in images]
    separate = seg.segment(copies, boxes)
    assert calls == [4, 1]
    assert min(np.mean(a == b) for a, b in zip(grouped, separate, strict=True)) >= 0.999

    multi = cls(weights=path, multimask_output=True).segment([f1], [(10, 10, 50, 50)])
    assert multi[0].shape == f1.shape[:2] and multi[0].dtype == np.bool_
    assert seg.segment([], []) == []


def test_segmenter_errors(sam2_dir, frames):
    seg = Sam2Tiny(weights=sam2_dir)
    with pytest.raises(UserInputError, match="found 1 boxes for 2 images"):
        seg.segment(frames[:2], [(0, 0, 5, 5)])
    with pytest.raises(UserInputError, match=r"box 0 must have x1 > x0 and y1 > y0"):
        seg.segment(frames[:1], [(10, 10, 5, 20)])
    with pytest.raises(UserInputError, match="box 0 must be 4 finite numbers"):
        seg.segment(frames[:1], [(0, 0, float("nan"), 5)])
    with pytest.raises(UserInputError, match="are a 'sam2' model, expected model_type 'sam'"):
        SamVitBase(weights=sam2_dir)
