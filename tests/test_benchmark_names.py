"""A benchmark's name is spelled only in its own folder and on its one catalog line.

The names are read from the catalog (every ``benchmarks.add("<name>", ...)`` call in
``src/vidmem/catalog.py``), so a new benchmark is covered as soon as it is declared.
A name is *spelled* when it appears as a whole word (``re`` word boundaries, so
``gen_cmbench`` or ``"cmbench_continuation"`` do not count, ``cmbench`` and
``"vidmem.benchmarks.cmbench.x"`` do):

* in a Python **identifier**: a variable, attribute, argument, keyword, function or
  class name, or one component of a dotted module path in an import;
* in a Python **string literal** that is data or logic: any string constant, f-string
  parts included, that is not a statement of its own;
* in a **Jinja template** (``*.j2``), anywhere outside ``{# ... #}`` comments.

Ignored: comments and docstrings (any string that stands alone as a statement). They
are prose for readers; the rule is about code that dispatches on, builds or stores a
benchmark name. Allowed: ``src/vidmem/benchmarks/<name>/`` may spell ``<name>`` (only
its own), and ``catalog.py`` may spell each name on the one line (call) that declares
it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "vidmem"
_JINJA_COMMENT = re.compile(r"\{#.*?#\}", re.S)


def _declarations(catalog: Path) -> dict[str, list[tuple[int, int]]]:
    """name -> the (first, last) line ranges of the ``benchmarks.add(name, ...)`` calls."""
    tree = ast.parse(catalog.read_text(encoding="utf-8"))
    out: dict[str, list[tuple[int, int]]] = {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add" and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "benchmarks" and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            end = node.end_lineno or node.lineno
            out.setdefault(node.args[0].value, []).append((node.lineno, end))
    return out


def _words(text: str) -> Iterator[str]:
    yield from re.findall(r"\w+", text)


def _spellings(tree: ast.AST) -> Iterator[tuple[int, str, str]]:
    """``(line, what, text)`` for every identifier and non-documentation string."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            node.value._vidmem_doc = True  # type: ignore[attr-defined]
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if not getattr(node, "_vidmem_doc", False):
                yield line, "string", node.value
        elif isinstance(node, ast.Name):
            yield line, "name", node.id
        elif isinstance(node, ast.Attribute):
            yield line, "attribute", node.attr
        elif isinstance(node, ast.arg):
            yield line, "argument", node.arg
        elif isinstance(node, ast.keyword) and node.arg:
            yield line, "keyword", node.arg
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield line, "definition", node.name
        elif isinstance(node, ast.alias):
            yield line, "import", node.name + (f" as {node.asname}" if node.asname else "")
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield line, "import", node.module


def _own_folder(rel: Path) -> str | None:
    parts = rel.parts
    return parts[1] if len(parts) > 2 and parts[0] == "benchmarks" else None


def find_offenders(src: Path = SRC) -> list[str]:
    """Every spelling of a declared benchmark name outside its folder and catalog line."""
    catalog = src / "catalog.py"
    declared = _declarations(catalog)
    names = sorted(declared)
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b") if names else None
    out: list[tuple[str, int, str]] = []
    if pattern is None:
        return []

    def allowed(rel: Path, line: int, name: str) -> bool:
        if _own_folder(rel) == name:
            return True
        return rel == Path("catalog.py") and any(a <= line <= b for a, b in declared[name])

    for path in sorted([*src.rglob("*.py"), *src.rglob("*.j2")]):
        rel = path.relative_to(src)
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".j2":
            plain = _JINJA_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
            found = [(i, "template text", ln) for i, ln in enumerate(plain.splitlines(), 1)]
        else:
            found = list(_spellings(ast.parse(text, filename=str(path))))
        for line, what, value in found:
            for name in dict.fromkeys(pattern.findall(value)):
                if not allowed(rel, line, name):
                    shown = value if len(value) <= 70 else value[:67] + "..."
                    out.append((rel.as_posix(), line,
                                f"src/vidmem/{rel.as_posix()}:{line}: {what} {shown!r} spells "
                                f"benchmark name '{name}' (only benchmarks/{name}/ and its "
                                "catalog line may)"))
    return [text for _, _, text in sorted(dict.fromkeys(out))]


def test_every_benchmark_is_declared_once():
    declared = _declarations(SRC / "catalog.py")
    assert declared, "catalog.py declares no benchmarks (no benchmarks.add(...) calls found)"
    twice = {n: lines for n, lines in declared.items() if len(lines) != 1}
    assert not twice, f"benchmarks declared more than once in catalog.py: {twice}"


def test_benchmark_names_live_in_their_folder_and_catalog_line():
    offenders = find_offenders()
    assert not offenders, "\n".join(offenders)


def test_checker_catches_planted_spellings(tmp_path):
    src = tmp_path / "vidmem"
    files = {
        "catalog.py": ('def declare(benchmarks, backends):\n'
                       '    benchmarks.add("alpha_b", "vidmem.benchmarks.alpha_b:B", "Alpha")\n'
                       '    benchmarks.add(\n        "omega", None, "Omega")\n'
                       '    backends.add("x/y", "m:C", "used by alpha_b")\n'),
        "benchmarks/alpha_b/run.py": ('"""Docstrings may say omega."""\n'
                                      'NAME = "alpha_b"\nOTHER = "omega"\n'),
        "sim/gen.py": ('"""The alpha_b path, in prose: fine."""\n'
                       "# a comment naming omega: fine\n"
                       'def run(req, alpha_b=None):\n'
                       '    if req.benchmark == "alpha_b":\n'
                       '        return f"{req.x}/omega/"\n'
                       '    gen_alpha_b = "alpha_b_kind"\n'
                       '    return req.omega\n'),
        "runners/x.py": "from vidmem.benchmarks.alpha_b import run\n",
        "report/templates/r.html.j2": "{# omega #}\n<p>{{ alpha_b }}</p>\n",
    }
    for rel, text in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text, encoding="utf-8")
    got = find_offenders(src)
    where = sorted({g.split(": ")[0].removeprefix("src/vidmem/") + " " + g.split("'")[-2]
                    for g in got})
    assert where == [
        "benchmarks/alpha_b/run.py:3 omega",  # another benchmark's name, in a folder
        "catalog.py:5 alpha_b",  # a second catalog line naming it
        "report/templates/r.html.j2:2 alpha_b",
        "runners/x.py:1 alpha_b",  # the module path of an import
        "sim/gen.py:3 alpha_b",  # an argument name
        "sim/gen.py:4 alpha_b",  # dispatch on the name
        "sim/gen.py:5 omega",  # inside an f-string
        "sim/gen.py:7 omega",  # an attribute
    ], "\n".join(got)
