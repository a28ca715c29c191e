"""docs/generators.md cannot drift from the code (issue 26, "the generator contract in one
page"): its field tables are the request dataclasses' fields, its placeholder table the
command generator's placeholders, and its real requests what the benchmarks build now."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import sys
from pathlib import Path

import pytest

from vidmem.generators.command import PLACEHOLDERS
from vidmem.generators.requests import GenerationRequest, ReferenceImage

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "generators.md"


def _table_after(doc: str, header: str) -> list[str]:
    """First-column names of the Markdown table whose header row starts with ``header``."""
    lines = doc.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    names = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        names.append(re.search(r"`([^`]+)`", line.split("|")[1]).group(1))
    return names


def _example_script():
    spec = importlib.util.spec_from_file_location("generator_requests",
                                                  ROOT / "docs" / "generator_requests.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_request_fields_documented():
    doc = DOC.read_text(encoding="utf-8")
    request_table = _table_after(doc, "| field | type | meaning |")
    assert request_table == [f.name for f in dataclasses.fields(GenerationRequest)]
    rest = doc[doc.index("A reference (`ReferenceImage`)"):]
    assert _table_after(rest, "| field | type | meaning |") == [
        f.name for f in dataclasses.fields(ReferenceImage)]


def test_placeholders_documented():
    names = _table_after(DOC.read_text(encoding="utf-8"), "| placeholder | value |")
    assert [n.strip("{}") for n in names] == list(PLACEHOLDERS)


def test_readme_links_the_page():
    assert "docs/generators.md" in (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_real_requests_are_current(tmp_path):
    """The page's examples are what the benchmarks build now (fails on any changed field)."""
    script = _example_script()
    doc = DOC.read_text(encoding="utf-8")
    fresh = script.section(script.collect(tmp_path.resolve()))
    assert script.current_section(doc) == fresh, (
        "docs/generators.md's real requests are out of date: "
        "run python docs/generator_requests.py --write")


def test_page_commands_parse():
    """The page's bash blocks pass the README test's syntax-and-flags check."""
    spec = importlib.util.spec_from_file_location("readme_commands",
                                                  ROOT / "tests" / "test_readme_commands.py")
    readme = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = readme  # its dataclasses look their module up
    spec.loader.exec_module(readme)
    blocks = readme.readme_blocks(DOC.read_text(encoding="utf-8"))
    assert blocks
    for block in blocks:
        for cmd in block.commands:
            readme.check_syntax_only(cmd)
