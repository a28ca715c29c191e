"""CMBench validation rules: check one raw ``metadata.jsonl`` row and collect its problems.

Rows are checked as plain JSON objects, before pydantic sees them, so that every
problem of every row can be reported at once, each naming the task (or line), the field,
what was expected and what was found. The rules are listed in the docstring of
:mod:`vidmem.benchmarks.cmbench.data`, whose :func:`validate_cmbench` and
:func:`load_cmbench` drive them over a whole file.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from vidmem.benchmarks.cmbench.schema import (
    CLIP_FIELDS,
    CLIP_IDS,
    MAX_FRAME_INDEX,
    MAX_REFERENCE_SECONDS,
    MAX_REFERENCES,
    METADATA_FILE,
    REFERENCE_FIELDS,
    TASK_FIELDS,
    TASK_TYPES,
    VIDEO_TYPES,
    Problem,
    video_stem,
)
from vidmem.benchmarks.jsonl_dataset import RowChecker, RowValidationReport, excerpt
from vidmem.io.boxes import check_normalized_box
from vidmem.io.safe_paths import SAFE_ID_RULE, id_problem
from vidmem.values import is_finite_number, is_int, type_name

__all__ = ["ValidationReport"]



@dataclass(frozen=True)
class ValidationReport(RowValidationReport):
    """Everything :func:`validate_cmbench` found.

    Attributes:
        root: the dataset folder.
        problems: errors and warnings in file order.
        n_rows: rows that parsed as JSON objects.
    """

    rows_file = METADATA_FILE
    row_noun = "task"


# --------------------------------------------------------------------------- JSON values


def _one_of(value: object, options: Sequence[str]) -> str:
    found = excerpt(value)
    guess = ""
    if isinstance(value, str) and len(value) <= 100:  # a long value is no typo of an option
        close = difflib.get_close_matches(value.strip().lower(), options, n=1, cutoff=0.5)
        if close:
            guess = f"; did you mean {close[0]!r}?"
    return f"expected one of {list(options)}, found {found}{guess}"


# --------------------------------------------------------------------------- rules


class TaskRowChecker(RowChecker):
    """Collect the problems of one metadata row."""

    id_field = "task_id"

    def _string(self, field_name: str, v: object, *, required_non_empty: bool) -> str | None:
        """``v`` when it is a non-blank string; otherwise report it and return None."""
        if not isinstance(v, str):
            self.error(field_name, f"expected a string, found {type_name(v)} {excerpt(v)}")
            return None
        if not v.strip():
            if required_non_empty:
                self.error(field_name, "must not be empty")
            else:
                self.warn(field_name, "is empty")
            return None
        return v

    def _text(self, name: str, *, required_non_empty: bool) -> str | None:
        # A missing task field is reported once, by check(); nothing to add here.
        if name not in self.obj:
            return None
        return self._string(name, self.obj[name], required_non_empty=required_non_empty)

    def check(self) -> list[Problem]:
        obj = self.obj
        for name in TASK_FIELDS:
            if name not in obj:
                self.error(name, f"missing; every task row needs {list(TASK_FIELDS)}")
        for name in obj:
            if name not in TASK_FIELDS:
                self.warn(name, "unknown field, kept as an extra (not used by vidmem)")

        task_id = self._text("task_id", required_non_empty=True)
        # The task id names the continuation file <task_id>.mp4.
        if task_id is not None and (why := id_problem(task_id)) is not None:
            self.error("task_id", f"not a safe file name: {why} (it names the continuation "
                       f"<task_id>.mp4); fix: use {SAFE_ID_RULE}")
        vtype = obj.get("type")
        if "type" in obj and vtype not in VIDEO_TYPES:
            self.error("type", _one_of(vtype, VIDEO_TYPES))
        task_type = obj.get("task_type")
        if "task_type" in obj and task_type not in TASK_TYPES:
            self.error("task_type", _one_of(task_type, TASK_TYPES))
        self._text("scene", required_non_empty=False)
        self._text("continue_prompt", required_non_empty=True)
        self._text("target_label", required_non_empty=True)
        video = self._check_video()
        self._check_clips()
        self._check_aliases()
        self._check_references()
        if task_id is not None and video is not None and task_type in TASK_TYPES:
            stem = video_stem(video)
            if not re.fullmatch(rf"{re.escape(stem)}_{task_type}_\d{{2,}}", task_id):
                self.warn(
                    "task_id",
                    f"{excerpt(task_id)} does not follow {{video_id}}_{{task_type}}_{{NN}}; "
                    f"expected {excerpt(stem, quote=False)}_{task_type}_NN (e.g. "
                    f"{excerpt(stem, quote=False)}_{task_type}_01) for video {excerpt(video)}",
                )
        return self.problems

    def _check_video(self) -> str | None:
        video = self._text("video", required_non_empty=True)
        if video is None:
            return None
        return self.relative_file(
            "video", video, what="context videos", noun="video",
            example="videos/synthetic/syn_001.mp4",
            missing_hint="check the path or the download")

    def _check_clips(self) -> None:
        if "context_clip_prompts" not in self.obj:
            return
        clips = self.obj["context_clip_prompts"]
        if not isinstance(clips, list):
            self.error(
                "context_clip_prompts",
                f"expected an array of 6 objects, found {type_name(clips)}",
            )
            return
        if len(clips) != len(CLIP_IDS):
            self.error(
                "context_clip_prompts",
                f"expected exactly {len(CLIP_IDS)} clip prompts, found {len(clips)}",
            )
        for k, clip in enumerate(clips):
            name = f"context_clip_prompts[{k}]"
            if not isinstance(clip, dict):
                self.error(
                    name,
                    f"expected an object {{clip_id, clip_prompt}}, found {type_name(clip)}",
                )
                continue
            for key in clip:
                if key not in CLIP_FIELDS:
                    self.warn(f"{name}.{key}", "unknown field, kept as an extra")
            clip_id = clip.get("clip_id")
            if "clip_id" not in clip:
                self.error(f"{name}.clip_id", "missing")
            elif not isinstance(clip_id, str):
                self.error(
                    f"{name}.clip_id",
                    f"expected a string like '01', found {type_name(clip_id)} "
                    f"{excerpt(clip_id)}",
                )
            elif k < len(CLIP_IDS) and clip_id != CLIP_IDS[k]:
                self.warn(
                    f"{name}.clip_id",
                    f"expected {CLIP_IDS[k]!r} at position {k}, found {excerpt(clip_id)}; "
                    "vidmem takes the order from the list position",
                )
            if "clip_prompt" not in clip:
                self.error(f"{name}.clip_prompt", "missing")
            else:
                self._string(f"{name}.clip_prompt", clip["clip_prompt"], required_non_empty=True)

    def _check_aliases(self) -> None:
        if "target_aliases" not in self.obj:
            return
        aliases = self.obj["target_aliases"]
        if not isinstance(aliases, list):
            self.error(
                "target_aliases",
                f"expected an array of strings, found {type_name(aliases)} {excerpt(aliases)}",
            )
            return
        for k, a in enumerate(aliases):
            self._string(f"target_aliases[{k}]", a, required_non_empty=False)

    def _check_references(self) -> None:
        if "references" not in self.obj:
            return
        refs = self.obj["references"]
        if not isinstance(refs, list):
            self.error("references", f"expected an array of objects, found {type_name(refs)}")
            return
        if not refs:
            self.error("references", "must not be empty; every task needs a reference")
            return
        if len(refs) > MAX_REFERENCES:
            self.error("references", f"{len(refs)} references, more than vidmem's limit of "
                       f"{MAX_REFERENCES} per task (README, 'Input limits')")
            return
        for k, ref in enumerate(refs):
            name = f"references[{k}]"
            if not isinstance(ref, dict):
                self.error(
                    name,
                    "expected an object {timestamp_seconds, frame_index, "
                    f"bbox_xyxy_normalized}}, found {type_name(ref)}",
                )
                continue
            for key in ref:
                if key not in REFERENCE_FIELDS:
                    self.warn(f"{name}.{key}", "unknown field, kept as an extra")
            ts = ref.get("timestamp_seconds")
            if "timestamp_seconds" not in ref:
                self.error(f"{name}.timestamp_seconds", "missing")
            elif not is_finite_number(ts) or not 0 <= ts <= MAX_REFERENCE_SECONDS:
                self.error(
                    f"{name}.timestamp_seconds",
                    f"expected a finite number of seconds >= 0, found {excerpt(ts)}; at most "
                    f"{MAX_REFERENCE_SECONDS:g} (vidmem's input limit)",
                )
            if "frame_index" not in ref:
                self.warn(f"{name}.frame_index", "missing; read as null (seek by timestamp)")
            else:
                fi = ref["frame_index"]
                if fi is not None and (not is_int(fi) or not 0 <= fi <= MAX_FRAME_INDEX):
                    self.error(
                        f"{name}.frame_index",
                        f"expected null or an integer >= 0, found {type_name(fi)} "
                        f"{excerpt(fi)}; at most {MAX_FRAME_INDEX} (vidmem's input limit)",
                    )
            if "bbox_xyxy_normalized" not in ref:
                self.error(f"{name}.bbox_xyxy_normalized", "missing")
            else:
                box = ref["bbox_xyxy_normalized"]
                if not isinstance(box, list):
                    self.error(
                        f"{name}.bbox_xyxy_normalized",
                        f"expected [x_min, y_min, x_max, y_max], found {type_name(box)}",
                    )
                else:
                    # a message quotes a bad coordinate whole: bound it too
                    for msg in check_normalized_box(box):
                        self.error(f"{name}.bbox_xyxy_normalized",
                                   f"{excerpt(msg, 160, quote=False)} (box {excerpt(box)})")
