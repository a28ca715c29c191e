"""Report dataclasses, validation and number formatting."""

from __future__ import annotations

import numpy as np
import pytest

from vidmem.errors import UserInputError
from vidmem.report import (
    Figure,
    ImageGrid,
    KeyValues,
    Notice,
    Report,
    Section,
    Table,
    format_number,
    format_value,
    is_missing,
)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "n/a"),
        (float("nan"), "n/a"),
        (float("inf"), "n/a"),
        (float("-inf"), "n/a"),
        (np.float32("nan"), "n/a"),
        (np.float64(0.123456), "0.1235"),
        (np.float32(0.5), "0.5000"),
        (0.0, "0"),
        (-0.0, "0"),
        (-0.0421, "-0.04210"),
        (3.14159, "3.142"),
        (999.96, "1000"),
        (12345.678, "12346"),
        (2e-5, "2e-05"),
        (7, "7"),
        (np.int64(123456789), "123456789"),
        (True, "yes"),
        (np.bool_(False), "no"),
    ],
)
def test_format_number(value: object, text: str) -> None:
    assert format_number(value) == text  # type: ignore[arg-type]


def test_format_number_rejects_strings() -> None:
    with pytest.raises(UserInputError, match="expected a real number or None, found str"):
        format_number("0.5")  # type: ignore[arg-type]


def test_format_value_formats_and_missing() -> None:
    assert format_value(0.25, ".0%") == "25%"
    assert format_value(2.5, lambda v: f"{v:g} s") == "2.5 s"
    assert format_value(None, ".2f") == "n/a"
    assert format_value(np.float64("nan"), lambda v: "never called") == "n/a"
    assert format_value("text") == "text"
    assert format_value([1, 2]) == "[1, 2]"
    with pytest.raises(UserInputError, match="format 'd' cannot format float"):
        format_value(0.5, "d")


def test_is_missing() -> None:
    assert is_missing(None) and is_missing(np.float32("inf"))
    assert not is_missing(0) and not is_missing("n/a") and not is_missing(np.int8(3))


def test_table_mixes_list_and_dict_rows() -> None:
    t = Table(["a", "b"], [[1, 0.5], {"b": 2.0}], caption="c")
    assert t.values() == [[1, 0.5], [None, 2.0]]
    assert t.formatted() == [["1", "0.5000"], ["n/a", "2.000"]]
    assert t.numeric_columns() == [True, True]
    assert t.missing_cells() == [(1, "a")]


def test_table_infers_columns_from_dict_rows() -> None:
    t = Table([], [{"policy": "none", "recall": 0.1}, {"policy": "recency", "n": 3}])
    assert t.columns == ["policy", "recall", "n"]
    assert t.numeric_columns() == [False, True, True]


def test_table_text_and_bool_columns_are_not_numeric() -> None:
    t = Table(["ok", "name"], [[True, "x"], [False, "y"]])
    assert t.numeric_columns() == [False, False]
    assert t.formatted()[0] == ["yes", "x"]


@pytest.mark.parametrize(
    ("columns", "rows", "formats", "message"),
    [
        (["a", "b"], [[1]], {}, r"row 0: expected 2 values \(one per column\), found 1"),
        (["a"], [{"a": 1, "z": 2}], {}, r"row 0: keys \['z'\] are not columns"),
        (["a"], ["abc"], {}, "row 0: expected a list or a dict, found str"),
        (["a", "a"], [], {}, "column headings must be unique"),
        (["a"], [[1]], {"b": ".2f"}, r"formats name columns \['b'\]"),
        ([], [[1]], {}, "every row must be a mapping"),
    ],
)
def test_table_validation(columns, rows, formats, message) -> None:
    with pytest.raises(UserInputError, match=message):
        Table(columns, rows, formats=formats)


def test_notice_level_is_checked() -> None:
    with pytest.raises(UserInputError, match="expected level one of info, warning, error"):
        Notice("fatal", "x")  # type: ignore[arg-type]


def test_figure_rejects_non_png_bytes_and_other_objects() -> None:
    with pytest.raises(UserInputError, match="not a PNG file"):
        Figure(b"GIF89a....")
    with pytest.raises(UserInputError, match="expected a matplotlib Figure or PNG bytes"):
        Figure(np.zeros((2, 2)))


def test_image_grid_validates_images() -> None:
    with pytest.raises(UserInputError, match=r"image 0: expected dtype uint8, found float64"):
        ImageGrid([(np.zeros((4, 4, 3)), "x")])
    with pytest.raises(UserInputError, match=r"image 0: expected shape \(H, W, 3\)"):
        ImageGrid([(np.zeros((2, 4, 4, 3), np.uint8), "clip")])
    with pytest.raises(UserInputError, match=r"image 0: expected an \(image, caption\) pair"):
        ImageGrid([np.zeros((4, 4, 3), np.uint8)])  # type: ignore[list-item]
    with pytest.raises(UserInputError, match="columns and thumb_size must be >= 1"):
        ImageGrid([], columns=0)
    grid = ImageGrid([(np.zeros((4, 5), np.uint8), "gray")])
    assert grid.images[0][0].shape == (4, 5, 3)


def test_section_and_report_builders() -> None:
    rep = Report("t")
    sec = rep.section("Scores", "some *text*")
    table = sec.add(Table(["a"], [[1]]))
    rep.notice("warning", "careful")
    assert rep.sections == [sec] and sec.blocks == [table]
    assert rep.notices == [Notice("warning", "careful")]
    assert KeyValues({"n": 3, "x": None}).formatted() == [("n", "3"), ("x", "n/a")]
    with pytest.raises(UserInputError, match="expected a Table, Figure, ImageGrid"):
        sec.add("just text")  # type: ignore[arg-type]
    with pytest.raises(UserInputError, match="section 0: expected a Section, found str"):
        Report("t", sections=["x"])  # type: ignore[list-item]
    with pytest.raises(UserInputError, match="notice 0: expected a Notice"):
        Report("t", notices=[("info", "x")])  # type: ignore[list-item]
    with pytest.raises(UserInputError, match="block 0: expected a Table"):
        Section("s", blocks=[object()])  # type: ignore[list-item]
