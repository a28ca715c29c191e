"""Compile a VMem-Bench Track-B story skeleton into the official gold and prompt files.

Track-B stories come in three files per story id (PROTOCOLS.md section 4):

* ``gt_source/<id>.json`` -- the authored skeleton: entities with their states, the
  state machines, look-alike pairs and scenes. A scene has ``id``, ``setting``, a
  default ``present`` list, an optional ``lookalike_present`` ``{pair, members}`` and
  ``actions``; an action is a string (one segment with the scene's ``present``) or an
  object ``{action, present?, events?}``. ``present`` items are entity ids or objects
  ``{eid, count?, confusable_with?, anchor?, state?}`` (``state`` points a flashback at
  a past state). Events are ``{"type": "state_change", eid, to}`` or ``{"type":
  "remove", eid, to, reason, shown}``.
* ``gt/<id>.json`` -- the compiled gold (:func:`compile_story`): one entry per
  segment with the derived ``cast`` ops and gaps, ``forbidden`` entries, memory probes,
  the ``lookalike_active`` block and a ``summary``.
* ``sut_prompts/<id>_name_anchored.json`` -- what a system sees (:func:`name_anchored`):
  each segment's action with the entity's appearance in full-width brackets
  ``（...）`` right after the first occurrence of its name, only where the entity is
  introduced or changes state.

Derivation rules (they reproduce the official sample exactly; a test checks it):

* ``gap`` = segments between the last appearance and this one (adjacent: 0);
* ``op``: ``introduce`` at the first appearance; ``transform`` in the segment of a
  state-change or remove event; ``persist`` when the entity is in a state other than
  its initial one; ``recall_after_gap`` when ``gap >= gap_long_threshold``; else
  ``recall``. A flashback (``state`` differing from the current one) is a ``recall``
  with ``state.flashback = true`` and does not change the current state;
* after a ``remove`` event the entity is ``forbidden`` (``reason`` destroyed or
  deceased, ``grounded_by`` the event's segment) in every later segment, with
  ``reference_indirect: true`` where the action names it; an absent member of an
  active look-alike pair is forbidden with reason ``lookalike_absent``;
* memory probes (sorted): ``first_appearance`` (an introduction), ``continuity`` (a
  recall), ``state_change``, ``persist_state``, ``count_memory`` (a recall with a
  count), ``false_friend`` (an introduction with ``confusable_with``),
  ``lookalike_disambiguation``, ``long_gap_reappearance`` (a gap at or over the
  threshold), ``temporal_reference`` (an anchor), ``reference_indirect`` and
  ``deprecation_avoidance`` (a removal at most ``avoidance_probe_window`` segments ago,
  or a reference-indirect mention).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

__all__ = ["GT_VERSION", "HARD_PROBES", "OPEN", "CLOSE", "compile_story", "name_anchored",
           "segment_id"]

#: value of ``gt_version`` in every compiled gold file.
GT_VERSION = "trackB-gt-2.0"
#: full-width brackets around appearance text in SUT prompts.
OPEN, CLOSE = "\uff08", "\uff09"
#: probes whose counts ``summary.hard_probe_balance`` checks against the target.
HARD_PROBES = ("long_gap_reappearance", "state_change", "lookalike_disambiguation",
               "reference_indirect", "deprecation_avoidance", "count_memory", "false_friend",
               "temporal_reference")
_REMOVED = ("destroyed", "deceased")


def segment_id(index: int) -> str:
    """The 1-indexed segment id: ``segment_id(1) == "seg_001"``.

    Example:
        >>> segment_id(1), segment_id(87)
        ('seg_001', 'seg_087')
    """
    return f"seg_{index:03d}"


def _appearance(entity: dict[str, Any], state: str | None) -> str:
    if "states" in entity:
        return entity["states"][state]
    return entity["appearance"]


def _present_items(scene: dict[str, Any], action: Any) -> list[dict[str, Any]]:
    items = action.get("present", scene["present"]) if isinstance(action, dict) else scene["present"]
    return [dict(it) if isinstance(it, dict) else {"eid": it} for it in items]


def _entities_out(src: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for eid, ent in src["entities"].items():
        e = {"name": ent["name"], "kind": ent["kind"]}
        if "states" in ent:
            e["states"] = dict(ent["states"])
            e["initial_state"] = src["state_machines"][eid][0]
        else:
            e["appearance"] = ent["appearance"]
        out[eid] = e
    return out


def _cast_entry(eid: str, op: str, item: dict[str, Any], state: dict[str, Any] | None,
                gap: int | None, last: int | None) -> dict[str, Any]:
    c: dict[str, Any] = {"eid": eid, "op": op}
    if state is not None:
        c["state"] = state
    if gap is not None:
        c["gap"] = gap
        c["last_seen"] = segment_id(last)  # type: ignore[arg-type]
    for key in ("count", "confusable_with", "anchor"):
        if key in item:
            c[key] = item[key]
    return c


def _probes(cast: list[dict[str, Any]], forbidden: list[dict[str, Any]], lookalike: bool,
            n: int, removed_at: dict[str, int], window: int, threshold: int) -> list[str]:
    p: set[str] = set()
    ops = {c["op"] for c in cast}
    if "introduce" in ops:
        p.add("first_appearance")
    if ops & {"recall", "recall_after_gap"}:
        p.add("continuity")
    if "transform" in ops:
        p.add("state_change")
    if "persist" in ops:
        p.add("persist_state")
    if any(c["op"] != "introduce" and "count" in c for c in cast):
        p.add("count_memory")
    if any(c["op"] == "introduce" and "confusable_with" in c for c in cast):
        p.add("false_friend")
    if lookalike:
        p.add("lookalike_disambiguation")
    if any(c.get("gap", -1) >= threshold for c in cast):
        p.add("long_gap_reappearance")
    if any("anchor" in c for c in cast):
        p.add("temporal_reference")
    if any(f.get("reference_indirect") for f in forbidden):
        p.update(("reference_indirect", "deprecation_avoidance"))
    if any(f["reason"] in _REMOVED and n - removed_at[f["eid"]] <= window for f in forbidden):
        p.add("deprecation_avoidance")
    return sorted(p)


def _summary(src: dict[str, Any], segs: list[dict[str, Any]], n_removals: int,
             threshold: int, target: int) -> dict[str, Any]:
    ops: Counter[str] = Counter()
    probes: Counter[str] = Counter()
    hist = {"1-4": 0, "5-29": 0, f">={threshold}": 0}
    longest: dict[str, Any] | None = None
    for s in segs:
        probes.update(s["memory_probes"])
        for c in s["cast"]:
            ops[c["op"]] += 1
            gap = c.get("gap")
            if gap is None:
                continue
            hist["1-4" if gap < 5 else "5-29" if gap < threshold else f">={threshold}"] += 1
            if longest is None or gap > longest["gap"]:
                longest = {"eid": c["eid"], "gap": gap, "at": s["segment_id"]}
    kinds = Counter(e["kind"] for e in src["entities"].values())
    return {
        "n_segments": len(segs),
        "n_scenes": len(src["scenes"]),
        "n_entities": len(src["entities"]),
        "kind_counts": dict(kinds),
        "n_state_threads": len(src["state_machines"]),
        "n_removals": n_removals,
        "op_counts": dict(ops),
        "probe_counts": dict(probes),
        "hard_probe_balance": {p: {"count": probes.get(p, 0), "target": target,
                                   "ok": probes.get(p, 0) >= target} for p in HARD_PROBES},
        "gap_histogram": hist,
        "longest_gap": longest,
    }


def compile_story(src: dict[str, Any], *, built_from: str | None = None) -> dict[str, Any]:
    """Compile a ``gt_source`` skeleton into the ``gt`` gold (rules in the module doc).

    Args:
        src: the parsed ``gt_source`` JSON.
        built_from: value of ``built_from`` (default ``gt_source/<story_id>.json``).

    Returns:
        The gold as a plain dict, keys in the official order.
    """
    ents = src["entities"]
    threshold = int(src["gap_long_threshold"])
    window = int(src["avoidance_probe_window"])
    pairs = {tuple(p["pair"]): p for p in src.get("lookalike_pairs", [])}
    machines = src.get("state_machines", {})
    state = {eid: m[0] for eid, m in machines.items()}
    last: dict[str, int] = {}
    removed: dict[str, tuple[int, str]] = {}
    segs: list[dict[str, Any]] = []
    warnings: list[str] = []
    n = 0
    for scene in src["scenes"]:
        for k, action in enumerate(scene["actions"]):
            n += 1
            text = action["action"] if isinstance(action, dict) else action
            events = action.get("events", []) if isinstance(action, dict) else []
            changed = {ev["eid"]: ev for ev in events}
            cast = []
            for item in _present_items(scene, action):
                eid = item["eid"]
                gap = n - last[eid] - 1 if eid in last else None
                st = None
                if eid in changed:
                    state[eid] = changed[eid]["to"]
                    op = "introduce" if gap is None else "transform"
                    st = {"label": state[eid], "appearance": _appearance(ents[eid], state[eid])}
                elif "state" in item and item["state"] != state.get(eid):
                    op = "introduce" if gap is None else (
                        "recall_after_gap" if gap >= threshold else "recall")
                    st = {"label": item["state"], "appearance": _appearance(ents[eid], item["state"]),
                          "flashback": True}
                elif gap is None:
                    op = "introduce"
                elif eid in machines and state[eid] != machines[eid][0]:
                    op = "persist"
                    st = {"label": state[eid], "appearance": _appearance(ents[eid], state[eid])}
                else:
                    op = "recall_after_gap" if gap >= threshold else "recall"
                cast.append(_cast_entry(eid, op, item, st, gap, last.get(eid)))
                last[eid] = n
                if "anchor" in item and ents[eid]["name"].lower() in text.lower():
                    warnings.append(f"{segment_id(n)}: temporal-anchored {eid} name\u300e"
                                    f"{ents[eid]['name']}\u300fappears in action; a temporal "
                                    "reference should be name-free")
            forbidden = []
            for eid, (at, reason) in removed.items():
                f = {"eid": eid, "reason": reason, "grounded_by": segment_id(at)}
                if ents[eid]["name"].lower() in text.lower():
                    f["reference_indirect"] = True
                forbidden.append(f)
            seg: dict[str, Any] = {
                "segment_id": segment_id(n), "scene_id": scene["id"],
                "duration_sec": float(src["segment_sec"]),
                "transition": "cut" if k == 0 else "continue", "action": text,
            }
            active = []
            if "lookalike_present" in scene:
                lp = scene["lookalike_present"]
                pair = pairs[tuple(lp["pair"])]
                active.append({"pair": list(pair["pair"]), "features": pair["features"],
                               "present_members": list(lp["members"])})
                forbidden += [{"eid": m, "reason": "lookalike_absent",
                               "grounded_by": "lookalike:" + "/".join(pair["pair"])}
                              for m in pair["pair"] if m not in lp["members"]]
            for ev in events:
                if ev["type"] == "remove":
                    removed[ev["eid"]] = (n, ev["reason"])
            removed_at = {eid: at for eid, (at, _) in removed.items()}
            seg["memory_probes"] = _probes(cast, forbidden, bool(active), n, removed_at, window,
                                           threshold)
            seg["cast"] = cast
            seg["forbidden"] = forbidden
            if active:
                seg["lookalike_active"] = active
            segs.append(seg)
    target = int(src.get("probe_target_default", 5))
    summary = _summary(src, segs, sum(1 for s in src["scenes"] for a in s["actions"]
                                      if isinstance(a, dict) for ev in a.get("events", [])
                                      if ev["type"] == "remove"), threshold, target)
    warnings += [f"hard probe balance: {p} has {b['count']} < target {b['target']}"
                 for p, b in summary["hard_probe_balance"].items() if not b["ok"]]
    return {
        "story_id": src["story_id"], "gt_version": GT_VERSION, "title": src["title"],
        "premise": src["premise"],
        "built_from": built_from or f"gt_source/{src['story_id']}.json",
        "params": {"segment_sec": float(src["segment_sec"]), "gap_long_threshold": threshold,
                   "avoidance_probe_window": window},
        "entities": _entities_out(src), "state_machines": {k: list(v) for k, v in machines.items()},
        "lookalike_pairs": list(src.get("lookalike_pairs", [])), "segments": segs,
        "summary": summary, "warnings": warnings,
    }


def _name_end(text: str, name: str) -> int | None:
    """Index just after the first occurrence of ``name`` (exact case first, then any)."""
    i = text.find(name)
    if i < 0:
        i = text.lower().find(name.lower())
    return None if i < 0 else i + len(name)


def name_anchored(gt: dict[str, Any], *, generated_from: str | None = None) -> dict[str, Any]:
    """The SUT prompt stream of a compiled story (``register = "name_anchored"``).

    Each prompt is the segment's action with ``（appearance）`` (its final full stop
    dropped) inserted right after the first occurrence of the entity's name in the
    action as written (exact case first, then any case), for every cast entry with op
    ``introduce`` or ``transform``. A name that is not in the action is appended with
    its appearance, and a warning.

    Args:
        gt: a compiled gold (:func:`compile_story`).
        generated_from: value of ``generated_from`` (default ``gt/<story_id>.json``).

    Returns:
        The ``sut_prompts`` document as a plain dict.
    """
    ents = gt["entities"]
    segments, warnings = [], []
    for seg in gt["segments"]:
        text = seg["action"]
        inserts: list[tuple[int, str]] = []
        for c in seg["cast"]:
            if c["op"] not in ("introduce", "transform"):
                continue
            ent = ents[c["eid"]]
            app = c["state"]["appearance"] if "state" in c else (
                ent["states"][ent["initial_state"]] if "states" in ent else ent["appearance"])
            bracket = f"{OPEN}{app.rstrip().rstrip('.')}{CLOSE}"
            end = _name_end(seg["action"], ent["name"])
            if end is None:
                warnings.append(f"{seg['segment_id']}: {c['eid']} name "
                                f"{ent['name']!r} is not in the action; appearance appended")
                end = len(seg["action"])
                bracket = f" {ent['name']}{bracket}."
            inserts.append((end, bracket))
        for end, bracket in sorted(inserts, key=lambda x: -x[0]):
            text = text[:end] + bracket + text[end:]
        segments.append({"segment_id": seg["segment_id"], "duration_sec": seg["duration_sec"],
                         "transition": seg["transition"], "prompt": text})
    return {
        "story_id": gt["story_id"], "title": gt["title"], "register": "name_anchored",
        "generated_from": generated_from or f"gt/{gt['story_id']}.json",
        "note": "SUT-facing prompt stream. Read segments in order; no labels are provided by "
                "design.",
        "n_segments": len(segments), "segments": segments, "warnings": warnings,
    }
