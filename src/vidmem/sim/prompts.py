"""The small controlled prompt grammar the sim builders write and the sim generator reads.

A prompt is split into sentences (after ``.``, ``!`` or ``?``); each sentence is
lower-cased, its spacing collapsed and its final punctuation dropped, then matched
against these forms (``<label>`` is an entity's label or alias, ``<place>`` a place's
name or alias, see :mod:`vidmem.sim.assets`):

==============================================  =========================================
sentence                                        action
==============================================  =========================================
``The <label> comes back into view.``           ``reappear``: bring that entity back
                                                (``comes`` may also be ``walks``,
                                                ``slides`` or ``moves``)
``The camera pans back to the <place>.``        ``revisit``: turn back to that place
                                                (``pans`` may also be ``turns``)
one of the six loop prompts                     ``loop``: follow that camera loop
(:data:`vidmem.sim.loops.LOOPS`)
==============================================  =========================================

Any other sentence is ignored, never guessed at; a prompt with no recognised sentence
makes the generator simply continue the last view. Names that do not exist in the world
being continued are ignored the same way (the generator reports them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vidmem.sim.loops import loop_for_prompt

__all__ = ["Action", "parse_prompt", "reappear_prompt", "revisit_prompt"]

_REAPPEAR = re.compile(r"^the (?P<name>.+?) (?:comes|walks|slides|moves) back into view$")
_REVISIT = re.compile(r"^the camera (?:pans|turns) back to the (?P<name>.+)$")


@dataclass(frozen=True)
class Action:
    """One recognised sentence.

    Attributes:
        kind: ``reappear``, ``revisit`` or ``loop``.
        name: the entity label, place name or loop id it names.
        sentence: the sentence as written.
    """

    kind: str
    name: str
    sentence: str


def reappear_prompt(label: str) -> str:
    """``"The <label> comes back into view."``"""
    return f"The {label} comes back into view."


def revisit_prompt(place_name: str) -> str:
    """``"The camera pans back to the <place>."``"""
    return f"The camera pans back to the {place_name}."


def _normal(sentence: str) -> str:
    return " ".join(sentence.lower().replace("\u2019", "'").split()).rstrip(".!?;: ")


def parse_prompt(prompt: str) -> tuple[list[Action], list[str]]:
    """Recognise the grammar's sentences in a prompt.

    Args:
        prompt: the text a generator received.

    Returns:
        ``(actions, ignored)``: the recognised actions in order, and the sentences that
        were not recognised.

    Example:
        >>> acts, ignored = parse_prompt("The red cup comes back into view. Birds sing.")
        >>> [(a.kind, a.name) for a in acts], ignored
        ([('reappear', 'red cup')], ['Birds sing.'])
        >>> parse_prompt("Turn away and back to the start twice in a row.")[0][0].name
        'double_yaw_loop'
    """
    actions: list[Action] = []
    ignored: list[str] = []
    whole = loop_for_prompt(prompt) if prompt else None
    if whole:
        return [Action("loop", whole, prompt.strip())], []
    for raw in re.split(r"(?<=[.!?])\s+", (prompt or "").strip()):
        if not raw.strip():
            continue
        text = _normal(raw)
        loop = loop_for_prompt(raw)
        m_back = _REAPPEAR.match(text)
        m_rev = _REVISIT.match(text)
        if loop:
            actions.append(Action("loop", loop, raw))
        elif m_rev:
            actions.append(Action("revisit", m_rev.group("name"), raw))
        elif m_back:
            actions.append(Action("reappear", m_back.group("name"), raw))
        else:
            ignored.append(raw)
    return actions, ignored
