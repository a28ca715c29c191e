"""Build synthetic MIST container cards (PROTOCOLS.md section 5), with a prompt audit.

Layout written under ``ROOT``::

    cases.jsonl               one card per line (key-sorted JSON)
    _truth/<case_id>.json     the sim facts behind the card (assets, operation history)
    _cards/                   the sim card deck: the weights of the offline judge
                              (--backend-opt judge/sim-cards:weights=ROOT/_cards)

A **card** is a hidden-state task: an actor puts objects into containers and closes
them (setup), the view stays on the closed containers (gap), then the actor opens one
(reveal). Fields of a ``cases.jsonl`` row:

``case_id``         ``mist_s<seed>_<index:03d>``
``family``          ``R0`` (presence/count), ``R1`` (binding) or ``R2`` (history update),
                    cycling with the index; ``family_name`` spells it out
``actor``           ``{"noun", "asset"}`` -- ``the woman`` (``face``) or ``the cat``
``objects``         ``[{"id", "noun", "plural", "asset"}]``
``containers``      ``[{"id", "noun", "kind", "asset" | "colour"}]``: ``kind`` is
                    ``sim_asset`` (the ``cup`` / ``blue_cup`` assets, states ``open`` /
                    ``closed``) or ``drawn_box`` (a lidded box drawn in ``colour``)
``operations``      the hidden history, in order: ``{"op": "put" | "move", "object",
                    "count", "from", "to"}`` (``from`` is ``null`` for ``put``)
``reveal``          the container the reveal shot opens
``target``          s*: ``{"container", "contents": [{"object", "noun", "count"}],
                    "text"}`` (``contents`` is empty and ``text`` ``"nothing"`` when the
                    container is empty)
``shots``           three 5-second shots ``{"shot": "setup" | "gap" | "reveal",
                    "duration_sec", "prompt"}`` (the reveal prompt is the baseline arm)
``reveal_prompts``  the reveal prompt per arm the builder can write: ``baseline``,
                    ``answer_only`` (states the answer), ``open_and_hold`` (answer-free);
                    the rewrite arms come from the M3-Agent loop
``task_record``     for the M3-Agent loop: ``{"actor", "object", "binding",
                    "operation", "required_last_frame_evidence"}``
``audit``           the prompt-channel audit (:func:`audit_card`)

Families: **R0** one container; ``k`` copies of one object go in (``k`` in 0..4; ``k =
0``: the object is shown and taken away); s* is the count. **R1** two containers, two
different objects, one in each; the reveal opens one of them; s* is which object.
**R2** one object goes into container A, then is moved to container B; the reveal
opens B (s* is the object) or A (s* is empty).

**Audit.** :func:`audit_card` is :func:`vidmem.benchmarks.mist.audit.audit_card` (one
audit for the builder and the loader) in the builder's dict form: ``gap`` and the
reveal of the answer-free arms must mention no target term (``violations`` lists those
that do), and ``reveal_answer_only`` must mention one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from vidmem.io.jsonl import write_jsonl
from vidmem.sim.build import TRUTH_DIR, BuildSummary, check_n_cases
from vidmem.sim.cards import write_card_deck
from vidmem.sim.mist_grammar import ACTORS, BOX_COLOURS, NUMBERS, OBJECTS, container_pool

__all__ = ["CLEAN_PROMPTS", "DEFAULT_N_CASES", "FAMILIES", "audit_card", "build_mist",
           "card_prompts", "plan_card"]

DEFAULT_N_CASES = 6
SHOT_SECONDS = 5.0
FAMILIES = {"R0": "presence_count", "R1": "binding", "R2": "history_update"}
#: prompts that must not mention the target.
CLEAN_PROMPTS = ("gap", "reveal_baseline", "reveal_open_and_hold")
# The phrase tables live in the sim, which parses these prompts back (vidmem.sim.mist_grammar).
_ACTORS, _OBJECTS, _BOX_COLOURS, _NUMBERS = ACTORS, OBJECTS, BOX_COLOURS, NUMBERS


def _containers(rng: np.random.Generator, n: int) -> list[dict[str, Any]]:
    pool = container_pool()
    picked = [pool[int(i)] for i in rng.choice(len(pool), size=n, replace=False)]
    if n == 2 and {p.get("asset") for p in picked} == {"cup", "blue_cup"}:
        picked[1] = pool[2 + int(rng.integers(len(_BOX_COLOURS)))]
    return [{"id": "AB"[k], **c} for k, c in enumerate(picked)]


def _objects(rng: np.random.Generator, n: int) -> list[dict[str, Any]]:
    idx = rng.choice(len(_OBJECTS), size=n, replace=False)
    return [{"id": f"O{k + 1}", "noun": _OBJECTS[i][0], "plural": _OBJECTS[i][1],
             "asset": _OBJECTS[i][2]} for k, i in enumerate(int(j) for j in idx)]


def _phrase(obj: dict[str, Any], count: int) -> str:
    if count == 1:
        return f"{'an' if obj['noun'][0] in 'aeiou' else 'a'} {obj['noun']}"
    return f"{_NUMBERS[count]} {obj['plural']}"


def _binding(obj: dict[str, Any], ops: list[dict[str, Any]],
             containers: list[dict[str, Any]]) -> str:
    """Where the object ends up, in words (``gold coin in the cup``)."""
    mine = [op for op in ops if op["object"] == obj["id"]]
    if not mine:
        return f"{obj['noun']} not in the {containers[0]['noun']}"
    home = next(c for c in containers if c["id"] == mine[-1]["to"])
    return f"{obj['noun']} in the {home['noun']}"


def plan_card(seed: int, index: int) -> dict[str, Any]:
    """The card of case ``index`` of a build with ``seed`` (fields in the module doc)."""
    rng = np.random.default_rng([int(seed), int(index), 0x4D15])
    family = ("R0", "R1", "R2")[index % 3]
    actor_noun, actor_asset = _ACTORS[int(rng.integers(len(_ACTORS)))]
    a = actor_noun.capitalize()
    if family == "R0":
        (box,), (obj,) = _containers(rng, 1), _objects(rng, 1)
        k = int(rng.integers(0, 5))
        ops = [] if k == 0 else [{"op": "put", "object": obj["id"], "count": k, "from": None,
                                  "to": "A"}]
        setup = (f"{a} holds up {_phrase(obj, 1)}, puts it back in a pocket and closes the empty "
                 f"{box['noun']}." if k == 0 else
                 f"{a} drops {_phrase(obj, k)} into the {box['noun']} and closes it.")
        containers, objects, reveal = [box], [obj], "A"
        contents = [] if k == 0 else [{"object": obj["id"], "noun": obj["noun"], "count": k}]
        operation = "count what is inside"
    elif family == "R1":
        containers, objects = _containers(rng, 2), _objects(rng, 2)
        ops = [{"op": "put", "object": o["id"], "count": 1, "from": None, "to": c["id"]}
               for o, c in zip(objects, containers, strict=True)]
        setup = (f"{a} puts {_phrase(objects[0], 1)} into the {containers[0]['noun']} and "
                 f"{_phrase(objects[1], 1)} into the {containers[1]['noun']}, then closes both.")
        reveal = "AB"[int(rng.integers(2))]
        obj = objects["AB".index(reveal)]
        contents = [{"object": obj["id"], "noun": obj["noun"], "count": 1}]
        operation = "keep each object bound to its container"
    else:
        containers, (obj,) = _containers(rng, 2), _objects(rng, 1)
        objects = [obj]
        ops = [{"op": "put", "object": obj["id"], "count": 1, "from": None, "to": "A"},
               {"op": "move", "object": obj["id"], "count": 1, "from": "A", "to": "B"}]
        setup = (f"{a} puts {_phrase(obj, 1)} into the {containers[0]['noun']}, then moves it to "
                 f"the {containers[1]['noun']} and closes both.")
        reveal = "AB"[int(rng.integers(2))]
        contents = [{"object": obj["id"], "noun": obj["noun"], "count": 1}] if reveal == "B" else []
        operation = "update the location after the move"
    where = next(c for c in containers if c["id"] == reveal)
    names = " and the ".join(c["noun"] for c in containers)
    gap = f"The camera rests on the closed {names} while {actor_noun} waits nearby."
    text = "nothing" if not contents else _phrase(obj, contents[0]["count"])
    reveal_prompts = {
        "baseline": f"{a} opens the {where['noun']}.",
        "answer_only": f"The open {where['noun']} shows {text} inside.",
        "open_and_hold": f"{a} opens the {where['noun']} and holds it open so that the inside "
                         "is clearly visible until the end.",
    }
    card = {
        "case_id": f"mist_s{seed}_{index:03d}", "family": family, "family_name": FAMILIES[family],
        "actor": {"noun": actor_noun, "asset": actor_asset}, "objects": objects,
        "containers": containers, "operations": ops, "reveal": reveal,
        "target": {"container": reveal, "contents": contents, "text": text},
        "shots": [{"shot": s, "duration_sec": SHOT_SECONDS, "prompt": p} for s, p in
                  (("setup", setup), ("gap", gap), ("reveal", reveal_prompts["baseline"]))],
        "reveal_prompts": reveal_prompts,
        "task_record": {"actor": actor_noun, "object": obj["noun"],
                        "binding": _binding(obj, ops, containers), "operation": operation,
                        "required_last_frame_evidence": f"the open {where['noun']} with {text} "
                                                        "visible inside"},
    }
    card["audit"] = audit_card(card)
    return card


def card_prompts(card: dict[str, Any]) -> dict[str, str]:
    """Every prompt of a card by name: ``setup``, ``gap``, then ``reveal_<arm>``.

    ``reveal_baseline`` is the reveal shot's prompt (joined with the ``baseline`` arm's
    prompt should the two differ, so an edit to either is audited); the other arms
    follow in the order ``answer_only``, ``open_and_hold``, then any others sorted.
    """
    shots = {s["shot"]: s["prompt"] for s in card["shots"]}
    arms = dict(card["reveal_prompts"])
    baseline = shots["reveal"]
    if arms.get("baseline", baseline) != baseline:
        baseline = f"{baseline}\n{arms['baseline']}"
    out = {"setup": shots["setup"], "gap": shots["gap"], "reveal_baseline": baseline}
    order = ["answer_only", "open_and_hold"] + sorted(set(arms) - {"baseline", "answer_only",
                                                                   "open_and_hold"})
    out.update({f"reveal_{arm}": arms[arm] for arm in order if arm in arms})
    return out


def audit_card(card: dict[str, Any]) -> dict[str, Any]:
    """The prompt-channel audit of a card, in the builder's dict form.

    The rules are :func:`vidmem.benchmarks.mist.audit.audit_card`'s (one audit for the
    builder and the loader); this keeps the shape the card's ``audit`` field has.

    Returns:
        ``{"target_terms", "mentions": {prompt name: [terms found]},
        "must_not_mention", "violations", "answer_states_target", "ok"}``;
        ``violations`` names ``gap`` and each ``reveal_<arm>`` that leaks.

    Example:
        >>> card = plan_card(0, 0)
        >>> card["audit"]["ok"], card["target"]["text"]
        (True, 'two snake signs')
        >>> card["shots"][1]["prompt"] += " Two snake signs wait inside."
        >>> audit_card(card)["violations"]
        ['gap']
    """
    from vidmem.benchmarks.mist.audit import audit_card as audit_rows

    raw = {k: v for k, v in card.items() if k != "audit"}
    audit = audit_rows(raw)
    mentions: dict[str, list[str]] = {}
    violations: list[str] = []
    for r in audit.rows:
        name = r.shot if r.shot != "reveal" else f"reveal_{r.arm}"
        mentions.setdefault(name, list(r.terms))
        if r.verdict == "leak" and name not in violations:
            violations.append(name)
    order = list(card_prompts(raw))
    mentions = {n: mentions[n] for n in order if n in mentions}
    answer = bool(mentions.get("reveal_answer_only"))
    return {"target_terms": list(audit.target_terms), "mentions": mentions,
            "must_not_mention": list(CLEAN_PROMPTS), "violations": violations,
            "answer_states_target": answer, "ok": not violations and answer}


#: the card deck's folder under the root (the offline judge's weights)
CARDS_DIR = "_cards"


def build_mist(root: Path, *, seed: int = 0, n_cases: int | None = None) -> BuildSummary:
    """Write ``n_cases`` MIST cards under ``root`` (layout in the module docstring).

    Raises:
        RuntimeError: a planned card fails its own audit (a planner bug).
    """
    n = check_n_cases(n_cases, DEFAULT_N_CASES, "mist")
    (root / TRUTH_DIR).mkdir(parents=True, exist_ok=True)
    rows, files = [], ["cases.jsonl"]
    for index in range(n):
        card = plan_card(seed, index)
        if not card["audit"]["ok"]:
            raise RuntimeError(f"sim mist {card['case_id']}: the prompt audit failed: "
                               f"{card['audit']}")
        rows.append(card)
        objs = {o["id"]: o["asset"] for o in card["objects"]}
        final: dict[str, list[dict[str, Any]]] = {c["id"]: [] for c in card["containers"]}
        for op in card["operations"]:
            if op["from"]:
                final[op["from"]] = [x for x in final[op["from"]] if x["asset"] != objs[op["object"]]]
            final[op["to"]].append({"asset": objs[op["object"]], "count": op["count"]})
        truth = {"case_id": card["case_id"], "seed": seed, "actor_asset": card["actor"]["asset"],
                 "objects": objs, "containers": card["containers"],
                 "operations": card["operations"], "final_contents": final,
                 "revealed": card["reveal"], "container_states_at_reveal": {
                     c["id"]: "closed" for c in card["containers"]}}
        rel = f"{TRUTH_DIR}/{card['case_id']}.json"
        (root / rel).write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n",
                                encoding="utf-8")
        files.append(rel)
    write_jsonl(root / "cases.jsonl", rows)
    deck = write_card_deck(root / CARDS_DIR)  # the offline judge's weights (as Track-A/B)
    files += sorted(str(p.relative_to(root)) for p in deck.rglob("*") if p.is_file())
    families = {f: sum(r["family"] == f for r in rows) for f in FAMILIES}
    return BuildSummary("mist", root, seed, n, len(rows), "cases.jsonl", tuple(sorted(files)),
                        0.0, {"families": families})
