"""Rendering a report with every block type to Markdown and self-contained HTML."""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from vidmem.errors import UserInputError
from vidmem.report import (
    Figure,
    ImageGrid,
    KeyValues,
    Markdown,
    Notice,
    Report,
    Section,
    Table,
    bar_with_ci,
    line_plot,
    png_bytes,
    render,
    render_html,
    render_markdown,
    side_by_side,
)

EVIL = "prompt with <script>alert('x')</script> & a | pipe"
DATA_URL = re.compile(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


def _image(h: int, w: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 255, size=3, dtype=np.uint8)
    img = np.broadcast_to(base, (h, w, 3)).copy()
    img[: h // 2, : w // 2] = 255 - base
    return img


def _full_report() -> Report:
    """A report using every block type; 5 embedded images in total."""
    scores = Table(
        columns=["policy", "recall", "ci_low", "n"],
        rows=[
            ["none", 0.2512345, 0.2, 120],
            {"policy": "seg-uniform", "recall": float("nan"), "ci_low": None, "n": 118},
            ["text-frame", 0.61, float("inf"), 120],
        ],
        caption=EVIL,
        formats={"ci_low": ".2f"},
    )
    plot = line_plot(
        [1, 2, 4, 8],
        {"none": [0.9, 0.7, 0.5, 0.3], "recency": [0.9, 0.8, None, 0.6]},
        "gap (s)",
        "recall",
        "Recall by gap",
    )
    bars = bar_with_ci(["none", "recency"], [0.4, 0.6], [0.35, 0.5], [0.45, 0.7], "recall")
    panel = side_by_side([_image(30, 20, 4), _image(60, 60, 5)], ["reference", "best match"])
    grid = ImageGrid(
        images=[
            (_image(300, 400, 1), "frame 0 <b>bold?</b>"),
            (_image(48, 64, 2), "frame 12"),
            (_image(100, 100, 3), "frame 40"),
        ],
        columns=3,
        thumb_size=200,
        caption="Three frames",
    )
    return Report(
        title="CMBench <demo>",
        subtitle="non-official run on the sim world",
        meta={"vidmem version": "0.1.0", "benchmark": "cmbench", "official": False, "seed": 7},
        notices=[
            Notice("info", "Built from the run log only."),
            Notice("warning", "1 recall value is NaN (no detections); shown as n/a."),
        ],
        sections=[
            Section(
                "Scores",
                text="Recall per *memory policy*. Raw <i>HTML</i> stays text.",
                blocks=[scores, KeyValues({"items": 358, "mean recall": 0.45678, "gap": None})],
            ),
            Section(
                "Plots",
                blocks=[
                    Figure(plot, caption="Recall against gap", name="recall by gap"),
                    Figure(bars, caption="Means with 95% CI", name="bars"),
                    Figure(png_bytes(panel), caption="Reference vs best", name="panel"),
                ],
            ),
            Section("Frames", blocks=[grid, Markdown("| a | b |\n|---|---|\n| 1 | 2 |")]),
        ],
    )


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("report")
    return render(_full_report(), out)


def test_render_writes_both_files(rendered: dict[str, Path]) -> None:
    assert set(rendered) == {"markdown", "html"}
    assert rendered["markdown"].name == "report.md" and rendered["markdown"].is_file()
    assert rendered["html"].name == "report.html" and rendered["html"].is_file()


def test_html_is_self_contained(rendered: dict[str, Path]) -> None:
    html = rendered["html"].read_text(encoding="utf-8")
    for external in ('src="http', "src='http", 'href="http', "href='http", "url(http", "@import"):
        assert external not in html
    assert "<script" not in html.lower()
    assert "<link" not in html.lower()
    # 3 figures + 3 grid images
    assert html.count("data:image/png;base64,") == 6
    assert len(DATA_URL.findall(html)) == 6


def test_html_escapes_user_text(rendered: dict[str, Path]) -> None:
    html = rendered["html"].read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(" in html
    assert "<b>bold?</b>" not in html and "&lt;b&gt;bold?&lt;/b&gt;" in html
    assert "<title>CMBench &lt;demo&gt;</title>" in html
    # author Markdown is rendered, but raw HTML inside it is not
    assert "<em>memory policy</em>" in html
    assert "<i>HTML</i>" not in html and "&lt;i&gt;HTML&lt;/i&gt;" in html


def test_html_data_url_decodes_to_the_thumbnail_size(rendered: dict[str, Path]) -> None:
    html = rendered["html"].read_text(encoding="utf-8")
    sizes = [Image.open(io.BytesIO(base64.b64decode(b))).size for b in DATA_URL.findall(html)]
    # grid images (after the 3 figures): 400x300 shrinks to 200x150, smaller ones stay
    assert sizes[3:] == [(200, 150), (64, 48), (100, 100)]
    # the line plot is 7x4 inches at 150 dpi
    assert sizes[0] == (1050, 600)


def test_html_table_shows_missing_as_na(rendered: dict[str, Path]) -> None:
    html = rendered["html"].read_text(encoding="utf-8")
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", html)
    assert "n/a" in cells
    assert not {"nan", "inf", "-inf", "None"} & set(cells)
    assert '<td class="num missing">n/a</td>' in html
    assert "0.2512" in cells and "0.20" in cells  # default 4 digits; ci_low uses '.2f'


def test_markdown_table_header_rows_and_na(rendered: dict[str, Path]) -> None:
    md = rendered["markdown"].read_text(encoding="utf-8")
    lines = md.splitlines()
    start = lines.index("| policy | recall | ci_low | n |")
    assert lines[start + 1] == "|---|---:|---:|---:|"
    body = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        body.append(line)
    assert len(body) == 3
    assert body[1] == "| seg-uniform | n/a | n/a | 118 |"
    assert body[2] == "| text-frame | 0.6100 | n/a | 120 |"
    cells = {c.strip().lower() for line in body for c in line.strip("|").split("|")}
    assert not {"nan", "inf", "-inf"} & cells  # "none" is a policy name here


def test_markdown_escapes_user_text(rendered: dict[str, Path]) -> None:
    md = rendered["markdown"].read_text(encoding="utf-8")
    assert "<script>" not in md
    assert "&lt;script&gt;" in md
    assert "a \\| pipe" in md  # a pipe in a caption cannot break a table
    assert "> [!WARNING]" in md and "> [!NOTE]" in md


def test_markdown_assets_exist_and_are_linked(rendered: dict[str, Path]) -> None:
    md_path = rendered["markdown"]
    md = md_path.read_text(encoding="utf-8")
    links = re.findall(r"!\[[^\]]*\]\((assets/[^)]+\.png)\)", md)
    assert len(links) == 6
    for link in links:
        target = md_path.parent / link
        assert target.is_file()
        assert target.read_bytes().startswith(b"\x89PNG")
    assert "assets/figure-01-recall-by-gap.png" in links
    with Image.open(md_path.parent / "assets/figure-04-01.png") as im:
        assert im.size == (200, 150)


def test_figures_are_drawn_once_and_released(tmp_path: Path) -> None:
    fig = line_plot([0, 1], {"a": [0, 1]})
    block = Figure(fig, name="x")
    report = Report("t", sections=[Section("s", blocks=[block])])
    render_markdown(report, tmp_path / "a")
    assert isinstance(block.figure, bytes)  # the matplotlib figure is no longer held
    render_html(report, tmp_path / "b")
    assert (tmp_path / "a" / "assets" / "figure-01-x.png").read_bytes() == block.figure


def test_pyplot_figures_are_closed(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure()
    fig.add_subplot().plot([0, 1], [1, 0])
    number = fig.number
    render(Report("t", sections=[Section("s", blocks=[Figure(fig)])]), tmp_path)
    assert not plt.fignum_exists(number)


def test_render_is_deterministic(tmp_path: Path) -> None:
    a = render(_full_report(), tmp_path / "a")
    b = render(_full_report(), tmp_path / "b")
    assert a["html"].read_bytes() == b["html"].read_bytes()
    assert a["markdown"].read_bytes() == b["markdown"].read_bytes()


def test_render_rejects_a_file_as_out_dir(tmp_path: Path) -> None:
    target = tmp_path / "file.txt"
    target.write_text("x")
    with pytest.raises(UserInputError, match="exists and is not a directory"):
        render(Report("t"), target)


def test_render_rejects_non_report(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="expected a vidmem.report.Report, found dict"):
        render_html({"title": "x"}, tmp_path)  # type: ignore[arg-type]


def test_empty_report_renders(tmp_path: Path) -> None:
    paths = render(Report("Nothing yet"), tmp_path)
    assert "<h1>Nothing yet</h1>" in paths["html"].read_text(encoding="utf-8")
    assert paths["markdown"].read_text(encoding="utf-8").startswith("# Nothing yet\n")


def test_author_markdown_cannot_inject_html_or_load_images() -> None:
    from vidmem.report.render import _md_to_html

    html = str(_md_to_html("**b** <img src=x onerror=alert(1)> ![i](http://e.com/a.png)"))
    assert "<strong>b</strong>" in html
    assert "<img" not in html and "&lt;img src=x" in html
    assert 'src="http' not in html
    html = str(_md_to_html("[x](javascript:alert(1))"))
    assert 'href="javascript' not in html


def test_markdown_fallback_without_markdown_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    # `vidmem.report.render` the attribute is the function; fetch the module itself
    render_module = importlib.import_module("vidmem.report.render")
    monkeypatch.setattr(render_module, "_markdown_parser", lambda: None)
    html = str(render_module._md_to_html("one <b>\n\ntwo"))
    assert html == "<p>one &lt;b&gt;</p>\n<p>two</p>"
