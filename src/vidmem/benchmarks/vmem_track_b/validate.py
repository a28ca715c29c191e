"""Track-B story validation: every problem of every selected story at once, by file and field.

A story root is the folder that holds ``gt/``, ``gt_source/`` and ``sut_prompts/`` (the
release's ``trackB/en/``; a root that holds only ``en/`` is read as ``en/``). A story is
the set of its three files (:mod:`~vidmem.benchmarks.vmem_track_b.schema`); its id is the
leading number of the file stem, and a cohort selector (``"0001-0030"``) picks stories.
Each :class:`~vidmem.benchmarks.contract.Problem` names the file relative to the root
(``gt/0001_lighthouse_keeper.json``) and a path into it (``segments[3].cast[0].eid``).

Errors (they block loading): no story folders; a file name without a story id, two
stories with one id, a selected id with no story; a story id (file stem) that is not a
safe file name (:func:`vidmem.io.safe_paths.id_problem`: it names the story's folder of
clips); a missing file, a file that is a symbolic link (or lies under one) to a file
outside the story root, one that is not UTF-8 JSON or not an object; a gold file with no
segments; a value past an input limit (:data:`.schema.MAX_SEGMENT_SECONDS`,
``MAX_SEGMENTS``, ``MAX_COUNT``, ``MAX_ENTITIES``: README, 'Input limits'); a field the
protocol reads that is missing or of the wrong type (an unknown ``op``, forbidden
``reason`` or ``kind`` included); segment ids that are 0-indexed, have gaps, repeat or run
out of order; an eid in ``cast``, ``forbidden``,
``confusable_with``, ``anchor.resolves_to``, ``lookalike_active`` or ``state_machines``
that ``entities`` does not define; an entity both in the cast and forbidden, or twice
in one segment's ``forbidden`` (the official tally would count it twice); a state
label the entity does not have; a ``last_seen`` or removal ``grounded_by`` that is not an
earlier segment; a look-alike pair that ``lookalike_pairs`` does not declare; an unknown
``memory_probes`` label; a ``story_id`` that is not the file stem; ``gt_source`` with
another number of actions than ``gt`` has segments; ``sut_prompts`` whose count,
``n_segments`` or segment ids disagree with ``gt``, or with an empty prompt.

Warnings: what the release's own compiler derives and did otherwise (an op, ``gap`` or
``last_seen`` that the segment order contradicts, a segment whose duration is not
``params.segment_sec``), a scene id, action text or entity set of ``gt_source`` that
differs from ``gt``, an unknown anchor type, a prompt that shows a label (``E3``,
``first_appearance``), a ``sut_prompts`` file of another register (not read), and every
warning the release's files carry themselves.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from vidmem.benchmarks.contract import Problem, RowValidationReport
from vidmem.benchmarks.jsonl_dataset import excerpt
from vidmem.benchmarks.vmem_track_b.schema import (
    ENTITY_KINDS,
    FOLDERS,
    FORBIDDEN_REASONS,
    GT_DIR,
    OPS,
    PROMPTS_DIR,
    REGISTER,
    SOURCE_DIR,
    EntityDef,
    GtFile,
    GtSegment,
    PromptSegment,
    PromptsFile,
    SourceFile,
    SourceScene,
    format_cohort,
    parse_cohort,
    story_number,
)
from vidmem.benchmarks.vmem_track_b.story_rules import CheckedStory, check_ids, check_rules
from vidmem.io.safe_paths import allowed_link_targets, link_escape
from vidmem.values import type_name

__all__ = ["CheckedStory", "TrackBValidation", "check_stories", "validate_stories"]

_FIX_FILES = "copy the story's three files from the release (gt/, gt_source/, sut_prompts/)"


@dataclass(frozen=True)
class TrackBValidation(RowValidationReport):
    """Everything :func:`validate_stories` found (``n_rows`` counts gold segments)."""

    rows_file = ""
    row_noun = "segment"
    n_stories: int = 0

    def counts(self) -> str:
        return f"{self.root}: {self.n_stories} story(ies), {self.n_rows} segment(s)"


def _story_root(root: Path) -> tuple[Path, list[Problem]]:
    if not root.is_dir():
        what = "is a file" if root.exists() else "does not exist"
        return root, [Problem(str(root), "", f"the story root {what}; expected the folder that "
                              "holds gt/, gt_source/ and sut_prompts/ (the release's trackB/en/)")]
    if not any((root / f).is_dir() for f in FOLDERS) and (root / "en" / GT_DIR).is_dir():
        root = root / "en"
    if not any((root / f).is_dir() for f in FOLDERS):
        return root, [Problem(str(root), "", "no Track-B stories: found none of gt/, gt_source/, "
                              "sut_prompts/; point at the release's trackB/en/ folder")]
    return root, []


def _discover(root: Path) -> tuple[dict[str, dict[str, Path]], list[Problem]]:
    found: dict[str, dict[str, Path]] = {}
    problems: list[Problem] = []
    suffix = f"_{REGISTER}"
    for folder in FOLDERS:
        paths = sorted((root / folder).glob("*.json")) if (root / folder).is_dir() else []
        for path in (p for p in paths if not p.name.startswith(".")):
            stem = path.stem
            if folder == PROMPTS_DIR:
                if not stem.endswith(suffix):
                    problems.append(Problem(f"{folder}/{path.name}", "", (
                        f"not read: the protocol reads the '{REGISTER}' register, "
                        f"sut_prompts/<story>{suffix}.json"), "warning"))
                    continue
                stem = stem[: -len(suffix)]
            found.setdefault(stem, {})[folder] = path
    return found, problems


def _select(found: dict[str, dict[str, Path]], stories: Any,
            root: Path) -> tuple[list[CheckedStory], list[Problem]]:
    cohort = parse_cohort(stories)
    by_number: dict[int, list[str]] = {}
    problems: list[Problem] = []
    for stem, files in sorted(found.items()):
        number = story_number(stem)
        if number is None:
            for folder, path in files.items():
                problems.append(Problem(f"{folder}/{path.name}", "", (
                    "the file name does not start with a story id; expected "
                    "<NNNN>_<name>.json, e.g. 0001_lighthouse_keeper.json: rename it")))
        elif cohort is None or number in cohort:
            by_number.setdefault(number, []).append(stem)
    for number, stems in by_number.items():
        if len(stems) > 1:
            problems.append(Problem(str(root), "", (
                f"story id {number:04d} names {len(stems)} stories ({', '.join(stems)}); "
                "expected one: give each story its own number")))
    if cohort is not None and (absent := cohort - set(by_number)):
        have = {story_number(s) for s in found} - {None}
        problems.append(Problem(str(root), "", (
            f"selected story id(s) {format_cohort(absent)} not found; the root holds "
            f"{format_cohort(have) if have else 'no story'}: fix the selector or add the files")))
    checked = [CheckedStory(stems[0], number, found[stems[0]])
               for number, stems in sorted(by_number.items())]
    return checked, problems


def _read(c: CheckedStory, folder: str, root: Path, bases: tuple[Path, ...]) -> None:
    path = c.files.get(folder)
    if path is None:
        c.error(folder, "", f"missing file: expected {folder}/{c.name(folder)} next to the "
                "story's other files; " + _FIX_FILES)
        return
    try:
        real = link_escape(root, path, bases)
    except (OSError, ValueError) as exc:  # a link loop
        c.error(folder, "", f"cannot be resolved ({exc}); fix or remove the symbolic link")
        return
    if real is not None:
        c.error(folder, "", f"leads through a symbolic link to "
                f"{excerpt(str(real), 200, quote=False)}, outside the story root {root}; story "
                "files must lie inside it: copy the file into the root (or link the whole "
                "root instead)")
        return
    data = path.read_bytes()
    c.sha256[folder] = hashlib.sha256(data).hexdigest()
    try:
        obj = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        c.error(folder, "", f"not UTF-8 text (byte {exc.start + 1}); save the file as UTF-8")
        return
    except json.JSONDecodeError as exc:
        c.error(folder, "", f"not valid JSON ({exc.msg} at line {exc.lineno} column "
                f"{exc.colno}); fix the file or {_FIX_FILES}", exc.lineno)
        return
    except (ValueError, RecursionError) as exc:
        c.error(folder, "", f"not valid JSON ({exc}); {_FIX_FILES}")
        return
    if not isinstance(obj, dict):
        c.error(folder, "", f"expected a JSON object, found {type_name(obj)}; {_FIX_FILES}")
        return
    c.raw[folder] = obj


_FIELD = re.compile(r"^[a-z_][a-z0-9_]*$")
_TAGS = {"str", "list", "dict", "int", "bool", "float"}
#: pydantic error types of the input limits (:data:`.schema.MAX_SEGMENT_SECONDS` and others)
_LIMIT_ERRORS = ("less_than_equal", "too_long", "finite_number")
_CHOICES = {"op": OPS, "reason": FORBIDDEN_REASONS, "kind": ENTITY_KINDS}
_HINTS = {
    "count": "write a whole number >= 1, e.g. 3",
    "gap": "write a whole number >= 0 (segments in between; previous segment: 0)",
    "duration_sec": "write the segment's length in seconds, e.g. 5.0",
    "segment_sec": "write the segment length in seconds, e.g. 5.0",
    "n_segments": "write the number of segments in the file",
}


def _path(prefix: str, loc: tuple[Any, ...]) -> str:
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _FIELD.match(str(part)) and part not in _TAGS:
            out += f".{part}" if out else str(part)
    return out


def _message(err: dict[str, Any]) -> str:
    if err["type"] == "missing":
        return "missing; the Track-B protocol reads this field: add it (see the release's files)"
    msg = str(err["msg"]).removeprefix("Value error, ")
    value = err.get("input")
    if msg.startswith("expected"):
        return msg
    text = f"{msg[0].lower()}{msg[1:]}; found {type_name(value)} {excerpt(value)}"
    named = next((p for p in reversed(err["loc"]) if p in _CHOICES), None)
    if err["type"] == "literal_error" and named:
        close = difflib.get_close_matches(str(value), _CHOICES[named], 1)
        text += f"; did you mean {close[0]!r}?" if close else ""
    if err["type"] == "string_pattern_mismatch":
        text += "; write segment ids as 'seg_' and three digits, 1-indexed: 'seg_001'"
    hint = next((_HINTS[p] for p in reversed(err["loc"]) if p in _HINTS), None)
    if err["type"] in _LIMIT_ERRORS:
        hint = (f"{hint} " if hint else "") + ("(within vidmem's input limits for Track-B: "
                                               "README, 'Input limits')")
    return f"{text}; fix: {hint}" if hint else text


def _field_messages(prefix: str, exc: ValidationError) -> dict[str, str]:
    """One message per field path of a pydantic error (a union's alternatives merged).

    Args:
        prefix: the path of the validated item in its file, e.g. ``segments[3]``.
        exc: the error of validating it.
    """
    grouped: dict[str, list[dict[str, Any]]] = {}
    for err in exc.errors():
        grouped.setdefault(_path(prefix, err["loc"]), []).append(err)
    return {fld: "; or ".join(dict.fromkeys(_message(e) for e in errs))
            for fld, errs in grouped.items()}


def _model(c: CheckedStory, folder: str, model: type[BaseModel], obj: Any, prefix: str = ""):
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        for fld, message in _field_messages(prefix, exc).items():
            c.error(folder, fld, message)
        return None


def _parse(c: CheckedStory, root: Path, bases: tuple[Path, ...]) -> None:
    for folder in FOLDERS:
        _read(c, folder, root, bases)
    if GT_DIR in c.raw:
        c.gt = _model(c, GT_DIR, GtFile, c.raw[GT_DIR])
        ents = c.raw[GT_DIR].get("entities")
        for eid, item in (ents.items() if isinstance(ents, dict) else ()):
            if (m := _model(c, GT_DIR, EntityDef, item, f"entities.{eid}")) is not None:
                c.entities[eid] = m
        c.segments = _each(c, GT_DIR, GtSegment, "segments")
    if SOURCE_DIR in c.raw:
        c.source = _model(c, SOURCE_DIR, SourceFile, c.raw[SOURCE_DIR])
        c.scenes = _each(c, SOURCE_DIR, SourceScene, "scenes")
    if PROMPTS_DIR in c.raw:
        c.prompts = _model(c, PROMPTS_DIR, PromptsFile, c.raw[PROMPTS_DIR])
        c.prompt_segments = _each(c, PROMPTS_DIR, PromptSegment, "segments")


def _each(c: CheckedStory, folder: str, model: type[BaseModel], key: str) -> list[tuple[int, Any]]:
    return [(i, m) for i, item in enumerate(c.items(folder, key))
            if (m := _model(c, folder, model, item, f"{key}[{i}]")) is not None]


def check_stories(root: str | Path, stories: Any = None) -> tuple[Path, list[CheckedStory],
                                                                    list[Problem]]:
    """Read and check the selected stories under ``root``.

    Returns:
        The story root actually read, the checked stories (their problems on each), and
        the problems of the root itself (layout, file names, selection).
    """
    base, problems = _story_root(Path(root))
    if problems:
        return base, [], problems
    found, problems = _discover(base)
    checked, more = _select(found, stories, base)
    if not found:
        more.append(Problem(str(base), "", "no story files found: expected "
                            "gt/<NNNN>_<name>.json with its gt_source/ and sut_prompts/ files"))
    bases = allowed_link_targets(base)
    for c in checked:
        _parse(c, base, bases)
        check_ids(c, GT_DIR, c.segments, len(c.items(GT_DIR, "segments")))
        check_ids(c, PROMPTS_DIR, c.prompt_segments, len(c.items(PROMPTS_DIR, "segments")))
        check_rules(c)
        c.problems.sort(key=lambda p: FOLDERS.index(p.where.split("/", 1)[0]))  # stable
    return base, checked, problems + more


def validate_stories(root: str | Path, stories: Any = None) -> TrackBValidation:
    """Every problem of the Track-B stories under ``root``, at once.

    Args:
        root: the folder holding ``gt/``, ``gt_source/`` and ``sut_prompts/``.
        stories: a cohort selector (``"0001-0030"``, ``"0001,0003"``); ``None``: all.

    Raises:
        UserInputError: a selector that does not parse.
    """
    base, checked, problems = check_stories(root, stories)
    for c in checked:
        problems += c.problems
    n_rows = sum(len(c.items(GT_DIR, "segments")) for c in checked)
    return TrackBValidation(base, tuple(problems), n_rows=n_rows, n_stories=len(checked))
