"""Image helpers and plot helpers."""

from __future__ import annotations

import base64
import io
import sys

import numpy as np
import pytest
from matplotlib.figure import Figure as MplFigure
from PIL import Image

from vidmem.errors import UserInputError
from vidmem.report import (
    as_rgb,
    bar_with_ci,
    data_url,
    line_plot,
    png_bytes,
    scatter_with_curve,
    side_by_side,
    thumbnail,
)


def test_thumbnail_keeps_aspect_and_never_enlarges() -> None:
    img = np.zeros((100, 301, 3), np.uint8)
    assert thumbnail(img, 64).shape == (21, 64, 3)
    assert thumbnail(img, 500) is img
    assert thumbnail(np.zeros((1000, 1, 3), np.uint8), 10).shape == (10, 1, 3)
    assert thumbnail(Image.new("RGB", (80, 40)), 20).shape == (10, 20, 3)
    with pytest.raises(UserInputError, match="max_side must be >= 1, found 0"):
        thumbnail(img, 0)


def test_png_bytes_and_data_url_round_trip() -> None:
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, size=(7, 9, 3), dtype=np.uint8)
    url = data_url(png_bytes(img))
    assert url.startswith("data:image/png;base64,")
    back = np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))))
    np.testing.assert_array_equal(back, img)
    with pytest.raises(UserInputError, match="expected the bytes of a PNG file"):
        data_url(b"not a png")


def test_as_rgb_conversions() -> None:
    rgba = np.zeros((2, 3, 4), np.uint8)
    rgba[..., 0] = 9
    assert as_rgb(rgba).shape == (2, 3, 3) and as_rgb(rgba)[0, 0, 0] == 9
    assert as_rgb(np.zeros((2, 3, 1), np.uint8)).shape == (2, 3, 3)
    with pytest.raises(UserInputError, match="image is empty"):
        as_rgb(np.zeros((0, 3, 3), np.uint8))
    with pytest.raises(UserInputError, match="expected a uint8 array .* found list"):
        as_rgb([[1, 2]])


def test_side_by_side_layout_and_captions() -> None:
    ref = np.full((20, 10, 3), 200, np.uint8)
    gen = np.full((10, 30, 3), 50, np.uint8)
    panel = side_by_side(
        [ref, gen],
        ["reference", "a very long caption that cannot fit"],
        height=40,
        gap=5,
        font_size=12,
    )
    # widths 20 and 120, three gaps; caption strip = font + gap + 4
    assert panel.shape == (40 + 10 + 21, 20 + 120 + 15, 3)
    assert panel.dtype == np.uint8
    assert tuple(panel[10, 10]) == (200, 200, 200)  # inside the reference crop
    assert tuple(panel[0, 0]) == (255, 255, 255)  # white border
    strip = panel[50:, :]
    assert (strip < 200).any()  # some caption ink was drawn
    with pytest.raises(UserInputError, match=r"one caption per image \(2\), found 1"):
        side_by_side([ref, gen], ["x"])
    with pytest.raises(UserInputError, match="at least one image"):
        side_by_side([])


def test_plots_return_figures_without_pyplot_state() -> None:
    had_pyplot = "matplotlib.pyplot" in sys.modules
    figs = [
        line_plot(list(range(50)), {"a": np.linspace(0, 1, 50)}, "x", "y", "t"),
        line_plot([1, 2], {"a": [1, None], "b": [2, 3]}, markers={"a": "s"}),
        scatter_with_curve(
            [1, 2, 3],
            [0.8, float("nan"), 0.4],
            [0, 4],
            [1, 0.2],
            {"half-life": 2.0, "beyond range": float("inf"), "none": None},
        ),
        bar_with_ci(["a" * 12, "b"], [0.5, None], [0.4, None], [0.6, None], "score"),
    ]
    for fig in figs:
        assert isinstance(fig, MplFigure)
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        assert buf.getvalue().startswith(b"\x89PNG")
    assert figs[0].axes[0].lines[0].get_marker() in ("None", "", None)
    assert figs[1].axes[0].get_legend() is not None
    assert len(figs[2].axes[0].lines) == 2  # curve + the one finite vertical line
    assert ("matplotlib.pyplot" in sys.modules) == had_pyplot


def test_plot_input_errors() -> None:
    with pytest.raises(UserInputError, match=r"expected equal lengths, found x=3, ys\['a'\]=2"):
        line_plot([1, 2, 3], {"a": [1, 2]})
    with pytest.raises(UserInputError, match="at least one series"):
        line_plot([1], {})
    with pytest.raises(UserInputError, match="bar 'b' has value 0.9 outside its interval"):
        bar_with_ci(["a", "b"], [0.5, 0.9], [0.4, 0.1], [0.6, 0.2])
    with pytest.raises(UserInputError, match="must be one-dimensional"):
        scatter_with_curve(np.zeros((2, 2)), [1, 2], [0], [0])
