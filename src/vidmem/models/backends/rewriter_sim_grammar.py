"""``rewriter/sim-grammar``: the M3-Agent's rewrite step, as fixed rules for the sim's prompts.

A deterministic stand-in for ``rewriter/openai`` (the ``rewriter`` role,
:class:`vidmem.models.protocols.Rewriter`) for reveal instructions written in the sim's
controlled grammar (``The cat opens the red box.``). It reads the request's fields,
never its rendered ``prompt``, and changes only the failed operation and its last-frame
evidence clause:

* the instruction is ``<head>[ and <operation clauses>][; <evidence clauses>].``, the
  head being ``<actor> opens|lifts|uncovers the <container>``; a text without such a
  head gets one from the record (``actor``; the container from
  ``required_last_frame_evidence`` ``the open <container> with ...`` or ``binding``
  ``... in the <container>``), the old text kept as an evidence clause;
* the failure mode adds one operation clause (after the head) and one evidence clause
  (at the end), :data:`CLAUSES`; clauses already in the text stay, so fixes add up
  over tries; when both are already there, the next variant is used;
* ``wrong_binding`` names the container the diagnosis saw open instead when its
  evidence says ``the <noun> is open instead``; ``wrong_binding`` and
  ``missing_departure`` also state the record's required evidence (``the last frame
  shows the open red box with two snake signs visible inside``) -- unless the target is
  withheld;
* **withheld target**: nothing from the record's object, binding or evidence is
  written, and clauses of the old text that state a target word (the record's object
  noun and its plural, a number, ``empty``/``nothing``/``none``) are dropped.

``attempt`` picks the variant (a retry after a rejection gets another wording);
``success`` returns the instruction unchanged; an unknown failure mode is
``status="error"``. Never raises for bad requests.
"""

from __future__ import annotations

import re
from typing import Any

from vidmem.models.backends.base import BackendBase
from vidmem.models.protocols import RewriteRequest, RewriteResult

__all__ = ["CLAUSES", "SimGrammarRewriter", "rewrite_instruction"]

#: failure mode -> variants of (operation clause, evidence clause); ``{c}`` = container
CLAUSES: dict[str, tuple[tuple[str, str], ...]] = {
    "no_action": (("holds the lid open", "the inside stays visible until the end"),
                  ("lifts the lid all the way", "the open {c} stays in view until the end")),
    "return_to_intact": (("keeps it open, never closing the lid again",
                          "the {c} is still open at the end"),
                         ("does not close it again", "the lid stays off until the end")),
    "occluded_view": (("then steps aside", "the inside of the {c} stays clearly visible until "
                       "the end"),
                      ("then moves out of the way", "the inside of the {c} is in full view at "
                       "the end")),
    "wrong_binding": (("leaves {other} closed", "the open {c} shows its inside until the end"),
                      ("touches only the {c}", "only the {c} stands open at the end")),
    "missing_departure": (("opens it only after every move is over",
                           "the inside of the {c} stays visible until the end"),
                          ("waits until the last move is done",
                           "the open {c} shows its inside as it is after the last move")),
}
_HEAD = re.compile(r"^\s*(?P<head>.+?\b(?:opens|lifts|uncovers)\s+the\s+(?P<c>[\w -]+?))"
                   r"(?=\s+and\b|\s*[;,.]|\s*$)", re.I)
_NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
_EMPTY = ("empty", "nothing", "none")


def _plural(noun: str) -> str:
    return noun + ("es" if noun.endswith(("s", "sh", "ch", "x")) else "s")


def _target_words(record: dict[str, Any]) -> list[str]:
    obj = str(record.get("object") or "").strip().lower()
    words = [*_NUMBERS, *_EMPTY]
    return words + ([obj, _plural(obj)] if obj else [])


def _states_target(text: str, record: dict[str, Any]) -> bool:
    return bool(re.search(r"\d", text)) or any(
        re.search(rf"(?<!\w){re.escape(w)}(?!\w)", text, re.I) for w in _target_words(record))


def _container_from(record: dict[str, Any]) -> str | None:
    m = re.search(r"\bthe open ([\w -]+?) with\b", str(record.get("required_last_frame_evidence")
                                                        or ""), re.I)
    m = m or re.search(r"\bin the ([\w -]+?)\s*$", str(record.get("binding") or ""), re.I)
    return m.group(1) if m else None


def rewrite_instruction(req: RewriteRequest) -> tuple[str, dict[str, Any]]:
    """The new instruction for ``req`` and what was done (rules in the module docstring).

    Raises:
        ValueError: an unknown failure mode, or no head can be built.

    Example:
        >>> rec = {"actor": "the cat", "object": "snake sign", "binding": "snake sign in the "
        ...        "red box", "operation": "count what is inside",
        ...        "required_last_frame_evidence": "the open red box with two snake signs "
        ...        "visible inside"}
        >>> rewrite_instruction(RewriteRequest("The cat opens the red box.", rec, "no_action",
        ...                                    "closed"))[0]
        'The cat opens the red box and holds the lid open; the inside stays visible until the end.'
        >>> rewrite_instruction(RewriteRequest("The cat opens the red box.", rec,
        ...                                    "wrong_binding", "the cup is open instead"))[0]
        'The cat opens the red box and leaves the cup closed; the open red box shows its inside \
until the end; the last frame shows the open red box with two snake signs visible inside.'
    """
    mode, record = req.failure_mode, dict(req.record or {})
    if mode == "success":
        return req.instruction, {"mode": mode, "added": []}
    if mode not in CLAUSES:
        raise ValueError(f"unknown failure mode {mode!r}; expected one of "
                         f"{', '.join([*CLAUSES, 'success'])}")
    text = " ".join(str(req.instruction).split()).rstrip(" .")
    m = _HEAD.match(text)
    if m:
        head, container = m.group("head"), m.group("c")
        first, _, rest = text.partition(";")
        ops = first[len(head):].strip()
        evs = [e.strip() for e in rest.split(";") if e.strip()]
    else:
        container = _container_from(record)
        actor = str(record.get("actor") or "").strip()
        if not container or not actor:
            raise ValueError("no '<actor> opens the <container>' head in the instruction, and "
                             "the record names no actor and container to build one")
        head, ops, evs = f"{actor[0].upper()}{actor[1:]} opens the {container}", "", [text]
    if req.withhold_target:
        evs = [e for e in evs if not _states_target(e, record)]
        if _states_target(ops, record):
            ops = ""
    other = "every other container"
    seen = re.search(r"\bthe ([\w -]+?) is open instead\b", str(req.evidence or ""), re.I)
    if seen and seen.group(1).lower() != container.lower():
        other = f"the {seen.group(1)}"
    variants = CLAUSES[mode]
    start = max(0, int(req.attempt or 1) - 1)
    order = [variants[(start + j) % len(variants)] for j in range(len(variants))]
    chosen = None
    for op, ev in order:
        op, ev = op.format(c=container, other=other), ev.format(c=container, other=other)
        if op.lower() not in text.lower() or ev.lower() not in text.lower():
            chosen = (op, ev)
            break
    op, ev = chosen or (order[0][0].format(c=container, other=other),
                        order[0][1].format(c=container, other=other))
    added = []
    if op.lower() not in ops.lower():
        ops = f"{ops} and {op}" if ops else f"and {op}"
        added.append(op)
    if ev.lower() not in " ".join(evs).lower():
        evs.append(ev)
        added.append(ev)
    wanted = str(record.get("required_last_frame_evidence") or "").strip().rstrip(".")
    if mode in ("wrong_binding", "missing_departure") and not req.withhold_target and wanted:
        clause = f"the last frame shows {wanted}"
        if clause.lower() not in " ".join(evs).lower():
            evs.append(clause)
            added.append(clause)
    out = head + (f" {ops}" if ops else "") + "".join(f"; {e}" for e in evs) + "."
    for old in req.rejected or []:
        if " ".join(str(old).split()).lower() == out.lower():
            out = out[:-1] + "; the move is done slowly and in full view."
    return out, {"mode": mode, "added": added, "container": container}


class SimGrammarRewriter(BackendBase):
    """``rewriter/sim-grammar``: deterministic rewrites of the sim's reveal grammar.

    Args:
        weights: refused (rule-based: there are none).
        device, dtype, batch_size: the common backend arguments, recorded only.
    """

    name = "rewriter/sim-grammar"
    default_weights = None
    official = False

    def __init__(self, *, weights: Any = None, device: str = "cpu", dtype: str = "float32",
                 batch_size: int = 16) -> None:
        self._refuse_weights(weights, subject="the sim-grammar rewriter",
                             instead="rewriter/openai")
        super().__init__(weights=None, device=device, dtype=dtype, batch_size=batch_size,
                         kind="deterministic rules for the sim grammar, not an LLM")

    def rewrite(self, request: RewriteRequest) -> RewriteResult:
        """Rewrite ``request.instruction`` for its failure mode (module docstring)."""
        try:
            text, what = rewrite_instruction(request)
        except ValueError as exc:
            return RewriteResult("error", None, f"{self.name}: {exc}", None)
        except Exception as exc:  # a bug must not stop the loop; report it as an answer
            return RewriteResult("error", None, f"{self.name} internal error: "
                                 f"{type(exc).__name__}: {exc}", None)
        return RewriteResult("ok", text, None, what)
