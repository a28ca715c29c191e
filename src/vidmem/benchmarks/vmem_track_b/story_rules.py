"""The Track-B rules that span items or files, run on what :mod:`.validate` read.

:class:`CheckedStory` holds one story's three files as read (the pydantic models of the
items that passed their own checks) and collects the problems. The rules here are the
cross-item and cross-file ones listed in :mod:`.validate`: segment ids, entity
references, the derived labels against the segment order, and ``gt_source`` and
``sut_prompts`` against ``gt``.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vidmem.benchmarks.contract import Problem
from vidmem.benchmarks.jsonl_dataset import excerpt
from vidmem.benchmarks.vmem_track_b.schema import (
    GT_DIR,
    PROBES,
    PROMPTS_DIR,
    REGISTER,
    REMOVAL_REASONS,
    SOURCE_DIR,
    EntityDef,
    GtFile,
    GtSegment,
    PromptSegment,
    PromptsFile,
    SourceAction,
    SourceFile,
    SourceScene,
    segment_id,
    segment_number,
)
from vidmem.io.safe_paths import SAFE_ID_RULE, id_problem

__all__ = ["CheckedStory", "check_ids", "check_rules", "label_leaks"]

_OWN = "the file's own warning (from the tool that wrote it): "
_LABEL = re.compile(r"\bE\d{1,4}\b|\b(?:" + "|".join(PROBES) + r")\b")


@dataclass
class CheckedStory:
    """One story's files as read, the items that passed their own checks, and the problems."""

    stem: str
    number: int
    files: dict[str, Path]
    sha256: dict[str, str] = field(default_factory=dict)
    raw: dict[str, dict[str, Any]] = field(default_factory=dict)
    gt: GtFile | None = None
    entities: dict[str, EntityDef] = field(default_factory=dict)
    segments: list[tuple[int, GtSegment]] = field(default_factory=list)
    source: SourceFile | None = None
    scenes: list[tuple[int, SourceScene]] = field(default_factory=list)
    prompts: PromptsFile | None = None
    prompt_segments: list[tuple[int, PromptSegment]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def name(self, folder: str) -> str:
        return f"{self.stem}_{REGISTER}.json" if folder == PROMPTS_DIR else f"{self.stem}.json"

    def error(self, folder: str, fld: str, message: str, line: int | None = None) -> None:
        self.problems.append(Problem(f"{folder}/{self.name(folder)}", fld, message, "error", line))

    def warn(self, folder: str, fld: str, message: str) -> None:
        self.problems.append(Problem(f"{folder}/{self.name(folder)}", fld, message, "warning"))

    def items(self, folder: str, key: str) -> list[Any]:
        value = self.raw.get(folder, {}).get(key)
        return value if isinstance(value, list) else []

    @property
    def eids(self) -> set[str]:
        ents = self.raw.get(GT_DIR, {}).get("entities")
        return set(ents) if isinstance(ents, dict) else set()




def check_ids(c: CheckedStory, folder: str, parsed: list[tuple[int, Any]], total: int) -> None:
    """Segment ids 1..n, in order, no repeats (one error for a 0-indexed or gapped file)."""
    first: dict[int, int] = {}
    for i, seg in parsed:
        n = segment_number(seg.segment_id)
        if n in first:
            c.error(folder, f"segments[{i}].segment_id", f"duplicate segment id {seg.segment_id!r} "
                    f"(also segments[{first[n]}]); every segment has its own id")
        first.setdefault(n, i)  # type: ignore[arg-type]
    if len(parsed) < total or not total:
        return  # some ids unreadable: already reported
    got, want = set(first), set(range(1, total + 1))
    if got == set(range(total)):
        c.error(folder, "segments", f"segment ids are 0-indexed (seg_000 .. "
                f"{segment_id(total - 1)}); Track-B ids are 1-indexed: renumber them seg_001 .. "
                f"{segment_id(total)} (and every last_seen / grounded_by with them)")
    elif got != want:
        missing = ", ".join(segment_id(n) for n in sorted(want - got)[:8]) or "none"
        extra = ", ".join(segment_id(n) for n in sorted(got - want)[:8]) or "none"
        c.error(folder, "segments", (
            f"segment ids are not seg_001 .. {segment_id(total)} without gaps: missing "
            f"{missing}; unexpected {extra}; number the segments 1..n in order"))
    else:
        bad = next((i for i, seg in parsed if segment_number(seg.segment_id) != i + 1), None)
        if bad is not None:
            c.error(folder, f"segments[{bad}].segment_id", f"out of order: expected "
                    f"{segment_id(bad + 1)} at position {bad + 1}; put the segments in id order")


def _undefined(c: CheckedStory, fld: str, eid: str) -> None:
    known = sorted(c.eids, key=lambda e: (len(e), e))
    shown = ", ".join(known[:12]) + (" ..." if len(known) > 12 else "")
    close = difflib.get_close_matches(eid, known, 1)
    guess = f"; did you mean {close[0]!r}?" if close else ""
    c.error(GT_DIR, fld, f"entity {excerpt(eid)} is not defined in 'entities' (defined: "
            f"{shown or 'none'}){guess}; add it to entities or fix the id")


def _entity_tables(c: CheckedStory, gt: GtFile) -> None:
    if gt.story_id != c.stem:
        c.error(GT_DIR, "story_id", f"expected {c.stem!r} (the file's name), found "
                f"{excerpt(gt.story_id)}; the story id names the files: fix the id or the name")
    for eid, labels in gt.state_machines.items():
        ent = c.entities.get(eid)
        if eid not in c.eids:
            _undefined(c, f"state_machines.{eid}", eid)
        elif ent is not None and set(labels) != set(ent.states or {}):
            c.error(GT_DIR, f"state_machines.{eid}", (
                f"expected the labels of entities.{eid}.states {sorted(ent.states or {})}, "
                f"found {labels}; every state a machine names must have its appearance text"))
    for i, pair in enumerate(gt.lookalike_pairs):
        for j, eid in enumerate(pair.pair):
            if eid not in c.eids:
                _undefined(c, f"lookalike_pairs[{i}].pair[{j}]", eid)


def _cast(c: CheckedStory, at: str, n: int, item: Any, seen: set[str]) -> None:
    if item.eid not in c.eids:
        _undefined(c, f"{at}.eid", item.eid)
    elif item.eid in seen:
        c.error(GT_DIR, f"{at}.eid", f"{item.eid} is twice in this segment's cast; list it once")
    seen.add(item.eid)
    if item.confusable_with is not None:
        if item.confusable_with not in c.eids:
            _undefined(c, f"{at}.confusable_with", item.confusable_with)
        elif item.confusable_with == item.eid:
            c.error(GT_DIR, f"{at}.confusable_with", "an entity cannot be its own false friend; "
                    "name the entity it may be mistaken for")
    if item.anchor is not None:
        target = item.anchor.resolves_to
        if target is not None and target not in c.eids:
            _undefined(c, f"{at}.anchor.resolves_to", target)
        if item.anchor.type != "temporal":
            c.warn(GT_DIR, f"{at}.anchor.type", f"unknown anchor type {excerpt(item.anchor.type)}"
                   "; the release writes 'temporal' (a name-free mention of a past entity)")
    ent = c.entities.get(item.eid)
    if item.state is not None and ent is not None and item.state.label not in (ent.states or {}):
        c.error(GT_DIR, f"{at}.state.label", (
            f"{item.eid} has no state {excerpt(item.state.label)} (its states: "
            f"{sorted(ent.states or {}) or 'none, it is stateless'}); use one of its states"))
    last = segment_number(item.last_seen)
    if last is not None and last >= n:
        c.error(GT_DIR, f"{at}.last_seen", f"expected an earlier segment than "
                f"{segment_id(n)}, found {item.last_seen!r}")


def _segment(c: CheckedStory, i: int, seg: GtSegment, pairs: set[tuple[str, ...]]) -> None:
    here, n, seen = f"segments[{i}]", i + 1, set()
    for j, item in enumerate(seg.cast):
        _cast(c, f"{here}.cast[{j}]", n, item, seen)
    banned: dict[str, int] = {}
    for j, f in enumerate(seg.forbidden):
        at = f"{here}.forbidden[{j}]"
        if f.eid not in c.eids:
            _undefined(c, f"{at}.eid", f.eid)
        elif f.eid in seen:
            c.error(GT_DIR, f"{at}.eid", f"{f.eid} is both in the cast and forbidden here; an "
                    "entity is required or forbidden in a segment, not both")
        if f.eid in banned:  # the official tally counts every entry: a repeat counts twice
            c.error(GT_DIR, f"{at}.eid", f"{f.eid} is forbidden twice in this segment (also "
                    f"{here}.forbidden[{banned[f.eid]}]); the official scorer would count it "
                    "twice: list it once")
        banned.setdefault(f.eid, j)
        ground = segment_number(f.grounded_by)
        if f.reason in REMOVAL_REASONS and (ground is None or ground >= n):
            c.error(GT_DIR, f"{at}.grounded_by", (
                f"expected the earlier segment of the removal ('seg_NNN' before "
                f"{segment_id(n)}), found {excerpt(f.grounded_by)}"))
    for j, active in enumerate(seg.lookalike_active):
        at = f"{here}.lookalike_active[{j}]"
        if tuple(sorted(active.pair)) not in pairs:
            c.error(GT_DIR, f"{at}.pair", f"pair {active.pair} is not declared in "
                    "lookalike_pairs; declare it there or fix the ids")
        for k, eid in enumerate(active.pair):
            if eid not in c.eids:
                _undefined(c, f"{at}.pair[{k}]", eid)
        for k, eid in enumerate(active.present_members):
            if eid not in active.pair:
                c.error(GT_DIR, f"{at}.present_members[{k}]", f"{excerpt(eid)} is not a member "
                        f"of the pair {active.pair}")
    for j, probe in enumerate(seg.memory_probes):
        if probe not in PROBES:
            close = difflib.get_close_matches(probe, PROBES, 1)
            hint = f"did you mean {close[0]!r}?" if close else f"use one of {list(PROBES)}"
            c.error(GT_DIR, f"{here}.memory_probes[{j}]", f"unknown probe label "
                    f"{excerpt(probe)}; {hint}")


def _derived(c: CheckedStory, gt: GtFile) -> None:
    """Warnings where an op, gap or last_seen contradicts the segment order."""
    long_gap, last = gt.params.gap_long_threshold, {}
    for i, seg in c.segments:
        n = i + 1
        if seg.duration_sec != gt.params.segment_sec:
            c.warn(GT_DIR, f"segments[{i}].duration_sec", f"expected params.segment_sec "
                   f"{gt.params.segment_sec} s, found {seg.duration_sec} s")
        for j, item in enumerate(seg.cast):
            at, prev = f"segments[{i}].cast[{j}]", last.get(item.eid)
            if prev is None and item.op != "introduce":
                c.warn(GT_DIR, f"{at}.op", f"first appearance of {item.eid} but op is "
                       f"{item.op!r}; expected 'introduce'")
            elif prev is not None and item.op == "introduce":
                c.warn(GT_DIR, f"{at}.op", f"{item.eid} is introduced again (last seen in "
                       f"{segment_id(prev)}); expected a recall")
            if prev is not None and (item.gap, item.last_seen) != (n - prev - 1, segment_id(prev)):
                c.warn(GT_DIR, f"{at}.gap", f"{item.eid} last appeared in {segment_id(prev)}: "
                       f"expected gap {n - prev - 1} and last_seen {segment_id(prev)!r}, found "
                       f"gap {item.gap} and last_seen {item.last_seen!r}")
            gap = item.gap if item.gap is not None else -1
            if (item.op == "recall_after_gap") != (item.op in ("recall", "recall_after_gap")
                                                   and gap >= long_gap):
                c.warn(GT_DIR, f"{at}.op", f"op {item.op!r} with gap {item.gap}; the release "
                       f"writes recall_after_gap exactly when gap >= {long_gap}")
            if item.op in ("transform", "persist") and item.state is None:
                c.warn(GT_DIR, f"{at}.state", f"op {item.op!r} without a state; expected "
                       "{label, appearance}")
            last[item.eid] = n


def _source(c: CheckedStory, src: SourceFile, n_gt: int) -> None:
    if src.story_id != c.stem:
        c.error(SOURCE_DIR, "story_id", f"expected {c.stem!r} (the file's name), found "
                f"{excerpt(src.story_id)}")
    if set(src.entities) != c.eids and c.eids:
        here, gold = set(src.entities), c.eids
        c.warn(SOURCE_DIR, "entities", f"entity ids differ from gt: only here "
               f"{sorted(here - gold)}, only in gt {sorted(gold - here)}")
    if len(c.scenes) < len(c.items(SOURCE_DIR, "scenes")):
        return
    flat = [(s, k, scene.id, a.action if isinstance(a, SourceAction) else a)
            for s, scene in c.scenes for k, a in enumerate(scene.actions)]
    if len(flat) != n_gt:
        c.error(SOURCE_DIR, "scenes", (
            f"{len(flat)} actions (one per segment) but gt/{c.stem}.json has {n_gt} segments; "
            "the three files of a story hold the same segments: " + "copy them again from "
            "the release, or rebuild gt/ and sut_prompts/ from gt_source/"))
        return
    pairs = zip(flat, _by_position(c.segments, n_gt), strict=True)
    for (s, k, scene_id, action), (i, seg) in pairs:
        if seg is None:
            continue
        if scene_id != seg.scene_id:
            c.warn(SOURCE_DIR, f"scenes[{s}].id", f"segment {i + 1} is in scene {scene_id!r} "
                   f"here but in {seg.scene_id!r} in gt")
        if action.strip() != seg.action:
            c.warn(SOURCE_DIR, f"scenes[{s}].actions[{k}]", f"the action of segment {i + 1} "
                   f"differs from gt's {excerpt(seg.action, 60)}: gt is stale or edited")


def _by_position(parsed: list[tuple[int, Any]], total: int) -> list[tuple[int, Any]]:
    at = dict(parsed)
    return [(i, at.get(i)) for i in range(total)]


def _prompts(c: CheckedStory, prompts: PromptsFile, n_gt: int) -> None:
    total = len(c.items(PROMPTS_DIR, "segments"))
    if prompts.story_id != c.stem:
        c.error(PROMPTS_DIR, "story_id", f"expected {c.stem!r} (the gold's story), found "
                f"{excerpt(prompts.story_id)}")
    if prompts.prompt_register != REGISTER:
        c.warn(PROMPTS_DIR, "register", f"expected {REGISTER!r}, found "
               f"{excerpt(prompts.prompt_register)}")
    if prompts.n_segments is not None and prompts.n_segments != total:
        c.error(PROMPTS_DIR, "n_segments", f"says {prompts.n_segments} but the file holds "
                f"{total} segments; the file is cut short or edited: copy it again")
    if GT_DIR in c.raw and total != n_gt:
        c.error(PROMPTS_DIR, "segments", (
            f"{total} prompts but gt/{c.stem}.json has {n_gt} segments; a system must get "
            "one prompt per gold segment: copy both files again from the release"))
    elif GT_DIR in c.raw:
        for (i, p), (_, seg) in zip(_by_position(c.prompt_segments, total),
                                    _by_position(c.segments, n_gt), strict=True):
            if p is None or seg is None:
                continue
            if p.segment_id != seg.segment_id:
                c.error(PROMPTS_DIR, f"segments[{i}].segment_id", f"expected "
                        f"{seg.segment_id!r} (gt's segment at this position), found "
                        f"{p.segment_id!r}; the prompts must follow gt's segments one for one")
            for key, mine, gold in (("duration_sec", p.duration_sec, seg.duration_sec),
                                    ("transition", p.transition, seg.transition)):
                if mine is not None and mine != gold:
                    c.warn(PROMPTS_DIR, f"segments[{i}].{key}", f"{mine!r} here, {gold!r} in gt")
    for i, p in c.prompt_segments:
        if not p.prompt.strip():
            c.error(PROMPTS_DIR, f"segments[{i}].prompt", "empty prompt; a system gets nothing "
                    "to generate from: copy the file again from the release")
        elif leaks := label_leaks(p.prompt):
            c.warn(PROMPTS_DIR, f"segments[{i}].prompt", f"shows label(s) {leaks} that a "
                   "system must never see")
    for w in prompts.warnings:
        c.warn(PROMPTS_DIR, "warnings", f"{_OWN}{excerpt(w, 200)}")


def _declared_pairs(c: CheckedStory) -> set[tuple[str, ...]]:
    if c.gt is not None:
        return {tuple(sorted(p.pair)) for p in c.gt.lookalike_pairs}
    raw = c.raw.get(GT_DIR, {}).get("lookalike_pairs")
    return {tuple(sorted(map(str, p["pair"]))) for p in (raw if isinstance(raw, list) else [])
            if isinstance(p, dict) and isinstance(p.get("pair"), list)}


def label_leaks(prompt: str) -> list[str]:
    """Entity ids and probe labels a prompt shows (a system must never see them).

    Example:
        >>> label_leaks("E3 walks in (first_appearance).")
        ['E3', 'first_appearance']
    """
    return sorted(set(_LABEL.findall(prompt)))


def check_rules(c: CheckedStory) -> None:
    """Add the cross-item and cross-file problems of one story (what parsed is checked)."""
    n_gt = len(c.items(GT_DIR, "segments"))
    if GT_DIR in c.raw and isinstance(c.raw[GT_DIR].get("segments"), list) and not n_gt:
        c.error(GT_DIR, "segments", "holds no segments: a story needs its gold segments; copy "
                "the file again from the release")
    if (why := id_problem(c.stem)) is not None:  # it names RUN/rollouts/<story>/
        c.error(GT_DIR, "story_id", f"not a safe file name: {why} (the story id names the "
                f"story's folder of clips); fix: rename the story's files using {SAFE_ID_RULE}")
    for i, seg in c.segments:  # also when the file's header is broken
        _segment(c, i, seg, _declared_pairs(c))
    if c.gt is not None:
        _entity_tables(c, c.gt)
        if len(c.segments) == n_gt:
            _derived(c, c.gt)
        for w in c.gt.warnings:
            c.warn(GT_DIR, "warnings", f"{_OWN}{excerpt(w, 200)}")
        if c.gt.summary is None:
            c.warn(GT_DIR, "summary", "no summary block: the counts cannot be cross-checked "
                   "against the file's own (vidmem stats recomputes them from the segments)")
    if c.source is not None and GT_DIR in c.raw:
        _source(c, c.source, n_gt)
    if c.prompts is not None:
        _prompts(c, c.prompts, n_gt)
