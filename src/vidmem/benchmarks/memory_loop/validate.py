"""Memory-loop validation rules: check one raw ``cases.jsonl`` row and collect its problems.

Rows are checked as plain JSON objects, before pydantic sees them, so that every problem
of every row is reported at once, each naming the case (or line), the field, what was
expected, what was found and how to fix it. Errors block loading; warnings do not:

* errors: a missing required field; a ``case_id`` that is empty or not a safe file name
  (it names ``<case_id>.mp4``); a duplicate ``case_id``; an unknown ``loop_id`` (with
  "did you mean"); an empty ``prompt``; ``duration_seconds`` or ``fps`` not a finite
  number > 0 (at most :data:`~.schema.MAX_DURATION_SECONDS` and :data:`~.schema.MAX_FPS`:
  the input limits); a ``start_image`` or ``poses`` path that is absolute, leaves the root
  (``..``, or a symbolic link to a file outside it; links of a Hugging Face snapshot
  into its own cache repository are fine) or names no file.
* warnings: unknown fields (kept on the case as extras); a ``prompt`` that is not the
  loop's prompt target (a generator that recognises the targets, like ``sim``, will
  not perform the loop); a start image that is not PNG/JPEG/WebP by its suffix.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import PurePosixPath

from vidmem.benchmarks.jsonl_dataset import RowChecker, RowValidationReport, excerpt
from vidmem.benchmarks.memory_loop.schema import (
    CASE_FIELDS,
    CASES_FILE,
    MAX_DURATION_SECONDS,
    MAX_FPS,
    OPTIONAL_FIELDS,
    Problem,
)
from vidmem.io.safe_paths import SAFE_ID_RULE, id_problem
from vidmem.metrics.loop_paths import LOOP_IDS, LOOPS, loop_for_prompt
from vidmem.values import is_finite_number, type_name

__all__ = ["MemoryLoopValidation"]

_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")


@dataclass(frozen=True)
class MemoryLoopValidation(RowValidationReport):
    """Everything ``validate_memory_loop`` found (``n_rows`` counts case rows)."""

    rows_file = CASES_FILE
    row_noun = "case"

    @property
    def n_cases(self) -> int:
        """Rows of ``cases.jsonl`` that parsed as JSON objects."""
        return self.n_rows


class CaseRowChecker(RowChecker):
    """Collect the problems of one ``cases.jsonl`` row."""

    id_field = "case_id"

    def _text(self, name: str) -> str | None:
        if name not in self.obj:
            return None  # reported once by check()
        v = self.obj[name]
        if not isinstance(v, str):
            self.error(name, f"expected a string, found {type_name(v)} {excerpt(v)}")
            return None
        if not v.strip():
            self.error(name, "must not be empty")
            return None
        return v

    def _positive(self, name: str, example: str, limit: float) -> None:
        if name not in self.obj:
            return
        v = self.obj[name]
        if not is_finite_number(v) or not 0 < v <= limit:
            self.error(name, f"expected a finite number > 0 and at most {limit:g} (vidmem's "
                       f"input limit), found {type_name(v)} {excerpt(v)}; write e.g. "
                       f"\"{name}\": {example}")

    def _path(self, name: str, what: str, noun: str, example: str) -> str | None:
        value = self._text(name)
        if value is None:
            return None
        return self.relative_file(name, value, what=what, noun=noun, example=example,
                                  missing_hint=f"check the path (relative to {self.root})")

    def check(self) -> list[Problem]:
        obj = self.obj
        for name in CASE_FIELDS:
            if name not in obj:
                self.error(name, f"missing; every case row needs {list(CASE_FIELDS)}")
        for name in obj:
            if name not in CASE_FIELDS + OPTIONAL_FIELDS:
                self.warn(name, "unknown field, kept as an extra (not used by vidmem)")
        case_id = self._text("case_id")
        # The case id names the video <case_id>.mp4.
        if case_id is not None and (why := id_problem(case_id)) is not None:
            self.error("case_id", f"not a safe file name: {why} (it names the video "
                       f"<case_id>.mp4); fix: use {SAFE_ID_RULE}")
        image = self._path("start_image", "start images", "start image",
                           "start_images/img000.png")
        if image is not None and PurePosixPath(image.replace("\\", "/")).suffix.lower() not in _IMAGE_SUFFIXES:
            self.warn("start_image", f"{excerpt(image)} is not a PNG/JPEG/WebP file name; "
                      "generators may not read it")
        loop_id = self._check_loop()
        prompt = self._text("prompt")
        if loop_id is not None and prompt is not None and loop_for_prompt(prompt) != loop_id:
            self.warn("prompt", f"{excerpt(prompt)} is not the prompt target of {loop_id} "
                      f"({LOOPS[loop_id].prompt!r}); generators that recognise the targets "
                      "(e.g. sim) will not perform the loop")
        self._positive("duration_seconds", "60.0", MAX_DURATION_SECONDS)
        self._positive("fps", "8.0", MAX_FPS)
        if obj.get("poses") is not None:
            self._path("poses", "pose tracks", "pose track", "poses/case_001.json")
        return self.problems

    def _check_loop(self) -> str | None:
        if "loop_id" not in self.obj:
            return None
        v = self.obj["loop_id"]
        if v in LOOP_IDS:
            return str(v)
        guess = ""
        if isinstance(v, str) and len(v) <= 100:  # a long value is no typo of a loop id
            close = difflib.get_close_matches(v.strip().lower(), LOOP_IDS, n=1, cutoff=0.5)
            guess = f"; did you mean {close[0]!r}?" if close else ""
        self.error("loop_id", f"unknown loop {excerpt(v)}{guess}; expected one of {list(LOOP_IDS)}")
        return None
