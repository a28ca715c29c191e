"""The hidden-state (container card) prompt grammar: phrase tables and parsers.

The card builder (``benchmarks/.../sim_build.py``) writes its prompts from the tables
here, and the sim generator's container shots (:mod:`vidmem.sim.gen_mist`) read them
back with the parsers here, so the two can never drift apart.

Tables: :data:`ACTORS` (noun, sim asset), :data:`OBJECTS` (noun, plural, asset),
:data:`BOX_COLOURS` (drawn boxes), :data:`NUMBERS` (0-4 as words) and
:func:`container_pool` (the cup assets, then one drawn box per colour).

**Setup prompts** (:func:`parse_setup`): the actor opens the sentence (``The cat``);
then, in order of appearance,

* ``drops|puts|places <NP> into the <container>`` -- a ``put`` of ``<NP>`` (also after
  ``and``, sharing the verb: ``puts a coin into the cup and a patch into the red box``);
* ``moves it|them to the <container>`` -- a ``move`` of the last put object from
  where it is to that container;
* ``holds up <NP> ... pocket`` -- the object is shown and taken away (no put).

``<NP>`` is ``a|an|one <noun>`` or ``two|three|four <plural>``. Every container noun
named anywhere is in the scene, in order of first mention (longest noun first, so
``blue cup`` is not read as ``cup``).

**Reveal prompts** (:func:`parse_reveal`): the container acted on is the first
container named after an opening verb (``opens``, ``lifts``, ``uncovers``) or in
``the open <container>``; no such container and no verb means no action is asked.
*Clauses* that name parts of the move (each a regular expression in
:data:`CLAUSES`): ``open`` (the lid is held or lifted open), ``hold`` (it stays open
until the end), ``view`` (the inside is clearly visible, the actor steps aside) and
``bind`` (only that container, the others stay closed). A content phrase
``<container> ... shows|with <NP>|nothing ... inside`` states what is inside.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from vidmem.errors import UserInputError

__all__ = ["ACTORS", "BOX_COLOURS", "CLAUSES", "NUMBERS", "OBJECTS", "Reveal", "Setup",
           "container_pool", "noun_phrase", "parse_reveal", "parse_setup"]

#: (noun, sim asset) of every actor a card may cast
ACTORS = (("the woman", "face"), ("the cat", "cat"))
#: (noun, plural, sim asset) of every object a card may hide
OBJECTS = (("gold coin", "gold coins", "gold_coin"), ("mission patch", "mission patches", "patch"),
           ("snake sign", "snake signs", "logo"), ("old coin", "old coins", "old_coin"))
#: colours of the drawn boxes
BOX_COLOURS = ("red", "green", "yellow", "purple")
NUMBERS = {0: "zero", 1: "one", 2: "two", 3: "three", 4: "four"}
_WORD_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4}

#: the move clauses of a reveal prompt (module docstring), searched within one clause
CLAUSES: dict[str, tuple[str, ...]] = {
    "open": (r"\b(?:holds?|keeps?|props?)\b[^.;]*\b(?:lid )?open\b", r"\blifts? the lid\b",
             r"\btakes? the lid off\b"),
    "hold": (r"\buntil the end\b", r"\b(?:stays?|remains?|keeps?) [^.;]*open\b",
             r"\bnever clos", r"\bdoes not close\b"),
    "view": (r"\binside\b[^.;]*\b(?:visible|in view|in full view)\b", r"\bsteps? aside\b",
             r"\bclearly visible\b"),
    "bind": (r"\bonly the\b", r"\bnot the\b", r"\bleaves? (?:the|every|all)\b[^.;]*\bclosed\b"),
}
_OPEN_VERB = re.compile(r"\b(?:opens?|lifts?|uncovers?)\b", re.I)


def container_pool() -> list[dict[str, Any]]:
    """Every container a card may use, in the builder's sampling order.

    Example:
        >>> [c["noun"] for c in container_pool()][:3]
        ['cup', 'blue cup', 'red box']
    """
    return [{"noun": "cup", "kind": "sim_asset", "asset": "cup"},
            {"noun": "blue cup", "kind": "sim_asset", "asset": "blue_cup"},
            *({"noun": f"{c} box", "kind": "drawn_box", "colour": c} for c in BOX_COLOURS)]


def noun_phrase(noun: str, plural: str, count: int) -> str:
    """``a gold coin`` / ``two gold coins`` (``count`` 1-4).

    Example:
        >>> noun_phrase("old coin", "old coins", 1), noun_phrase("patch", "patches", 3)
        ('an old coin', 'three patches')
    """
    if count == 1:
        return f"{'an' if noun[0] in 'aeiou' else 'a'} {noun}"
    return f"{NUMBERS[count]} {plural}"


@dataclass
class Setup:
    """What a setup prompt sets up.

    Attributes:
        actor: ``(noun, asset)``.
        containers: container dicts (:func:`container_pool` entries plus ``id`` A, B...).
        objects: ``{"id", "noun", "plural", "asset"}`` in order of first mention.
        operations: ``{"op": "put" | "move", "object", "count", "from", "to"}``.
        shown_only: object ids held up and taken away (never put anywhere).
    """

    actor: tuple[str, str]
    containers: list[dict[str, Any]]
    objects: list[dict[str, Any]] = field(default_factory=list)
    operations: list[dict[str, Any]] = field(default_factory=list)
    shown_only: list[str] = field(default_factory=list)


@dataclass
class Reveal:
    """What a reveal prompt asks for.

    Attributes:
        container: id of the container acted on, or ``None``.
        action: whether an opening is asked for at all.
        clauses: the move clauses found (keys of :data:`CLAUSES`), sorted.
        stated: the contents the prompt states for that container, as ``[{"asset",
            "count"}]`` (``[]`` for ``nothing``), or ``None`` when it states none.
    """

    container: str | None
    action: bool
    clauses: tuple[str, ...]
    stated: list[dict[str, Any]] | None


def _norm(text: str) -> str:
    return " ".join(str(text).split())


def _containers_named(text: str) -> list[tuple[int, dict[str, Any]]]:
    """``(position, pool entry)`` of every container noun in ``text``, by position."""
    found: list[tuple[int, int, dict[str, Any]]] = []
    taken: list[tuple[int, int]] = []
    for entry in sorted(container_pool(), key=lambda c: -len(c["noun"])):
        for m in re.finditer(rf"\b{re.escape(entry['noun'])}\b", text, re.I):
            if not any(a < m.end() and m.start() < b for a, b in taken):
                taken.append((m.start(), m.end()))
                found.append((m.start(), m.end(), entry))
    return [(a, e) for a, _, e in sorted(found, key=lambda x: x[0])]


def _np(text: str) -> tuple[tuple[str, str, str], int] | None:
    """Read ``a gold coin`` / ``two gold coins`` at the start of ``text``."""
    m = re.match(r"\s*(a|an|one|two|three|four)\s+(.+)", text, re.I)
    if not m:
        return None
    count = _WORD_COUNTS[m.group(1).lower()]
    rest = m.group(2).lower()
    for obj in sorted(OBJECTS, key=lambda o: -len(o[0])):
        word = obj[0] if count == 1 else obj[1]
        if re.match(rf"{re.escape(word)}\b", rest):
            return obj, count
    return None


def parse_setup(prompt: str) -> Setup:
    """Read a setup prompt (grammar in the module docstring).

    Raises:
        UserInputError: no known actor opens the prompt, or it names no container.

    Example:
        >>> s = parse_setup("The cat puts a gold coin into the cup, then moves it to the "
        ...                 "red box and closes both.")
        >>> [c["id"] + ":" + c["noun"] for c in s.containers], [o["op"] for o in s.operations]
        (['A:cup', 'B:red box'], ['put', 'move'])
    """
    text = _norm(prompt)
    hint = ("write it in the sim's setup grammar, e.g. 'The cat drops two gold coins into the "
            "red box and closes it.'")
    actor = next((a for a in ACTORS if text.lower().startswith(a[0])), None)
    if actor is None:
        raise UserInputError(f"sim container shot: setup prompt {prompt!r} opens with no known "
                             f"actor ({', '.join(a[0] for a in ACTORS)})", hint=hint)
    named = _containers_named(text)
    if not named:
        raise UserInputError(f"sim container shot: setup prompt {prompt!r} names no container",
                             hint=hint)
    containers: list[dict[str, Any]] = []
    for _, entry in named:
        if all(c["noun"] != entry["noun"] for c in containers):
            containers.append({"id": "ABCDEFGH"[len(containers)], **entry})
    by_noun = {c["noun"]: c["id"] for c in containers}
    setup = Setup(actor, containers)
    obj_ids: dict[str, str] = {}

    def obj_id(obj: tuple[str, str, str]) -> str:
        if obj[2] not in obj_ids:
            obj_ids[obj[2]] = f"O{len(obj_ids) + 1}"
            setup.objects.append({"id": obj_ids[obj[2]], "noun": obj[0], "plural": obj[1],
                                  "asset": obj[2]})
        return obj_ids[obj[2]]

    events = []
    for m in re.finditer(r"\b(?:drops?|puts?|places?|and)\s+(.+?)\s+into the\s+", text, re.I):
        events.append((m.start(), "put", m))
    for m in re.finditer(r"\bmoves?\s+(?:it|them)\s+to the\s+", text, re.I):
        events.append((m.start(), "move", m))
    for m in re.finditer(r"\bholds? up\s+(.+?)(?:,| and )", text, re.I):
        events.append((m.start(), "show", m))
    last: dict[str, Any] | None = None
    for _, kind, m in sorted(events, key=lambda e: e[0]):
        after = [(p, e) for p, e in named if p >= m.end()]
        where = by_noun[after[0][1]["noun"]] if after and after[0][0] == m.end() else None
        if kind == "show":
            parsed = _np(m.group(1))
            if parsed and re.search(r"\bpocket\b", text, re.I):
                setup.shown_only.append(obj_id(parsed[0]))
        elif kind == "put" and where is not None:
            parsed = _np(m.group(1))
            if parsed is not None:
                last = {"op": "put", "object": obj_id(parsed[0]), "count": parsed[1],
                        "from": None, "to": where}
                setup.operations.append(last)
        elif kind == "move" and where is not None and last is not None:
            last = {"op": "move", "object": last["object"], "count": last["count"],
                    "from": last["to"], "to": where}
            setup.operations.append(last)
    return setup


def parse_reveal(prompt: str, containers: list[dict[str, Any]]) -> Reveal:
    """Read a reveal prompt against the scene's containers (module docstring).

    Example:
        >>> scene = [{"id": "A", "noun": "red box"}, {"id": "B", "noun": "cup"}]
        >>> r = parse_reveal("The cat opens the cup and holds it open so that the inside "
        ...                  "is clearly visible until the end.", scene)
        >>> r.container, r.action, r.clauses, r.stated
        ('B', True, ('hold', 'open', 'view'), None)
        >>> parse_reveal("The open red box shows two snake signs inside.", scene).stated
        [{'asset': 'logo', 'count': 2}]
    """
    text = _norm(prompt)
    ids = {c["noun"].lower(): c["id"] for c in containers}
    named = [(p, e) for p, e in _containers_named(text) if e["noun"].lower() in ids]
    verb = _OPEN_VERB.search(text)
    target = None
    for pos, entry in named:
        adjective = re.search(rf"\bopen\s+{re.escape(entry['noun'])}\b", text, re.I)
        if (verb is not None and pos >= verb.end()) or adjective:
            target = ids[entry["noun"].lower()]
            break
    action = target is not None
    if target is None and verb is not None and named:
        target, action = ids[named[0][1]["noun"].lower()], True
    clauses = sorted(name for name, pats in CLAUSES.items()
                     if any(re.search(p, text, re.I) for p in pats))
    return Reveal(target, action, tuple(clauses), _stated(text) if target else None)


def _stated(text: str) -> list[dict[str, Any]] | None:
    """The first ``shows|with <NP>|nothing [visible] inside`` of the text, read."""
    for m in re.finditer(r"\b(?:shows?|with|holding|holds)\s+", text, re.I):
        inside = re.match(r"([^;.]+?)\s+(?:visible\s+)?inside\b", text[m.end():], re.I)
        if not inside:
            continue
        what = inside.group(1).strip().lower()
        if what in ("nothing", "no objects", "nothing at all"):
            return []
        parsed = _np(what)
        if parsed is not None and parsed[0][0 if parsed[1] == 1 else 1] == what.split(
                " ", 1)[-1]:
            return [{"asset": parsed[0][2], "count": parsed[1]}]
    return None
