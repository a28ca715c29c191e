"""Load and validate a root of MIST case cards: every problem at once, by file and field.

**Layout.** ``root`` is a folder (or one file). Every card file under it is read, in
sorted path order, skipping folders whose name starts with ``_`` or ``.`` (the sim
builder's ``_truth/``):

* ``*.jsonl`` -- one card per line (the sim builder's ``cases.jsonl``);
* ``*.json`` -- one card, a list of cards, or ``{"cases": [card, ...]}``;
* ``*.yaml`` / ``*.yml`` -- the same shapes as ``*.json``. YAML needs PyYAML, which is
  **not** a vidmem dependency (the dev venv has it): without it a YAML file is an error
  that says to install PyYAML or convert the file to JSON.

Each problem is a :class:`~vidmem.benchmarks.contract.Problem` whose ``where`` is the
file relative to the root and the card (``cases.jsonl [mist_s0_003]``; ``[item 2]`` or
``[line 4]`` while the card has no usable id), whose ``field`` is a path into the card
(``operations[1].to``) and whose ``line`` is the JSONL line when there is one.

**Errors** (block loading): no card file under the root, or card files that hold no
card; a card file that is a symbolic link (or lies under one) to a file outside the root
(a Hugging Face snapshot may link into its own cache repository); a file that is not
UTF-8, not JSON/YAML, or not one of the shapes above; a field of the wrong shape (see
:mod:`~vidmem.benchmarks.mist.schema`), a value past an input limit (a shot over
:data:`~vidmem.benchmarks.mist.schema.MAX_SHOT_SECONDS`, a count over ``MAX_COUNT``, more
than ``MAX_ITEMS`` objects, containers, operations or contents, more than ``MAX_CARDS``
cards); a ``case_id`` that is not a safe file name (it names the case's folder of clips:
:func:`vidmem.io.safe_paths.id_problem`); a duplicate ``case_id``; ``family_name`` that
disagrees with ``family``; shots other than exactly setup, gap, reveal in that order; a
duplicate object or container id; an operation, ``reveal`` or ``target`` naming an id not
on the card; a ``put`` with a ``from``, a ``move`` without one or from and to the same
container, a ``move`` of more than the container holds; ``target.container`` other than
``reveal``; ``target.contents`` that differ from what the operations leave in the
revealed container (s* must follow from the hidden history).

**Warnings** (do not block): a shot whose ``duration_sec`` is not the protocol's 5 s; a
reveal prompt of an arm not in :data:`~vidmem.benchmarks.mist.schema.ARMS` (did you
mean ...); ``reveal_prompts.baseline`` differing from the reveal shot's prompt (both are
audited); a ``target.contents`` noun differing from its object's noun; a field no rule
reads (a typo?).

Every rule adopted here is in :data:`PROTOCOL` with its reason and source.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from vidmem.benchmarks.contract import Problem, RowValidationReport
from vidmem.benchmarks.jsonl_dataset import excerpt
from vidmem.benchmarks.mist.schema import ARMS, FAMILIES, MAX_CARDS, SHOTS, Card
from vidmem.errors import UserInputError
from vidmem.io.safe_paths import SAFE_ID_RULE, allowed_link_targets, id_problem, link_escape
from vidmem.values import type_name

__all__ = ["CARD_SUFFIXES", "PROTOCOL", "CardFile", "CardValidation", "check_card",
           "load_cards", "validate_cards", "yaml_available"]

CARD_SUFFIXES = (".jsonl", ".json", ".yaml", ".yml")
SHOT_SECONDS = 5.0

PROTOCOL: dict[str, dict[str, str]] = {
    "card_fields": {
        "rule": "a card names actor, objects, containers, the operation history, the "
                "revealed container, s* and the three shot prompts; family R0/R1/R2",
        "reason": "the case card of the protocol; the sim builder's format loads unchanged",
        "source": "PROTOCOLS.md section 5 'Case card'; seed 001 section 3 and Table 1; "
                  "benchmarks/mist/sim_build.py",
    },
    "three_shots": {
        "rule": "exactly the shots setup, gap, reveal, in that order; 5 s each (other "
                "durations warn; over 60 s is an error)",
        "reason": "each case is three 5-second shots; every arm reuses the locked first two",
        "source": "PROTOCOLS.md section 5; seed 001 section 3 ('three 5-second shots')",
    },
    "target_from_history": {
        "rule": "replaying the operations (put adds count, move transfers count) must "
                "leave exactly target.contents in the revealed container",
        "reason": "s* is the state the hidden history implies; a card whose stated answer "
                  "disagrees with its own history cannot score inside",
        "source": "decided here (the card is silent); matches sim_build's _truth replay",
    },
    "yaml": {
        "rule": "YAML cards are read only when PyYAML is importable; it is not a dependency",
        "reason": "JSON is the release format; PyYAML is only in the dev venv",
        "source": "decided here",
    },
}

_SKIP_PREFIXES = ("_", ".")
#: pydantic error types of the input limits (:data:`~.schema.MAX_SHOT_SECONDS` and others)
_LIMIT_ERRORS = ("less_than_equal", "too_long", "finite_number")


def yaml_available() -> bool:
    """True when PyYAML can be imported (YAML card files can then be read)."""
    try:
        import yaml  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass(frozen=True)
class CardFile:
    """One card as read: where it came from and the parsed card (``None`` if unusable)."""

    file: str
    line: int | None
    raw: Any
    card: Card | None


@dataclass(frozen=True)
class CardValidation(RowValidationReport):
    """Everything :func:`validate_cards` found (``n_rows`` counts card objects read)."""

    rows_file = ""
    row_noun = "card"
    cards: tuple[Card, ...] = ()

    def counts(self) -> str:
        return f"{self.root}: {self.n_rows} card(s)"


class _Sink:
    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, where: str, fld: str, message: str, *, line: int | None = None,
            warning: bool = False) -> None:
        self.problems.append(Problem(where, fld, message, "warning" if warning else "error",
                                     line))


def _card_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    out = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).parts
        if any(p.startswith(_SKIP_PREFIXES) for p in rel[:-1]):
            continue
        if path.is_file() and path.suffix.lower() in CARD_SUFFIXES:
            out.append(path)
    return out


def _parse_file(path: Path, rel: str, sink: _Sink) -> list[tuple[int | None, str, Any]]:
    """``(line, label, raw object)`` for each card-like object in one file."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        sink.add(rel, "", f"not UTF-8 text (byte {exc.start + 1}); save the file as UTF-8")
        return []
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        out = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                out.append((n, f"line {n}", json.loads(line)))
            except (json.JSONDecodeError, RecursionError) as exc:
                sink.add(f"{rel} [line {n}]", "", f"not valid JSON ({exc}); write one card "
                         "object per line", line=n)
        return _cards_or_foreign(out, rel, sink)
    if suffix == ".json":
        try:
            obj = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            sink.add(rel, "", f"not valid JSON ({exc}); fix the file")
            return []
    else:
        try:
            import yaml
        except ImportError:
            sink.add(rel, "", "a YAML card file, but PyYAML is not installed (it is not a "
                     "vidmem dependency); fix: pip install pyyaml, or convert the file to JSON")
            return []
        try:
            obj = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            sink.add(rel, "", f"not valid YAML ({exc}); fix the file")
            return []
    if isinstance(obj, dict) and "cases" in obj and "case_id" not in obj:
        obj = obj["cases"]
    if isinstance(obj, dict):
        return _cards_or_foreign([(None, "item 0", obj)], rel, sink)
    if isinstance(obj, list):
        return _cards_or_foreign([(None, f"item {i}", x) for i, x in enumerate(obj)], rel, sink)
    sink.add(rel, "", f"expected a card object, a list of cards or {{'cases': [...]}}, "
             f"found {type_name(obj)} {excerpt(obj)}")
    return []


#: top-level fields of a card; a file none of whose objects has one is not a card file
_CARD_FIELDS = frozenset({"case_id", "family", "actor", "objects", "containers", "operations",
                          "reveal", "target", "shots"})


def _cards_or_foreign(found: list[tuple[int | None, str, Any]], rel: str,
                      sink: _Sink) -> list[tuple[int | None, str, Any]]:
    """``found``, or one error for the file when none of its objects looks like a card
    (another benchmark's JSON in the same folder, e.g. a Track-B build's ``gt/``):
    one line that names the cause instead of a missing-field error per field."""
    if not found or any(isinstance(x, dict) and _CARD_FIELDS & set(x) for _, _, x in found):
        return found
    sink.add(rel, "", "not a MIST card file: none of its objects has a MIST card field "
             f"({', '.join(sorted(_CARD_FIELDS))}); MIST reads every *.json, *.jsonl and "
             "*.yaml under --root, so keep the cards in a folder of their own (e.g. vidmem "
             "sim build mist --out SIM-mist) and point --root there")
    return []


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{'from' if part == 'from_' else part}" if out else str(part)
    return out


def _pydantic_messages(exc: ValidationError) -> dict[str, str]:
    out: dict[str, list[str]] = {}
    for err in exc.errors():
        loc = _loc(err["loc"])
        if err["type"] == "missing":
            msg = "missing; a MIST card needs this field (see vidmem.benchmarks.mist.schema)"
        else:
            msg = str(err["msg"]).removeprefix("Value error, ")
            msg = f"{msg[0].lower()}{msg[1:]}; found {type_name(err.get('input'))} " \
                  f"{excerpt(err.get('input'))}"
            if err["type"] in _LIMIT_ERRORS:
                msg += ("; fix: stay within vidmem's input limits for MIST cards (README, "
                        "'Input limits'; vidmem.benchmarks.mist.schema.MAX_*)")
        out.setdefault(loc, []).append(msg)
    return {k: "; or ".join(v) for k, v in out.items()}


def _unknown_fields(model: BaseModel, prefix: str) -> list[str]:
    """Paths of fields the schema does not declare, recursively."""
    out = [f"{prefix}{k}" for k in (model.model_extra or {})]
    for name in type(model).model_fields:
        value = getattr(model, name)
        key = "from" if name == "from_" else name
        items = value if isinstance(value, list) else [value]
        for i, item in enumerate(items):
            if isinstance(item, BaseModel):
                sub = f"{prefix}{key}[{i}]." if isinstance(value, list) else f"{prefix}{key}."
                out.extend(_unknown_fields(item, sub))
    return out


def check_card(card: Card, where: str, sink: _Sink, line: int | None = None) -> None:
    """The rules between the fields of one parsed card (module docstring), into ``sink``."""
    def err(fld: str, msg: str) -> None:
        sink.add(where, fld, msg, line=line)

    def warn(fld: str, msg: str) -> None:
        sink.add(where, fld, msg, line=line, warning=True)

    if card.family_name is not None and card.family_name != FAMILIES[card.family]:
        err("family_name", f"family {card.family!r} is {FAMILIES[card.family]!r}, found "
            f"{card.family_name!r}; fix one of the two")
    names = [s.shot for s in card.shots]
    if names != list(SHOTS):
        err("shots", f"expected exactly the shots {list(SHOTS)} in that order, found {names}")
    for i, s in enumerate(card.shots):
        if s.duration_sec != SHOT_SECONDS:
            warn(f"shots[{i}].duration_sec", f"the protocol's shots are {SHOT_SECONDS:g} s, "
                 f"found {s.duration_sec:g}")
    objs, boxes = {}, {}
    for kind, items, table in (("objects", card.objects, objs),
                               ("containers", card.containers, boxes)):
        for i, item in enumerate(items):
            if item.id in table:
                err(f"{kind}[{i}].id", f"duplicate id {item.id!r}; give each a distinct id")
            table[item.id] = item

    def known(fld: str, value: str | None, table: dict[str, Any], what: str) -> bool:
        if value in table:
            return True
        close = difflib.get_close_matches(str(value), list(table), 1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        err(fld, f"expected the id of one of the card's {what} {sorted(table)}, found "
            f"{value!r}{hint}")
        return False

    state: dict[str, dict[str, int]] = {b: {} for b in boxes}
    replay_ok = True
    for i, op in enumerate(card.operations):
        ok = known(f"operations[{i}].object", op.object, objs, "objects")
        ok &= known(f"operations[{i}].to", op.to, boxes, "containers")
        if op.op == "put" and op.from_ is not None:
            err(f"operations[{i}].from", f"a 'put' comes from outside (null), found {op.from_!r}"
                "; use op 'move' to take it from a container")
            ok = False
        if op.op == "move":
            if op.from_ is None:
                err(f"operations[{i}].from", "a 'move' needs the container it leaves; found null")
                ok = False
            else:
                ok &= known(f"operations[{i}].from", op.from_, boxes, "containers")
                if op.from_ == op.to:
                    err(f"operations[{i}]", f"a 'move' from and to the same container "
                        f"{op.to!r}")
                    ok = False
        if not ok:
            replay_ok = False
            continue
        if op.op == "move":
            have = state[op.from_].get(op.object, 0)  # type: ignore[index]
            if op.count > have:
                err(f"operations[{i}].count", f"moves {op.count} of {op.object!r} out of "
                    f"{op.from_!r}, which holds {have} at that point")
                replay_ok = False
                continue
            state[op.from_][op.object] = have - op.count  # type: ignore[index]
        state[op.to][op.object] = state[op.to].get(op.object, 0) + op.count
    known("reveal", card.reveal, boxes, "containers")
    if card.target.container != card.reveal:
        err("target.container", f"s* is the state of the revealed container {card.reveal!r}, "
            f"found {card.target.container!r}")
    stated: dict[str, int] = {}
    for i, item in enumerate(card.target.contents):
        if (known(f"target.contents[{i}].object", item.object, objs, "objects")
                and item.noun != objs[item.object].noun):
            warn(f"target.contents[{i}].noun", f"object {item.object!r} is called "
                 f"{objs[item.object].noun!r}, found {item.noun!r}")
        stated[item.object] = stated.get(item.object, 0) + item.count
    if replay_ok and card.reveal in state:
        implied = {k: v for k, v in state[card.reveal].items() if v}
        stated = {k: v for k, v in stated.items() if v}
        if implied != stated:
            err("target.contents", f"the operations leave {implied or 'nothing'} in "
                f"{card.reveal!r}, but the card states {stated or 'nothing'}; fix the target "
                "or the history")
    shot = next((s.prompt for s in card.shots if s.shot == "reveal"), None)
    base = card.reveal_prompts.get("baseline")
    if shot is not None and base is not None and base != shot:
        warn("reveal_prompts.baseline", "differs from the reveal shot's prompt; the baseline "
             "arm is the reveal shot's prompt and both are audited")
    for arm in card.reveal_prompts:
        if arm not in ARMS:
            close = difflib.get_close_matches(arm, ARMS, 1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; the arms are {list(ARMS)}"
            warn(f"reveal_prompts.{arm}", f"unknown arm {arm!r}{hint}")
    for fld in _unknown_fields(card, ""):
        warn(fld, "a field no MIST rule reads (a typo?); it is kept but ignored")


def _escapes(root: Path, path: Path, bases: tuple[Path, ...]) -> str | None:
    """Why the card file ``path`` may not be read (a link out of ``root``), or ``None``."""
    try:
        real = link_escape(root, path, bases)
    except (OSError, ValueError) as exc:  # a link loop
        return f"cannot be resolved ({exc}); fix or remove the symbolic link"
    if real is None:
        return None
    return (f"leads through a symbolic link to {excerpt(str(real), 200, quote=False)}, outside "
            f"the card root {root}; card files must lie inside it: copy the file into the "
            "folder (or link the whole folder instead)")


def validate_cards(root: str | Path) -> CardValidation:
    """Read every card under ``root`` and report every problem at once (module docstring).

    Returns:
        the report; ``cards`` holds the cards that parsed, in file order, and is empty
        when there is any error.
    """
    root = Path(root)
    sink = _Sink()
    if not root.exists():
        sink.add(str(root), "", "no such file or folder; pass the folder of MIST cards")
        return CardValidation(root, tuple(sink.problems))
    files = _card_files(root)
    if not files:
        sink.add(root.name or str(root), "", f"no card file ({', '.join(CARD_SUFFIXES)}) "
                 "under the root; build sim cards with 'vidmem sim-build' or point at the "
                 "folder that holds cases.jsonl")
    read: list[CardFile] = []
    seen: dict[str, str] = {}
    bases = None if root.is_file() else allowed_link_targets(root)
    for path in files:
        rel = path.name if root.is_file() else path.relative_to(root).as_posix()
        if bases is not None and (why := _escapes(root, path, bases)) is not None:
            sink.add(rel, "", why)
            continue
        for line, label, raw in _parse_file(path, rel, sink):
            cid = raw.get("case_id") if isinstance(raw, dict) else None
            where = f"{rel} [{cid}]" if isinstance(cid, str) and cid else f"{rel} [{label}]"
            if not isinstance(raw, dict):
                sink.add(where, "", f"expected a card object, found {type_name(raw)} "
                         f"{excerpt(raw)}", line=line)
                read.append(CardFile(rel, line, raw, None))
                continue
            try:
                card = Card.model_validate(raw)
            except ValidationError as exc:
                for fld, msg in _pydantic_messages(exc).items():
                    sink.add(where, fld, msg, line=line)
                card = None
            if isinstance(cid, str) and cid:
                if (why := id_problem(cid)) is not None:  # it names RUN/rollouts/<case_id>/
                    sink.add(where, "case_id", f"not a safe file name: {why} (it names the "
                             f"case's folder of clips); fix: use {SAFE_ID_RULE}", line=line)
                    card = None
                if cid in seen:
                    sink.add(where, "case_id", f"duplicate case_id {cid!r} (first in "
                             f"{seen[cid]}); give each card its own id", line=line)
                else:
                    seen[cid] = rel
            if card is not None:
                check_card(card, where, sink, line)
            read.append(CardFile(rel, line, raw, card))
    if files and not read and not any(p.severity == "error" for p in sink.problems):
        sink.add(root.name or str(root), "", "holds no card: the card files are empty; write "
                 "one card per line of cases.jsonl (build sim cards with 'vidmem sim-build')")
    if len(read) > MAX_CARDS:
        sink.add(root.name or str(root), "", f"{len(read)} cards, more than vidmem's limit of "
                 f"{MAX_CARDS} under one root; split the cases into several roots and runs")
    problems = tuple(sink.problems)
    errors = any(p.severity == "error" for p in problems)
    cards = () if errors else tuple(c.card for c in read if c.card is not None)
    return CardValidation(root, problems, len(read), cards)


def load_cards(root: str | Path) -> tuple[Card, ...]:
    """The cards under ``root``, in file order.

    Raises:
        UserInputError: any validation error (all of them are listed).
    """
    report = validate_cards(root)
    if not report.ok:
        raise UserInputError(f"MIST cards at {root} do not load:\n{report.format(limit=50)}",
                             hint="fix the listed fields (the warnings do not block loading)")
    return report.cards
