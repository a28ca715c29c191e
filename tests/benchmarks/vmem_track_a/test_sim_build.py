"""The sim Track-A builder: official gold format, self-consistent gold, truth, determinism.

The format is checked against the release's sample gold in ``data/vmem_track_a_sample/``
(CC BY 4.0, see its ATTRIBUTION.md): every key the sample's three files have, with the
type the sample uses, recursively.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vidmem.benchmarks.vmem_track_a.sim_build import (
    CARDS_DIR,
    DATASET,
    VIDEOS_DIR,
    build_track_a,
    film_gold,
)
from vidmem.errors import UserInputError
from vidmem.io.video import probe, read_frames
from vidmem.sim.build import TRUTH_DIR
from vidmem.sim.film import film_samples, film_spec, plan_film
from vidmem.sim.media import read_video_spec
from vidmem.sim.render import render_frames
from vidmem.sim.story_grammar import parse_appearance, parse_mentions

SAMPLE = Path(__file__).parent / "data" / "vmem_track_a_sample" / "BlenderOpenMovies"
SPRING = SAMPLE / "spring" / "gold"
CAMINANDES = SAMPLE / "caminandes_2_gran_dillama" / "gold"
FILES = ("chunk_index.json", "chunk_annotations.json", "entity_registry.json")
TAGS = {"none", "re-appearance", "state-change", "scene-return"}


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("track_a_sim")
    start = time.perf_counter()
    summary = build_track_a(root, seed=0)
    seconds = time.perf_counter() - start
    print(f"\nsim Track-A build: {seconds:.2f} s wall")  # measured, not asserted
    fid = summary.extras["film_ids"][0]
    gold = root / DATASET / fid / "gold"
    return {"root": root, "summary": summary, "fid": fid, "gold": gold,
            "index": _load(gold / FILES[0]), "ann": _load(gold / FILES[1]),
            "reg": _load(gold / FILES[2]), "truth": _load(root / TRUTH_DIR / f"{fid}.json"),
            "video": root / VIDEOS_DIR / f"{fid}.mp4"}


# -- format ----------------------------------------------------------------------------


def _shape(values: list[Any]) -> dict[str, Any]:
    """The merged key/type shape of sample values found at one path."""
    types = {type(v).__name__ for v in values}
    shape: dict[str, Any] = {"types": types}
    dicts = [v for v in values if isinstance(v, dict)]
    if dicts:
        keys = {k for d in dicts for k in d}
        shape["keys"] = {k: _shape([d[k] for d in dicts if k in d]) for k in keys}
    lists = [v for v in values if isinstance(v, list)]
    items = [x for v in lists for x in v]
    if items:
        shape["items"] = _shape(items)
    return shape


def _conforms(value: Any, shape: dict[str, Any], where: str, errors: list[str]) -> None:
    name = type(value).__name__
    if name not in shape["types"]:
        errors.append(f"{where}: type {name}, sample has {sorted(shape['types'])}")
        return
    if isinstance(value, dict) and "keys" in shape:
        if set(value) != set(shape["keys"]):
            errors.append(f"{where}: keys {sorted(value)} != sample {sorted(shape['keys'])}")
        for k in set(value) & set(shape["keys"]):
            _conforms(value[k], shape["keys"][k], f"{where}.{k}", errors)
    if isinstance(value, list) and "items" in shape:
        for i, item in enumerate(value):
            _conforms(item, shape["items"], f"{where}[{i}]", errors)


@pytest.mark.parametrize("sample", [
    {FILES[0]: SPRING / FILES[0], FILES[1]: SPRING / FILES[1], FILES[2]: SPRING / FILES[2]},
    {FILES[0]: CAMINANDES / FILES[0], FILES[1]: CAMINANDES / "variants/en" / FILES[1],
     FILES[2]: CAMINANDES / "variants/en" / FILES[2]},
], ids=["spring", "caminandes_en"])
def test_keys_and_types_match_the_sample(built, sample):
    for name, path in sample.items():
        errors: list[str] = []
        _conforms(_load(built["gold"] / name), _shape([_load(path)]), name, errors)
        assert not errors, "\n".join(errors[:20])


def test_layout_and_both_languages(built):
    root, fid, gold = built["root"], built["fid"], built["gold"]
    summary = built["summary"]
    assert summary.benchmark == "vmem_track_a" and summary.manifest == DATASET
    assert summary.n_cases == 1 and summary.n_items == len(built["ann"]["chunks"])
    assert summary.seconds > 0
    for rel in summary.files:
        assert (root / rel).is_file(), rel
    for name in FILES[1:]:  # English prompts under gold/ and gold/variants/en/, identical
        assert (gold / "variants" / "en" / name).read_bytes() == (gold / name).read_bytes()
    assert not (gold / "variants" / "en" / FILES[0]).exists()  # as in the release
    assert (root / CARDS_DIR / "deck.json").is_file()
    assert summary.extras["card_deck"] == CARDS_DIR
    for doc in (built["index"], built["ann"], built["reg"]):
        assert doc["movie_id"] == fid
    assert built["index"]["layout_hash"] == built["reg"]["annotation_provenance"]["layout_hash"]


def test_the_track_a_loader_accepts_the_build(built):
    from vidmem.benchmarks.vmem_track_a.gold import check_video_length, load_gold
    from vidmem.benchmarks.vmem_track_a.validate import validate_gold

    for lang in ("zh", "en"):
        report = validate_gold(built["root"], lang)
        assert not report.problems, report.problems
    film = load_gold(built["root"], "en")[0]
    check_video_length(film, built["video"])


# -- gold ------------------------------------------------------------------------------


def test_gold_is_self_consistent(built):
    idx, ann, reg = built["index"]["chunks"], built["ann"]["chunks"], built["reg"]["entities"]
    ents = {e["entity_id"]: e for e in reg}
    assert [c["chunk_id"] for c in ann] == list(range(len(ann)))
    assert [c["seconds_span"] for c in idx] == [c["seconds_span"] for c in ann]
    # spans tile the video
    info = probe(built["video"])
    assert ann[0]["seconds_span"][0] == 0.0
    for a, b in zip(ann, ann[1:], strict=False):
        assert a["seconds_span"][1] == b["seconds_span"][0]
    assert ann[-1]["seconds_span"][1] == pytest.approx(info.duration_seconds)
    seen: set[str] = set()
    for c in ann:
        assert set(c["first_appearances"]) <= set(c["present"])
        assert set(c["first_appearances"]) == set(c["present"]) - seen
        assert [g["entity_id"] for g in c["gold_instructions"]] == c["present"]
        for g in c["gold_instructions"]:
            want = "introduce" if g["entity_id"] in c["first_appearances"] else "continuity"
            assert g["requirement"] == want
        assert set(c["present"]) <= set(ents)
        assert set(c["scenario_tags"]) <= TAGS and c["scenario_tags"]
        events = [ev for e in reg for ev in e["state_events"] if ev["chunk_id"] == c["chunk_id"]]
        assert ("state-change" in c["scenario_tags"]) == bool(events)
        seen |= set(c["present"])
    assert seen == set(ents)
    for eid, e in ents.items():
        chunks = [c for c in ann if eid in c["present"]]
        assert e["first_chunk"] == chunks[0]["chunk_id"]
        assert chunks[0]["first_appearances"].count(eid) == 1
        # presence_spans agree with `present` chunk by chunk
        for c in ann:
            a, b = c["seconds_span"]
            inside = any(s <= a and b <= t for s, t in e["presence_spans"])
            assert inside == (eid in c["present"]), (eid, c["chunk_id"])
        spans = e["presence_spans"]
        assert e["first_seconds"] == spans[0][0] and e["last_seconds"] == spans[-1][1]
        assert e["screen_time_seconds"] == sum(t - s for s, t in spans)
        gaps = [b[0] - a[1] for a, b in zip(spans, spans[1:], strict=False)]
        assert all(g > 0 for g in gaps) and e["max_absence_seconds"] == max(gaps, default=0.0)
        for ev in e["state_events"]:
            c = ann[ev["chunk_id"]]
            assert eid in c["present"]
            assert c["seconds_span"][0] <= ev["seconds"] < c["seconds_span"][1]
            kind, _, phrase = ev["description"].partition(": ")
            assert kind == "appearance_changed" and parse_appearance(phrase) is not None
        assert parse_appearance(e["description"]) is not None  # judge/sim-cards reads it


def test_the_story_has_returns_and_state_changes(built):
    ann, reg = built["ann"]["chunks"], built["reg"]["entities"]
    kinds = Counter(e["kind"] for e in reg)
    assert kinds == {"character": 2, "prop": 3, "location": 3}
    assert 20 <= len(ann) <= 30
    assert all(4 <= c["seconds_span"][1] - c["seconds_span"][0] <= 8 for c in ann)
    back = [e["entity_id"] for e in reg if e["kind"] != "location" and len(e["presence_spans"]) > 1]
    assert back, "no character or prop leaves and comes back"
    assert any(e["kind"] == "location" and len(e["presence_spans"]) > 1 for e in reg)
    assert sum(len(e["state_events"]) for e in reg) >= 1
    tags = Counter(t for c in ann for t in c["scenario_tags"])
    assert tags["re-appearance"] and tags["scene-return"] and tags["state-change"]


def test_prompts_name_what_is_on_screen(built):
    ann, reg = built["ann"]["chunks"], built["reg"]["entities"]
    ents = {e["entity_id"]: e for e in reg}
    changed = {ev["chunk_id"]: (e["entity_id"], ev["description"].partition(": ")[2])
               for e in reg for ev in e["state_events"]}
    for c in ann:
        mentions = {m.name: m for m in parse_mentions(c["prompt"])}
        assert {n for n, m in mentions.items() if m.present} == {
            ents[e]["name"] for e in c["present"]}, c["prompt"]
        for eid in c["first_appearances"]:  # an introduction carries its appearance
            assert mentions[ents[eid]["name"]].parsed == parse_appearance(ents[eid]["description"])
        if c["chunk_id"] in changed:
            eid, phrase = changed[c["chunk_id"]]
            assert mentions[ents[eid]["name"]].parsed == parse_appearance(phrase)


# -- truth -----------------------------------------------------------------------------


def test_truth_agrees_with_gold(built):
    truth, ann = built["truth"], built["ann"]["chunks"]
    reg = {e["entity_id"]: e for e in built["reg"]["entities"]}
    info = probe(built["video"])
    assert truth["n_frames"] == info.n_frames and truth["fps"] == info.fps
    assert set(truth["entities"]) == set(reg)
    for fps in ("1", "2"):
        rows = truth["samples"][fps]
        assert [r["t"] for r in rows] == [k / int(fps) for k in range(len(rows))]
        assert rows[-1]["t"] < info.duration_seconds <= rows[-1]["t"] + 1 / int(fps) + 1e-9
        for c in ann:
            a, b = c["seconds_span"]
            inside = [r for r in rows if a <= r["t"] < b]
            assert inside and all(r["segment"] == c["chunk_id"] for r in inside)
            for eid in c["present"]:
                share = sum(eid in r["visible"] for r in inside) / len(inside)
                assert share >= 0.5, (fps, c["chunk_id"], eid, share)
            for r in inside:  # nothing outside the chunk's present is visible
                assert set(r["visible"]) <= set(c["present"]), (fps, r["t"])
    # states: the changed entity shows its new state from the event on, the old before
    for eid, e in reg.items():
        for ev in e["state_events"]:
            phrase = ev["description"].partition(": ")[2]
            new = next(s for s, p in truth["entities"][eid]["states"].items() if p == phrase)
            for r in truth["samples"]["2"]:
                if eid in r["visible"]:
                    assert (r["state"][eid] == new) == (r["t"] >= ev["seconds"]), (eid, r["t"])


def test_representations_point_at_the_entity(built):
    truth = built["truth"]
    by_frame = {r["frame"]: r for r in truth["samples"]["2"]}
    for e in built["reg"]["entities"]:
        rep = e["representations"][0]
        row = by_frame[rep["frame_index"]]
        assert row["segment"] == e["first_chunk"] and e["entity_id"] in row["visible"]
        if e["kind"] != "location":
            x0, y0, x1, y1 = rep["bbox"]
            assert 0 <= x0 < x1 <= truth["width"] and 0 <= y0 < y1 <= truth["height"]


def test_video_is_the_planned_render(built):
    plan = plan_film(0)
    spec = film_spec(plan)
    assert read_video_spec(built["video"]).to_json() == spec.to_json()
    idx = [0, 100, 431, 777, spec.n_frames - 1]
    decoded = read_frames(built["video"], idx)
    fresh, _ = render_frames(spec, idx)
    for got, want in zip(decoded, fresh, strict=True):
        mse = float(np.mean((got.astype(np.float64) - want.astype(np.float64)) ** 2))
        assert 10 * math.log10(255**2 / max(mse, 1e-9)) > 30.0


def test_card_judge_sees_the_roster(built):
    """The deck in _cards/ lets judge/sim-cards read the registry and find the entities."""
    from vidmem.models.backends.judge_sim_cards import SimCardJudge
    from vidmem.models.protocols import JudgeRequest

    judge = SimCardJudge(weights=built["root"] / CARDS_DIR)
    roster = [{"entity_id": e["entity_id"], "name": e["name"], "kind": e["kind"],
               "appearance": e["description"]} for e in built["reg"]["entities"]]
    rows = built["truth"]["samples"]["1"][2::23]
    frames = read_frames(built["video"], [r["frame"] for r in rows])
    for row, frame in zip(rows, frames, strict=True):
        res = judge.judge(JudgeRequest(item_id=f"t{row['t']}", prompt="?", images=[frame],
                                       payload={"roster": roster}))
        got = {it["entity_id"] for it in res.data["items"] if it["present"] is True}
        # states are not asked here: a changed entity may be missed, nothing is invented
        assert got <= set(row["visible"]), (row["t"], got, row["visible"])
        unchanged = {e for e in row["visible"] if row["state"][e] == "base"}
        assert unchanged <= got, (row["t"], got, row["visible"])


# -- determinism and parameters --------------------------------------------------------


def test_plan_and_gold_are_pure_functions_of_the_seed():
    a, b = plan_film(0), plan_film(0)
    assert a == b and film_spec(a).to_json() == film_spec(b).to_json()
    ga = film_gold(a, film_samples(film_spec(a), a))
    gb = film_gold(b, film_samples(film_spec(b), b))
    assert json.dumps(ga) == json.dumps(gb)
    other = plan_film(1)
    assert other["film_id"] != a["film_id"] and other["entities"] != a["entities"]
    assert plan_film(0, 1)["entities"] != a["entities"]


@pytest.mark.slow
def test_a_second_build_is_identical(built, tmp_path):
    again = build_track_a(tmp_path, seed=0)
    assert again.files == built["summary"].files
    for rel in again.files:
        if rel.endswith(".json"):
            assert (tmp_path / rel).read_bytes() == (built["root"] / rel).read_bytes(), rel
    video = f"{VIDEOS_DIR}/{built['fid']}.mp4"
    idx = list(range(0, probe(built["video"]).n_frames, 37))
    assert np.array_equal(read_frames(tmp_path / video, idx), read_frames(built["video"], idx))


def test_bad_counts_are_refused(tmp_path):
    with pytest.raises(UserInputError, match="n_cases"):
        build_track_a(tmp_path, n=0)
    with pytest.raises(UserInputError, match="n_cases"):
        build_track_a(tmp_path, n_cases=-1)
    with pytest.raises(UserInputError, match="fps"):
        plan_film(0, fps=7.5)
