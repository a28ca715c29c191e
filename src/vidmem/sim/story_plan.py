"""Author a sim Track-B story skeleton (``gt_source``) from a seed.

Every story has the same dramatic shape, drawn with different entities, names, places
and wording per ``(seed, index)``; its length and long-gap threshold are parameters.

Cast (entity ids in this order): ``E1`` and ``E2`` characters (``E2`` changes state:
a party hat or a new colour), ``E3`` a counted group of 2 or 3 identical props, ``E4`` a
prop that is destroyed (``intact -> cracked``, a ``remove`` event), ``E5``/``E6`` a
look-alike pair of props (``cup``/``blue_cup`` or ``rocket``/``shuttle``), ``E7``-``E9``
three locations, ``E10`` a false friend of ``E4``: the other member of the look-alike
asset pair that ``E5``/``E6`` do not use, ``E4`` being its first member (``E4`` a
rocket, ``E10`` a space shuttle, ...).

Scenes (``n_segments >= 14``; the filler makes up the rest)::

    S1  at E7   E1 finds the group E3 (introduce, count), counts it (count recall),
                sets down E4 (introduce)
    S2  at E8   E2 shows the look-alikes E5 and E6 side by side (both present)
    S3  at E7   E1 polishes E4; E4 cracks (state change + removal); "E4 is gone"
                (forbidden, reference-indirect)
    S4  at E9   E2 with E5 alone (E6 forbidden: lookalike_absent); E2 changes state;
                E2 keeps it (persist)
    S5  at E8   E1 finds E10 (introduce, confusable_with E4); "E10 looks like E4, but
                it is not" (E4 forbidden and reference-indirect; the false-friend
                target is not in the cast)
    F*  at E8/E9  filler scenes of 3-6 segments: E1 and/or E2 (persisting state),
                sometimes "E1 remembers E4" (reference-indirect)
    SZ  at E7   "back at the place from the opening" (E7, a temporal reference:
                anchor, name-free), E1 finds E3 again (long-gap return with count)
                beside E6 (E6's long-gap return); E1, E2, "the group from the opening"
                (E3, a temporal reference with count) and E6 together (E5 forbidden
                in both: lookalike_absent)

``E3`` is last seen in segment 2 and returns in segment ``n - 1`` (gap ``n - 4``), so a
story of ``n_segments >= gap_long_threshold + 4`` has a long-gap return (``E6`` in the
same segment: gap ``n - 7``; ``E7``: gap ``n - 10``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vidmem.errors import UserInputError
from vidmem.sim.assets import COLOURS, PLACES
from vidmem.sim.story_grammar import (
    CHARACTER_NAMES,
    GROUP_NAMES,
    LOCATION_NAMES,
    PROP_NAMES,
    appearance_text,
    place_text,
    temporal_reference_text,
)

__all__ = ["MIN_SEGMENTS", "plan_story", "story_id_for"]

#: the fixed scenes take this many segments; the filler takes the rest.
MIN_SEGMENTS = 14
#: look-alike pairs used in stories (``gold_coin``/``old_coin`` is left out: the old coin
#: has too few SIFT keypoints for ``judge/sim-cards`` to see it reliably).
_PAIRS = (("cup", "blue_cup"), ("rocket", "shuttle"))
_CHARACTERS = ("face", "cat", "horse")
_GROUP_ASSETS = ("patch", "gold_coin", "logo", "helmet")
_FILLER = ("{a} walks slowly around.", "{a} rests for a while.", "{a} looks around.",
           "{a} waits quietly.", "{a} and {b} talk.", "{a} and {b} walk together.")


def story_id_for(seed: int, index: int) -> str:
    """The id of story ``index`` (0-based) of a build: ``"0001_sim_s<seed>"`` etc.

    Example:
        >>> story_id_for(3, 0)
        '0001_sim_s3'
    """
    return f"{index + 1:04d}_sim_s{seed}"


def _rng(seed: int, index: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), int(index), 0x7B])


def _pick(rng: np.random.Generator, pool: list[str] | tuple[str, ...], k: int) -> list[str]:
    idx = rng.choice(len(pool), size=k, replace=False)
    return [pool[int(i)] for i in idx]


def _cast(rng: np.random.Generator) -> dict[str, Any]:
    c1, c2 = _pick(rng, _CHARACTERS, 2)
    k = int(rng.integers(len(_PAIRS)))
    la, lb = _PAIRS[k]
    g = _pick(rng, _GROUP_ASSETS, 1)[0]
    d, ff = _pick(rng, _PAIRS[1 - k], 2)  # the destroyed prop and its false friend
    places = _pick(rng, sorted(PLACES), 3)
    names = _pick(rng, CHARACTER_NAMES, 2) + _pick(rng, GROUP_NAMES, 1) + _pick(
        rng, PROP_NAMES, 4) + _pick(rng, LOCATION_NAMES, 3)
    if rng.random() < 0.5:
        change = ("party_hat", "accessory")
    else:
        colour = _pick(rng, sorted(COLOURS), 1)[0]
        change = (f"painted_{colour}", f"recoloured:{colour}")
    return {"assets": [c1, c2, g, d, la, lb, ff], "places": places, "names": names,
            "count": int(rng.integers(2, 4)), "change": change}


def _entities(cast: dict[str, Any]) -> tuple[dict[str, Any], dict[str, list[str]]]:
    n = cast["names"]
    c1, c2, g, d, la, lb, ff = cast["assets"]
    label, sim_state = cast["change"]
    ents: dict[str, Any] = {
        "E1": {"name": n[0], "kind": "character", "appearance": appearance_text(c1)},
        "E2": {"name": n[1], "kind": "character",
               "states": {"plain": appearance_text(c2), label: appearance_text(c2, sim_state)}},
        "E3": {"name": n[2], "kind": "prop", "appearance": appearance_text(g, count=cast["count"])},
        "E4": {"name": n[3], "kind": "prop",
               "states": {"intact": appearance_text(d), "cracked": appearance_text(d, "broken")}},
        "E5": {"name": n[4], "kind": "prop", "appearance": appearance_text(la)},
        "E6": {"name": n[5], "kind": "prop", "appearance": appearance_text(lb)},
    }
    for k, pid in enumerate(cast["places"]):
        ents[f"E{7 + k}"] = {"name": n[7 + k], "kind": "location", "appearance": place_text(pid)}
    ents["E10"] = {"name": n[6], "kind": "prop", "appearance": appearance_text(ff)}
    machines = {"E2": ["plain", label], "E4": ["intact", "cracked"]}
    return ents, machines


def _filler(rng: np.random.Generator, n_fill: int, names: dict[str, str],
            start: int) -> list[dict[str, Any]]:
    scenes, k = [], 0
    while n_fill > 0:
        size = min(n_fill, int(rng.integers(3, 7)))
        if 0 < n_fill - size < 3:
            size = n_fill
        loc = "E8" if k % 2 == 0 else "E9"
        actions: list[Any] = []
        for j in range(size):
            who = ["E1", "E2"] if rng.random() < 0.4 else [["E1"], ["E2"]][int(rng.integers(2))]
            tpl = [t for t in _FILLER if ("{b}" in t) == (len(who) == 2)]
            text = tpl[int(rng.integers(len(tpl)))].format(a=names[who[0]], b=names[who[-1]])
            if "E1" in who and rng.random() < 0.25:
                text += f" {names['E1']} remembers {names['E4']}."
            if j == 0:
                text = f"At the {names[loc]}, {text}"
            actions.append({"action": text, "present": [loc, *who]})
        scenes.append({"id": f"F{start + k}", "setting": "Filler: routine days (stretch the gaps)",
                       "present": [loc], "actions": actions})
        n_fill -= size
        k += 1
    return scenes


def _anchor(phrase: str, eid: str) -> dict[str, str]:
    """A temporal (name-free) reference to ``eid`` (gold ``anchor``)."""
    return {"type": "temporal", "phrase": phrase, "resolves_to": eid}


def plan_story(seed: int, index: int, *, n_segments: int = 40, gap_long_threshold: int = 30,
               segment_sec: float = 5.0, avoidance_probe_window: int = 4,
               probe_target: int = 1) -> dict[str, Any]:
    """The ``gt_source`` skeleton of story ``index`` of a build with ``seed``.

    Args:
        seed: build seed.
        index: 0-based story index.
        n_segments: story length in segments (at least :data:`MIN_SEGMENTS`).
        gap_long_threshold: gap (segments) from which a return counts as long.
        segment_sec: seconds per segment.
        avoidance_probe_window: segments after a removal with a deprecation probe.
        probe_target: the hard-probe target written as ``probe_target_default``.

    Returns:
        The skeleton as a plain dict, in the official ``gt_source`` layout.

    Raises:
        UserInputError: ``n_segments`` below :data:`MIN_SEGMENTS` or a bad parameter.
    """
    if isinstance(n_segments, bool) or not isinstance(n_segments, int) or n_segments < MIN_SEGMENTS:
        raise UserInputError(f"sim track-B story: n_segments must be an int >= {MIN_SEGMENTS}, "
                             f"found {n_segments!r}", hint="pass e.g. n_segments=40")
    if not isinstance(gap_long_threshold, int) or gap_long_threshold < 1:
        raise UserInputError(f"sim track-B story: gap_long_threshold must be an int >= 1, found "
                             f"{gap_long_threshold!r}", hint="pass e.g. gap_long_threshold=30")
    rng = _rng(seed, index)
    cast = _cast(rng)
    ents, machines = _entities(cast)
    nm = {eid: e["name"] for eid, e in ents.items()}
    e1, e2, e3, e4, e5, e6, l1, l2, l3, e10 = (nm[f"E{k}"] for k in range(1, 11))
    opening_place, opening_group = temporal_reference_text("location"), \
        temporal_reference_text("group")
    change_text = ("puts on a party hat" if cast["change"][1] == "accessory"
                   else f"comes back painted {cast['change'][1].split(':')[1]}")
    scenes: list[dict[str, Any]] = [
        {"id": "S1", "setting": "Opening: the group and the fragile prop", "present": ["E7", "E1"],
         "actions": [
             {"action": f"At the {l1}, {e1} finds the {e3} on the ground.",
              "present": ["E7", "E1", {"eid": "E3", "count": cast["count"]}]},
             {"action": f"{e1} counts the {e3} one by one.",
              "present": ["E7", "E1", {"eid": "E3", "count": cast["count"]}]},
             {"action": f"{e1} sets {e4} down carefully.", "present": ["E7", "E1", "E4"]}]},
        {"id": "S2", "setting": "The look-alikes side by side", "present": ["E8", "E2", "E5", "E6"],
         "lookalike_present": {"pair": ["E5", "E6"], "members": ["E5", "E6"]},
         "actions": [f"At the {l2}, {e2} shows {e5} and {e6} side by side.",
                     f"{e2} swaps {e5} and {e6} around."]},
        {"id": "S3", "setting": "The loss", "present": ["E7", "E1", "E4"],
         "actions": [
             f"Back at the {l1}, {e1} polishes {e4}.",
             {"action": f"{e4} falls and cracks; {e1} picks up the pieces.",
              "events": [{"type": "remove", "eid": "E4", "to": "cracked", "reason": "destroyed",
                          "shown": True}]},
             {"action": f"{e1} sighs; {e4} is gone.", "present": ["E7", "E1"]}]},
        {"id": "S4", "setting": "One of the pair alone; a change", "present": ["E9", "E2", "E5"],
         "lookalike_present": {"pair": ["E5", "E6"], "members": ["E5"]},
         "actions": [
             f"At the {l3}, {e2} carries {e5} alone.",
             {"action": f"{e2} {change_text} beside {e5}.",
              "events": [{"type": "state_change", "eid": "E2", "to": cast["change"][0]}]},
             f"{e2} waits with {e5}."]},
        {"id": "S5", "setting": "A false friend of the lost prop", "present": ["E8", "E1"],
         "actions": [
             {"action": f"At the {l2}, {e1} finds {e10}; {e10} looks like {e4}, but it is not.",
              "present": ["E8", "E1", {"eid": "E10", "confusable_with": "E4"}]}]},
    ]
    scenes += _filler(rng, n_segments - MIN_SEGMENTS, nm, 1)
    scenes.append(
        {"id": "SZ", "setting": "The return", "present": ["E7", "E1"],
         "lookalike_present": {"pair": ["E5", "E6"], "members": ["E6"]},
         "actions": [
             {"action": f"Back at {opening_place}, {e1} finds the {e3} again beside {e6}.",
              "present": [{"eid": "E7", "anchor": _anchor(opening_place, "E7")}, "E1",
                          {"eid": "E3", "count": cast["count"]}, "E6"]},
             {"action": f"{e1} and {e2} look at {opening_group}; {e6} stands nearby.",
              "present": ["E7", "E1", "E2",
                          {"eid": "E3", "count": cast["count"],
                           "anchor": _anchor(opening_group, "E3")}, "E6"]}]})
    sid = story_id_for(seed, index)
    return {
        "story_id": sid,
        "title": f"Sim story {sid}",
        "premise": f"{e1} and {e2} between the {l1}, the {l2} and the {l3}. Human-readable "
                   "context only; never fed to the SUT.",
        "_comment": "Written by vidmem.sim.story_plan: entities + state machines + per-scene "
                    "timelines; op/gap/probe/forbidden are derived by vidmem.sim.story_compile. "
                    "Names and appearance phrases follow vidmem.sim.story_grammar.",
        "segment_sec": float(segment_sec), "gap_long_threshold": gap_long_threshold,
        "avoidance_probe_window": avoidance_probe_window, "probe_target_default": probe_target,
        "_state_note": "Stateful entities use states:{label: appearance phrase}; stateless "
                       "entities use appearance. On transition only the current state's phrase "
                       "is injected.",
        "entities": ents, "state_machines": machines,
        "lookalike_pairs": [{"pair": ["E5", "E6"],
                             "features": {"E5": ents["E5"]["appearance"],
                                          "E6": ents["E6"]["appearance"]},
                             "note": "Look-alike props: one alone (do not draw the other) and "
                                     "both together (keep them apart)."}],
        "scenes": scenes,
    }
