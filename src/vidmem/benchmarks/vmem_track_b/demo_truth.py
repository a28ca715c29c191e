"""What the sim truth says about a Track-B rollout, for the demo's checks.

The sim generator writes, next to every clip, what it really drew (``seg_NNN.mp4.truth.json``:
each drawn name with its asset, state, count and why); the sim build writes what a
perfect generator draws (``_truth/<story>.json``: per segment the present entities with
their asset and the forbidden ones). Rules, read off those two files only (never off
the judge):

* a **required** entry is a present character or prop of the segment (introductions
  included, as in the card's Recall); it is *recalled* when the clip draws that name
  with the truth's asset (the judge's presence question is about the entity's look;
  state and count are stress families of their own);
* a **forbidden** entry is one of the segment's forbidden entities; it *stays absent*
  when the clip draws nothing under that name (a leak draws the reference's look under
  the name).

Truth Recall = recalled / required; truth Avoid-OK = absent / forbidden, pooled over
every segment of every story, as the card pools the judge's counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["PROTOCOL", "agreement", "segment_truth", "truth_rates"]

PROTOCOL: dict[str, dict[str, str]] = {
    "truth.recalled": {
        "rule": "a present character/prop of the segment is recalled when the clip's truth "
                "sidecar draws its name with the sim truth's asset",
        "reason": "the judge's presence answer is about the entity's look; state and count "
                  "are separate stress families",
        "source": "vidmem (sim truth: sim/gen_story.py sidecar, sim_build.py _truth)"},
    "truth.absent": {
        "rule": "a forbidden entity stays absent when the sidecar draws nothing under its name",
        "reason": "the sim draws a leak under the leaked entity's name",
        "source": "vidmem (sim/gen_story.py leaky:P)"},
}


def _kinds(truth: Mapping[str, Any]) -> dict[str, str]:
    return {eid: str(e["kind"]) for eid, e in truth["entities"].items()}


def segment_truth(truth: Mapping[str, Any], index: int,
                  sidecar: Mapping[str, Any]) -> dict[str, dict[str, bool]]:
    """Per entity of segment ``index`` (0-based): what the clip really shows.

    Args:
        truth: the story's ``_truth/<story>.json``.
        index: the segment's position in ``truth["segments"]``.
        sidecar: the clip's ``.truth.json``.

    Returns:
        ``{"required": {eid: recalled}, "forbidden": {eid: stays_absent}}``.

    Example:
        >>> truth = {"entities": {"E1": {"name": "Kira", "kind": "character", "asset": "face"},
        ...                       "E4": {"name": "Rook", "kind": "prop", "asset": "rocket"},
        ...                       "E7": {"name": "Hall", "kind": "location", "place": "mosaic"}},
        ...          "segments": [{"present": [{"eid": "E1", "asset": "face"},
        ...                                    {"eid": "E7", "place": "mosaic"}],
        ...                        "forbidden": ["E4"]}]}
        >>> segment_truth(truth, 0, {"entities": [{"name": "Kira", "asset": "cat"},
        ...                                       {"name": "Rook", "asset": "rocket"}]})
        {'required': {'E1': False}, 'forbidden': {'E4': False}}
    """
    kinds = _kinds(truth)
    names = {eid: e["name"] for eid, e in truth["entities"].items()}
    drawn = {str(e["name"]): e for e in sidecar.get("entities", [])}
    seg = truth["segments"][index]
    required = {}
    for p in seg["present"]:
        if kinds[p["eid"]] in ("character", "prop"):
            d = drawn.get(names[p["eid"]])
            required[p["eid"]] = d is not None and d.get("asset") == p.get("asset")
    forbidden = {eid: names[eid] not in drawn for eid in seg["forbidden"]}
    return {"required": required, "forbidden": forbidden}


def truth_rates(segments: Iterable[Mapping[str, Mapping[str, bool]]]) -> dict[str, dict[str, Any]]:
    """Pooled truth Recall and Avoid-OK over :func:`segment_truth` results.

    Example:
        >>> truth_rates([{"required": {"E1": True, "E2": False}, "forbidden": {"E4": True}},
        ...              {"required": {"E1": True}, "forbidden": {}}])["recall"]
        {'numerator': 2, 'denominator': 3, 'value': 0.6666666666666666}
    """
    counts = {"recall": [0, 0], "avoid_ok": [0, 0]}
    for s in segments:
        for rate, role in (("recall", "required"), ("avoid_ok", "forbidden")):
            counts[rate][0] += sum(bool(v) for v in s[role].values())
            counts[rate][1] += len(s[role])
    return {rate: {"numerator": n, "denominator": d, "value": n / d if d else None}
            for rate, (n, d) in counts.items()}


def agreement(truth_segments: Mapping[int, Mapping[str, Mapping[str, bool]]],
              verdicts: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How often the judge's presence answers agree with the truth, entry by entry.

    Args:
        truth_segments: segment id (1-based) -> :func:`segment_truth` result.
        verdicts: the scorer's stored verdicts of one condition (``segment_id``,
            ``entries`` with ``eid``, ``role`` and ``present``).

    Returns:
        ``{"required": agreeing, "required_total": n, "forbidden": ..., "forbidden_total": ...}``;
        an ``abstain`` counts as "not present".

    Example:
        >>> truth = {1: {"required": {"E1": True}, "forbidden": {"E4": False}}}
        >>> agreement(truth, [{"segment_id": 1, "entries": [
        ...     {"eid": "E1", "role": "required", "present": True},
        ...     {"eid": "E4", "role": "forbidden", "present": False}]}])
        {'required': 1, 'required_total': 1, 'forbidden': 0, 'forbidden_total': 1}
    """
    out = {"required": 0, "required_total": 0, "forbidden": 0, "forbidden_total": 0}
    for seg in verdicts:
        truth = truth_segments.get(int(seg["segment_id"]))
        if truth is None:
            continue
        for e in seg["entries"]:
            role = e.get("role")
            if role not in ("required", "forbidden") or e["eid"] not in truth[role]:
                continue
            shown = truth[role][e["eid"]] if role == "required" else not truth[role][e["eid"]]
            out[f"{role}_total"] += 1
            out[role] += int((e.get("present") is True) == shown)
    return out
