"""Track-A gold validation: every problem of every film at once, by file and field.

Each problem is a :class:`~vidmem.benchmarks.contract.Problem` whose ``where`` is the
film id and file (``spring/gold/chunk_annotations.json``) and whose ``field`` is a path
into the file (``chunks[3].seconds_span``). Errors block loading; warnings do not.

Errors: no gold found under the root, or a film id in two datasets (see
:mod:`~vidmem.benchmarks.vmem_track_a.layout`); a film id (folder name) that is not a safe
file name (:func:`vidmem.io.safe_paths.id_problem`); a gold file that is a symbolic link
(or lies under one) to a file outside the gold root; a chunk file with no chunks, a file
with more than :data:`~vidmem.benchmarks.vmem_track_a.schema.MAX_ITEMS` items, or a time
outside [0, ``MAX_FILM_SECONDS``]; ``lang="en"`` for a film with no English
variant; a missing file, one that is not UTF-8 or not JSON, or not an object with its
list (``chunks``, ``entities``); a field the protocol uses that is missing or of the
wrong type (see :mod:`~vidmem.benchmarks.vmem_track_a.schema`), a span with end <= start,
an unknown ``kind``; a duplicate chunk id, entity id or id within ``present``; chunk ids
(or their spans) that differ between ``chunk_index.json`` and ``chunk_annotations.json``;
spans not in increasing time order, or overlapping; an entity id in ``present``,
``first_appearances``, ``gold_instructions`` or ``forbidden`` that is not in the registry;
a first appearance that is not in ``present``.

Warnings (the release itself does these, or they are harmless for scoring): an empty
prompt; a prompt in Chinese in an English variant, or one that ends without sentence
punctuation (cut short); an unknown ``requirement`` or scenario tag; an entity whose
``first_chunk`` or state event names no chunk, that is never on screen, or whose
gold instruction is not in ``present``.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from vidmem.benchmarks.contract import Problem, RowValidationReport
from vidmem.benchmarks.jsonl_dataset import excerpt
from vidmem.benchmarks.vmem_track_a.layout import (
    VARIANT_DIR,
    FilmDir,
    check_lang,
    discover_films,
    gold_files,
    has_variant,
)
from vidmem.benchmarks.vmem_track_a.rules import LIST_KEY, CheckedFilm, check_rules
from vidmem.benchmarks.vmem_track_a.schema import (
    ANNOTATIONS_FILE,
    FILES,
    INDEX_FILE,
    MAX_FILM_SECONDS,
    MAX_ITEMS,
    REGISTRY_FILE,
    AnnotationChunk,
    IndexChunk,
    RegistryEntity,
)
from vidmem.io.safe_paths import SAFE_ID_RULE, id_problem, link_escape
from vidmem.values import is_int, type_name

__all__ = ["CheckedFilm", "TrackAValidation", "check_film", "validate_film", "validate_gold"]

_MODEL: dict[str, type[BaseModel]] = {INDEX_FILE: IndexChunk, ANNOTATIONS_FILE: AnnotationChunk,
                                      REGISTRY_FILE: RegistryEntity}
_HINTS = {
    "seconds_span": "write [start_seconds, end_seconds] with end > start, e.g. [17.0, 22.0]",
    "chunk_id": "write a whole number >= 0, e.g. 3",
    "first_chunk": "write the chunk id (a whole number >= 0) the entity first appears in",
    "kind": "use one of 'character', 'prop', 'location'",
    "presence_spans": "write [[start, end], ...] in seconds",
}
_FIELD = re.compile(r"^[a-z_][a-z0-9_]*$")
_UNION_TAGS = {"str", "constrained-str", "list"}


@dataclass(frozen=True)
class TrackAValidation(RowValidationReport):
    """Everything :func:`validate_gold` found (``n_rows`` counts segments, ``n_films`` films)."""

    rows_file = ""
    row_noun = "segment"
    n_films: int = 0

    def counts(self) -> str:
        return f"{self.root}: {self.n_films} film(s), {self.n_rows} segment(s)"


def _loc(prefix: str, loc: tuple[Any, ...]) -> str:
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _FIELD.match(str(part)) and part not in _UNION_TAGS:
            out += f".{part}"
    return out


def _pydantic_message(err: dict[str, Any]) -> str:
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "missing":
        return "missing; the Track-A protocol reads this field: add it (see the release's files)"
    named = next((p for p in reversed(err["loc"]) if isinstance(p, str) and p in _HINTS), None)
    value = err.get("input")
    found = "" if msg.startswith("expected") else f"; found {type_name(value)} {excerpt(value)}"
    guess = ""
    if err["type"] == "literal_error" and isinstance(value, str) and len(value) <= 100:
        close = difflib.get_close_matches(value.strip().lower(), ["character", "prop", "location"], 1)
        guess = f"; did you mean {close[0]!r}?" if close else ""
    fix = f"; fix: {_HINTS[named]}" if named else ""
    if err["type"] in ("less_than_equal", "greater_than_equal"):  # the input limits
        fix += (f" (vidmem reads times from 0 to {MAX_FILM_SECONDS:g} s only: README, "
                "'Input limits')")
    return f"{msg[0].lower()}{msg[1:]}{found}{guess}{fix}"


def _messages(prefix: str, exc: ValidationError) -> dict[str, str]:
    """One message per field path (a union's alternatives are merged into one)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for err in exc.errors():
        out.setdefault(_loc(prefix, err["loc"]), []).append(err)
    merged = {}
    for fld, errs in out.items():
        if len(errs) > 1 and ".forbidden[" in fld:
            value = errs[0].get("input")
            merged[fld] = ("expected a representation id ('prop_001@c003'), an entity id, or an "
                           "object with representation_id or entity_id; found "
                           f"{type_name(value)} {excerpt(value)}")
        else:
            merged[fld] = "; or ".join(_pydantic_message(err) for err in errs)
    return merged


def _read(checked: CheckedFilm, name: str) -> None:
    path, film, lang = checked.files[name], checked.film, checked.lang
    if not path.is_file():
        other = film.gold_dir / VARIANT_DIR / "en" / name
        hint = ("; this film has only the English variant of it: use lang='en'"
                if lang == "zh" and other.is_file() else
                f"; copy the film's gold files from the release into {path.parent}")
        checked.error(name, "", f"missing file{hint}")
        return
    if (why := _escapes(checked, path)) is not None:
        checked.error(name, "", why)
        return
    data = path.read_bytes()
    checked.sha256[name] = hashlib.sha256(data).hexdigest()
    try:
        obj = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        checked.error(name, "", f"not UTF-8 text (byte {exc.start + 1}); save the file as UTF-8")
        return
    except json.JSONDecodeError as exc:
        checked.error(name, "", f"not valid JSON ({exc.msg} at line {exc.lineno} column "
                      f"{exc.colno}); fix the file or copy it again from the release", exc.lineno)
        return
    except (ValueError, RecursionError) as exc:
        checked.error(name, "", f"not valid JSON ({exc})")
        return
    key = LIST_KEY[name]
    items = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(items, list):
        found = (f"{type_name(obj)}" if not isinstance(obj, dict) else
                 f"an object whose '{key}' is {type_name(items)}" if key in obj else
                 f"an object without '{key}'")
        checked.error(name, key, f"expected an object with a '{key}' array, found {found}")
        return
    if len(items) > MAX_ITEMS:
        checked.error(name, key, f"{len(items)} items, more than vidmem's limit of {MAX_ITEMS} "
                      "per film (README, 'Input limits'); is this the gold of one film?")
        return
    if not items and name != REGISTRY_FILE:
        checked.error(name, key, f"holds no {key}: a film's gold needs its chunks; copy the "
                      "file again from the release")
        return
    good, id_key = [], "entity_id" if name == REGISTRY_FILE else "chunk_id"
    ids = checked.ids.setdefault(name, set())
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            checked.error(name, f"{key}[{i}]", f"expected an object, found {type_name(item)}")
            checked.unusable_ids.add(name)
            continue
        usable = item.get(id_key)
        if (is_int(usable) and usable >= 0) if id_key == "chunk_id" else (
                isinstance(usable, str) and usable):
            ids.add(usable)
        else:
            checked.unusable_ids.add(name)
        try:
            good.append((i, _MODEL[name].model_validate(item)))
        except ValidationError as exc:
            for fld, message in _messages(f"{key}[{i}]", exc).items():
                checked.error(name, fld, message)
    checked.parsed[name] = good


def _escapes(checked: CheckedFilm, path: Path) -> str | None:
    """Why a gold file may not be read (a link out of the gold root), or ``None``."""
    root = checked.film.root if checked.film.root is not None else checked.film.path
    try:
        real = link_escape(root, path)
    except (OSError, ValueError) as exc:  # a link loop
        return f"cannot be resolved ({exc}); fix or remove the symbolic link"
    if real is None:
        return None
    return (f"leads through a symbolic link to {excerpt(str(real), 200, quote=False)}, outside "
            f"the gold root {root}; gold files must lie inside it: copy the file into the "
            "film's folder (or link the whole root instead)")


def check_film(film: FilmDir, lang: str) -> CheckedFilm:
    """Read and check one film's gold files in ``lang``; the problems are on the result."""
    checked = CheckedFilm(film, check_lang(lang), gold_files(film.gold_dir, lang))
    if (why := id_problem(film.film_id)) is not None:  # it names the film's output folders
        checked.problems.append(Problem(film.film_id, "", (
            f"the film id (its folder's name) is not a safe file name: {why}; it names the "
            f"film's files in a run; fix: rename the folder using {SAFE_ID_RULE}")))
    if lang != "zh" and not has_variant(film.gold_dir, lang):
        variant = film.gold_dir / VARIANT_DIR / lang
        checked.problems.append(Problem(
            f"{film.film_id}/{variant.relative_to(film.path).as_posix()}", "",
            f"no {lang!r} variant: found none of {list(FILES)} in {variant}; read this film "
            "with lang='zh', or add the variant files from the release"))
        return checked
    for name in FILES:
        _read(checked, name)
    check_rules(checked)
    return checked


def _report(root: Path, films: list[FilmDir], problems: list[Problem], lang: str) -> TrackAValidation:
    n_segments = 0
    for film in films:
        checked = check_film(film, lang)
        problems += checked.problems
        n_segments += len(checked.parsed.get(ANNOTATIONS_FILE, []))
    return TrackAValidation(root, tuple(problems), n_rows=n_segments, n_films=len(films))


def validate_gold(root: str | Path, lang: str = "zh") -> TrackAValidation:
    """Every problem of the Track-A gold under ``root`` in ``lang``, at once.

    Args:
        root: one film folder, a dataset folder or a folder of datasets (see
            :mod:`~vidmem.benchmarks.vmem_track_a.layout`).
        lang: ``zh`` (``gold/``) or ``en`` (``gold/variants/en/``, falling back to
            ``gold/`` for the files the variant lacks).
    """
    check_lang(lang)
    films, problems = discover_films(root)
    return _report(Path(root), films, problems, lang)


def validate_film(film_dir: str | Path, lang: str = "zh") -> TrackAValidation:
    """Every problem of one film folder (the folder that holds ``gold/``)."""
    check_lang(lang)
    path = Path(film_dir)
    resolved = path.resolve()
    return _report(path, [FilmDir(resolved.name, resolved.parent.name, path)], [], lang)
