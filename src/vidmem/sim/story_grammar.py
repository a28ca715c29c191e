"""The controlled language of sim Track-B stories: names, appearance phrases, prompts.

Sim stories (:mod:`vidmem.benchmarks.vmem_track_b.sim_build`) are written in the official Track-B
format, but every entity name and appearance text comes from a small closed grammar,
so that the sim generator can read its prompts and the card judge can read its roster
without guessing. Anything outside the grammar is ignored (generator) or answered with
``"abstain"`` (judge), never guessed at.

**Names.** Every entity has a proper name from a closed vocabulary whose list says its
kind: :data:`CHARACTER_NAMES` (characters), :data:`PROP_NAMES` (single props),
:data:`GROUP_NAMES` (a counted group of identical props) and :data:`LOCATION_NAMES`
(two-word place names). A name is recognised in a prompt as a whole word, exact case.
The name says *what kind of thing* is meant, never what it looks like.

**Appearance phrases** (the text between full-width brackets ``（...）`` in a prompt, and
the ``states``/``appearance`` text of the gold):

=========================================  ==============================================
phrase                                     meaning
=========================================  ==============================================
``A <label>.``                             asset in state ``base``
``A <label> painted <colour>.``            ``recoloured:<colour>``
``A <label> wearing a party hat.``         ``accessory`` (characters)
``A <label> with a star sticker.``         ``accessory`` (props)
``A <label> with a crack across it.``      ``broken``
``A <label> with its lid on.``             ``closed`` (containers)
``<Count> <plural label>.``                ``count`` copies in state ``base``
                                           (``Two`` .. ``Five``)
``A <place name>.``                        a location: that place of
                                           :data:`vidmem.sim.assets.PLACES`
=========================================  ==============================================

``<label>`` is an asset's label (:data:`vidmem.sim.assets.ENTITIES`); ``A`` may be
``An``; case and the final full stop do not matter.

**Prompts.** A prompt is read clause by clause (clauses end at ``.``, ``;`` or ``!``);
every vocabulary name is a *mention*, followed or not by ``（appearance）``. Mentions
are present by default; they are *absent* (named but not to be shown) when the clause
says so: the name right before ``is gone`` / ``are gone`` / ``is lost`` / ``are lost``
(``Zephyr is gone``), or any name after ``remembers`` / ``misses`` / ``mourns`` /
``thinks of`` / ``looks like`` / ``resembles`` (``Ada remembers Zephyr``; a false friend:
``Orbit looks like Zephyr, but it is not`` shows Orbit, not Zephyr).

**Temporal references** (:func:`parse_temporal_references`) name no one: ``the <noun>
from the opening``, ``<noun>`` one of :data:`REFERENCE_NOUNS` (``figure`` a character,
``prop`` a single prop, ``group`` a counted group, ``place`` a location), means *the
entity of that kind the story introduced first* (earliest segment; within a segment,
the one mentioned first), as known before the segment that says it. It is present or
absent by the same clause rules as a name (``Ada remembers the place from the opening``
is absent). The gold writes such a mention as a cast entry with ``anchor: {"type":
"temporal", "phrase": "the group from the opening", "resolves_to": <eid>}``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vidmem.sim.assets import COLOURS, ENTITIES, PLACES

__all__ = [
    "CHARACTER_NAMES",
    "COUNT_WORDS",
    "GROUP_NAMES",
    "LOCATION_NAMES",
    "PROP_NAMES",
    "REFERENCE_NOUNS",
    "Appearance",
    "Mention",
    "TemporalReference",
    "appearance_phrases",
    "appearance_text",
    "name_kind",
    "parse_appearance",
    "parse_mentions",
    "parse_temporal_references",
    "place_text",
    "temporal_reference_text",
]

CHARACTER_NAMES = ("Ada", "Bruno", "Cleo", "Dario", "Edda", "Felix", "Greta", "Hugo", "Iris",
                   "Jonas", "Kira", "Lukas", "Mara", "Nico", "Olga", "Pavel")
PROP_NAMES = ("Zephyr", "Orbit", "Pebble", "Nimbus", "Quill", "Tansy", "Vesta", "Wren",
              "Yarrow", "Juniper", "Sorrel", "Umber")
GROUP_NAMES = ("Pips", "Embers", "Beads", "Sparks", "Tokens")
LOCATION_NAMES = ("Old Quarry", "North Field", "Red Hall", "Star Deck", "Moon Gate",
                  "Notice Hall", "Dome Court", "Cell Garden")
#: number words of counted groups.
COUNT_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5}
_KIND_OF = {**{n: "character" for n in CHARACTER_NAMES}, **{n: "prop" for n in PROP_NAMES},
            **{n: "group" for n in GROUP_NAMES}, **{n: "location" for n in LOCATION_NAMES}}
_PLURAL_EXCEPTIONS = {"mission patch": "mission patches", "woman": "women"}
_OPEN, _CLOSE = "\uff08", "\uff09"
_NAME_RE = re.compile(r"(?<![\w'])(" + "|".join(
    re.escape(n) for n in sorted(_KIND_OF, key=len, reverse=True)) + r")(?![\w])")
_ABSENT_AFTER = re.compile(r"\b(?:remembers|misses|mourns|thinks of|looks like|resembles)\b")
#: the noun of a temporal reference -> the kind (as :func:`name_kind` says) it refers to.
REFERENCE_NOUNS = {"figure": "character", "prop": "prop", "group": "group", "place": "location"}
_REFERENCE_RE = re.compile(r"(?<![\w'])[Tt]he (" + "|".join(REFERENCE_NOUNS) +
                           r") from the opening(?![\w])")
_ABSENT_BEFORE = re.compile(r"\b(?:is|are) (?:gone|lost)\b")


def name_kind(name: str) -> str | None:
    """``character``, ``prop``, ``group`` or ``location`` for a vocabulary name, else None.

    Example:
        >>> name_kind("Mara"), name_kind("Pips"), name_kind("Old Quarry"), name_kind("Zed")
        ('character', 'group', 'location', None)
    """
    return _KIND_OF.get(name)


def _plural(label: str) -> str:
    return _PLURAL_EXCEPTIONS.get(label, label + "s")


def _article(word: str) -> str:
    return "An" if word[:1].lower() in "aeiou" else "A"


@dataclass(frozen=True)
class Appearance:
    """A parsed appearance phrase.

    Attributes:
        asset: entity asset id, or ``None`` for a location.
        state: sim state of the asset (``base`` for locations).
        count: copies shown (1 unless a counted group).
        place: place id for a location, else ``None``.
    """

    asset: str | None
    state: str = "base"
    count: int = 1
    place: str | None = None


def appearance_text(asset: str, state: str = "base", count: int = 1) -> str:
    """The phrase for an entity asset in a state (``count > 1``: a counted group).

    Example:
        >>> appearance_text("cat", "accessory"), appearance_text("cup", "recoloured:red")
        ('A cat wearing a party hat.', 'A cup painted red.')
        >>> appearance_text("gold_coin", count=3), appearance_text("old_coin", "broken")
        ('Three gold coins.', 'An old coin with a crack across it.')
    """
    a = ENTITIES[asset]
    if count > 1:
        word = {v: k for k, v in COUNT_WORDS.items()}[count]
        return f"{word.capitalize()} {_plural(a.label)}."
    head = f"{_article(a.label)} {a.label}"
    if state.startswith("recoloured:"):
        return f"{head} painted {state.split(':', 1)[1]}."
    tail = {"accessory": " wearing a party hat" if a.kind == "character" else " with a star sticker",
            "broken": " with a crack across it", "closed": " with its lid on"}.get(state, "")
    return f"{head}{tail}."


def place_text(place: str) -> str:
    """The phrase for a location: ``A <place name>.``

    Example:
        >>> place_text("gravel")
        'A gravel yard.'
    """
    name = PLACES[place].name
    return f"{_article(name)} {name}."


def _phrase_table() -> dict[str, Appearance]:
    table: dict[str, Appearance] = {}
    for aid, a in ENTITIES.items():
        states = ["base", "accessory", "broken", *(f"recoloured:{c}" for c in COLOURS)]
        if a.container:
            states.append("closed")
        for st in states:
            table[_key(appearance_text(aid, st))] = Appearance(aid, st)
        for n in COUNT_WORDS.values():
            table[_key(appearance_text(aid, count=n))] = Appearance(aid, "base", n)
    for pid in PLACES:
        table[_key(place_text(pid))] = Appearance(None, "base", 1, pid)
    return table


def _key(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(". ")


_PHRASES = _phrase_table()


def appearance_phrases() -> dict[str, Appearance]:
    """Every phrase of the grammar under its normalised key (a copy).

    The key of a text is its lower-case form with runs of whitespace made one space
    and trailing full stops and spaces dropped; :func:`parse_appearance` looks it up.

    Example:
        >>> appearance_phrases()["a cup painted red"]
        Appearance(asset='cup', state='recoloured:red', count=1, place=None)
    """
    return dict(_PHRASES)


def parse_appearance(text: str | None) -> Appearance | None:
    """Read an appearance phrase; anything outside the grammar gives ``None``.

    Example:
        >>> parse_appearance("a cup painted RED")
        Appearance(asset='cup', state='recoloured:red', count=1, place=None)
        >>> parse_appearance("Three gold coins.").count, parse_appearance("A lawn.").place
        (3, 'lawn')
        >>> parse_appearance("A tall steady fisherwoman.") is None
        True
    """
    if not isinstance(text, str):
        return None
    return _PHRASES.get(_key(text))


@dataclass(frozen=True)
class Mention:
    """One vocabulary name in a prompt.

    Attributes:
        name: the name as in the vocabulary.
        kind: ``character``, ``prop``, ``group`` or ``location``.
        present: ``False`` when the clause says it is gone or only remembered.
        appearance: the bracketed text right after the name, if any.
        parsed: that text read by :func:`parse_appearance` (``None`` if absent or
            outside the grammar).
    """

    name: str
    kind: str
    present: bool
    appearance: str | None = None
    parsed: Appearance | None = None


def _clauses(prompt: str) -> list[str]:
    out, depth, cur = [], 0, []
    for ch in prompt:
        depth += ch == _OPEN
        depth -= ch == _CLOSE and depth > 0
        cur.append(ch)
        if depth == 0 and ch in ".;!":
            out.append("".join(cur))
            cur = []
    out.append("".join(cur))
    return [c for c in out if c.strip()]


def _clause_hits(prompt: str, pattern: re.Pattern[str]):
    """``(clause, plain clause, match, absent)`` for every match of ``pattern`` outside
    brackets, clause by clause (the presence rules of the module docstring)."""
    for clause in _clauses(prompt or ""):
        plain = re.sub(f"{_OPEN}[^{_CLOSE}]*{_CLOSE}?", lambda m: " " * len(m.group(0)), clause)
        after = _ABSENT_AFTER.search(plain)
        before = _ABSENT_BEFORE.search(plain)
        for m in pattern.finditer(plain):
            absent = (after is not None and m.start() > after.start()) or (
                before is not None and m.end() <= before.start()
                and not plain[m.end():before.start()].strip())
            yield clause, m, absent


def parse_mentions(prompt: str) -> list[Mention]:
    """Every vocabulary name in a prompt, in order, first mention of each name only.

    Example:
        >>> ms = parse_mentions("At the Old Quarry（A gravel yard.）, Mara waits; "
        ...                     "Ada remembers Zephyr.")
        >>> [(m.name, m.present, m.parsed.place if m.parsed else None) for m in ms]
        [('Old Quarry', True, 'gravel'), ('Mara', True, None), ('Ada', True, None), ('Zephyr', False, None)]
        >>> [(m.name, m.present) for m in parse_mentions("Ada sees that Vesta is gone.")]
        [('Ada', True), ('Vesta', False)]
        >>> [(m.name, m.present) for m in parse_mentions("Orbit looks like Vesta, but it is not.")]
        [('Orbit', True), ('Vesta', False)]
    """
    seen: dict[str, Mention] = {}
    for clause, m, absent in _clause_hits(prompt, _NAME_RE):
        name = m.group(1)
        app = None
        if clause[m.end():m.end() + 1] == _OPEN:
            close = clause.find(_CLOSE, m.end())
            app = clause[m.end() + 1: close if close >= 0 else len(clause)]
        if name in seen and (seen[name].present or absent):
            continue
        seen[name] = Mention(name, _KIND_OF[name], not absent, app, parse_appearance(app))
    return list(seen.values())


@dataclass(frozen=True)
class TemporalReference:
    """A name-free mention of an earlier entity: ``the <noun> from the opening``.

    Attributes:
        phrase: the phrase as written, e.g. ``"the group from the opening"``.
        kind: the kind it refers to (``character``, ``prop``, ``group`` or ``location``).
        present: ``False`` when the clause says it is gone or only remembered.
    """

    phrase: str
    kind: str
    present: bool


def temporal_reference_text(kind: str) -> str:
    """The temporal-reference phrase of a kind (lower case, for use inside a sentence).

    Example:
        >>> temporal_reference_text("group"), temporal_reference_text("location")
        ('the group from the opening', 'the place from the opening')
    """
    noun = {k: n for n, k in REFERENCE_NOUNS.items()}.get(kind)
    if noun is None:
        raise ValueError(f"temporal reference: unknown kind {kind!r}; expected one of "
                         f"{sorted(REFERENCE_NOUNS.values())}")
    return f"the {noun} from the opening"


def parse_temporal_references(prompt: str) -> list[TemporalReference]:
    """Every temporal reference of a prompt, in order, first one of each kind only.

    What each refers to is for the reader of the story to resolve (module docstring);
    the sim generator resolves it with the rollout it has written so far.

    Example:
        >>> refs = parse_temporal_references("Back at the place from the opening, Ada finds "
        ...                                  "the Pips; Ada remembers the figure from the opening.")
        >>> [(r.phrase, r.kind, r.present) for r in refs]
        [('the place from the opening', 'location', True), ('the figure from the opening', 'character', False)]
    """
    seen: dict[str, TemporalReference] = {}
    for _, m, absent in _clause_hits(prompt, _REFERENCE_RE):
        kind = REFERENCE_NOUNS[m.group(1)]
        if kind in seen and (seen[kind].present or absent):
            continue
        seen[kind] = TemporalReference(m.group(0), kind, not absent)
    return list(seen.values())
