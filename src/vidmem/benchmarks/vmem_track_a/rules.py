"""The Track-A gold rules that span items or files, run on what :mod:`.validate` read.

:class:`CheckedFilm` holds one film's files as read (the pydantic models of the items
that passed their own checks, and every usable id), and collects the problems. The rules
here add the cross-item and cross-file ones listed in :mod:`.validate`: duplicates, time
order, the index against the annotations, entity references, and the prompt warnings.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vidmem.benchmarks.contract import Problem
from vidmem.benchmarks.jsonl_dataset import excerpt
from vidmem.benchmarks.vmem_track_a.layout import FilmDir
from vidmem.benchmarks.vmem_track_a.schema import (
    ANNOTATIONS_FILE,
    INDEX_FILE,
    REGISTRY_FILE,
    REQUIREMENTS,
    SCENARIO_TAGS,
    forbidden_entity_id,
)

__all__ = ["LIST_KEY", "CheckedFilm", "check_rules"]

#: the array each gold file holds its items in
LIST_KEY = {INDEX_FILE: "chunks", ANNOTATIONS_FILE: "chunks", REGISTRY_FILE: "entities"}
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_SENTENCE_END = tuple(".!?。！？…\"'”’」』)）")


@dataclass
class CheckedFilm:
    """One film's files as read and checked (the models of the items that passed)."""

    film: FilmDir
    lang: str
    files: dict[str, Path]
    sha256: dict[str, str] = field(default_factory=dict)
    parsed: dict[str, list[tuple[int, Any]]] = field(default_factory=dict)
    #: per file, the ids of every item (valid or not) that has a usable one, and whether
    #: some item has none (then ids cannot be compared across files)
    ids: dict[str, set[Any]] = field(default_factory=dict)
    unusable_ids: set[str] = field(default_factory=set)
    problems: list[Problem] = field(default_factory=list)

    def where(self, name: str) -> str:
        try:
            rel = self.files[name].relative_to(self.film.path).as_posix()
        except ValueError:
            rel = str(self.files[name])
        return f"{self.film.film_id}/{rel}"

    def error(self, name: str, fld: str, message: str, line: int | None = None) -> None:
        self.problems.append(Problem(self.where(name), fld, message, "error", line))

    def warn(self, name: str, fld: str, message: str) -> None:
        self.problems.append(Problem(self.where(name), fld, message, "warning"))


def _unique(checked: CheckedFilm, name: str, attr: str) -> None:
    seen: dict[Any, int] = {}
    key = LIST_KEY[name]
    for i, item in checked.parsed.get(name, []):
        value = getattr(item, attr)
        if value in seen:
            checked.error(name, f"{key}[{i}].{attr}", f"duplicate {attr} {excerpt(value)} "
                          f"(also {key}[{seen[value]}]); give each one its own id")
        seen.setdefault(value, i)


def _time_order(checked: CheckedFilm, name: str) -> None:
    previous: tuple[int, list[float]] | None = None
    for i, chunk in checked.parsed.get(name, []):
        if previous is not None:
            j, (start, end) = previous
            s = chunk.seconds_span
            if s[0] < start:
                checked.error(name, f"chunks[{i}].seconds_span", f"{s} starts before chunks[{j}] "
                              f"({[start, end]}); expected chunks in increasing time order")
            elif s[0] < end:
                checked.error(name, f"chunks[{i}].seconds_span", f"{s} overlaps chunks[{j}] "
                              f"({[start, end]}); a chunk must start at or after the previous end")
        previous = (i, chunk.seconds_span)


def _index_matches(checked: CheckedFilm) -> None:
    index = {c.chunk_id: (i, c) for i, c in checked.parsed.get(INDEX_FILE, [])}
    annotated = {c.chunk_id: c for _, c in checked.parsed.get(ANNOTATIONS_FILE, [])}
    if INDEX_FILE not in checked.parsed or ANNOTATIONS_FILE not in checked.parsed:
        return
    a, b = checked.ids[INDEX_FILE], checked.ids[ANNOTATIONS_FILE]
    for ids, here, there in ((sorted(a - b), INDEX_FILE, ANNOTATIONS_FILE),
                             (sorted(b - a), ANNOTATIONS_FILE, INDEX_FILE)):
        if ids and there not in checked.unusable_ids:  # else: unknown, already reported
            checked.error(here, "chunks", f"chunk ids {ids[:10]}{' ...' if len(ids) > 10 else ''} "
                          f"are not in {there}; both files must list the same chunks")
    for cid, (i, chunk) in index.items():
        if cid in annotated and chunk.seconds_span != annotated[cid].seconds_span:
            checked.error(INDEX_FILE, f"chunks[{i}].seconds_span", (
                f"{chunk.seconds_span} differs from chunk {cid}'s {annotated[cid].seconds_span} in "
                f"{ANNOTATIONS_FILE}; the spans must agree"))


def _references(checked: CheckedFilm) -> None:
    chunks = checked.parsed.get(ANNOTATIONS_FILE, [])
    if REGISTRY_FILE not in checked.parsed or not chunks:
        return
    known = checked.ids[REGISTRY_FILE]  # entities that failed their own checks included
    name = ANNOTATIONS_FILE

    def ref(fld: str, eid: str) -> None:
        if eid not in known:
            close = difflib.get_close_matches(eid, sorted(known), 1)
            guess = f"; did you mean {close[0]!r}?" if close else ""
            checked.error(name, fld, f"entity id {excerpt(eid)} is not in {REGISTRY_FILE}{guess}")

    for i, c in chunks:
        at = f"chunks[{i}]"
        for j, eid in enumerate(c.present):
            ref(f"{at}.present[{j}]", eid)
            if eid in c.present[:j]:
                checked.error(name, f"{at}.present[{j}]", f"duplicate entity id {excerpt(eid)}")
        for j, eid in enumerate(c.first_appearances):
            ref(f"{at}.first_appearances[{j}]", eid)
            if eid in known and eid not in c.present:
                checked.error(name, f"{at}.first_appearances[{j}]", f"{excerpt(eid)} is not in "
                              "this chunk's present[]; a first appearance must be on screen")
        for j, g in enumerate(c.gold_instructions):
            ref(f"{at}.gold_instructions[{j}].entity_id", g.entity_id)
            if g.entity_id in known and g.entity_id not in c.present:
                checked.warn(name, f"{at}.gold_instructions[{j}].entity_id",
                             f"{excerpt(g.entity_id)} is not in this chunk's present[]")
            if g.requirement not in REQUIREMENTS:
                checked.warn(name, f"{at}.gold_instructions[{j}].requirement",
                             f"unknown requirement {excerpt(g.requirement)}; the release uses "
                             f"{list(REQUIREMENTS)}")
        for j, entry in enumerate(c.forbidden):
            ref(f"{at}.forbidden[{j}]", forbidden_entity_id(entry))
    chunk_ids = checked.ids[ANNOTATIONS_FILE]
    on_screen = {eid for _, c in chunks for eid in c.present}
    for i, e in checked.parsed[REGISTRY_FILE]:
        at = f"entities[{i}]"
        if e.first_chunk not in chunk_ids:
            checked.warn(REGISTRY_FILE, f"{at}.first_chunk", f"chunk {e.first_chunk} is not a "
                         f"chunk of {ANNOTATIONS_FILE}")
        if e.entity_id not in on_screen:
            checked.warn(REGISTRY_FILE, f"{at}.entity_id", f"{excerpt(e.entity_id)} is in no "
                         "chunk's present[]")
        for j, ev in enumerate(e.state_events):
            if ev.chunk_id not in chunk_ids:
                checked.warn(REGISTRY_FILE, f"{at}.state_events[{j}].chunk_id",
                             f"chunk {ev.chunk_id} is not a chunk of {ANNOTATIONS_FILE}")


def _prompts(checked: CheckedFilm) -> None:
    for i, c in checked.parsed.get(ANNOTATIONS_FILE, []):
        at, text = f"chunks[{i}].prompt", c.prompt.strip()
        if not text:
            checked.warn(ANNOTATIONS_FILE, at, "empty prompt; the segment has no instruction text")
            continue
        if checked.lang == "en" and _CJK.search(text):
            checked.warn(ANNOTATIONS_FILE, at, f"Chinese text in the English variant: "
                         f"{excerpt(text, 60)} (the release's own translation is incomplete)")
        if not text.endswith(_SENTENCE_END):
            checked.warn(ANNOTATIONS_FILE, at, f"ends without sentence punctuation "
                         f"({excerpt(text[-40:])}); it may be cut short in the release")
        for j, tag in enumerate(c.scenario_tags):
            if tag not in SCENARIO_TAGS:
                checked.warn(ANNOTATIONS_FILE, f"chunks[{i}].scenario_tags[{j}]",
                             f"unknown scenario tag {excerpt(tag)}; the release uses "
                             f"{list(SCENARIO_TAGS)}")


def check_rules(checked: CheckedFilm) -> None:
    """Run every cross-item and cross-file rule on a film whose files have been read."""
    _unique(checked, INDEX_FILE, "chunk_id")
    _unique(checked, ANNOTATIONS_FILE, "chunk_id")
    _unique(checked, REGISTRY_FILE, "entity_id")
    _time_order(checked, ANNOTATIONS_FILE if ANNOTATIONS_FILE in checked.parsed else INDEX_FILE)
    _index_matches(checked)
    _references(checked)
    _prompts(checked)
