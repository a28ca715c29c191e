"""face/arcface-onnx on tiny ONNX models built here with onnx.helper, and place_embedder.

The recognition model of most tests is a pass-through (``Flatten`` of the input), so the
vector it returns *is* the preprocessed crop: preprocessing is checked against a hand
computation. A tiny SCRFD with constant outputs checks the decoding and the 5-point
alignment. The faces are the sim's ``face`` sprite (a photo) and a drawn cartoon face.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest

pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from vidmem.errors import UserInputError  # noqa: E402
from vidmem.models.backends.face_arcface_onnx import (  # noqa: E402
    ARCFACE_TEMPLATE,
    ArcFaceOnnx,
    crop_square,
)
from vidmem.models.backends.face_scrfd import ANCHORS, INPUT_SIZE, STRIDES  # noqa: E402
from vidmem.models.backends.haar_cascade import load_cascade  # noqa: E402
from vidmem.models.backends.place_embedder import load_place_embedder  # noqa: E402
from vidmem.models.loading import load_backend  # noqa: E402


def _save(graph, path):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def passthrough_model(path):
    """Input ``N x 3 x 112 x 112`` -> output ``N x 37632``, the input flattened."""
    x = helper.make_tensor_value_info("input.1", TensorProto.FLOAT, ["N", 3, 112, 112])
    y = helper.make_tensor_value_info("683", TensorProto.FLOAT, ["N", 3 * 112 * 112])
    node = helper.make_node("Flatten", ["input.1"], ["683"], axis=1)
    return _save(helper.make_graph([node], "pass", [x], [y]), path)


def random_model(path, seed=0, dim=512):
    """The same signature as w600k_r50 (512-d out): 8x8 average pool, flatten, random Gemm."""
    w = np.random.default_rng(seed).standard_normal((3 * 14 * 14, dim)).astype(np.float32)
    x = helper.make_tensor_value_info("input.1", TensorProto.FLOAT, ["N", 3, 112, 112])
    y = helper.make_tensor_value_info("683", TensorProto.FLOAT, ["N", dim])
    nodes = [helper.make_node("AveragePool", ["input.1"], ["p"], kernel_shape=[8, 8], strides=[8, 8]),
             helper.make_node("Flatten", ["p"], ["f"], axis=1),
             helper.make_node("MatMul", ["f", "W"], ["683"])]
    graph = helper.make_graph(nodes, "rec", [x], [y], initializer=[numpy_helper.from_array(w, "W")])
    return _save(graph, path), w


def scrfd_model(path, box, kps, score_at):
    """A 9-output SCRFD whose maps are constants: one anchor at stride 8 scores 0.9.

    ``box`` / ``kps`` are the wanted outputs in 640x640 input pixels; the anchor at cell
    ``score_at`` gets the distances that decode to them.
    """
    x = helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [1, 3, INPUT_SIZE, INPUT_SIZE])
    nodes, outs, inits = [], [], []
    maps = {"score": [], "bbox": [], "kps": []}
    for stride in STRIDES:
        n = (INPUT_SIZE // stride) ** 2 * ANCHORS
        sc, bb, kp = np.zeros((n, 1), np.float32), np.ones((n, 4), np.float32), np.zeros((n, 10), np.float32)
        if stride == 8:
            cy, cx = score_at
            i = (cy * (INPUT_SIZE // 8) + cx) * ANCHORS
            ax, ay = cx * 8.0, cy * 8.0
            sc[i] = 0.9
            bb[i] = np.array([ax - box[0], ay - box[1], box[2] - ax, box[3] - ay]) / 8
            kp[i] = ((np.asarray(kps) - [ax, ay]) / 8).ravel()
        maps["score"].append(sc)
        maps["bbox"].append(bb)
        maps["kps"].append(kp)
    # the outputs must depend on the input for onnxruntime; add 0 * mean(input)
    nodes.append(helper.make_node("ReduceMean", ["input.1"], ["m"], keepdims=0))
    nodes.append(helper.make_node("Mul", ["m", "zero"], ["z"]))
    inits.append(numpy_helper.from_array(np.zeros((), np.float32), "zero"))
    for kind in ("score", "bbox", "kps"):
        for stride, arr in zip(STRIDES, maps[kind], strict=True):
            name = f"{kind}_{stride}"
            inits.append(numpy_helper.from_array(arr, name + "_c"))
            nodes.append(helper.make_node("Add", [name + "_c", "z"], [name]))
            outs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(arr.shape)))
    return _save(helper.make_graph(nodes, "scrfd", [x], outs, initializer=inits), path)


def face_frame():
    """The sim's ``face`` sprite (the astronaut photo) on a grey 256x144 frame at (80, 20)."""
    from vidmem.sim.sprites import entity_sprite

    sprite = entity_sprite("face")
    rgb, alpha = sprite[..., :3], sprite[..., 3:4]
    frame = np.full((144, 256, 3), 90.0, np.float32)
    h, w = sprite.shape[:2]
    frame[20:20 + h, 80:80 + w] = rgb * 255 * alpha + frame[20:20 + h, 80:80 + w] * (1 - alpha)
    return np.clip(frame.round(), 0, 255).astype(np.uint8)


def drawn_face():
    """A cartoon face: skin ellipse, two eyes under brows, a nose line and a mouth."""
    img = np.full((120, 120, 3), 70, np.uint8)
    cv2.ellipse(img, (60, 62), (34, 44), 0, 0, 360, (225, 190, 160), -1)
    for ex in (46, 74):
        cv2.ellipse(img, (ex, 52), (7, 4), 0, 0, 360, (40, 30, 30), -1)
        cv2.line(img, (ex - 9, 42), (ex + 9, 42), (60, 40, 30), 3)
    cv2.line(img, (60, 58), (57, 74), (170, 130, 110), 2)
    cv2.ellipse(img, (60, 86), (12, 5), 0, 0, 360, (120, 50, 50), -1)
    return img


def no_face():
    rng = np.random.default_rng(3)
    img = np.full((120, 160, 3), 60, np.uint8)
    cv2.rectangle(img, (20, 30), (70, 100), (200, 40, 40), -1)
    cv2.circle(img, (120, 60), 25, (40, 200, 90), -1)
    return np.clip(img + rng.integers(0, 20, img.shape), 0, 255).astype(np.uint8)


@pytest.fixture(scope="module")
def pass_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("buffalo_pass")
    passthrough_model(d / "w600k_r50.onnx")
    return d


def test_haar_finds_the_sim_face_and_the_drawn_face_but_not_shapes():
    cascade = load_cascade()
    grey = cv2.cvtColor(face_frame(), cv2.COLOR_RGB2GRAY)
    (x0, y0, x1, y1), *_ = cascade.detect(grey)
    # inside the sprite (x 80..173, y 20..124) and face-sized
    assert 80 <= x0 < x1 <= 173 and 20 <= y0 < y1 <= 124 and x1 - x0 > 30
    assert len(cascade.detect(cv2.cvtColor(drawn_face(), cv2.COLOR_RGB2GRAY))) == 1
    assert cascade.detect(cv2.cvtColor(no_face(), cv2.COLOR_RGB2GRAY)) == []


def test_preprocessing_matches_a_hand_computation(pass_dir):
    emb = ArcFaceOnnx(weights=str(pass_dir))
    frame = face_frame()
    vectors, boxes = emb.embed_faces([frame, no_face()])
    assert vectors[1] is None and boxes[1] is None
    # by hand: centred square x1.2 of the box, 112x112, RGB, (x - 127.5) / 127.5, CHW
    x0, y0, x1, y1 = boxes[0]
    side = max(x1 - x0, y1 - y0) * 1.2
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    m = np.array([[112 / side, 0, -(cx - side / 2) * 112 / side], [0, 112 / side, -(cy - side / 2) * 112 / side]])
    crop = cv2.warpAffine(frame, m, (112, 112), flags=cv2.INTER_AREA, borderValue=0)
    blob = ((crop.astype(np.float32) - 127.5) / 127.5).transpose(2, 0, 1).ravel()
    np.testing.assert_allclose(vectors[0], blob / np.linalg.norm(blob), atol=1e-6)
    # a flat white crop reaches the network as all ones
    white = emb.embed_crops([np.full((112, 112, 3), 255, np.uint8)])[0]
    np.testing.assert_allclose(white, np.full(white.shape, 1 / np.sqrt(white.size)), rtol=1e-5)
    assert "haar" in emb.info().settings["face_detector"]
    # a stricter cascade setting is recorded and still finds the photo face
    strict = ArcFaceOnnx(weights=str(pass_dir), min_neighbors=10)
    assert strict.info().settings["min_neighbors"] == 10
    assert strict.embed_faces([frame])[0][0] is not None


def test_random_model_is_deterministic_and_matches_numpy(tmp_path):
    path, w = random_model(tmp_path / "w600k_r50.onnx")
    emb = load_backend("face/arcface-onnx", {"weights": str(path)}, role="face_embedder")
    frames = [face_frame(), drawn_face(), no_face()]
    a, boxes = emb.embed_faces(frames)
    b, boxes2 = emb.embed_faces(frames)
    assert boxes == boxes2 and a[2] is None
    for u, v in zip(a[:2], b[:2], strict=True):
        assert u.shape == (512,) and u.dtype == np.float32 and np.array_equal(u, v)
        assert abs(float(np.linalg.norm(u)) - 1) < 1e-5
    crop = crop_square(frames[1], boxes[1])
    x = ((crop.astype(np.float64) - 127.5) / 127.5).transpose(2, 0, 1)
    ref = x.reshape(3, 14, 8, 14, 8).mean(axis=(2, 4)).ravel() @ w
    np.testing.assert_allclose(a[1], ref / np.linalg.norm(ref), atol=1e-5)
    info = emb.info()
    assert info.name == "face/arcface-onnx" and len(info.weights_sha256) == 64


def test_scrfd_boxes_landmarks_and_alignment(tmp_path):
    # a 320x160 frame: det_scale 2, so the model's input pixels are frame pixels x 2
    frame = np.random.default_rng(1).integers(0, 255, (160, 320, 3)).astype(np.uint8)
    kps_frame = ARCFACE_TEMPLATE / 2 + [100, 40]  # a half-size template face
    box_frame = (95.0, 30.0, 165.0, 100.0)
    scrfd_model(tmp_path / "det_10g.onnx", [v * 2 for v in box_frame], kps_frame * 2, score_at=(10, 24))
    passthrough_model(tmp_path / "w600k_r50.onnx")
    emb = ArcFaceOnnx(weights=str(tmp_path))
    assert emb.info().settings["face_detector"].startswith("scrfd")
    box, kps = emb.largest_face(frame)
    np.testing.assert_allclose(box, box_frame, atol=1e-3)
    np.testing.assert_allclose(kps, kps_frame, atol=1e-3)
    vectors, _ = emb.embed_faces([frame])
    # aligning a half-size template face is a x2 zoom about (100, 40)
    m = np.array([[2.0, 0, -200], [0, 2.0, -80]])
    crop = cv2.warpAffine(frame, m, (112, 112), borderValue=0)
    blob = ((crop.astype(np.float32) - 127.5) / 127.5).transpose(2, 0, 1).ravel()
    # float32 landmarks move a few bilinear samples by one grey level (~1e-4 here)
    np.testing.assert_allclose(vectors[0], blob / np.linalg.norm(blob), atol=3e-4)
    assert float(vectors[0] @ blob) / np.linalg.norm(blob) > 0.999
    haar = ArcFaceOnnx(weights=str(tmp_path), detector="haar")
    assert "haar" in haar.info().settings["face_detector"]


def test_errors_name_the_fix(tmp_path, pass_dir):
    with pytest.raises(UserInputError, match="weights are required"):
        ArcFaceOnnx()
    with pytest.raises(UserInputError, match="do not exist"):
        ArcFaceOnnx(weights=str(tmp_path / "nowhere"))
    with pytest.raises(UserInputError, match="no w600k_r50.onnx"):
        ArcFaceOnnx(weights=str(tmp_path))
    with pytest.raises(UserInputError, match="detector=scrfd but no det_10g.onnx"):
        ArcFaceOnnx(weights=str(pass_dir), detector="scrfd")
    emb = ArcFaceOnnx(weights=str(pass_dir / "w600k_r50.onnx"))
    with pytest.raises(UserInputError, match="no face found in images \\[0\\]"):
        emb.embed_images([no_face()])
    with pytest.raises(UserInputError, match="frames\\[0\\]"):
        emb.embed_faces([np.zeros((10, 10), np.uint8)])
    with pytest.raises(UserInputError, match="not 'image_embedder'|not 'face_embedder'"):
        load_backend("classic/hsv-lbp", role="face_embedder")


class Megaloc:
    """A stand-in place-recognition plugin: unnormalised mean colour vectors."""

    def __init__(self, scale: float = 3.0) -> None:
        self.scale = scale

    def embed_images(self, images):
        return np.stack([np.asarray(i, np.float64).mean(axis=(0, 1)) * self.scale + 1 for i in images])


def test_place_embedder_takes_registered_and_plugin_embedders():
    frames = [face_frame(), no_face()]
    plugin = load_place_embedder(f"{__name__}:Megaloc", {"scale": 2.0})
    vecs = plugin.embed_images(frames)
    assert vecs.shape == (2, 3) and np.allclose(np.linalg.norm(vecs, axis=1), 1)
    ref = frames[1].reshape(-1, 3).mean(axis=0) * 2 + 1
    np.testing.assert_allclose(vecs[1], ref / np.linalg.norm(ref), rtol=1e-5)
    assert plugin.info().name == f"{__name__}:Megaloc"
    classic = load_place_embedder("classic/hsv-lbp")
    assert classic.embed_images(frames).shape == (2, 148)
    assert classic.info().settings["used_as"] == "place_embedder (whole frame)"
    assert load_backend("classic/hsv-lbp", role="place_embedder").embed_images(frames).shape == (2, 148)
    with pytest.raises(UserInputError, match="has no 'Nope'"):
        load_place_embedder(f"{__name__}:Nope")
    with pytest.raises(UserInputError, match="cannot import module"):
        load_place_embedder("no_such_pkg_h10:Thing")
    with pytest.raises(UserInputError, match="not 'place_embedder'"):
        load_place_embedder("classic/tfidf")
