"""The Track-B report's per-segment drill-down: what the generator got, what it drew, what the
judge said.

Selection (deterministic, bounded): per condition, in the run's order, the segments with
a *fault* -- a required character or prop not judged present (an unparsable answer
misses them all) or a forbidden entity judged present -- ranked by rendered forbidden
entities, then missed ones (most first), then story order (``scores.jsonl``) and segment
id; the first ``limit`` (default :data:`DEFAULT_LIMIT`). ``limit=None`` ("all") shows
every segment of every condition, faults or not. ``vidmem report`` takes the limit from
the environment variable :data:`LIMIT_ENV` (a number, or ``all``).

Per segment: the prompt (the gold's ``sut_prompts`` text, shown only while the gold
still hashes as the run scored it), the judge answer's status, the reference frames
handed to the generator (``seg_NNN.ref<k>.png`` as listed in the rollout's
``progress.json``, used only when its entry's clip hash is the scored clip's; without
one -- brought rollouts -- the section says "references unknown"), the middle frame of the
clip (frame ``n_frames // 2``), and per roster entity its gold role against the judge's
verdict. Nothing is judged again; clips are only decoded for the middle frame.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from vidmem.benchmarks.vmem_track_b.run_items import StoryItem
from vidmem.benchmarks.vmem_track_b.scorer import verdicts_from_json
from vidmem.errors import UserInputError, VidmemError
from vidmem.metrics import track_b as tb
from vidmem.report.images import thumbnail
from vidmem.report.model import ImageGrid, KeyValues, Report, Table

__all__ = ["DEFAULT_LIMIT", "LIMIT_ENV", "Pick", "add_drill_down", "choose_segments",
           "drill_down_limit", "entry_outcome", "parse_limit", "segment_faults"]

DEFAULT_LIMIT = 3
LIMIT_ENV = "VIDMEM_DRILL_DOWN"
_THUMB = 256
_PLACEHOLDER = np.full((72, 128, 3), 235, dtype=np.uint8)


def parse_limit(value: str | int | None) -> int | None:
    """Segments per condition: a number >= 0, or ``"all"`` (``None``); unset: the default.

    Example:
        >>> parse_limit(None), parse_limit("all"), parse_limit("5")
        (3, None, 5)
    """
    if value is None or value == "":
        return DEFAULT_LIMIT
    if isinstance(value, str) and value.strip().lower() == "all":
        return None
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = -1
    if n < 0:
        raise UserInputError(f"{LIMIT_ENV}={value!r}: expected a number >= 0 or 'all'",
                             hint=f"e.g. {LIMIT_ENV}=10 vidmem report RUN, or {LIMIT_ENV}=all")
    return n


def segment_faults(seg: tb.SegmentVerdict) -> tuple[int, int]:
    """``(missed, rendered)``: required characters/props not judged present, forbidden
    entities judged present.

    Example:
        >>> e = tb.EntryVerdict("s", 1, "A", "prop", "required", False, op="introduce")
        >>> f = tb.EntryVerdict("s", 1, "F", "prop", "forbidden", True, reason="destroyed")
        >>> segment_faults(tb.SegmentVerdict("s", 1, True, [e, f]))
        (1, 1)
    """
    missed = sum(e.role == "required" and e.kind in tb.RECALL_KINDS and not e.is_present
                 for e in seg.entries)
    rendered = sum(e.role == "forbidden" and e.is_present for e in seg.entries)
    return missed, rendered


@dataclass(frozen=True)
class Pick:
    """One segment shown: where it is, and why it was picked."""

    condition: str
    story_id: str
    segment_id: int
    why: str


def _why(seg: tb.SegmentVerdict) -> str:
    missed, rendered = segment_faults(seg)
    parts = []
    if rendered:
        parts.append(f"{rendered} forbidden entit{'y' if rendered == 1 else 'ies'} rendered")
    if missed:
        parts.append(f"{missed} required entit{'y' if missed == 1 else 'ies'} missed")
    if not seg.parsed:
        parts.append("the judge answer did not parse")
    return ", ".join(parts) or "no fault (every segment is shown)"


def choose_segments(arms: Mapping[str, Sequence[tb.SegmentVerdict]], story_order: Sequence[str],
                    limit: int | None) -> list[Pick]:
    """The segments to show, condition by condition (rule in the module doc).

    Args:
        arms: condition -> its segments (all stories), in the run's condition order.
        story_order: story ids in ``scores.jsonl`` order.
        limit: per condition; ``None``: every segment.

    Example:
        >>> def seg(n, present):
        ...     return tb.SegmentVerdict("s", n, True, [tb.EntryVerdict(
        ...         "s", n, "A", "prop", "required", present, op="introduce")])
        >>> [p.segment_id for p in choose_segments({"x": [seg(1, True), seg(2, False)]},
        ...                                        ["s"], 3)]
        [2]
    """
    rank = {sid: i for i, sid in enumerate(story_order)}
    picks = []
    for cond, segs in arms.items():
        ordered = sorted(segs, key=lambda s: (rank.get(s.story_id, len(rank)), s.segment_id))
        if limit is not None:
            faulty = [s for s in ordered if any(segment_faults(s))]
            ordered = sorted(faulty, key=lambda s: (-segment_faults(s)[1], -segment_faults(s)[0],
                                                    rank.get(s.story_id, len(rank)),
                                                    s.segment_id))[:limit]
        picks += [Pick(cond, s.story_id, s.segment_id, _why(s)) for s in ordered]
    return picks


def entry_outcome(e: tb.EntryVerdict) -> str:
    """What the verdict means for the entry's gold role.

    Example:
        >>> entry_outcome(tb.EntryVerdict("s", 1, "F", "prop", "forbidden", True,
        ...                               reason="destroyed"))
        'RENDERED (must stay out)'
    """
    hit, abstain = e.is_present, e.is_abstain
    tail = " (abstain)" if abstain else ""
    if e.role == "required":
        return "seen" if hit else "MISSED" + tail
    if e.role == "forbidden":
        return "RENDERED (must stay out)" if hit else "kept out" + tail
    if e.role == "decoy":
        return "false positive" if hit else "not seen" + tail
    if e.role == "false_friend_target":
        return "seen (the false friend's look-alike)" if hit else "not seen" + tail
    return "seen" if hit else "not seen" + tail


def _gold_role(e: tb.EntryVerdict) -> str:
    if e.role == "forbidden":
        return f"forbidden ({e.reason}{', indirect' if e.reference_indirect else ''})"
    if e.role in tb.CAST_ROLES:
        gap = "" if e.gap is None else f", gap {e.gap}"
        return f"{e.role} ({e.op}{gap}{', temporal anchor' if e.anchor else ''})"
    return e.role.replace("_", " ")


def _pair(expected: Any, judged: Any) -> str:
    if expected is None and judged is None:
        return ""
    return f"{'-' if expected is None else expected} / {'-' if judged is None else judged}"


#: the judge's state answers in words (``changed``: the state the roster line describes)
_STATE = {"changed": "shown", "default": "not shown"}


def _verdict_table(seg: tb.SegmentVerdict, story: Any | None) -> Table:
    rows = []
    order = {r: i for i, r in enumerate(tb.ROLES)}
    for e in sorted(seg.entries, key=lambda e: (order.get(e.role, len(order)), e.eid)):
        ent = story.entities.get(e.eid) if story is not None else None
        instance = "" if e.instance_match is None else ("this one" if e.instance_match else
                                                        "the other twin")
        rows.append([e.eid, ent.name if ent is not None else "?", e.kind, _gold_role(e),
                     str(e.present).lower(), entry_outcome(e),
                     _pair(e.expected_state, _STATE.get(e.judged_state or "", e.judged_state)),
                     _pair(e.expected_count, e.judged_count), instance])
    return Table(["entity", "name", "kind", "gold role", "judged present", "outcome",
                  "state: gold / judged", "count: gold / judged", "instance"], rows,
                 caption="the roster the judge was asked about, by gold role (the judge saw "
                 "it shuffled, without ids or roles), each gold role next to the verdict")


# --------------------------------------------------------------------------- images


def _image(path: Path) -> np.ndarray | None:
    try:
        with Image.open(path) as im:
            return thumbnail(im.convert("RGB"), _THUMB)
    except OSError:
        return None


def _clip_path(run: Any, item: StoryItem, cond: str, k: int) -> Path | None:
    clips = ((item.request or {}).get("clips") or {}).get(cond) or []
    if k >= len(clips) or clips[k] is None:
        return None
    return Path(clips[k])  # scored_items already prefers the run's own copy of the clip


def _middle_frame(clip: Path | None) -> tuple[np.ndarray, str]:
    from vidmem.io.video import probe, read_frames

    if clip is None:
        return _PLACEHOLDER, "no clip: scored all-absent (--allow-missing)"
    try:
        info = probe(clip)
        mid = info.n_frames // 2
        frame = read_frames(clip, [mid])[0]
    except (VidmemError, OSError) as exc:
        return _PLACEHOLDER, f"clip unreadable: {getattr(exc, 'message', exc)}"
    return thumbnail(frame, _THUMB), f"clip {clip.stem}: middle frame ({mid} of {info.n_frames})"


def _references(item: StoryItem, cond: str, k: int, clip: Path | None
                ) -> tuple[list[tuple[np.ndarray, str]], str]:
    """The reference frames handed over for segment ``k`` (0-based), or why they are unknown."""
    from vidmem.benchmarks.vmem_track_b.loop import read_progress, segment_name

    if clip is None:
        return [], "no clip, so no generation record"
    progress = read_progress(clip.parent)
    entry = ((progress or {}).get("segments") or {}).get(segment_name(k + 1))
    hashes = ((item.request or {}).get("clips_sha256") or {}).get(cond) or []
    want = hashes[k] if k < len(hashes) else None
    # a progress entry describes the scored clip only if it recorded that clip's hash
    if want is None or not isinstance(entry, Mapping) or entry.get("sha256") != want:
        return [], "brought rollouts: references unknown"
    refs = list(entry.get("references") or [])
    if not refs:
        return [], "no references handed over"
    out = []
    for i, r in enumerate(refs, start=1):
        img = _image(clip.parent / str(r.get("png", "")))
        t = r.get("source_time_seconds")
        when = "" if t is None else f" at {float(t):.2f} s"
        out.append((_PLACEHOLDER if img is None else img,
                    f"ref {i}: {r.get('source')}{when}" + (" (png missing)" if img is None else "")))
    return out, f"{len(refs)} reference frame(s) handed over"


# --------------------------------------------------------------------------- section


def _golds(items: Sequence[StoryItem]) -> dict[str, tuple[Any | None, str]]:
    """Per story the gold as scored, or ``None`` and why not."""
    from vidmem.benchmarks.vmem_track_b.stories import load_stories

    out: dict[str, tuple[Any | None, str]] = {}
    for it in items:
        req = it.request or {}
        try:
            (story,) = load_stories(req["gold_root"], int(req["number"]))
        except (KeyError, TypeError, ValueError, VidmemError, OSError) as exc:
            out[it.story_id] = (None, f"gold not readable ({getattr(exc, 'message', exc)})")
            continue
        if dict(story.sha256) != dict(req.get("gold_sha256") or {}):
            out[it.story_id] = (None, "its gold changed after the run scored it")
        else:
            out[it.story_id] = (story, "")
    return out


def add_drill_down(rep: Report, run: Any, items: Sequence[StoryItem], conditions: Sequence[str],
                   limit: int | None) -> None:
    """Append one drill-down section per condition (rules in the module doc)."""
    by_story = {it.story_id: it for it in items}
    arms: dict[str, list[tb.SegmentVerdict]] = {}
    for cond in conditions:
        arms[cond] = [s for it in items
                      for s in verdicts_from_json(it.story_id, it.row["conditions"][cond]["verdicts"])]
    picks = choose_segments(arms, [it.story_id for it in items], limit)
    golds = _golds([by_story[sid] for sid in dict.fromkeys(p.story_id for p in picks)])
    for sid, (_, why) in golds.items():
        if why:
            rep.notice("info", f"{sid}: {why}; its drill-down shows no prompt or names.")
    rule = ("every segment of every condition" if limit is None else
            f"per condition at most {limit} segment(s) with a fault, rendered forbidden "
            "entities first, then missed required ones, then story and segment order")
    for cond in conditions:
        mine = [p for p in picks if p.condition == cond]
        sec = rep.section(f"Drill-down: {cond}", f"Shown: {rule} ({LIMIT_ENV}=N or all for "
                          f"`vidmem report`); {len(mine)} segment(s) here.")
        for p in mine:
            item = by_story[p.story_id]
            seg = next(s for s in arms[cond] if s.key == (p.story_id, p.segment_id))
            story, _ = golds.get(p.story_id, (None, ""))
            k = p.segment_id - 1
            answers = ((item.response or {}).get("answers") or {}).get(cond) or []
            status = next((a.get("status") for a in answers
                           if a.get("segment_id") == p.segment_id), "unknown")
            clip = _clip_path(run, item, cond, k)
            refs, ref_note = _references(item, cond, k, clip)
            prompt = story.segments[k].prompt if story is not None else "unknown (gold not shown)"
            sec.add(KeyValues({"story": p.story_id, "segment": f"seg_{p.segment_id:03d}",
                               "picked because": p.why, "judge answer": status,
                               "references": ref_note, "prompt": prompt},
                              caption=f"{cond}: {p.story_id} seg_{p.segment_id:03d}"))
            sec.add(ImageGrid([*refs, _middle_frame(clip)], columns=4, thumb_size=_THUMB,
                              caption="reference frames handed to the generator, then the "
                              "middle frame of the generated clip"))
            sec.add(_verdict_table(seg, story))


def drill_down_limit() -> int | None:
    """The limit ``vidmem report`` uses: :data:`LIMIT_ENV`, else :data:`DEFAULT_LIMIT`."""
    return parse_limit(os.environ.get(LIMIT_ENV))
