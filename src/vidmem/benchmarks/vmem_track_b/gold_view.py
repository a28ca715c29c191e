"""A small typed view of the raw Track-B gold (``gt/<story_id>.json``, ``trackB-gt-2.0``).

Only what the judge question needs: a segment by position or id, an entity, an
entity's look in a state, and the state history up to a segment. Checked at the
boundary: a malformed file gives a :class:`~vidmem.errors.UserInputError` naming the
story, segment and entity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vidmem.errors import UserInputError

__all__ = ["KINDS", "eids_of", "entity_of", "look_of", "segment_of", "state_history"]

KINDS = ("character", "prop", "location")


def _where(gold: Mapping[str, Any]) -> str:
    return f"Track-B gold {gold.get('story_id', '?')!r}"


def segment_of(gold: Mapping[str, Any], segment: int | str) -> tuple[int, dict[str, Any]]:
    """``(position, segment dict)`` of a segment given by position or id (checked)."""
    segs = gold.get("segments")
    if not isinstance(segs, list) or not isinstance(gold.get("entities"), dict):
        raise UserInputError(f"{_where(gold)}: expected 'segments' (list) and 'entities' (dict)",
                             hint="pass the parsed gt/<story_id>.json")
    if isinstance(segment, str):
        ids = [s.get("segment_id") for s in segs]
        if segment not in ids:
            raise UserInputError(f"{_where(gold)}: no segment {segment!r}",
                                 hint=f"segment ids run {ids[0]}..{ids[-1]}" if ids else None)
        segment = ids.index(segment)
    if isinstance(segment, bool) or not isinstance(segment, int) or not 0 <= segment < len(segs):
        raise UserInputError(f"{_where(gold)}: segment index must be 0..{len(segs) - 1} "
                             f"(position in segments[]), found {segment!r}")
    return segment, segs[segment]


def eids_of(gold: Mapping[str, Any], rows: Any, where: str) -> list[str]:
    """The ``eid`` of each row of a segment's ``cast`` or ``forbidden`` list (checked)."""
    if rows is None:
        return []
    if not isinstance(rows, list) or not all(isinstance(r, dict) and r.get("eid") for r in rows):
        raise UserInputError(f"{_where(gold)} {where}: expected a list of objects with an 'eid'",
                             hint="compare the file with the official trackB-gt-2.0 sample")
    return [str(r["eid"]) for r in rows]


def entity_of(gold: Mapping[str, Any], eid: str, where: str) -> dict[str, Any]:
    """The entity ``eid`` of the story, with a name and a kind (checked)."""
    e = gold["entities"].get(eid)
    if not isinstance(e, dict) or e.get("kind") not in KINDS or not e.get("name"):
        raise UserInputError(f"{_where(gold)} {where}: entity {eid!r} is missing from "
                             f"'entities' or lacks a name or a kind in {KINDS}")
    return e


def look_of(e: Mapping[str, Any], label: str | None) -> str:
    """The appearance text of entity ``e`` in state ``label`` (unknown: its initial look)."""
    states = e.get("states") or {}
    if states:
        label = label if label in states else e.get("initial_state")
        return str(states.get(label, next(iter(states.values()))))
    return str(e.get("appearance", ""))


def state_history(segs: Sequence[Mapping[str, Any]], upto: int,
                  gold: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """Per stateful entity: its state before segment ``upto``, and the state it had
    before its latest change (flashbacks change nothing)."""
    current = {eid: str(e.get("initial_state") or next(iter(e["states"])))
               for eid, e in gold["entities"].items() if isinstance(e, dict) and e.get("states")}
    before: dict[str, str] = {}
    for seg in segs[:upto]:
        for c in seg.get("cast", []):
            st = c.get("state")
            eid = c.get("eid")
            if (isinstance(st, dict) and not st.get("flashback") and eid in current
                    and st.get("label") != current[eid]):
                before[eid], current[eid] = current[eid], str(st.get("label"))
    return current, before
