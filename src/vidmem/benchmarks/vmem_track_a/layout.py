"""Where Track-A gold lies on disk: which folders are films, which file each language reads.

A **film folder** is a folder with a ``gold/`` folder inside; its name is the film id.
The folder holding it names the **dataset** (``BlenderOpenMovies``, ``LSMDC``). A gold
root given to :func:`discover_films` is one of, tried in this order:

1. one film folder: ``<root>/gold/`` exists (dataset = the name of ``<root>``'s parent);
2. a dataset folder: some ``<root>/<film>/gold/`` exist (dataset = ``<root>``'s name);
3. a folder of datasets, like the release's ``trackA/``: some
   ``<root>/<dataset>/<film>/gold/`` exist.

Hidden folders (``.x``) and folders without gold (``Videos/``) are ignored, files too
(``ATTRIBUTION.md``). A root that mixes film folders and dataset folders, or holds two
films of the same id in different datasets, is an error: film ids must be unique.

Languages: ``zh`` reads ``gold/<file>``. ``en`` reads ``gold/variants/en/<file>`` where
present and falls back to ``gold/<file>`` for a file the variant lacks (the release's
variants hold ``chunk_annotations.json`` and ``entity_registry.json`` only; the spans of
``chunk_index.json`` do not depend on the language). A film without any variant file
has no English gold.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vidmem.benchmarks.contract import Problem
from vidmem.benchmarks.vmem_track_a.schema import FILES, LANGS
from vidmem.errors import UserInputError

__all__ = ["VARIANT_DIR", "FilmDir", "check_lang", "discover_films", "gold_files", "has_variant"]

#: where a language variant lies, relative to ``gold/``
VARIANT_DIR = Path("variants")

_LAYOUT_HINT = ("point it at the release's trackA/ folder (trackA/<dataset>/<film>/gold), "
                "at one dataset folder (BlenderOpenMovies/<film>/gold) or at one film folder "
                "(<film>/gold)")


@dataclass(frozen=True)
class FilmDir:
    """One film folder found under a gold root.

    Attributes:
        film_id: the folder's name.
        dataset: the name of the folder that holds it.
        path: the film folder (it holds ``gold/``).
        root: the gold root it was found under (``None``: the film folder itself); its
            gold files must lie inside it (no symbolic link out of it).
    """

    film_id: str
    dataset: str
    path: Path
    root: Path | None = None

    @property
    def gold_dir(self) -> Path:
        return self.path / "gold"


def check_lang(lang: str) -> str:
    """``lang`` when it is a gold language (``zh`` or ``en``).

    Raises:
        UserInputError: any other value.
    """
    if lang not in LANGS:
        raise UserInputError(f"unknown gold language {lang!r}; expected one of {list(LANGS)}",
                             hint="use lang='zh' (gold/) or lang='en' (gold/variants/en/)")
    return lang


def has_variant(gold_dir: Path, lang: str) -> bool:
    """True when ``gold/variants/<lang>/`` holds at least one gold file."""
    folder = gold_dir / VARIANT_DIR / lang
    return any((folder / name).is_file() for name in FILES)


def gold_files(gold_dir: Path, lang: str) -> dict[str, Path]:
    """Each gold file name -> the file ``lang`` reads (which may not exist).

    Example:
        >>> files = gold_files(Path("spring/gold"), "zh")
        >>> [str(p) for p in files.values()]  # doctest: +NORMALIZE_WHITESPACE
        ['spring/gold/chunk_index.json', 'spring/gold/chunk_annotations.json',
         'spring/gold/entity_registry.json']
    """
    check_lang(lang)
    if lang == "zh":
        return {name: gold_dir / name for name in FILES}
    variant = gold_dir / VARIANT_DIR / lang
    return {name: variant / name if (variant / name).is_file() else gold_dir / name
            for name in FILES}


def _subdirs(path: Path) -> list[Path]:
    try:
        return sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []


def _is_film(path: Path) -> bool:
    return (path / "gold").is_dir()


def discover_films(root: str | Path) -> tuple[list[FilmDir], list[Problem]]:
    """The film folders under ``root`` (see the module docstring for the layouts).

    Args:
        root: a gold root: one film folder, a dataset folder or a folder of datasets.

    Returns:
        The films sorted by (dataset, film id), and the layout problems (root missing,
        no gold, mixed layouts, a film id in two datasets), each an error placed at
        the root or the film.
    """
    root = Path(root)
    where = str(root)
    if not root.is_dir():
        what = "is a file" if root.exists() else "does not exist"
        return [], [Problem(where, "", f"the gold root {what}; expected a folder; {_LAYOUT_HINT}")]
    resolved = root.resolve()
    if _is_film(root):
        return [FilmDir(resolved.name, resolved.parent.name, root)], []
    children = _subdirs(root)
    films = [c for c in children if _is_film(c)]
    datasets = [c for c in children if not _is_film(c) and any(_is_film(g) for g in _subdirs(c))]
    if films and datasets:
        return [], [Problem(where, "", (
            f"mixes film folders ({', '.join(f.name for f in films[:5])}) and dataset folders "
            f"({', '.join(d.name for d in datasets[:5])}); expected one layout; {_LAYOUT_HINT}"))]
    if films:
        return [FilmDir(f.name, resolved.name, f, root) for f in films], []
    if not datasets:
        return [], [Problem(where, "", (
            f"no Track-A gold found: looked for {root}/gold, {root}/<film>/gold and "
            f"{root}/<dataset>/<film>/gold; {_LAYOUT_HINT}"))]
    found = [FilmDir(f.name, d.name, f, root) for d in datasets for f in _subdirs(d)
             if _is_film(f)]
    seen: dict[str, FilmDir] = {}
    problems: list[Problem] = []
    for film in found:
        first = seen.setdefault(film.film_id, film)
        if first is not film:
            problems.append(Problem(film.film_id, "", (
                f"film id found in two datasets: {first.path} and {film.path}; film ids must be "
                "unique across datasets: rename one film folder or validate the datasets "
                "one at a time")))
    return sorted(found, key=lambda f: (f.dataset, f.film_id)), problems
