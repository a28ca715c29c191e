"""Sim Track-B stories exercise all nine stress families, and their truth agrees with the gold.

For every family of :data:`vidmem.metrics.track_b.FAMILIES` the default sim build (seed 0,
the builder's default number of stories) has entries, checked three ways:

* gold against truth, family by family (the destroyed prop is absent from every later
  segment, the false friend is drawn as itself and is the sim look-alike of its
  target, the temporal reference is name-free and means the anchored entity...);
* the scorer's own family rates over verdicts read off the truth sidecar (what a
  perfect generator draws): every headline rate is 1 on a non-empty denominator, and a
  truth that draws the wrong things is caught;
* a perfect-memory rollout of the sim generator: the segments of the new kinds (false
  friend, temporal references) draw what the truth says -- by the renderer's own
  bookkeeping and by the card judge ``judge/sim-cards`` reading the pixels.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vidmem.benchmarks.vmem_track_b.sim_build import DEFAULT_N_CASES, story_truth
from vidmem.generators.protocol import GenerationRequest
from vidmem.generators.sim import SimGenerator
from vidmem.io.video import probe, read_frames
from vidmem.metrics.track_b import FAMILIES, EntryVerdict, SegmentVerdict, family_rates
from vidmem.models.backends.judge_sim_cards import SimCardJudge
from vidmem.models.protocols import JudgeRequest
from vidmem.runners.sim_build import build
from vidmem.sim.assets import ENTITIES
from vidmem.sim.cards import write_card_deck
from vidmem.sim.story_compile import compile_story
from vidmem.sim.story_grammar import name_kind, parse_mentions, parse_temporal_references
from vidmem.sim.story_plan import plan_story, story_id_for

SEED = 0
REMOVED = ("destroyed", "deceased")


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def stories(tmp_path_factory) -> tuple[Path, list[tuple[dict, dict, dict]]]:
    """The default build: (root, [(gold, prompts, truth) per story])."""
    root = tmp_path_factory.mktemp("sim_families")
    summary = build("vmem_track_b", root, seed=SEED)
    assert summary.n_cases == DEFAULT_N_CASES
    out = []
    for sid in summary.extras["story_ids"]:
        out.append((_load(root / "gt" / f"{sid}.json"),
                    _load(root / "sut_prompts" / f"{sid}_name_anchored.json"),
                    _load(root / "_truth" / f"{sid}.json")))
    return root, out


def _segments(gt: dict, prompts: dict, truth: dict):
    for seg, p, t in zip(gt["segments"], prompts["segments"], truth["segments"], strict=True):
        assert seg["segment_id"] == p["segment_id"] == t["segment_id"]
        yield seg, p["prompt"], t


def _drawn(t: dict) -> dict[str, dict]:
    return {it["eid"]: it for it in t["present"]}


def _verdicts(gt: dict, truth: dict) -> list[SegmentVerdict]:
    """One verdict per roster entity of every segment, answered by the truth sidecar.

    Roles as the scorer defines them: cast characters and props ``required``, cast
    locations ``location``, ``forbidden`` entries, and the absent targets of false
    friends (``false_friend_target``, unless forbidden). The "judge" says present when
    the truth draws the entity, the state shown when the truth's sim state is the gold
    label's, the truth's count, and the instance it draws.
    """
    sid, ents, out = gt["story_id"], truth["entities"], []
    for n, (seg, t) in enumerate(zip(gt["segments"], truth["segments"], strict=True), start=1):
        drawn = _drawn(t)
        members = {m for la in seg.get("lookalike_active", []) for m in la["present_members"]}
        mate = {a: b for la in seg.get("lookalike_active", [])
                for a, b in (la["pair"], la["pair"][::-1])}
        entries = []
        for c in seg["cast"]:
            e, it = ents[c["eid"]], drawn.get(c["eid"])
            st = c.get("state") or {}
            label = st.get("label") if st and not st.get("flashback") else None
            shown = None
            if label is not None and it is not None:
                shown = "changed" if it["state"] == e["states"][label] else "default"
            instance = None
            if c["eid"] in members and it is not None:
                instance = {e["asset"]: True, ents[mate[c["eid"]]]["asset"]: False}.get(it["asset"])
            entries.append(EntryVerdict(
                sid, n, c["eid"], e["kind"], "location" if e["kind"] == "location" else "required",
                it is not None, gap=c.get("gap"), op=c["op"],
                anchor=c.get("anchor", {}).get("type") == "temporal",
                flashback=bool(st.get("flashback")), expected_state=label, judged_state=shown,
                expected_count=c.get("count"),
                judged_count=None if it is None or "count" not in c else it["count"],
                lookalike=c["eid"] in members, instance_match=instance,
                confusable_with=c.get("confusable_with")))
        forbidden = {f["eid"] for f in seg["forbidden"]}
        for f in seg["forbidden"]:
            entries.append(EntryVerdict(sid, n, f["eid"], ents[f["eid"]]["kind"], "forbidden",
                                        f["eid"] in drawn, reason=f["reason"],
                                        reference_indirect=bool(f.get("reference_indirect"))))
        for eid in sorted(set(t["false_friend_targets"]) - forbidden):
            entries.append(EntryVerdict(sid, n, eid, ents[eid]["kind"], "false_friend_target",
                                        eid in drawn))
        out.append(SegmentVerdict(sid, n, True, entries))
    return out


# --------------------------------------------------------------------------- gold vs truth
def test_every_story_of_the_default_build_has_every_family(stories):
    """Per story, the gold fields each family of the scorer counts (PROTOCOL rules)."""
    _, docs = stories
    for gt, _, _ in docs:
        cast = [(seg, c) for seg in gt["segments"] for c in seg["cast"]]
        forb = [f for seg in gt["segments"] for f in seg["forbidden"]]
        kind = {eid: e["kind"] for eid, e in gt["entities"].items()}
        found = {
            "long_gap_return": [c for _, c in cast if kind[c["eid"]] != "location"
                                and c.get("gap", -1) >= 30],
            "temporal_reference": [c for _, c in cast if c.get("anchor", {}).get("type") == "temporal"],
            "state_change": [c for _, c in cast if c["op"] == "transform" and "state" in c],
            "persistent_state": [c for _, c in cast if c["op"] == "persist" and "state" in c],
            "count": [c for _, c in cast if "count" in c and c["op"] != "introduce"],
            "lookalike": [c for seg, c in cast for la in seg.get("lookalike_active", [])
                          if c["eid"] in la["present_members"]],
            "false_friend": [c for _, c in cast if c["op"] == "introduce" and "confusable_with" in c],
            "deprecation": [f for f in forb if f["reason"] in REMOVED],
            "reference_indirect": [f for f in forb if f.get("reference_indirect")],
        }
        assert set(found) == set(FAMILIES)
        assert all(found.values()), {k: len(v) for k, v in found.items()}
        assert gt["params"]["gap_long_threshold"] == 30 and not gt["warnings"]
        probes = gt["summary"]["hard_probe_balance"]
        assert all(b["ok"] for b in probes.values()), probes
        # A temporal reference to a character or prop, and one to a location.
        anchored = {kind[c["eid"]] for c in found["temporal_reference"]}
        assert "location" in anchored and anchored & {"character", "prop"}


def test_the_truth_draws_what_the_gold_asks_family_by_family(stories):
    _, docs = stories
    for gt, prompts, truth in docs:
        ents, names = truth["entities"], {eid: e["name"] for eid, e in gt["entities"].items()}
        assets = [e["asset"] for e in ents.values() if "asset" in e]
        assert len(assets) == len(set(assets))  # one look per entity: drawn look = entity
        removed: dict[str, int] = {}
        introduced: dict[str, int] = {}
        for n, (seg, prompt, t) in enumerate(_segments(gt, prompts, truth), start=1):
            drawn, where = _drawn(t), seg["segment_id"]
            assert [c["eid"] for c in seg["cast"]] == list(drawn), where
            assert t["forbidden"] == [f["eid"] for f in seg["forbidden"]], where
            assert not set(drawn) & set(t["forbidden"]), where
            mentions = {m.name: m for m in parse_mentions(prompt)}
            refs = {r.phrase: r for r in parse_temporal_references(prompt)}
            for c in seg["cast"]:
                it, e = drawn[c["eid"]], ents[c["eid"]]
                introduced.setdefault(c["eid"], n)
                if "count" in c:  # count
                    assert it["count"] == c["count"] == e["count"], where
                if "state" in c:  # state change, persistent state (and flashbacks)
                    assert it["state"] == e["states"][c["state"]["label"]], where
                if "anchor" in c:  # temporal reference: name-free, and it means this entity
                    a = c["anchor"]
                    assert a["type"] == "temporal" and a["resolves_to"] == c["eid"], where
                    assert it["anchor"] == a["phrase"] and a["phrase"] in prompt, where
                    assert names[c["eid"]] not in prompt and refs[a["phrase"]].present, where
                    # The grammar's meaning: the first entity of that kind the story
                    # introduced before this segment.
                    earlier = [x for x in introduced if introduced[x] < n
                               and name_kind(names[x]) == refs[a["phrase"]].kind]
                    first = min(earlier, key=lambda x: (introduced[x], _order(gt, x)))
                    assert first == c["eid"], where
                elif e["kind"] != "location":  # a location may continue unnamed
                    assert names[c["eid"]] in prompt and mentions[names[c["eid"]]].present, where
                if "confusable_with" in c and c["op"] == "introduce":  # false friend
                    target = c["confusable_with"]
                    assert it["confusable_with"] == target and target not in drawn, where
                    assert target in t["false_friend_targets"] and target in introduced, where
                    assert ENTITIES[e["asset"]].lookalike == ents[target]["asset"], where
                if c.get("gap", -1) >= 30:  # long-gap return
                    assert c["op"] == "recall_after_gap", where
            for la in seg.get("lookalike_active", []):  # look-alike
                a, b = la["pair"]
                assert ENTITIES[ents[a]["asset"]].lookalike == ents[b]["asset"]
                for m in la["pair"]:
                    assert (m in drawn) == (m in la["present_members"]) != (m in t["forbidden"]), where
            for f in seg["forbidden"]:  # deprecation, reference-indirect
                if f["reason"] in REMOVED:
                    removed.setdefault(f["eid"], n)
                    assert int(f["grounded_by"][4:]) < n, where
                if f.get("reference_indirect"):
                    assert mentions[names[f["eid"]]].present is False, where
                elif f["reason"] in REMOVED:
                    assert names[f["eid"]] not in prompt, where
        # Once removed, never drawn again and forbidden in every later segment.
        for eid, first in removed.items():
            for t in truth["segments"][first - 1:]:
                assert eid in t["forbidden"] and eid not in _drawn(t)


def _order(gt: dict, eid: str) -> int:
    """Position of ``eid`` in the cast of the segment that introduces it."""
    for seg in gt["segments"]:
        for k, c in enumerate(seg["cast"]):
            if c["eid"] == eid:
                return k
    raise AssertionError(eid)


def test_the_families_hold_for_every_seed_and_story_index():
    """The shape is the same for any build seed: every family in every story."""
    for seed in range(6):
        for index in range(DEFAULT_N_CASES + 2):
            gt = compile_story(plan_story(seed, index))
            assert gt["story_id"] == story_id_for(seed, index) and not gt["warnings"]
            fam = family_rates(_verdicts(gt, story_truth(gt)))
            assert all(fam[f].headline.denominator >= 1 for f in FAMILIES), (seed, index)


# --------------------------------------------------------------------------- scorer vs truth
def test_the_scorer_gives_a_perfect_truth_full_marks_in_every_family(stories):
    _, docs = stories
    segs = [s for gt, _, truth in docs for s in _verdicts(gt, truth)]
    fam = family_rates(segs)
    for name in FAMILIES:
        head = fam[name].headline
        assert head.denominator >= 1 and head.value == 1.0, (name, head)
    assert fam["false_friend"].rates["confusion_rate"].denominator >= 1
    assert fam["false_friend"].rates["confusion_rate"].value == 0.0
    assert fam["lookalike"].rates["absent_avoid_ok"].value == 1.0
    assert fam["count"].rates["off_by_one_rate"].value == 0.0
    # Every kind of roster entry the families need occurs.
    roles = {e.role for s in segs for e in s.entries}
    assert roles == {"required", "location", "forbidden"}  # the false friend's target is forbidden
    assert any(e.role == "location" and e.anchor for s in segs for e in s.entries)


def test_a_truth_that_draws_the_wrong_things_is_caught(stories):
    """The check can fail: the look-alike target instead of the false friend, a forgotten
    anchored entity, the destroyed prop drawn again."""
    _, docs = stories
    gt, _, truth = docs[0]
    bad = json.loads(json.dumps(truth))
    for seg, t in zip(gt["segments"], bad["segments"], strict=True):
        for c in seg["cast"]:
            if c["op"] == "introduce" and "confusable_with" in c:
                t["present"] = [it for it in t["present"] if it["eid"] != c["eid"]]
                t["present"].append({"eid": c["confusable_with"], "state": "base", "count": 1})
            if "anchor" in c:
                t["present"] = [it for it in t["present"] if it["eid"] != c["eid"]]
    fam = family_rates(_verdicts(gt, bad))
    assert fam["false_friend"].headline.value == 0.0
    assert fam["false_friend"].rates["confusion_rate"].value == 1.0
    assert fam["temporal_reference"].headline.value == 0.0
    assert fam["deprecation"].headline.value < 1.0 and fam["reference_indirect"].headline.value < 1.0


# --------------------------------------------------------------------------- rendering
@pytest.fixture(scope="module")
def rollouts(stories):
    """A perfect-memory rollout of every default story (1 fps): side truth per segment."""
    root, docs = stories
    gen = SimGenerator(memory="perfect", seed=0)
    out = {}
    for gt, prompts, _ in docs:
        sid, sides = gt["story_id"], {}
        for p in prompts["segments"]:
            req = GenerationRequest(f"{sid}/{p['segment_id']}", "vmem_track_b", p["prompt"],
                                    str(root / "perfect" / sid / f"{p['segment_id']}.mp4"), fps=1.0)
            res = gen.generate(req)
            assert res.status == "ok", res.error
            sides[p["segment_id"]] = (res, _load(Path(res.extras["truth_path"])))
        out[sid] = sides
    return out


def _new_kinds(gt: dict) -> list[dict]:
    """The segments with a false-friend introduction or a temporal reference."""
    return [seg for seg in gt["segments"] if any(
        "anchor" in c or (c["op"] == "introduce" and "confusable_with" in c) for c in seg["cast"])]


def _side_agrees(seg: dict, t: dict, side: dict, truth: dict) -> None:
    ents, where = truth["entities"], seg["segment_id"]
    drawn = {it["name"]: it for it in side["entities"] if it["track_ids"]}
    assert not side["not_drawn"] and not side["leaked"], where
    for it in t["present"]:
        e = ents[it["eid"]]
        if "place" in it:
            assert (side["location"]["name"], side["location"]["place"]) == (e["name"], it["place"])
            continue
        got = drawn[e["name"]]
        assert (got["asset"], got["state"], got["count"]) == (it["asset"], it["state"], it["count"])
        assert len(got["track_ids"]) == it["count"] and got["appearance_correct"] is True, where
    # What must not be there is not drawn: not by name, not by look.
    for eid in {*t["forbidden"], *t["false_friend_targets"]}:
        assert ents[eid]["name"] not in drawn, where
        assert all(d["asset"] != ents[eid].get("asset") for d in drawn.values()), where
    # Every temporal reference resolved to the anchored entity.
    anchors = {c["anchor"]["phrase"]: ents[c["eid"]]["name"] for c in seg["cast"] if "anchor" in c}
    got = {r["phrase"]: r["resolves_to"] for r in side["temporal_references"]}
    assert got == anchors, where


def _line(gt: dict, eid: str, label: str | None = None) -> dict:
    """A judge roster line: every state of a stateful entity is a candidate card."""
    e = gt["entities"][eid]
    line = {"entity_id": eid, "name": e["name"], "kind": e["kind"]}
    if "states" in e:
        line.update(states=e["states"], appearance=e["states"][label or e["initial_state"]])
    else:
        line["appearance"] = e["appearance"]
    return line


@pytest.mark.slow  # two 40-segment rollouts and a card deck: ~10 s
def test_perfect_memory_draws_the_false_friend_and_the_anchored_entities(stories, rollouts,
                                                                         tmp_path):
    _, docs = stories
    judge = SimCardJudge(weights=write_card_deck(tmp_path / "deck"), max_frames=3)
    checked = set()
    for gt, _, truth in docs:
        sid, ents = gt["story_id"], truth["entities"]
        for seg in _new_kinds(gt):
            t = truth["segments"][int(seg["segment_id"][4:]) - 1]
            res, side = rollouts[sid][seg["segment_id"]]
            _side_agrees(seg, t, side, truth)
            # The card judge, from pixels: what the truth draws is there, the rest is not.
            lines = []
            for c in seg["cast"]:
                lines.append(_line(gt, c["eid"], (c.get("state") or {}).get("label")))
                if "count" in c:
                    lines[-1]["count"] = c["count"]
            lines += [_line(gt, eid) for eid in sorted({*t["forbidden"], *t["false_friend_targets"]})]
            n = probe(res.video_path).n_frames
            frames = read_frames(res.video_path, [0, n // 2, n - 1])
            answer = judge.judge(JudgeRequest(f"{sid}/{seg['segment_id']}", "", tuple(frames),
                                              ("items",), {"roster": lines}))
            assert answer.status == "ok", answer.error
            items = {it["entity_id"]: it for it in answer.data["items"]}
            for line in lines:
                want = line["entity_id"] in _drawn(t)
                assert items[line["entity_id"]]["present"] is want, (seg["segment_id"], line)
                if want and "count" in line:
                    assert items[line["entity_id"]]["count"] == line["count"], seg["segment_id"]
            for c in seg["cast"]:
                if "anchor" in c:
                    checked.add("anchor:" + ents[c["eid"]]["kind"])
                if c["op"] == "introduce" and "confusable_with" in c:
                    checked.add("false_friend")
    assert checked == {"anchor:location", "anchor:prop", "false_friend"}


def test_without_memory_the_anchor_resolves_but_the_look_is_lost(stories, tmp_path):
    """The temporal reference is a memory test: the no-memory generator knows *which*
    entity is meant (the script) but not what it looks like (an impostor)."""
    root, docs = stories
    gt, prompts, truth = docs[0]
    sid = gt["story_id"]
    seg = next(s for s in _new_kinds(gt) if any(
        "anchor" in c and truth["entities"][c["eid"]]["kind"] == "location" for c in s["cast"]))
    anchored = next(c for c in seg["cast"] if "anchor" in c)
    gen = SimGenerator(memory="none", seed=0)
    sides = {}
    for p in (prompts["segments"][0], prompts["segments"][int(seg["segment_id"][4:]) - 1]):
        req = GenerationRequest(f"{sid}/{p['segment_id']}", "vmem_track_b", p["prompt"],
                                str(tmp_path / f"{p['segment_id']}.mp4"), fps=1.0)
        res = gen.generate(req)
        assert res.status == "ok", res.error
        sides[p["segment_id"]] = _load(Path(res.extras["truth_path"]))
    side = sides[seg["segment_id"]]
    name = truth["entities"][anchored["eid"]]["name"]
    assert [r["resolves_to"] for r in side["temporal_references"]] == [name]
    assert side["location"]["name"] == name and side["location"]["source"] == "impostor"
    assert side["location"]["correct"] is False


def test_the_generator_resolves_a_temporal_reference_or_draws_nothing(tmp_path):
    """Grammar edge cases: nothing of the kind introduced yet (not drawn, not guessed), a
    reference to a past entity (drawn as remembered), one said to be only remembered."""
    gen = SimGenerator(memory="perfect", seed=0)

    def run(seg: int, prompt: str) -> dict:
        req = GenerationRequest(f"s/seg_{seg:03d}", "vmem_track_b", prompt,
                                str(tmp_path / f"seg_{seg:03d}.mp4"), fps=1.0)
        res = gen.generate(req)
        assert res.status == "ok", res.error
        return _load(Path(res.extras["truth_path"]))

    fresh = run(1, "At the Old Quarry（A brick wall.）, Ada（A cat.） looks at the group from "
                   "the opening.")
    assert fresh["temporal_references"] == [{"phrase": "the group from the opening",
                                             "kind": "group", "present": True, "resolves_to": None}]
    assert [e["name"] for e in fresh["entities"]] == ["Ada"]
    run(2, "Ada finds the Pips（Three gold coins.）; Orbit（A space shuttle.） looks like Vesta.")
    later = run(3, "Back at the place from the opening, the figure from the opening waits; "
                   "Orbit remembers the group from the opening.")
    assert {r["phrase"]: (r["resolves_to"], r["present"]) for r in later["temporal_references"]} == {
        "the place from the opening": ("Old Quarry", True),
        "the figure from the opening": ("Ada", True),
        "the group from the opening": ("Pips", False)}
    assert (later["location"]["name"], later["location"]["place"]) == ("Old Quarry", "brick")
    drawn = {e["name"]: (e["asset"], e["source"]) for e in later["entities"]}
    assert drawn == {"Orbit": ("shuttle", "memory"), "Ada": ("cat", "memory")}
