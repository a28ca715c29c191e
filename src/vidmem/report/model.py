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
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import numpy as np

from vidmem.errors import UserInputError

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

#: The text shown for a value that does not exist or is not a finite number.
MISSING = "n/a"

NoticeLevel: TypeAlias = Literal["info", "warning", "error"]
_LEVELS: tuple[str, ...] = ("info", "warning", "error")

#: How one table column is formatted: a format spec for :func:`format` (``".2f"``,
#: ``".1%"``, ``"d"``), a ``str.format`` template (``"{:.1f} s"``), or a callable that
#: receives the raw value and returns the text.
CellFormat: TypeAlias = str | Callable[[Any], str]

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------- numbers


def is_missing(value: Any) -> bool:
    """Tell whether a value is shown as ``"n/a"``: ``None``, NaN or an infinity.

    Args:
        value: anything; only ``None`` and real numbers can be missing.

    Returns:
        ``True`` for ``None`` and non-finite real numbers (Python or NumPy scalars).

    Example:
        >>> is_missing(None), is_missing(float("nan")), is_missing(-float("inf"))
        (True, True, True)
        >>> is_missing(0.0), is_missing("nan")
        (False, False)
    """
    if value is None:
        return True
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        return not math.isfinite(float(value))
    return False


def format_number(value: float | int | None) -> str:
    """Format a number for a human reader, the same way in every report.

    Floats get four significant digits in fixed notation (trailing zeros kept, so a
    column lines up), values of 10 000 and more are rounded to an integer, and values
    closer to zero than 0.001 switch to scientific notation. Integers are printed in
    full. ``None``, NaN and infinities become ``"n/a"``; they never print as
    ``"nan"`` or ``"inf"``.

    Args:
        value: a Python or NumPy number, or ``None``.

    Returns:
        The text to show.

    Example:
        >>> [format_number(v) for v in (0.123456, 0.5, 12.3456, 1234.5, 98765.4)]
        ['0.1235', '0.5000', '12.35', '1234', '98765']
        >>> [format_number(v) for v in (None, float("nan"), float("inf"), 0.0, 42)]
        ['n/a', 'n/a', 'n/a', '0', '42']
        >>> format_number(0.0000123)
        '1.23e-05'
    """
    if is_missing(value):
        return MISSING
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if not isinstance(value, numbers.Real):
        raise UserInputError(
            f"format_number: expected a real number or None, found {type(value).__name__} "
            f"({value!r})",
            hint="pass strings through format_value, which leaves them as they are",
        )
    x = float(value)
    magnitude = abs(x)
    if magnitude == 0.0:
        return "0"
    if magnitude >= 1e4:
        return f"{x:.0f}"
    if magnitude < 1e-3:
        return f"{x:.3g}"
    text = f"{x:#.4g}"
    return text.rstrip(".") if text.endswith(".") else text


def format_value(value: Any, fmt: CellFormat | None = None) -> str:
    """Turn one value into display text, with an optional per-column format.

    Missing values (see :func:`is_missing`) are always ``"n/a"``, whatever ``fmt``
    says. Without ``fmt``, numbers go through :func:`format_number`, strings are kept,
    booleans become ``"yes"``/``"no"`` and anything else is ``str(value)``.

    Args:
        value: the raw value.
        fmt: ``None``, a format spec (``".1%"``), a template (``"{:.2f} s"``) or a
            callable returning the text.

    Returns:
        The text to show.

    Raises:
        UserInputError: ``fmt`` cannot format ``value``.

    Example:
        >>> format_value(0.4567, ".1%"), format_value(3.14159, "{:.2f} s")
        ('45.7%', '3.14 s')
        >>> format_value(float("nan"), ".1%"), format_value("dinov2/small")
        ('n/a', 'dinov2/small')
    """
    if is_missing(value):
        return MISSING
    if fmt is None:
        if isinstance(value, str):
            return value
        if isinstance(value, numbers.Real | np.bool_):
            return format_number(value)
        return str(value)
    try:
        if callable(fmt):
            text = fmt(value)
        elif "{" in fmt:
            text = fmt.format(value)
        else:
            text = format(value, fmt)
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        raise UserInputError(
            f"format_value: format {fmt!r} cannot format {type(value).__name__} {value!r} ({exc})",
            hint="use a spec like '.3f' or '.1%', a template like '{:.2f} s', or a callable",
        ) from None
    return str(text)


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


# --------------------------------------------------------------------------- blocks


@dataclass
class Table:
    """A table of values with per-column number formats.

    Attributes:
        columns: column headings, in display order. May be empty when every row is a
            mapping; the columns are then the keys in first-seen order.
        rows: each row is a sequence with one value per column, or a mapping from
            column heading to value (a missing key shows as ``"n/a"``).
        caption: plain text shown under the table.
        formats: column heading -> :data:`CellFormat`; columns not named here use
            :func:`format_number` for numbers.

    Raises:
        UserInputError: a sequence row has the wrong length, a mapping row has keys
            that are not columns, or ``formats`` names an unknown column.
    """

    columns: list[str]
    rows: list[Sequence[Any] | Mapping[str, Any]]
    caption: str = ""
    formats: dict[str, CellFormat] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.columns = [str(c) for c in self.columns]
        self.rows = list(self.rows)
        if not self.columns:
            seen: dict[str, None] = {}
            for row in self.rows:
                if not isinstance(row, Mapping):
                    raise UserInputError(
                        "Table: columns is empty, so every row must be a mapping, found a "
                        f"{type(row).__name__}",
                        hint="pass columns=[...] when rows are lists",
                    )
                seen.update(dict.fromkeys(str(k) for k in row))
            self.columns = list(seen)
        if len(set(self.columns)) != len(self.columns):
            dupes = sorted({c for c in self.columns if self.columns.count(c) > 1})
            raise UserInputError(
                f"Table {self.caption!r}: column headings must be unique, found duplicates {dupes}",
                hint="rename the columns",
            )
        known = set(self.columns)
        for i, row in enumerate(self.rows):
            if isinstance(row, Mapping):
                extra = [str(k) for k in row if str(k) not in known]
                if extra:
                    raise UserInputError(
                        f"Table {self.caption!r}, row {i}: keys {extra} are not columns "
                        f"{self.columns}",
                        hint="add them to columns or drop them from the row",
                    )
            elif isinstance(row, str | bytes) or not isinstance(row, Sequence | np.ndarray):
                raise UserInputError(
                    f"Table {self.caption!r}, row {i}: expected a list or a dict, found "
                    f"{type(row).__name__}",
                )
            elif len(row) != len(self.columns):
                raise UserInputError(
                    f"Table {self.caption!r}, row {i}: expected {len(self.columns)} values "
                    f"(one per column), found {len(row)}",
                    hint="pad the row with None for values that do not exist",
                )
        unknown = [c for c in self.formats if c not in known]
        if unknown:
            raise UserInputError(
                f"Table {self.caption!r}: formats name columns {unknown} that are not in "
                f"{self.columns}",
                hint="key formats by the column heading",
            )

    def values(self) -> list[list[Any]]:
        """Return the raw values, one list per row, in column order."""
        out: list[list[Any]] = []
        for row in self.rows:
            if isinstance(row, Mapping):
                as_str = {str(k): v for k, v in row.items()}
                out.append([as_str.get(c) for c in self.columns])
            else:
                out.append(list(row))
        return out

    def formatted(self) -> list[list[str]]:
        """Return the display text of every cell, one list per row."""
        fmts = [self.formats.get(c) for c in self.columns]
        return [
            [format_value(v, f) for v, f in zip(row, fmts, strict=True)] for row in self.values()
        ]

    def numeric_columns(self) -> list[bool]:
        """Tell, per column, whether every present value is a number (right-aligned)."""
        flags = []
        for j in range(len(self.columns)):
            present = [row[j] for row in self.values() if row[j] is not None]
            flags.append(
                bool(present)
                and all(
                    isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_)
                    for v in present
                )
            )
        return flags

    def missing_cells(self) -> list[tuple[int, str]]:
        """Return ``(row_index, column)`` for every cell shown as ``"n/a"``."""
        return [
            (i, c)
            for i, row in enumerate(self.values())
            for c, v in zip(self.columns, row, strict=True)
            if is_missing(v)
        ]


@dataclass
class Figure:
    """A plot, given as a Matplotlib figure or as PNG bytes.

    The first render draws a Matplotlib figure to PNG once, closes it (so pyplot, if
    the caller used it, does not keep it alive) and keeps only the PNG bytes in
    :attr:`figure`; later renders reuse the bytes.

    Attributes:
        figure: a :class:`matplotlib.figure.Figure` or the bytes of a PNG file.
        caption: plain text shown under the figure.
        name: a short name used for the asset file (``assets/<n>-<name>.png``).
        dpi: resolution used to draw a Matplotlib figure (the HTML shows it at
            100 pixels per inch, so 150 looks crisp on high-density screens).

    Raises:
        UserInputError: ``figure`` is neither a Matplotlib figure nor PNG bytes.
    """

    figure: Any
    caption: str = ""
    name: str = "figure"
    dpi: int = 150
    _display_width: int | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.figure, bytes | bytearray | memoryview):
            self.figure = bytes(self.figure)
            if not self.figure.startswith(_PNG_SIGNATURE):
                raise UserInputError(
                    f"Figure {self.name!r}: bytes given, but they are not a PNG file "
                    f"(first bytes {self.figure[:8]!r})",
                    hint="pass a matplotlib Figure, or PNG bytes from images.png_bytes()",
                )
        elif not hasattr(self.figure, "savefig"):
            raise UserInputError(
                f"Figure {self.name!r}: expected a matplotlib Figure or PNG bytes, found "
                f"{type(self.figure).__name__}",
                hint="use the helpers in vidmem.report.plots, which return a Figure",
            )
        if int(self.dpi) <= 0:
            raise UserInputError(f"Figure {self.name!r}: dpi must be positive, found {self.dpi}")

    def png(self) -> bytes:
        """Return the PNG bytes, drawing and closing a Matplotlib figure the first time."""
        if isinstance(self.figure, bytes):
            return self.figure
        import io
        import sys

        fig = self.figure
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=int(self.dpi), facecolor="white")
        self._display_width = round(float(fig.get_figwidth()) * 100)
        pyplot = sys.modules.get("matplotlib.pyplot")
        if pyplot is not None:  # only matters for figures made through pyplot
            pyplot.close(fig)
        self.figure = buf.getvalue()
        return self.figure

    @property
    def display_width(self) -> int | None:
        """Width in CSS pixels for the HTML, or ``None`` to use the PNG's own width."""
        return self._display_width


@dataclass
class ImageGrid:
    """Images in a grid, each with a caption (frames, crops, side-by-side panels).

    Attributes:
        images: ``(image, caption)`` pairs. An image is a ``uint8`` array of shape
            ``(H, W, 3)`` (also accepted: ``(H, W)``, ``(H, W, 1)``, ``(H, W, 4)``) or a
            PIL image. Captions are plain text.
        columns: images per row.
        thumb_size: longest side, in pixels, of the embedded thumbnails; smaller images
            are not enlarged.
        caption: plain text shown under the whole grid.

    Raises:
        UserInputError: an image has the wrong dtype or shape, or ``columns`` or
            ``thumb_size`` is not positive.
    """

    images: list[tuple[Any, str]]
    columns: int = 4
    thumb_size: int = 256
    caption: str = ""

    def __post_init__(self) -> None:
        from vidmem.report.images import as_rgb

        if int(self.columns) < 1 or int(self.thumb_size) < 1:
            raise UserInputError(
                f"ImageGrid {self.caption!r}: columns and thumb_size must be >= 1, found "
                f"columns={self.columns}, thumb_size={self.thumb_size}"
            )
        checked = []
        for i, item in enumerate(self.images):
            if not isinstance(item, tuple | list) or len(item) != 2:
                raise UserInputError(
                    f"ImageGrid {self.caption!r}, image {i}: expected an (image, caption) "
                    f"pair, found {type(item).__name__}",
                    hint="ImageGrid(images=[(frame, 'frame 12'), ...])",
                )
            image, text = item
            checked.append(
                (as_rgb(image, where=f"ImageGrid {self.caption!r}, image {i}"), str(text))
            )
        self.images = checked


@dataclass
class KeyValues:
    """A short list of named facts (settings, counts, summary numbers).

    Attributes:
        items: name -> value; values are formatted like table cells.
        caption: plain text shown above the list, optional.
    """

    items: dict[str, Any]
    caption: str = ""

    def formatted(self) -> list[tuple[str, str]]:
        """Return ``(name, text)`` pairs in insertion order."""
        return [(str(k), format_value(v)) for k, v in self.items.items()]


@dataclass
class Markdown:
    """A paragraph (or several) of Markdown written by the report author.

    Attributes:
        text: CommonMark with tables; raw HTML is shown as text, not interpreted.
    """

    text: str


Block: TypeAlias = Table | Figure | ImageGrid | KeyValues | Markdown
_BLOCK_TYPES = (Table, Figure, ImageGrid, KeyValues, Markdown)


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
            _check_block(block, f"Section {self.heading!r}, block {i}")

    def add(self, block: Block) -> Block:
        """Append a block and return it."""
        _check_block(block, f"Section {self.heading!r}, block {len(self.blocks)}")
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


def _check_block(block: Any, where: str) -> None:
    if not isinstance(block, _BLOCK_TYPES):
        raise UserInputError(
            f"{where}: expected a Table, Figure, ImageGrid, KeyValues or Markdown block, found "
            f"{type(block).__name__}",
            hint="wrap a matplotlib figure in Figure(fig), text in Markdown(text)",
        )
