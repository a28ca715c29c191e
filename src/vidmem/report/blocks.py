"""The blocks a report section holds: tables, figures, image grids, key-value lists, Markdown.

Each block checks its own content when it is made (a ragged table row, bytes that are
not a PNG, an image of the wrong shape raise :class:`~vidmem.errors.UserInputError`),
so a renderer can trust what it is given. Cell text comes from
:mod:`vidmem.report.formatting`.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np

from vidmem.errors import UserInputError
from vidmem.report.formatting import CellFormat, format_value, is_missing

__all__ = ["Block", "Figure", "ImageGrid", "KeyValues", "Markdown", "Table"]

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


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

        from vidmem.report.plots import drop_empty_panels

        fig = self.figure
        drop_empty_panels(fig)  # an empty panel says nothing (is_empty skips a bare figure)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=int(self.dpi), facecolor="white")
        self._display_width = round(float(fig.get_figwidth()) * 100)
        pyplot = sys.modules.get("matplotlib.pyplot")
        if pyplot is not None:  # only matters for figures made through pyplot
            pyplot.close(fig)
        self.figure = buf.getvalue()
        return self.figure

    def is_empty(self) -> bool:
        """Whether a Matplotlib figure has no panel with data (PNG bytes: never); the
        renderers leave such a figure out."""
        from vidmem.report.plots import drop_empty_panels

        return not isinstance(self.figure, bytes) and not drop_empty_panels(self.figure)

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


def check_block(block: Any, where: str) -> None:
    """Raise :class:`~vidmem.errors.UserInputError` naming ``where`` unless ``block`` is a block."""
    if not isinstance(block, _BLOCK_TYPES):
        raise UserInputError(
            f"{where}: expected a Table, Figure, ImageGrid, KeyValues or Markdown block, found "
            f"{type(block).__name__}",
            hint="wrap a matplotlib figure in Figure(fig), text in Markdown(text)",
        )
