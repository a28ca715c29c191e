"""Imports flow downward only: the science layers stay free of models, torch and I/O."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "vidmem"

FORBIDDEN = {
    "metrics": ("torch", "transformers", "vidmem.models", "vidmem.io", "av", "cv2"),
    "stats": ("torch", "transformers", "vidmem.models", "vidmem.io", "av", "cv2"),
    "io": ("torch", "transformers", "vidmem.models", "vidmem.runners", "vidmem.data"),
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_does_not_import_forbidden_modules(layer):
    files = sorted((SRC / layer).rglob("*.py"))
    assert files, f"layer {layer} has no modules"
    offenders = []
    for f in files:
        for name in _imports(f):
            if any(name == bad or name.startswith(bad + ".") for bad in FORBIDDEN[layer]):
                offenders.append(f"{f.relative_to(SRC)} imports {name}")
    assert not offenders, "\n".join(offenders)


def test_core_import_does_not_pull_torch():
    code = (
        "import sys, vidmem, vidmem.cli, vidmem.registry, vidmem.io.video, vidmem.runners.store;"
        "bad = [m for m in ('torch', 'transformers') if m in sys.modules];"
        "print(','.join(bad))"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "", f"core import pulled in: {res.stdout.strip()}"


def test_checker_catches_a_forbidden_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\nfrom vidmem.io.video import probe\n")
    assert {"torch", "vidmem.io.video"} <= _imports(bad)
