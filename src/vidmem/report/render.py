"""Render a :class:`~vidmem.report.model.Report` to Markdown and to one HTML file.

* :func:`render_markdown` writes ``report.md`` (GitHub-flavoured tables and alerts)
  and the figures and images as PNG files under ``assets/``, linked relatively, so the
  folder can be committed or attached as it is.
* :func:`render_html` writes one self-contained ``report.html``: inline CSS, every
  image embedded as a ``data:`` URL, no scripts, no external resources (a
  Content-Security-Policy in the page forbids loading any). It is made from the
  Jinja2 template ``templates/report.html.j2`` with autoescaping on, so plain text
  from the run log (prompts, captions, names) can never inject markup.
* :func:`render` does both.

Output is deterministic: rendering the same report twice gives identical files (no
timestamps are added; put the run's date in ``Report.meta`` if it matters).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape

from vidmem.errors import UserInputError
from vidmem.report.images import data_url, png_bytes, thumbnail
from vidmem.report.model import (
    Block,
    Figure,
    ImageGrid,
    KeyValues,
    Markdown,
    Report,
    Table,
    format_value,
    is_missing,
)

__all__ = ["render", "render_html", "render_markdown"]

MARKDOWN_NAME = "report.md"
HTML_NAME = "report.html"
ASSETS_DIR = "assets"


# --------------------------------------------------------------------------- shared


def _version() -> str:
    from vidmem import __version__

    return __version__


def _slug(text: str, default: str = "item") -> str:
    """Lower-case ASCII words joined by hyphens, at most 40 characters."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40].strip("-")
    return slug or default


def _prepare_dir(out_dir: str | Path) -> Path:
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise UserInputError(
            f"report output: {out} exists and is not a directory",
            hint="pass a directory path (it is created if missing)",
        )
    out.mkdir(parents=True, exist_ok=True)
    return out


def _check_report(report: Any) -> Report:
    if not isinstance(report, Report):
        raise UserInputError(
            f"render: expected a vidmem.report.Report, found {type(report).__name__}",
            hint="build one with Report(title=..., sections=[...])",
        )
    return report


@dataclass
class _Numbered:
    """A block with its running number ("Table 2", "Figure 3")."""

    block: Block
    label: str  # "" for blocks that are not numbered
    number: int


def _number_blocks(report: Report) -> list[list[_Numbered]]:
    tables = figures = 0
    out: list[list[_Numbered]] = []
    for section in report.sections:
        row: list[_Numbered] = []
        for block in section.blocks:
            if isinstance(block, Table):
                tables += 1
                row.append(_Numbered(block, "Table", tables))
            elif isinstance(block, Figure) and block.is_empty():
                continue  # no panel with data: not drawn, not numbered
            elif isinstance(block, Figure | ImageGrid):
                figures += 1
                row.append(_Numbered(block, "Figure", figures))
            else:
                row.append(_Numbered(block, "", 0))
        out.append(row)
    return out


def _grid_pngs(grid: ImageGrid) -> list[tuple[bytes, int, int, str]]:
    """``(png, width, height, caption)`` of each thumbnail in a grid."""
    out = []
    for image, caption in grid.images:
        thumb = thumbnail(image, grid.thumb_size)
        out.append((png_bytes(thumb), int(thumb.shape[1]), int(thumb.shape[0]), caption))
    return out


# --------------------------------------------------------------------------- Markdown

_MD_PUNCT = re.compile(r"([\\`*\[\]|])")
_MD_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def _md_escape(text: Any) -> str:
    """Escape plain text for Markdown: no emphasis, links, tables or HTML from it."""
    s = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = _MD_PUNCT.sub(r"\\\1", s)
    s = _MD_UNDERSCORE.sub(r"\\_", s)
    return s


def _md_cell(text: Any) -> str:
    return " ".join(_md_escape(text).split()) or " "


def _md_table(header: list[str], rows: list[list[str]], numeric: list[bool]) -> list[str]:
    lines = ["| " + " | ".join(_md_cell(h) for h in header) + " |"]
    lines.append("|" + "|".join("---:" if n else "---" for n in numeric) + "|")
    lines.extend("| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows)
    return lines


def _md_caption(label: str, number: int, caption: str) -> str:
    head = f"*{label} {number}.*"
    return f"{head} {_md_escape(caption)}" if caption else head


_ALERTS = {"info": "NOTE", "warning": "WARNING", "error": "CAUTION"}


def render_markdown(report: Report, out_dir: str | Path) -> Path:
    """Write ``out_dir/report.md`` and its images under ``out_dir/assets/``.

    Figures and grid thumbnails are saved as ``assets/figure-NN-<name>.png`` and
    linked with relative paths; files left there by an earlier render are not
    removed. Tables are GitHub-flavoured (numeric columns right-aligned), notices are
    GitHub alerts, and plain text is escaped so that it shows literally.

    Args:
        report: the report to render.
        out_dir: the directory to write into (created if missing).

    Returns:
        The path of ``report.md``.

    Raises:
        UserInputError: ``out_dir`` is a file, or ``report`` is not a Report.
    """
    report = _check_report(report)
    out = _prepare_dir(out_dir)
    assets = out / ASSETS_DIR
    lines: list[str] = [f"# {_md_escape(report.title)}", ""]
    if report.subtitle:
        lines += [f"*{_md_escape(report.subtitle)}*", ""]
    if report.meta:
        facts = [[str(k), format_value(v)] for k, v in report.meta.items()]
        lines += _md_table(["Run fact", "Value"], facts, [False, False]) + [""]
    for notice in report.notices:
        lines.append(f"> [!{_ALERTS[notice.level]}]")
        lines.extend(f"> {_md_escape(t)}" if t.strip() else ">" for t in notice.text.splitlines())
        lines.append("")

    for s_index, (section, numbered) in enumerate(
        zip(report.sections, _number_blocks(report), strict=True), start=1
    ):
        lines += [f"## {s_index}. {_md_escape(section.heading)}", ""]
        if section.text.strip():
            lines += [section.text.strip(), ""]
        for item in numbered:
            lines += _md_block(item, assets) + [""]

    lines += ["---", "", f"*Generated by vidmem {_md_escape(_version())} from the run log.*", ""]
    path = out / MARKDOWN_NAME
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _md_block(item: _Numbered, assets: Path) -> list[str]:
    block = item.block
    if isinstance(block, Table):
        lines = _md_table(block.columns, block.formatted(), block.numeric_columns())
        return [*lines, "", _md_caption(item.label, item.number, block.caption)]
    if isinstance(block, Figure):
        name = f"figure-{item.number:02d}-{_slug(block.name, 'figure')}.png"
        assets.mkdir(parents=True, exist_ok=True)
        (assets / name).write_bytes(block.png())
        alt = _md_cell(block.caption or block.name)
        return [
            f"![{alt}]({ASSETS_DIR}/{name})",
            "",
            _md_caption(item.label, item.number, block.caption),
        ]
    if isinstance(block, ImageGrid):
        assets.mkdir(parents=True, exist_ok=True)
        cells = []
        for k, (png, _w, _h, caption) in enumerate(_grid_pngs(block), start=1):
            name = f"figure-{item.number:02d}-{k:02d}.png"
            (assets / name).write_bytes(png)
            text = _md_cell(caption) if caption else ""
            cells.append(f"![{text}]({ASSETS_DIR}/{name})" + (f"<br>{text}" if text else ""))
        ncol = max(1, min(block.columns, len(cells)))
        lines = ["|" + " |" * ncol, "|" + "---|" * ncol]
        for start in range(0, len(cells), ncol):
            chunk = cells[start : start + ncol]
            chunk += [" "] * (ncol - len(chunk))
            lines.append("| " + " | ".join(chunk) + " |")
        return [*lines, "", _md_caption(item.label, item.number, block.caption)]
    if isinstance(block, KeyValues):
        lines = [f"**{_md_escape(block.caption)}**", ""] if block.caption else []
        lines += [f"- **{_md_escape(k)}:** {_md_escape(v)}" for k, v in block.formatted()]
        return lines
    if isinstance(block, Markdown):
        return [block.text.strip()]
    raise UserInputError(f"render_markdown: unknown block type {type(block).__name__}")


# --------------------------------------------------------------------------- HTML


@lru_cache(maxsize=1)
def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("vidmem.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


@lru_cache(maxsize=1)
def _markdown_parser() -> Any:
    """The Markdown parser, or ``None`` when ``markdown-it-py`` is not installed."""
    try:
        from markdown_it import MarkdownIt
    except ImportError:  # it comes with `rich`, a core dependency; stay usable without it
        return None
    # html=False: raw HTML in the author's Markdown is escaped, never passed through.
    # No image rule: a report never loads anything from the network.
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.disable("image")
    return md


def _md_to_html(text: str) -> Markup:
    """Author Markdown -> HTML that is safe to embed (raw HTML is escaped)."""
    if not text.strip():
        return Markup("")
    parser = _markdown_parser()
    if parser is None:
        paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
        return Markup("\n").join(Markup("<p>%s</p>") % p for p in paragraphs)
    # markdown-it escapes every character of the input that is not Markdown syntax
    return Markup(parser.render(text))


#: characters after which a long identifier may wrap (never inside a word)
_SOFT_BREAK_AFTER = re.compile(r"([_/\\.,:=-])(?=[^\s])")
#: tokens at least this long get wrap points; shorter ones always fit a column
_SOFT_BREAK_MIN = 14


def soft_breaks(text: str) -> Markup:
    """``text`` HTML-escaped, with ``<wbr>`` after the separators (``_ / \\ . , : = -``)
    of every token of at least 14 characters: a long id such as
    ``sim_s0_v003_reappear_01`` may wrap at its separators, a word never wraps inside.

    Example:
        >>> str(soft_breaks("sim_s0_v003_reappear_01 & co"))
        'sim_<wbr>s0_<wbr>v003_<wbr>reappear_<wbr>01 &amp; co'
        >>> str(soft_breaks("0.953"))
        '0.953'
    """
    out = []
    for token in re.split(r"(\s+)", str(text)):
        esc = str(escape(token))
        if len(token) >= _SOFT_BREAK_MIN:
            esc = _SOFT_BREAK_AFTER.sub(r"\1<wbr>", esc)
        out.append(esc)
    return Markup("".join(out))


def _html_block(item: _Numbered) -> dict[str, Any]:
    block = item.block
    label = f"{item.label} {item.number}" if item.label else ""
    if isinstance(block, Table):
        numeric = block.numeric_columns()
        rows = [
            [
                {"text": text if num else soft_breaks(text), "num": num,
                 "missing": is_missing(raw)}
                for text, num, raw in zip(cells, numeric, values, strict=True)
            ]
            for cells, values in zip(block.formatted(), block.values(), strict=True)
        ]
        columns = [{"name": soft_breaks(c), "num": n}
                   for c, n in zip(block.columns, numeric, strict=True)]
        return {
            "kind": "table",
            "label": label,
            "caption": block.caption,
            "columns": columns,
            "rows": rows,
        }
    if isinstance(block, Figure):
        png = block.png()
        return {
            "kind": "figure",
            "label": label,
            "caption": block.caption,
            "src": data_url(png),
            "width": block.display_width,
            "alt": block.caption or block.name,
        }
    if isinstance(block, ImageGrid):
        items = [
            {"src": data_url(png), "width": w, "height": h, "caption": caption}
            for png, w, h, caption in _grid_pngs(block)
        ]
        return {
            "kind": "grid",
            "label": label,
            "caption": block.caption,
            "items": items,
            "columns": max(1, min(block.columns, len(items))),
            "thumb": block.thumb_size,
        }
    if isinstance(block, KeyValues):
        return {"kind": "kv", "caption": block.caption, "items": block.formatted()}
    if isinstance(block, Markdown):
        return {"kind": "markdown", "html": _md_to_html(block.text)}
    raise UserInputError(f"render_html: unknown block type {type(block).__name__}")


def render_html(report: Report, out_dir: str | Path) -> Path:
    """Write one self-contained ``out_dir/report.html``.

    Every figure and image is embedded as a base64 PNG ``data:`` URL, the CSS is
    inline, there is no JavaScript, and nothing is fetched from anywhere, so the file
    can be mailed, archived or opened offline. All plain text is HTML-escaped.

    Args:
        report: the report to render.
        out_dir: the directory to write into (created if missing).

    Returns:
        The path of ``report.html``.

    Raises:
        UserInputError: ``out_dir`` is a file, or ``report`` is not a Report.
    """
    report = _check_report(report)
    out = _prepare_dir(out_dir)
    sections = []
    for s_index, (section, numbered) in enumerate(
        zip(report.sections, _number_blocks(report), strict=True), start=1
    ):
        sections.append(
            {
                "id": f"s{s_index}-{_slug(section.heading, 'section')}",
                "number": s_index,
                "heading": section.heading,
                "text": _md_to_html(section.text),
                "blocks": [_html_block(item) for item in numbered],
            }
        )
    html = (
        _environment()
        .get_template("report.html.j2")
        .render(
            title=report.title,
            subtitle=report.subtitle,
            meta=[(str(k), format_value(v)) for k, v in report.meta.items()],
            notices=[{"level": n.level, "text": n.text} for n in report.notices],
            sections=sections,
            version=_version(),
        )
    )
    path = out / HTML_NAME
    path.write_text(html, encoding="utf-8")
    return path


def render(report: Report, out_dir: str | Path) -> dict[str, Path]:
    """Write both ``report.md`` (with ``assets/``) and ``report.html`` into ``out_dir``.

    Each Matplotlib figure is drawn once and shared by both outputs.

    Args:
        report: the report to render.
        out_dir: the directory to write into (created if missing).

    Returns:
        ``{"markdown": path_of_report_md, "html": path_of_report_html}``.
    """
    return {"markdown": render_markdown(report, out_dir), "html": render_html(report, out_dir)}
