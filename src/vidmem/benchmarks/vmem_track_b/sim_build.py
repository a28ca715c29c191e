"""Build synthetic VMem-Bench Track-B stories in the official file layout.

Layout written under ``ROOT`` (one story per case)::

    gt_source/<story_id>.json                the authored skeleton (vidmem.sim.story_plan)
    gt/<story_id>.json                       the compiled gold (vidmem.sim.story_compile)
    sut_prompts/<story_id>_name_anchored.json  the prompt stream a system sees
    _truth/<story_id>.json                   the sim meaning of every entity and segment
    _cards/                                  the sim card deck: the weights of
                                             ``judge/sim-cards`` (--backend-opt
                                             judge/sim-cards:weights=ROOT/_cards)

Story ids are ``0001_sim_s<seed>``, ``0002_sim_s<seed>``...; every field and type of the
three official files is the one of the official sample (a test compares them key by
key). Names and appearance texts follow :mod:`vidmem.sim.story_grammar`, so the prompts
are readable by the sim generator and the rosters by ``judge/sim-cards``.

Truth file ``_truth/<story_id>.json``::

    {"story_id", "segment_sec",
     "entities": {eid: {"name", "kind", "asset" | "place", "count",
                        "states": {label: sim_state}}},      # stateless: {"base": "base"}
     "segments": [{"segment_id",
                   "present": [{"eid", "asset" | "place", "state", "count",
                                "anchor"?: phrase, "confusable_with"?: eid}],
                   "forbidden": [eid, ...], "false_friend_targets": [eid, ...]}]}

``present`` lists what a perfect generator draws in the segment: each cast entity in
its current state (``state`` is the sim state, e.g. ``recoloured:red``), whether the
prompt names it or refers to it name-free (``anchor``: the temporal-reference phrase
that means it, e.g. ``"the group from the opening"``), and a false friend as itself
(``confusable_with``: the earlier look-alike it must not be drawn as). ``forbidden``
is what it never draws (destroyed, or the absent member of an active look-alike pair);
``false_friend_targets`` the look-alikes of the segment's introductions that are not
in its cast: not drawn either (they may be forbidden too).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vidmem.sim.build import TRUTH_DIR, BuildSummary, check_n_cases
from vidmem.sim.cards import write_card_deck
from vidmem.sim.story_compile import compile_story, name_anchored
from vidmem.sim.story_grammar import parse_appearance
from vidmem.sim.story_plan import plan_story

__all__ = ["CARDS_DIR", "DEFAULT_N_CASES", "build_track_b", "story_truth"]

#: where the card deck of ``judge/sim-cards`` goes, under the build root
CARDS_DIR = "_cards"

DEFAULT_N_CASES = 2


def _dump(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def _meaning(text: str) -> dict[str, Any]:
    app = parse_appearance(text)
    if app is None:  # the planner only writes grammar phrases; this is a planner bug
        raise RuntimeError(f"sim track-B: appearance {text!r} is outside the sim grammar")
    if app.place is not None:
        return {"place": app.place, "state": "base", "count": 1}
    return {"asset": app.asset, "state": app.state, "count": app.count}


def story_truth(gt: dict[str, Any]) -> dict[str, Any]:
    """The sim meaning of a compiled sim story (layout in the module docstring)."""
    ents: dict[str, Any] = {}
    for eid, e in gt["entities"].items():
        texts = e.get("states") or {"base": e["appearance"]}
        meanings = {label: _meaning(t) for label, t in texts.items()}
        first = next(iter(meanings.values()))
        row = {"name": e["name"], "kind": e["kind"], "count": first["count"],
               "states": {label: m["state"] for label, m in meanings.items()}}
        row.update({k: first[k] for k in ("asset", "place") if k in first})
        ents[eid] = row
    current = {eid: e.get("initial_state", "base") for eid, e in gt["entities"].items()}
    segments = []
    for seg in gt["segments"]:
        present = []
        for c in seg["cast"]:
            label = c["state"]["label"] if "state" in c else current[c["eid"]]
            if "state" in c and not c["state"].get("flashback"):
                current[c["eid"]] = label
            e = ents[c["eid"]]
            item = {"eid": c["eid"], "state": e["states"][label], "count": e["count"]}
            item.update({k: e[k] for k in ("asset", "place") if k in e})
            if "anchor" in c:
                item["anchor"] = c["anchor"]["phrase"]
            if "confusable_with" in c:
                item["confusable_with"] = c["confusable_with"]
            present.append(item)
        cast = {c["eid"] for c in seg["cast"]}
        targets = sorted({c["confusable_with"] for c in seg["cast"]
                          if c["op"] == "introduce" and "confusable_with" in c} - cast)
        segments.append({"segment_id": seg["segment_id"], "present": present,
                         "forbidden": [f["eid"] for f in seg["forbidden"]],
                         "false_friend_targets": targets})
    return {"story_id": gt["story_id"], "segment_sec": gt["params"]["segment_sec"],
            "entities": ents, "segments": segments}


def build_track_b(root: Path, *, seed: int = 0, n_cases: int | None = None,
                  n_segments: int = 40, gap_long_threshold: int = 30) -> BuildSummary:
    """Write ``n_cases`` sim stories under ``root``.

    Args:
        root: output folder (exists).
        seed: build seed; story ``k`` depends only on ``(seed, k)`` and the parameters.
        n_cases: number of stories (default :data:`DEFAULT_N_CASES`).
        n_segments: segments per story (at least
            :data:`vidmem.sim.story_plan.MIN_SEGMENTS`).
        gap_long_threshold: gap (segments) from which a return counts as long.

    Returns:
        The :class:`~vidmem.sim.build.BuildSummary`; ``extras`` has the story ids and
        each story's longest gap.
    """
    n = check_n_cases(n_cases, DEFAULT_N_CASES, "vmem_track_b")
    files: list[str] = []
    longest: dict[str, Any] = {}
    ids = []
    for index in range(n):
        src = plan_story(seed, index, n_segments=n_segments, gap_long_threshold=gap_long_threshold)
        sid = src["story_id"]
        gt = compile_story(src)
        prompts = name_anchored(gt)
        docs = {f"gt_source/{sid}.json": src, f"gt/{sid}.json": gt,
                f"sut_prompts/{sid}_name_anchored.json": prompts,
                f"{TRUTH_DIR}/{sid}.json": story_truth(gt)}
        for rel, doc in docs.items():
            _dump(root / rel, doc)
        files += list(docs)
        ids.append(sid)
        longest[sid] = gt["summary"]["longest_gap"]
    write_card_deck(root / CARDS_DIR)
    return BuildSummary("vmem_track_b", root, seed, n, n * n_segments, "gt", tuple(sorted(files)),
                        0.0, {"story_ids": ids, "longest_gap": longest,
                              "n_segments": n_segments, "gap_long_threshold": gap_long_threshold,
                              "card_deck": CARDS_DIR})
