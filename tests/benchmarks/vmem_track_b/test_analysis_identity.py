"""The Track-B identity analysis on a tiny sim run (one 14-segment story, three rollouts of
one story drawn with memory none, decay:20 and perfect): detections agree with the sim
truth, perfect > decay > none, the frozen cut lies between the control scores and is
the one `vidmem calibrate` prints; refusals; resume; the pair-judge plumbing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from vidmem.benchmarks.vmem_track_b import analysis_identity_judge as judge_mod
from vidmem.benchmarks.vmem_track_b import analysis_identity_stats as stats
from vidmem.benchmarks.vmem_track_b import analysis_identity_story as story_mod
from vidmem.benchmarks.vmem_track_b.benchmark import TrackB
from vidmem.benchmarks.vmem_track_b.stories import load_stories
from vidmem.cli import main
from vidmem.models.protocols import JudgeResult
from vidmem.runners.store import RunDir

MODULE = "vidmem.benchmarks.vmem_track_b.analysis_identity"
MEMORY = {"none": "none", "decay": "decay:20", "perfect": "perfect"}


def cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    got = capsys.readouterr()
    code = exc.value.code if isinstance(exc.value.code, int) else (0 if exc.value.code is None else 1)
    return code, got.out, got.err


@pytest.fixture(autouse=True)
def _declared(monkeypatch):
    monkeypatch.setattr(TrackB, "analyses", {"identity": MODULE})


@pytest.fixture(scope="module")
def sim_run(track_b_world, tmp_path_factory):
    """The session's score of one story brought with memory none, decay:20 and perfect
    (conftest), copied here (the analysis writes into the run) with its clips and their
    truth sidecars under ``base/rollouts``."""
    scored = track_b_world.scored(MEMORY, bootstrap_resamples=200)
    base = track_b_world.workspace(tmp_path_factory.mktemp("identity"), run=scored)
    track_b_world.copy(scored.rollouts, base / "rollouts")
    (story,) = load_stories(scored.gold)
    return base, scored.gold, story.story_id


def _face_model(path: Path) -> Path:
    """A random stand-in for ArcFace (w600k_r50's signature, 64-d): pool, flatten, matmul."""
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    w = np.random.default_rng(0).standard_normal((3 * 14 * 14, 64)).astype(np.float32)
    x = helper.make_tensor_value_info("input.1", TensorProto.FLOAT, ["N", 3, 112, 112])
    y = helper.make_tensor_value_info("683", TensorProto.FLOAT, ["N", 64])
    nodes = [helper.make_node("AveragePool", ["input.1"], ["p"], kernel_shape=[8, 8],
                              strides=[8, 8]),
             helper.make_node("Flatten", ["p"], ["f"], axis=1),
             helper.make_node("MatMul", ["f", "W"], ["683"])]
    graph = helper.make_graph(nodes, "rec", [x], [y], initializer=[numpy_helper.from_array(w, "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="module")
def args(sim_run):
    """The analysis options every test uses (so later runs find the stored measurements)."""
    base, _, _ = sim_run
    face = _face_model(base / "rec.onnx")
    return ["--opt", "frames=4", "--opt", "face_embedder=face/arcface-onnx", "--backend-opt",
            f"face/arcface-onnx:weights={face}", "--quiet"]


@pytest.fixture(scope="module")
def analysed(sim_run, args):
    base, _, _ = sim_run
    saved = TrackB.analyses
    TrackB.analyses = {"identity": MODULE}  # module scope: monkeypatch is per test
    try:
        main(["analyze", "vmem_track_b", str(base / "run"), "--only", "identity", *args])
    except SystemExit as exc:
        assert not exc.code, exc.code
    finally:
        TrackB.analyses = saved
    return json.loads((base / "run" / "analyses" / "identity.json").read_text("utf-8"))


def _truth_correct(base: Path, sid: str, cond: str, seg: int, name: str) -> bool:
    truth = json.loads((base / "rollouts" / sid / cond / f"seg_{seg:03d}.mp4.truth.json")
                       .read_text("utf-8"))
    hit = [e for e in truth["entities"] if e["name"] == name]
    return bool(hit) and hit[0]["source"] != "impostor" and hit[0]["appearance_correct"] is True


@pytest.mark.slow  # 42 sim clips rendered and judged, then searched (~2 min on busy cores)
def test_identity_follows_the_memory_and_the_sim_truth(sim_run, analysed):
    base, gold, sid = sim_run
    res = analysed["result"]
    (story,) = load_stories(gold)
    names = {e.eid: e.name for e in story.entities.values()}
    agree = total = 0
    for cond, rows in res["units"][sid].items():
        for u in rows:
            if u["kind"] == "location":
                continue
            for side, seg in (("found_current", u["segment_id"]),
                              ("found_previous", u["previous_segment_id"])):
                total += 1
                agree += u[side] == _truth_correct(base, sid, cond, seg, names[u["eid"]])
    assert total >= 60 and agree / total >= 0.9, (agree, total)  # measured: 65 of 66

    ret = {c: res["table"][c]["return_after_absence"] for c in MEMORY}
    assert ret["perfect"]["n_found_both"] >= 5
    assert ret["perfect"]["found_both"] > ret["decay"]["found_both"] > ret["none"]["found_both"]
    assert ret["perfect"]["found_both"] == 1.0 and ret["none"]["found_both"] == 0.0
    # a pair found on both sides is the same asset, so it is far above the negatives
    neg = max(res["calibration"]["character"]["negative_scores"]
              + res["calibration"]["prop"]["negative_scores"])
    assert ret["perfect"]["mean_similarity"] > neg + 0.05
    d = res["deltas"]["perfect"]["return_after_absence"]["rates"]["found_both"]
    assert (d["difference"], d["ci_low"], d["ci_high"]) == (1.0, 1.0, 1.0)  # one story
    assert res["pair_judge"]["status"] == "skipped"
    assert analysed["protocol"]["statistics"]["frozen"]["rule"].startswith("the cuts")
    md = (base / "run" / "report" / "report.md").read_text("utf-8")
    assert "Identity: calibration (frozen before scoring)" in md


@pytest.mark.slow
def test_faces_of_the_face_character_through_the_face_embedder(sim_run, analysed):
    base, gold, sid = sim_run
    res = analysed["result"]
    assert res["faces"]["status"] == "ok" and res["faces"]["embedder"] == "face/arcface-onnx"
    (story,) = load_stories(gold)
    rows = [r for rows in res["units"][sid].values() for r in rows if r["kind"] == "character"]
    assert rows and all("face_score" in r for r in rows)
    for r in rows:  # a face is looked for only inside a found crop
        assert r["found_current"] or not r["faces_current"]
        assert r["found_previous"] or not r["faces_previous"]
    kira = {e.eid for e in story.entities.values() if e.name == "Kira"}  # the sim's face sprite
    both = [r for r in rows if r["faces_current"] and r["faces_previous"]]
    assert both and {r["eid"] for r in both} <= kira
    assert min(r["face_score"] for r in both) > 0.9  # the same photo, whatever the weights
    fam = res["faces"]["table"]["perfect"]["return_after_absence"]
    assert fam["found_both"] > res["faces"]["table"]["none"]["return_after_absence"]["found_both"]
    # one face character: no negative face control, so no face cut -- and it says why
    assert res["calibration"]["face"]["cut"] is None
    assert res["calibration"]["face"]["why"] == "no negative control pairs"
    md = (base / "run" / "report" / "report.md").read_text("utf-8")
    assert "Identity: faces (face/arcface-onnx, largest face in the crop)" in md


@pytest.mark.slow
def test_the_cut_lies_between_the_controls_and_calibrate_prints_it(sim_run, analysed, capsys):
    base, _, _ = sim_run
    cal = analysed["result"]["calibration"]
    frozen = RunDir.open(base / "run").manifest.calibration["identity"]
    key = analysed["result"]["calibration_key"]
    assert frozen[key]["kinds"] == cal  # frozen in run.json before scoring, and the same
    for kind in ("character", "prop", "location"):
        c = cal[kind]
        pos, neg = np.array(c["positive_scores"]), np.array(c["negative_scores"])
        assert len(pos) >= 3 and len(neg) >= 2, kind
        assert neg.max() < c["cut"] < pos.min(), kind  # separated controls: J = 1
        assert c["cut"] == (pos.min() + neg.max()) / 2, kind  # the midpoint
        assert (c["tpr"], c["fpr"]) == (np.mean(pos >= c["cut"]), np.mean(neg >= c["cut"]))
        assert c["cuts_with_max_j"]["highest"] == pytest.approx(pos.min())
        assert c["cuts_with_max_j"]["lowest"] == pytest.approx(pos.min())
    code, out, err = cli(capsys, "calibrate", "vmem_track_b", str(base / "run"), "--json")
    assert code == 0, err
    assert json.loads(out)["identity"] == frozen
    code, out, err = cli(capsys, "calibrate", "vmem_track_b", str(base / "run"))
    assert code == 0, err
    assert "identity / face: no cut (no negative control pairs)" in out
    for kind in ("character", "prop", "location"):
        assert f"identity / {kind}: ROC" in out
        assert f"cut {cal[kind]['cut']:.4f} (same iff score >= cut)" in out
        assert f"AUC {cal[kind]['auc']:.4f}" in out


@pytest.mark.slow
def test_refusals_resume_and_an_uncalibrated_run(sim_run, analysed, args, capsys, tmp_path,
                                                  monkeypatch):
    base, _, _ = sim_run
    run = str(base / "run")
    for opt, says in (("pair_judge=judge/sim-cards", "cannot answer the same-individual"),
                      ("face_embedder=face/nope", "face/nope"),
                      ("colour=red", "unknown option(s) colour"),
                      ("frames=1", "frames='1' must be an integer >= 2"),
                      ("segmenter=classic/grabcat", "classic/grabcut")):
        code, _, err = cli(capsys, "analyze", "vmem_track_b", run, "--only", "identity",
                           "--opt", opt, "--quiet")
        assert code == 2 and says in " ".join(err.split()), (opt, err)
    assert json.loads((base / "run" / "analyses" / "identity.json").read_text()) == analysed
    # again: every story's measurements come from the item store, nothing is measured
    def no_measuring(item):
        raise AssertionError("measured again")

    monkeypatch.setattr(story_mod, "measure_story", no_measuring)
    code, _, err = cli(capsys, "analyze", "vmem_track_b", run, "--only", "identity", *args)
    assert code == 0, err
    with RunDir.open(run).items() as store:
        assert store.counts(kind="analysis:identity") == {"total": 1, "done": 1, "error": 0}
    again = json.loads((base / "run" / "analyses" / "identity.json").read_text())
    assert again["result"]["table"] == analysed["result"]["table"]
    bare = tmp_path / "bare"
    shutil.copytree(run, bare, ignore=shutil.ignore_patterns("analyses"))
    unfrozen = RunDir.open(bare)  # the cuts live in run.json now
    unfrozen.manifest = unfrozen.manifest.model_copy(update={"calibration": {}})
    unfrozen.save()
    code, _, err = cli(capsys, "calibrate", "vmem_track_b", str(bare))
    assert code == 2 and "no calibration written yet" in err


class _FakeVlm:
    """Says every pair is visible in both and the same individual; records what it saw."""

    def __init__(self) -> None:
        self.requests = []

    def judge_many(self, requests, **_):
        self.requests += list(requests)
        return [JudgeResult(r.item_id, "ok", {"visible_earlier": True, "visible_later": True,
                                              "same_individual": True}, "{}", 1, "fake")
                for r in requests]


@pytest.mark.slow
def test_the_pair_judge_gets_three_frames_of_each_clip(sim_run, analysed, args, capsys,
                                                        monkeypatch):
    base, _, _ = sim_run
    fake = _FakeVlm()
    monkeypatch.setattr(judge_mod, "_judge", lambda name, options: fake)
    code, _, err = cli(capsys, "analyze", "vmem_track_b", str(base / "run"), "--only",
                       "identity", *args, "--opt", "pair_judge=judge/openai")
    assert code == 0, err
    res = json.loads((base / "run" / "analyses" / "identity.json").read_text())["result"]
    n_units = sum(len(rows) for conds in res["units"].values() for rows in conds.values())
    assert len(fake.requests) == n_units
    assert {len(r.images) for r in fake.requests} == {6}
    assert {r.contract for r in fake.requests} == {"vmem_track_b/identity_pair@1"}
    pj = res["pair_judge"]
    assert pj["status"] == "ok"
    assert pj["rates"]["perfect"]["return_after_absence"]["same_individual_rate"] == 1.0


def test_condition_table_and_deltas_by_hand():
    cal = stats.calibrate({"positive": [{"kind": "prop", "score": 0.9}],
                           "negative": [{"kind": "prop", "score": 0.5}]})  # cut 0.7
    row = {"family": "return_after_absence", "kind": "prop", "found_current": True,
           "found_previous": True}
    per_story = {"s1": {"none": [{**row, "score": -0.2}, {**row, "found_previous": False,
                                                          "score": None}],
                        "x": [{**row, "score": 0.6}, {**row, "score": 0.95}]}}
    table, counts = stats.condition_table(per_story, cal)
    assert table["none"]["return_after_absence"]["mean_similarity"] == pytest.approx(-0.2)
    assert table["x"]["return_after_absence"]["mean_similarity"] == pytest.approx(0.775)
    assert table["none"]["all"]["found_both"] == 0.5
    assert table["x"]["all"]["same_all"] == 0.5 and table["none"]["all"]["same_all"] == 0.0
    d = stats.deltas(counts, "none", n_resamples=50, seed=1, confidence=0.95)
    sim = d["x"]["return_after_absence"]["rates"]["mean_similarity"]
    assert sim["difference"] == pytest.approx(0.975)  # 0.775 - (-0.2), via (1 + cos) / 2
    assert sim["ci_low"] == pytest.approx(0.975) and sim["rate_b"] == pytest.approx(-0.2)
    assert "none" not in d
    assert cal["character"] == {"cut": None, "why": "no positive or negative control pairs",
                                "n_positive": 0, "n_negative": 0}
