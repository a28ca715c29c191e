"""Plain data describing a report: a title, run facts, notices and sections of blocks.

A benchmark's report builder reads a run log, computes what it wants to show and
fills a :class:`Report`; :mod:`vidmem.report.render` turns it into Markdown and a
self-contained HTML file. Nothing here touches the disk or draws anything, and the
same :class:`Report` can be rendered any number of times.

Text conventions:

* ``Report.title``, ``subtitle``, ``meta``, notices, captions, table cells and image
  captions are **plain text**: they are escaped in both outputs, so a prompt that
  contains ``<script>`` or ``|`` shows up literally.
* ``Section.text`` and :class:`Markdown` blocks are **Markdown written by the report
  author** (CommonMark plus tables). Raw HTML inside them is shown as text, never
  interpreted, and images are not loaded from the network.

Numbers in tables, key-value lists and metadata go through :func:`format_number`:
floats get four significant digits, integers are printed as they are, and ``None``,
NaN and infinities become ``"n/a"``. A caller that passes NaN should say why in a
:class:`Notice`; :meth:`Table.missing_cells` finds them.

The blocks live in :mod:`vidmem.report.blocks` and the number formatting in
:mod:`vidmem.report.formatting`; every name is re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from vidmem.errors import UserInputError
from vidmem.report.blocks import (
    Block,
    Figure,
    ImageGrid,
    KeyValues,
    Markdown,
    Table,
    check_block,
)
from vidmem.report.formatting import (
    MISSING,
    CellFormat,
    format_number,
    format_value,
    is_missing,
)

__all__ = [
    "Block",
    "CellFormat",
    "Figure",
    "ImageGrid",
    "KeyValues",
    "Markdown",
    "MISSING",
    "Notice",
    "NoticeLevel",
    "Report",
    "Section",
    "Table",
    "format_number",
    "format_value",
    "is_missing",
]

NoticeLevel: TypeAlias = Literal["info", "warning", "error"]
_LEVELS: tuple[str, ...] = ("info", "warning", "error")


# --------------------------------------------------------------------------- notices


@dataclass
class Notice:
    """A message shown near the top of the report.

    Attributes:
        level: ``"info"``, ``"warning"`` or ``"error"``.
        text: plain text (escaped when rendered).
    """

    level: NoticeLevel
    text: str

    def __post_init__(self) -> None:
        if self.level not in _LEVELS:
            raise UserInputError(
                f"Notice: expected level one of {', '.join(_LEVELS)}, found {self.level!r}",
                hint="use Notice('warning', '...') for problems the reader should know about",
            )


# --------------------------------------------------------------------------- report


@dataclass
class Section:
    """A headed part of the report.

    Attributes:
        heading: plain text.
        text: an optional Markdown paragraph shown under the heading.
        blocks: tables, figures, image grids, key-value lists and Markdown, in order.

    Raises:
        UserInputError: a block is not one of the block types.
    """

    heading: str
    text: str = ""
    blocks: list[Block] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.blocks = list(self.blocks)
        for i, block in enumerate(self.blocks):
            check_block(block, f"Section {self.heading!r}, block {i}")

    def add(self, block: Block) -> Block:
        """Append a block and return it."""
        check_block(block, f"Section {self.heading!r}, block {len(self.blocks)}")
        self.blocks.append(block)
        return block


@dataclass
class Report:
    """Everything a report shows, independent of the output format.

    Attributes:
        title: plain text, the page heading.
        subtitle: plain text under the title, optional.
        meta: run facts (vidmem version, benchmark and its version, backends, seeds,
            official or non-official label...), shown as a compact list; values are
            formatted like table cells.
        notices: messages shown before the first section.
        sections: the body.
    """

    title: str
    subtitle: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    notices: list[Notice] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)

    def __post_init__(self) -> None:
        for i, notice in enumerate(self.notices):
            if not isinstance(notice, Notice):
                raise UserInputError(
                    f"Report {self.title!r}, notice {i}: expected a Notice, found "
                    f"{type(notice).__name__}",
                    hint="Notice('warning', 'text')",
                )
        for i, section in enumerate(self.sections):
            if not isinstance(section, Section):
                raise UserInputError(
                    f"Report {self.title!r}, section {i}: expected a Section, found "
                    f"{type(section).__name__}"
                )

    def notice(self, level: NoticeLevel, text: str) -> Notice:
        """Append a notice and return it."""
        note = Notice(level, text)
        self.notices.append(note)
        return note

    def section(self, heading: str, text: str = "", blocks: Sequence[Block] = ()) -> Section:
        """Append a new section and return it, ready for :meth:`Section.add`."""
        sec = Section(heading, text, list(blocks))
        self.sections.append(sec)
        return sec
