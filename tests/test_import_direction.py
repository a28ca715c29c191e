"""Imports flow downward only: the layer table of ARCHITECTURE.md, held as an allow-list.

Every module under ``src/vidmem`` belongs to a *layer* (its top-level folder, or its own
name for a top-level module) and may import only the vidmem layers that the table
allows it, plus its own layer and the ground floor (``vidmem`` itself,
``vidmem.errors``, ``vidmem.registry``, ``vidmem.catalog`` and ``vidmem.values``, a
numpy-only module of plain-value checks that the table does not list yet), which
everything may import. What is not listed is refused, so a new edge is a decision
written here (and in the table), never an accident.

What counts as an import (found with :mod:`ast`, not by importing anything):

* ``import X`` and ``from X import Y`` anywhere in the file: at module level, in a
  class body, *and inside functions* (a lazy import is still a dependency). ``from X
  import Y`` counts as importing ``X.Y`` when ``X.Y`` is a vidmem module. Relative
  imports are resolved against the file's package.
* A string constant that names a vidmem module, ``"vidmem.x.y"`` or
  ``"vidmem.x.y:attr"`` (what :mod:`importlib` or a ``"module:attr"`` table loads), counts
  as importing it (docstrings do not), except in ``catalog.py``, whose target strings
  the registry loads on the caller's behalf.
* Exempt: imports under ``if TYPE_CHECKING:`` (``typing.TYPE_CHECKING`` too). They
  never run, so they add no runtime dependency; they keep annotations checkable.

Third-party rules, on top of the vidmem allow-list:

* ``metrics/`` and ``stats/`` import only the standard library, numpy, scipy and
  scikit-learn; ``io/`` only the standard library, numpy, av and PIL (the table's
  "may import" column for these rows is read as the whole allow-list).
* ``torch`` and ``transformers``: never at module level anywhere; inside a function
  only in ``models/backends/`` (other code goes through
  :func:`vidmem.models.backends.base.import_torch` / ``import_transformers``).

Benchmark folders: ``benchmarks/<name>/`` may import every floor below the benchmarks
(runners ... io), the shared modules of ``benchmarks/`` (``contract``,
``jsonl_dataset``, ...) and its own folder, never another benchmark's folder.
``benchmarks/contract.py`` imports only runners, report and its records (``benchmarks/records.py``).

Separately, no two modules may import each other at module level, ``TYPE_CHECKING``
imports included (:func:`test_no_import_cycles`).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "vidmem"

#: the ground floor: everything may import it. ``values`` (plain-value type checks, numpy
#: only) says of itself that it sits at the bottom; the table does not list it yet.
GROUND = ("errors", "registry", "catalog", "values")
#: the floors a benchmark folder sits on (all floors below benchmarks/).
BELOW_BENCHMARKS = ("runners", "report", "agents", "memory", "generators", "sim", "models",
                    "metrics", "stats", "io")
EVERYTHING = ("benchmarks", *BELOW_BENCHMARKS)

#: layer -> the vidmem layers (module prefixes under ``vidmem.``) it may import, besides
#: itself and the ground floor. From the table in /work/shared/ARCHITECTURE.md.
MAY_IMPORT: dict[str, tuple[str, ...]] = {
    "cli": EVERYTHING,
    "benchmarks": BELOW_BENCHMARKS,  # plus benchmarks' shared modules; see _benchmark_rule
    "benchmarks.contract": ("runners", "report", "benchmarks.records"),
    # The table lists runners -> models, generators, io, stats; the generic runner also
    # renders each run's report from its run log, so it may import report/ too.
    "runners": ("models", "generators", "io", "stats", "report"),
    "report": ("io",),
    "agents": ("generators", "models"),
    "memory": ("models.protocols", "io", "metrics"),
    "generators": ("sim", "io"),
    # The sim world's loop rollouts forget along the protocol's own loop paths and revisit
    # rule (pure functions in metrics/), so the sim may import metrics/ besides io/.
    "sim": ("io", "metrics"),
    "models": ("io",),
    "metrics": (),
    "stats": (),
    "io": (),
    "errors": (),
    "registry": (),
    "catalog": (),
    "values": (),
    "__init__": (),
}

#: layers whose third-party imports are an allow-list too (besides the standard library).
THIRD_PARTY_ONLY: dict[str, frozenset[str]] = {
    "metrics": frozenset({"numpy", "scipy", "sklearn"}),
    "stats": frozenset({"numpy", "scipy", "sklearn"}),
    "io": frozenset({"numpy", "av", "PIL"}),
}
HEAVY = ("torch", "transformers")
HEAVY_HOME = "models/backends/"
#: the diffusers video generators are to generators/ what backends/ are to models/: the one
#: other place that runs torch models (lazily, inside functions, like the backends).
HEAVY_HOMES = (HEAVY_HOME, "generators/diffusers/")


@dataclass(frozen=True)
class Import:
    """One import statement's target, as the checker sees it."""

    module: str  # absolute dotted name
    line: int
    in_function: bool


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _is_vidmem_module(dotted: str, src: Path) -> bool:
    parts = dotted.split(".")
    if parts[0] != "vidmem":
        return False
    path = src.joinpath(*parts[1:])
    return path.is_dir() or path.with_suffix(".py").is_file()


def _package_of(path: Path, src: Path) -> list[str]:
    rel = path.relative_to(src).with_suffix("")
    parts = ["vidmem", *rel.parts]
    return parts[:-1]  # a module's package; for __init__ the package itself


_TARGET_STRING = re.compile(r"vidmem(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_][\w.]*)?")


def imports_of(path: Path, src: Path = SRC) -> list[Import]:
    """Every import in ``path`` (module level, class bodies and functions), minus the
    ``if TYPE_CHECKING:`` ones, as absolute module names; module target strings too
    (outside ``catalog.py``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[Import] = []
    strings = path.relative_to(src).as_posix() != "catalog.py"

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:  # the else branch does run
                visit(child, in_function)
            return
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            return  # a docstring or a bare string: documentation, not a target
        if strings and isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                _TARGET_STRING.fullmatch(node.value)):
            module = node.value.partition(":")[0]
            while "." in module and not _is_vidmem_module(module, src):
                module = module.rpartition(".")[0]
            found.append(Import(module, node.lineno, in_function))
        if isinstance(node, ast.Import):
            found.extend(Import(a.name, node.lineno, in_function) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package_of(path, src)[: len(_package_of(path, src)) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                target = sub if alias.name != "*" and _is_vidmem_module(sub, src) else module
                found.append(Import(target, node.lineno, in_function))
        inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(tree, False)
    return found


def layer_of(rel: Path) -> str:
    """``cli``, ``benchmarks``, ``benchmarks.contract``, ``sim``, ..., ``errors``."""
    if len(rel.parts) == 1:
        return rel.stem
    if rel.parts[0] == "benchmarks" and rel.as_posix() == "benchmarks/contract.py":
        return "benchmarks.contract"
    return rel.parts[0]


def _matches(module: str, prefix: str) -> bool:
    full = f"vidmem.{prefix}"
    return module == full or module.startswith(full + ".")


def _benchmark_folders(src: Path) -> set[str]:
    root = src / "benchmarks"
    return {p.name for p in root.iterdir() if (p / "__init__.py").is_file()} if root.is_dir() else set()


def _vidmem_offence(rel: Path, layer: str, module: str, src: Path) -> str | None:
    """Why ``module`` may not be imported from ``rel`` (None when it may)."""
    if module == "vidmem" or any(_matches(module, g) for g in GROUND):
        return None
    # Ground modules and the contract have no "own layer" beyond the ground floor.
    own = layer in MAY_IMPORT and layer not in (*GROUND, "__init__", "benchmarks.contract") and (
        _matches(module, layer))
    allowed = MAY_IMPORT.get(layer)
    if allowed is None:
        return f"layer {layer} is not in the table; add its row to MAY_IMPORT (and ARCHITECTURE.md)"
    if layer == "benchmarks":
        return _benchmark_rule(rel, module, src)
    if own or any(_matches(module, a) for a in allowed):
        return None
    return f"layer {layer} may import only {_listing(allowed)}"


_GROUND_TEXT = f"the ground floor ({', '.join(GROUND)})"


def _listing(allowed: tuple[str, ...]) -> str:
    return ", ".join([*allowed, f"itself and {_GROUND_TEXT}"])


def _benchmark_rule(rel: Path, module: str, src: Path) -> str | None:
    if any(_matches(module, a) for a in BELOW_BENCHMARKS):
        return None
    if _matches(module, "benchmarks"):
        parts = module.split(".")
        folders = _benchmark_folders(src)
        target = parts[2] if len(parts) > 2 and parts[2] in folders else None
        here = rel.parts[1] if len(rel.parts) > 2 and rel.parts[1] in folders else None
        if target is None or target == here:
            return None
        return (f"layer benchmarks/{here or '*'} may not import another benchmark's folder "
                f"({target}); share code through benchmarks/ modules or a floor below")
    return ("layer benchmarks may import only " + ", ".join(BELOW_BENCHMARKS)
            + f", the shared benchmarks/ modules, its own folder and {_GROUND_TEXT}")


def check_file(path: Path, src: Path = SRC) -> list[str]:
    """Every broken import rule of one file under ``src``, as ready-to-read lines."""
    rel = path.relative_to(src)
    layer = layer_of(rel)
    out: list[str] = []
    for imp in dict.fromkeys(imports_of(path, src)):
        top = imp.module.split(".")[0]
        where = f"{rel.as_posix()}:{imp.line}"
        if top == "vidmem":
            why = _vidmem_offence(rel, layer, imp.module, src)
            if why:
                out.append(f"{where} imports {imp.module} ({why})")
            continue
        if top in HEAVY:
            if not imp.in_function:
                out.append(f"{where} imports {imp.module} at module level ({top} is imported "
                           f"only inside functions, in {HEAVY_HOME})")
            elif not rel.as_posix().startswith(HEAVY_HOMES):
                out.append(f"{where} imports {imp.module} ({top} only inside {HEAVY_HOME}; "
                           "use vidmem.models.backends.base.import_torch/import_transformers)")
            continue
        only = THIRD_PARTY_ONLY.get(layer)
        if only is not None and top not in only and top not in sys.stdlib_module_names:
            out.append(f"{where} imports {imp.module} (layer {layer} may import only the "
                       f"standard library, {', '.join(sorted(only))} and vidmem's {_GROUND_TEXT})")
    return out


def check_tree(src: Path = SRC) -> list[str]:
    return [line for f in sorted(src.rglob("*.py")) for line in check_file(f, src)]


def _module_name(path: Path, src: Path) -> str:
    parts = ["vidmem", *path.relative_to(src).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_level_graph(src: Path = SRC) -> dict[str, set[str]]:
    """vidmem module -> the vidmem modules it imports at module level, ``if
    TYPE_CHECKING:`` imports included (function-level imports left out)."""
    files = {_module_name(f, src): f for f in sorted(src.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        out: set[str] = set()

        def visit(node: ast.AST, path: Path = path, out: set[str] = out) -> None:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    out.add(sub if sub in files else node.module)
            elif isinstance(node, ast.Import):
                out.update(a.name for a in node.names)
            for child in ast.iter_child_nodes(node):
                visit(child)

        visit(ast.parse(path.read_text(encoding="utf-8")))
        graph[name] = {m for m in out if m in files and m != name}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return found


# -- the rule on the real tree -------------------------------------------------------


def test_every_layer_is_in_the_table():
    layers = {layer_of(f.relative_to(SRC)) for f in SRC.rglob("*.py")}
    assert not layers - set(MAY_IMPORT), f"layers without a row: {sorted(layers - set(MAY_IMPORT))}"


@pytest.mark.parametrize("layer", sorted(MAY_IMPORT))
def test_layer_imports_only_what_the_table_allows(layer):
    files = [f for f in sorted(SRC.rglob("*.py")) if layer_of(f.relative_to(SRC)) == layer]
    if not files:
        pytest.skip(f"no modules in layer {layer} yet")
    offenders = [line for f in files for line in check_file(f)]
    assert not offenders, "\n".join(offenders)


def test_no_import_cycles():
    """No two modules import each other at module level, even for annotations only: an
    annotation-only circle still means neither can be read (or moved) alone. Lazy imports
    inside functions are left out (the registry loads the catalog that way, on purpose)."""
    cycles = import_cycles(module_level_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_core_import_does_not_pull_torch():
    code = (
        "import sys, vidmem, vidmem.cli, vidmem.registry, vidmem.io.video, vidmem.runners.store;"
        "bad = [m for m in ('torch', 'transformers') if m in sys.modules];"
        "print(','.join(bad))"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "", f"core import pulled in: {res.stdout.strip()}"


# -- the checker itself can fail -------------------------------------------------------


def _fake_tree(tmp_path: Path, files: dict[str, str]) -> Path:
    src = tmp_path / "vidmem"
    for rel, text in {"__init__.py": "", "errors.py": "", **files}.items():
        path = src / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(src).parents:
            init = src / parent / "__init__.py"
            if not init.exists():
                init.write_text("", encoding="utf-8")
        path.write_text(text, encoding="utf-8")
    return src


def test_checker_catches_planted_violations(tmp_path):
    src = _fake_tree(tmp_path, {
        "models/protocols.py": "",
        "io/video.py": "",
        "metrics/bad.py": "import numpy\nimport cv2\nfrom vidmem.io.video import probe\n",
        "sim/bad.py": ("from vidmem.errors import UserInputError\n"
                       "def f():\n    from vidmem.models import protocols\n"
                       "    import torch\n"),
        "sim/ok.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                      "    from vidmem.models.protocols import Judge\n"
                      "from vidmem.io.video import probe\nfrom . import bad\n"),
        "models/backends/x.py": "import torch\ndef g():\n    import transformers\n",
        "benchmarks/aaa/m.py": "from vidmem.benchmarks.bbb import m\nfrom vidmem.cli import app\n",
        "benchmarks/bbb/m.py": "from vidmem.benchmarks import contract\nfrom vidmem.sim import ok\n",
        "benchmarks/contract.py": "from vidmem.sim import ok\n",
        "cli/app.py": "from vidmem.benchmarks.aaa import m\n",
        "sim/dyn.py": ('"""Loads vidmem.runners.x lazily."""\n'
                       'TARGETS = {"j": "vidmem.models.protocols:Judge"}\n'),
        "catalog.py": 'X = "vidmem.benchmarks.aaa.m:B"\n',
    })
    got = check_tree(src)
    text = "\n".join(got)
    assert "metrics/bad.py:2 imports cv2 (layer metrics may import only the standard library" in text
    assert "metrics/bad.py:3 imports vidmem.io.video (layer metrics may import only itself and the" in text
    assert "sim/bad.py:3 imports vidmem.models.protocols (layer sim may import only io" in text
    assert "sim/bad.py:4 imports torch (torch only inside models/backends/" in text
    assert "models/backends/x.py:1 imports torch at module level" in text
    assert "benchmarks/aaa/m.py:1 imports vidmem.benchmarks.bbb.m (layer benchmarks/aaa may not" in text
    assert "benchmarks/aaa/m.py:2 imports vidmem.cli.app (layer benchmarks may import only" in text
    assert "benchmarks/contract.py:1 imports vidmem.sim.ok (layer benchmarks.contract may import only runners, report" in text
    assert "sim/dyn.py:2 imports vidmem.models.protocols (layer sim may import only io" in text
    # sim/ok.py, benchmarks/bbb, cli/app, catalog's target, the docstring and the lazy
    # transformers import in models/backends pass.
    assert len(got) == 9, text


def test_a_package_inside_a_layer_is_held_like_a_module(tmp_path):
    """``metrics/track_b/`` (a package) obeys the metrics row, as ``metrics/track_b.py``
    did: layer, third-party allow-list, its own relative and absolute sibling imports,
    and no cycle between its ``__init__`` and the parts it re-exports."""
    src = _fake_tree(tmp_path, {
        "io/video.py": "",
        "metrics/other.py": "",
        "metrics/pkg/__init__.py": ("from vidmem.metrics.pkg.part import x\n"
                                    "from .rest import y\n"),
        "metrics/pkg/part.py": ("import numpy\nfrom vidmem.errors import UserInputError\n"
                                "from vidmem.metrics.other import z\nx = 1\n"),
        "metrics/pkg/rest.py": ("from vidmem.metrics.pkg.part import x\nfrom ..other import z\n"
                                "import cv2\nfrom vidmem.io.video import probe\ny = 2\n"),
    })
    assert layer_of(Path("metrics/pkg/part.py")) == "metrics"
    got = check_tree(src)
    assert len(got) == 2, "\n".join(got)
    assert got[0].startswith("metrics/pkg/rest.py:3 imports cv2 (layer metrics may import only")
    assert got[1].startswith("metrics/pkg/rest.py:4 imports vidmem.io.video (layer metrics")
    assert import_cycles(module_level_graph(src)) == []


def test_cycle_finder_catches_a_planted_circle(tmp_path):
    src = _fake_tree(tmp_path, {
        "stats/a.py": "from vidmem.stats.b import f\n",
        "stats/b.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                       "    from vidmem.stats.a import A\n"),
        "stats/c.py": "def g():\n    from vidmem.stats import d\n",
        "stats/d.py": "from vidmem.stats import c\n",
    })
    assert import_cycles(module_level_graph(src)) == [["vidmem.stats.a", "vidmem.stats.b"]]


def test_type_checking_imports_are_exempt_and_function_imports_are_not(tmp_path):
    src = _fake_tree(tmp_path, {"sim/m.py": (
        "import typing\nif typing.TYPE_CHECKING:\n    import vidmem.runners\nelse:\n"
        "    import vidmem.report\nclass C:\n    def f(self):\n        import vidmem.agents\n")})
    got = [(i.module, i.in_function) for i in imports_of(src / "sim/m.py", src)]
    assert got == [("typing", False), ("vidmem.report", False), ("vidmem.agents", True)]
