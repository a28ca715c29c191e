"""Reports built from run logs: the frame every benchmark fills with its panels.

A benchmark's report builder reads a finished run (never re-running a model), fills a
:class:`Report` with :class:`Section` objects holding blocks (:class:`Table`,
:class:`Figure`, :class:`ImageGrid`, :class:`KeyValues`, :class:`Markdown`), and calls
:func:`render`, which writes ``report.md`` with an ``assets/`` folder and one
self-contained ``report.html``.

Example:
    >>> import tempfile
    >>> from vidmem.report import Report, Table, render
    >>> rep = Report("demo", meta={"benchmark": "cmbench"})
    >>> _ = rep.section("Scores", blocks=[Table(["policy", "recall"], [["none", 0.25]])])
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     sorted(p.name for p in render(rep, tmp).values())
    ['report.html', 'report.md']
"""

from vidmem.report.images import as_rgb, data_url, png_bytes, side_by_side, thumbnail
from vidmem.report.model import (
    MISSING,
    Block,
    CellFormat,
    Figure,
    ImageGrid,
    KeyValues,
    Markdown,
    Notice,
    NoticeLevel,
    Report,
    Section,
    Table,
    format_number,
    format_value,
    is_missing,
)
from vidmem.report.plots import PALETTE, bar_with_ci, line_plot, scatter_with_curve
from vidmem.report.render import render, render_html, render_markdown

__all__ = [
    "MISSING",
    "PALETTE",
    "Block",
    "CellFormat",
    "Figure",
    "ImageGrid",
    "KeyValues",
    "Markdown",
    "Notice",
    "NoticeLevel",
    "Report",
    "Section",
    "Table",
    "as_rgb",
    "bar_with_ci",
    "data_url",
    "format_number",
    "format_value",
    "is_missing",
    "line_plot",
    "png_bytes",
    "render",
    "render_html",
    "render_markdown",
    "scatter_with_curve",
    "side_by_side",
    "thumbnail",
]
