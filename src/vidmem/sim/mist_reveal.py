"""Container shots' rules: does the reveal move happen, and what does memory show inside.

**Execution rule** (a baseline video model that often skips the move unless told it
precisely). The reveal move has four parts, and each fails on its own with a hazard
that a *clause* naming that part lowers (clauses: :data:`vidmem.sim.mist_grammar.CLAUSES`):

=========  ==========================================  =======  ===========
part       failure when it fires                        hazard   with clause
=========  ==========================================  =======  ===========
``bind``   another container is opened (>= 2 in scene)   0.10     0.03
``open``   nothing is opened                             0.40     0.04
``hold``   opened, then closed again before the end      0.35     0.04
``view``   opened, the actor ends in front of the inside 0.25     0.04
=========  ==========================================  =======  ===========

Every part is drawn (one uniform number each, in this order, from the request's
stream); the failure shown is the first part that fired. So the baseline sentence
(``The cat opens the red box.``) executes with probability 0.60 * 0.65 * 0.75 = 0.29
(0.26 with two containers), and the explicit one (``... and holds it open so that the
inside is clearly visible until the end.``, clauses open, hold, view) with 0.96^3 =
0.88 (0.80 with two containers). A prompt that asks for no opening executes never.

**Memory** of the contents (what an executed opening shows inside): a prompt that
states the contents of the opened container is drawn as stated (a model copies its
prompt); otherwise the knob's fidelity ``f = knob.fidelity(gap)``, ``gap`` the seconds
from when the contents were last visible to the opening, decides: with probability
``f`` the true contents; otherwise a *forgotten* version -- ``stale`` (the contents
before the last move that touched the container), else ``swapped`` (another
container's, when they differ), else ``miscount`` (one copy more, or less at four, or
one copy of the scene's first object in an empty container).

**Failure modes** (the diagnosis vocabulary): ``wrong_container`` -> ``wrong_binding``,
``no_action`` -> ``no_action``, ``brief_open`` -> ``return_to_intact``, ``occluded``
-> ``occluded_view``; an executed move showing forgotten contents -> ``missing_departure``
(stale) or ``wrong_binding`` (swapped, miscount); else ``success``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vidmem.sim.memory import MemoryKnob

__all__ = ["FAILURE_OF", "HAZARDS", "PARTS", "draw_move", "execution_probability",
           "failure_mode", "recall_contents"]

#: part -> (hazard without its clause, hazard with it)
HAZARDS: dict[str, tuple[float, float]] = {"bind": (0.10, 0.03), "open": (0.40, 0.04),
                                           "hold": (0.35, 0.04), "view": (0.25, 0.04)}
#: the failure each part's hazard produces, in the order parts are drawn
PARTS = (("bind", "wrong_container"), ("open", "no_action"), ("hold", "brief_open"),
         ("view", "occluded"))
#: sim failure -> the diagnosis failure mode
FAILURE_OF = {"wrong_container": "wrong_binding", "no_action": "no_action",
              "brief_open": "return_to_intact", "occluded": "occluded_view"}


def _hazards(clauses: tuple[str, ...] | list[str], n_containers: int) -> dict[str, float]:
    out = {part: HAZARDS[part][1 if part in clauses else 0] for part, _ in PARTS}
    if n_containers < 2:
        out["bind"] = 0.0
    return out


def execution_probability(clauses: tuple[str, ...] | list[str], n_containers: int,
                          asked: bool = True) -> float:
    """Probability that the reveal move is executed (rule in the module docstring).

    Example:
        >>> round(execution_probability((), 1), 4), round(execution_probability((), 2), 4)
        (0.2925, 0.2633)
        >>> round(execution_probability(("hold", "open", "view"), 1), 4)
        0.8847
        >>> execution_probability(("open",), 1, asked=False)
        0.0
    """
    if not asked:
        return 0.0
    p = 1.0
    for h in _hazards(tuple(clauses), n_containers).values():
        p *= 1.0 - h
    return p


def draw_move(named: str | None, asked: bool, clauses: tuple[str, ...],
              container_ids: list[str], rng: np.random.Generator) -> dict[str, Any]:
    """Draw what the reveal does (module docstring).

    Args:
        named: the container the prompt acts on (``None``: none named).
        asked: whether the prompt asks for an opening at all.
        clauses: the prompt's move clauses.
        container_ids: the scene's containers.
        rng: the request's stream (four uniforms, then one choice if needed).

    Returns:
        ``{"asked", "named", "clauses", "hazards", "p_execute", "fired", "failure",
        "executed", "opened", "why"}`` (``opened``: the container that opens, if any).
    """
    hazards = _hazards(clauses, len(container_ids))
    draws = {part: float(rng.random()) for part, _ in PARTS}
    fired = [part for part, _ in PARTS if draws[part] < hazards[part]]
    if named is None and asked:
        named = container_ids[int(rng.integers(len(container_ids)))]
    failure = None
    if not asked:
        failure, why = "no_action", "the prompt asks for no opening"
    elif fired:
        failure = dict(PARTS)[fired[0]]
        why = (f"the '{fired[0]}' part failed (hazard {hazards[fired[0]]:.2f}"
               f"{'' if fired[0] in clauses else ', no clause names it'})")
    else:
        why = "every part of the move was executed"
    opened = None
    if failure in (None, "brief_open", "occluded"):
        opened = named
    elif failure == "wrong_container":
        others = [c for c in container_ids if c != named]
        opened = others[int(rng.integers(len(others)))]
    return {"asked": asked, "named": named, "clauses": list(clauses),
            "hazards": {k: round(v, 4) for k, v in hazards.items()},
            "p_execute": round(execution_probability(clauses, len(container_ids), asked), 6),
            "fired": fired, "failure": failure, "executed": failure is None,
            "opened": opened, "why": why}


def _same(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    def key(x: list[dict[str, Any]]) -> list[tuple[str, int]]:
        return sorted((str(i["asset"]), int(i["count"])) for i in x if int(i["count"]) > 0)
    return key(a) == key(b)


def recall_contents(scene: dict[str, Any], cid: str, knob: MemoryKnob, gap_seconds: float,
                    rng: np.random.Generator,
                    stated: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """What the opened container ``cid`` shows inside (memory rule of the module doc).

    Returns:
        ``{"shown": [{"asset", "count"}], "true", "source": "prompt" | "memory" |
        "forgotten", "how": None | "stale" | "swapped" | "miscount", "fidelity",
        "gap_seconds"}``.

    Example:
        >>> from vidmem.sim.memory import parse_memory
        >>> scene = {"contents": {"A": [{"asset": "logo", "count": 2}]}, "before_move": {},
        ...          "objects": [{"asset": "logo"}]}
        >>> r = recall_contents(scene, "A", parse_memory("none"), 7.0, np.random.default_rng(0))
        >>> r["source"], r["how"], r["shown"]
        ('forgotten', 'miscount', [{'asset': 'logo', 'count': 3}])
    """
    true = [dict(x) for x in scene["contents"].get(cid, [])]
    f = float(knob.fidelity(gap_seconds))
    out = {"true": true, "fidelity": round(f, 6), "gap_seconds": round(float(gap_seconds), 6),
           "how": None}
    if stated is not None:
        return {**out, "shown": [dict(x) for x in stated], "source": "prompt"}
    if f >= 1.0 or float(rng.random()) < f:
        return {**out, "shown": true, "source": "memory"}
    before = scene.get("before_move", {})
    others = [c for c, items in sorted(scene["contents"].items())
              if c != cid and not _same(items, true)]
    if cid in before and not _same(before[cid], true):
        shown, how = [dict(x) for x in before[cid]], "stale"
    elif others:
        shown, how = [dict(x) for x in scene["contents"][others[0]]], "swapped"
    elif true:
        first = dict(true[0])
        first["count"] = int(first["count"]) + 1 if int(first["count"]) < 4 else 3
        shown, how = [first, *true[1:]], "miscount"
    else:
        shown, how = [{"asset": scene["objects"][0]["asset"], "count": 1}], "miscount"
    return {**out, "shown": shown, "source": "forgotten", "how": how}


def failure_mode(move: dict[str, Any], recall: dict[str, Any] | None) -> str:
    """The diagnosis failure mode the sim's truth assigns to a reveal clip.

    Example:
        >>> failure_mode({"failure": "brief_open"}, None)
        'return_to_intact'
        >>> failure_mode({"failure": None}, {"shown": [], "true": [], "how": None})
        'success'
    """
    if move.get("failure"):
        return FAILURE_OF[move["failure"]]
    if recall is None or _same(recall["shown"], recall["true"]):
        return "success"
    return "missing_departure" if recall.get("how") == "stale" else "wrong_binding"
