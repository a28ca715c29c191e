"""Prompt-channel audit: which prompts of which arm state the hidden target s*.

**Vocabulary of s*** (:func:`target_terms`), from the card's ``target`` and ``objects``:
for each object in ``target.contents`` its noun, its plural (default ``noun + "s"``), its
``aliases`` and ``colour`` if the card gives them, and its count as digits and as an
English number word (``2``, ``two``; words up to twenty). An empty target (nothing in
the revealed container) has the terms ``empty``, ``nothing``, ``none``, ``zero``, ``0``.
Container nouns and colours are *not* target terms: the reveal must name the container
it opens.

**Matching**: whole words, any case: a term matches when no word character touches it
on either side; the words of a multi-word term may be separated by any run of spaces or
hyphens (``gold coin`` matches ``Gold-coin``).

**Verdicts**, per (arm, shot). Every arm reuses the locked setup and gap shots, so
those two prompts are audited once per card and listed under each arm:

* ``gap`` with a term: ``leak`` (error) -- the gap must not show or say the target;
* ``setup`` with a term: ``setup`` (allowed) -- the setup stages the hidden change, and
  the paper states setup is not a leak;
* ``reveal`` of ``baseline``, ``open_and_hold``, ``target_withheld_rewrite`` with a
  term: ``leak`` (error) -- these arms are answer-free;
* ``reveal`` of ``answer_only``, ``same_sentence_resample``, ``diagnosis_rewrite`` with
  a term: ``names_target`` (marked, not an error); *without* one: ``target_missing``
  (warning) -- the audit is meant to confirm the target is in these templates;
* an arm not in :data:`~vidmem.benchmarks.mist.schema.ARMS`: ``unknown_arm`` (warning);
* otherwise ``clean``.

Every rule is in :data:`PROTOCOL` with its reason and source.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from vidmem.benchmarks.contract import Problem
from vidmem.benchmarks.mist.schema import ARMS, ARMS_NAMING_TARGET, ARMS_WITHOUT_TARGET, Card

__all__ = ["NUMBER_WORDS", "PROTOCOL", "AuditRow", "CardAudit", "MistAudit", "audit_card",
           "audit_cards", "find_terms", "target_terms"]

NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
                "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen",
                "sixteen", "seventeen", "eighteen", "nineteen", "twenty")
EMPTY_TERMS = ("empty", "nothing", "none", "zero", "0")

PROTOCOL: dict[str, dict[str, str]] = {
    "vocabulary": {
        "rule": "target nouns (singular, plural, aliases), the target object's colour, and "
                "its count as digits and number words; an empty target: empty/nothing/none/"
                "zero/0",
        "reason": "the withheld arm forbids every target noun, colour and count",
        "source": "PROTOCOLS.md section 5 'prompt-channel audit'; seed 001 section 4 "
                  "('forbids every target noun, color, and count'); sim_build's audit terms",
    },
    "matching": {
        "rule": "whole word, case-insensitive; multi-word terms match across spaces/hyphens",
        "reason": "a substring match would flag 'one' inside 'stone'",
        "source": "decided here (the card is silent)",
    },
    "must_not_name": {
        "rule": "gap shot and the reveal of baseline, open_and_hold, target_withheld_rewrite "
                "must not contain a target term (error)",
        "reason": "baseline and gap never contain the answer; open-and-hold is answer-free; "
                  "the withheld rewrite is audited to 0 leaks",
        "source": "PROTOCOLS.md section 5; seed 001 sections 3-4",
    },
    "may_name": {
        "rule": "answer_only, same_sentence_resample, diagnosis_rewrite may name the target; "
                "marked, and a warning when they do not",
        "reason": "the paper marks the arms with target access; the audit confirms the target "
                  "in the M3 and same-sentence templates",
        "source": "seed 001 section 3 ('Table 3 marks that access'; audit confirms the target)",
    },
    "setup": {
        "rule": "a target term in the setup prompt is listed as 'setup', not an error",
        "reason": "the setup shot stages the hidden change; setup is not a leak",
        "source": "seed 001 section 4 ('Setup is not a leak')",
    },
}

_ERRORS = {"leak"}
_WARNINGS = {"target_missing", "unknown_arm"}


def target_terms(card: Card) -> tuple[str, ...]:
    """The words that state s* (module docstring), sorted, lower case.

    Example:
        >>> from vidmem.benchmarks.mist.sim_build import plan_card
        >>> target_terms(Card.model_validate(plan_card(0, 0)))
        ('2', 'snake sign', 'snake signs', 'two')
    """
    if not card.target.contents:
        return EMPTY_TERMS
    objs = {o.id: o for o in card.objects}
    terms: set[str] = set()
    for item in card.target.contents:
        o = objs.get(item.object)
        nouns = [item.noun] if o is None else [o.noun, o.plural or f"{o.noun}s", *o.aliases]
        if o is not None and o.colour:
            nouns.append(o.colour)
        terms.update(n for n in nouns if n and n.strip())
        terms.add(str(item.count))
        if item.count < len(NUMBER_WORDS):
            terms.add(NUMBER_WORDS[item.count])
    return tuple(sorted({t.strip().lower() for t in terms}))


def _pattern(term: str) -> re.Pattern[str]:
    words = [re.escape(w) for w in re.split(r"[\s-]+", term.strip()) if w]
    return re.compile(r"(?<!\w)" + r"[\s-]+".join(words) + r"(?!\w)", re.IGNORECASE)


def find_terms(prompt: str, terms: Iterable[str]) -> tuple[str, ...]:
    """The terms found in ``prompt`` (whole words, any case), in the order given.

    Example:
        >>> find_terms("Two Snake-signs rest on the stone.", ["two", "snake sign", "one"])
        ('two',)
        >>> find_terms("Two snake-signs.", ["snake signs"])
        ('snake signs',)
    """
    return tuple(t for t in terms if _pattern(t).search(prompt))


@dataclass(frozen=True)
class AuditRow:
    """One (arm, shot) of one card: the prompt's target terms and the verdict."""

    case_id: str
    arm: str
    shot: str
    terms: tuple[str, ...]
    verdict: str

    def to_dict(self) -> dict[str, Any]:
        return {"case_id": self.case_id, "arm": self.arm, "shot": self.shot,
                "terms": list(self.terms), "verdict": self.verdict}


@dataclass(frozen=True)
class CardAudit:
    """The audit of one card: its target vocabulary and one row per (arm, shot)."""

    case_id: str
    target_terms: tuple[str, ...]
    rows: tuple[AuditRow, ...]

    @property
    def leaks(self) -> tuple[AuditRow, ...]:
        return tuple(r for r in self.rows if r.verdict in _ERRORS)

    @property
    def ok(self) -> bool:
        return not self.leaks


@dataclass(frozen=True)
class MistAudit:
    """The audit of a set of cards (:func:`audit_cards`)."""

    cards: tuple[CardAudit, ...]
    problems: tuple[Problem, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """True when no card has a leak (warnings allowed)."""
        return not any(p.severity == "error" for p in self.problems)

    def rows(self) -> list[AuditRow]:
        return [r for c in self.cards for r in c.rows]

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "protocol": PROTOCOL,
                "cards": [{"case_id": c.case_id, "target_terms": list(c.target_terms),
                           "ok": c.ok, "rows": [r.to_dict() for r in c.rows]}
                          for c in self.cards],
                "problems": [str(p) for p in self.problems]}


def _verdict(arm: str, shot: str, found: tuple[str, ...]) -> str:
    if shot == "setup":
        return "setup" if found else "clean"
    if shot == "gap":
        return "leak" if found else "clean"
    if arm in ARMS_WITHOUT_TARGET:
        return "leak" if found else "clean"
    if arm in ARMS_NAMING_TARGET:
        return "names_target" if found else "target_missing"
    return "unknown_arm"


def audit_card(card: Card | Mapping[str, Any]) -> CardAudit:
    """Audit one card (rules in the module docstring).

    Example:
        >>> from vidmem.benchmarks.mist.sim_build import plan_card
        >>> raw = plan_card(0, 0)
        >>> audit_card(raw).ok
        True
        >>> raw["shots"][1]["prompt"] += " Two snake signs wait inside."
        >>> [(r.arm, r.shot, r.terms) for r in audit_card(raw).leaks][:1]
        [('baseline', 'gap', ('snake signs', 'two'))]
    """
    card = card if isinstance(card, Card) else Card.model_validate(card)
    terms = target_terms(card)
    shared = {s: find_terms(card.shot_prompt(s), terms) for s in ("setup", "gap")}
    rows = []
    for arm, prompt in card.arm_prompts().items():
        for shot in ("setup", "gap"):
            rows.append(AuditRow(card.case_id, arm, shot, shared[shot],
                                 _verdict(arm, shot, shared[shot])))
        found = find_terms(prompt, terms)
        rows.append(AuditRow(card.case_id, arm, "reveal", found, _verdict(arm, "reveal", found)))
    return CardAudit(card.case_id, terms, tuple(rows))


def audit_cards(cards: Iterable[Card | Mapping[str, Any]]) -> MistAudit:
    """Audit every card; each leak is an error :class:`Problem`, each doubt a warning.

    The gap leak, shared by every arm, is reported once per card (field ``shots.gap``);
    a reveal leak once per arm (``reveal_prompts.<arm>``).
    """
    audits, problems = [], []
    for card in cards:
        a = audit_card(card)
        audits.append(a)
        gap_done = False
        for r in a.rows:
            if r.shot == "gap" and r.verdict == "leak":
                if not gap_done:
                    problems.append(Problem(a.case_id, "shots.gap", "the gap prompt states the "
                                            f"target ({', '.join(r.terms)}); remove it: the gap "
                                            "must not show s*"))
                    gap_done = True
            elif r.shot == "reveal" and r.verdict in _ERRORS:
                problems.append(Problem(a.case_id, f"reveal_prompts.{r.arm}", f"the {r.arm} "
                                        f"arm is answer-free but its reveal prompt states the "
                                        f"target ({', '.join(r.terms)}); remove those words"))
            elif r.verdict in _WARNINGS:
                msg = (f"the {r.arm} arm should state the target but names none of "
                       f"{list(a.target_terms)}" if r.verdict == "target_missing" else
                       f"arm {r.arm!r} is not one of {list(ARMS)}; it is listed, not judged")
                problems.append(Problem(a.case_id, f"reveal_prompts.{r.arm}", msg, "warning"))
    return MistAudit(tuple(audits), tuple(problems))
