"""The records a benchmark shares with the runner: problems and validation reports, CLI
options, rollouts and score items (:mod:`vidmem.benchmarks.contract` re-exports them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

if TYPE_CHECKING:
    from vidmem.generators.requests import GenerationRequest

__all__ = ["CliOption", "OutputScan", "Problem", "Rollout", "RowValidationReport", "ScoreItem",
           "ValidationReport"]


@dataclass(frozen=True)
class Problem:
    """One problem found while validating the dataset.

    Attributes:
        where: the row id (task or case), or ``"line N"`` when the row has no usable id,
            or the file.
        field: the field at fault, e.g. ``references[0].frame_index`` (``""`` for a
            problem with a whole line or file).
        message: what was expected, what was found and how to fix it.
        severity: ``error`` (blocks loading) or ``warning``.
        line: 1-based line in the dataset's JSONL file, when known.
    """

    where: str
    field: str
    message: str
    severity: Literal["error", "warning"] = "error"
    line: int | None = None

    def __str__(self) -> str:
        place = self.where
        if self.line is not None and self.where != f"line {self.line}":
            place += f" (line {self.line})"
        what = f"field '{self.field}': " if self.field else ""
        return f"{self.severity}: {place}: {what}{self.message}"


@dataclass(frozen=True)
class RowValidationReport:
    """Everything a validation of a JSONL dataset found.

    Subclasses name their rows file (:attr:`rows_file`) and what a row is
    (:attr:`row_noun`) for :meth:`format`.

    Attributes:
        root: the dataset folder.
        problems: errors and warnings in file order.
        n_rows: rows that parsed as JSON objects.
    """

    rows_file: ClassVar[str] = "rows.jsonl"
    row_noun: ClassVar[str] = "row"

    root: Path
    problems: tuple[Problem, ...]
    n_rows: int = 0

    @property
    def errors(self) -> tuple[Problem, ...]:
        """Problems that block loading."""
        return tuple(p for p in self.problems if p.severity == "error")

    @property
    def warnings(self) -> tuple[Problem, ...]:
        """Problems worth a look that do not block loading."""
        return tuple(p for p in self.problems if p.severity == "warning")

    @property
    def ok(self) -> bool:
        """True when there are no errors (warnings allowed)."""
        return not self.errors

    def counts(self) -> str:
        """What was read, the start of :meth:`format`'s summary line (subclasses that
        count something else than rows override it)."""
        return f"{self.root / self.rows_file}: {self.n_rows} {self.row_noun} row(s)"

    def format(self, limit: int | None = None) -> str:
        """Human-readable report: a summary line then one line per problem.

        Args:
            limit: list at most this many problems (``None``: all).
        """
        head = (f"{self.counts()}, {len(self.errors)} error(s), "
                f"{len(self.warnings)} warning(s)")
        shown = self.problems if limit is None else self.problems[:limit]
        lines = [head, *(f"  {p}" for p in shown)]
        if len(shown) < len(self.problems):
            lines.append(f"  ... and {len(self.problems) - len(shown)} more")
        return "\n".join(lines)


class OutputScan(Protocol):
    """What ``find_outputs`` returns: which items have a usable video (see
    :class:`vidmem.benchmarks.jsonl_dataset.VideoFolderScan`)."""

    found: dict[str, Path]
    missing: list[str]
    reasons: dict[str, str]

    def raise_if_missing(self) -> None: ...


class ValidationReport(Protocol):
    """What ``validate`` returns: every problem at once, by item and field."""

    @property
    def problems(self) -> tuple[Problem, ...]: ...
    @property
    def errors(self) -> tuple[Problem, ...]: ...
    @property
    def warnings(self) -> tuple[Problem, ...]: ...
    @property
    def ok(self) -> bool: ...
    def format(self, limit: int | None = None) -> str: ...


@dataclass(frozen=True)
class CliOption:
    """One benchmark-specific command-line option (the CLI turns it into a typer option).

    Attributes:
        name: the keyword it is passed under (``stride``).
        flags: its spellings (``("--stride",)``).
        type: the Python type (``int``, ``float | None``, ``Path | None``, ``list[str] | None``,
            ``bool`` for a flag).
        default: the default value.
        help: one line for ``--help``.
        envvar: an environment variable that supplies it, if any.
        min: the smallest accepted value of a number, if any.
    """

    name: str
    flags: tuple[str, ...]
    type: Any
    default: Any
    help: str
    envvar: str | None = None
    min: float | None = None


@dataclass(frozen=True)
class Rollout:
    """One video to generate, as plain data keyed by content.

    Attributes:
        request: what the generator is asked for (its ``out_path`` names the video).
        inputs: hashes of the input files (context video, start image ...), so that a
            changed input regenerates.
    """

    request: GenerationRequest
    inputs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ScoreItem:
    """One unit of scoring work, as plain data.

    Attributes:
        item_id: the dataset item it scores (a CMBench task id, a loop case id).
        request: everything :meth:`Benchmark.score_item` needs (paths, file hashes,
            scorer settings, weights fingerprints); its content is the store key, so an
            unchanged item is never scored twice. It holds the scorer configuration's
            ``to_dict()`` under ``"scorer"``: that is how a worker process loads (once)
            the backends it scores with.
        unkeyed: request fields left out of that key: file paths whose content hash
            the request also carries (a moved run or dataset is still served from the
            store).
    """

    item_id: str
    request: Mapping[str, Any]
    unkeyed: tuple[str, ...] = ()
