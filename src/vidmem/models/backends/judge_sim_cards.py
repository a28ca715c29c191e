"""``judge/sim-cards``: an offline presence judge for sim cases (not a VLM).

It answers the Track-B judge question -- which roster entities does this clip show, in
which state, how many -- for clips of the sim world, with classic vision only. It reads
the roster from ``request.payload["roster"]`` (the same lines a VLM judge prompt lists)
and the frames from ``request.images``; it never sees truth or world specs.

Its ``weights`` are the sim's **card deck**, a folder of plain files written by
:func:`vidmem.sim.cards.write_card_deck` (``deck.json``: the appearance phrases of the
sim grammar, and PNG cards of every entity state and place; read by
:class:`~vidmem.models.backends.judge_sim_cards_deck.CardDeck`). The judge knows the sim
only through that folder, so it imports nothing from :mod:`vidmem.sim`. ``vidmem
run|score`` on a sim build finds the deck at ``ROOT/_cards`` by itself
(:mod:`vidmem.benchmarks.sim_deck`).

Roster lines are dicts: ``entity_id`` (required), ``name``, ``kind`` (``character`` |
``prop`` | ``location``), ``appearance`` (the current-state text), and optional cues
``state`` (current state label), ``states`` (``{label: appearance}``, the candidate
states), ``count`` (asks for a count) and ``lookalike`` (the ``entity_id`` of its
look-alike in the roster).

Decision rule, per roster line:

1. Appearance texts are looked up in the deck's phrase table (the sim grammar,
   :func:`vidmem.sim.story_grammar.parse_appearance`, under the deck's ``key_rule``).
   If the appearance is outside it, the answer is ``"abstain"`` for every field:
   nothing is guessed.
2. **Cards.** Each readable candidate state (``states``, else the appearance) is the
   deck's *card* of that asset and state: the sprite at the deck's ``card_scale``
   (1.2) times its nominal size over mid grey.
3. **Presence** (characters, props): the frames (at most ``max_frames``, evenly
   spaced) are searched for every card with the image-guided ``classic/sift`` detector
   (SIFT + RANSAC homography, score threshold ``threshold``). A counted group (``Three
   gold coins.``) is searched with the copies variant
   (:class:`~vidmem.models.backends.judge_sim_cards_sift.CardSift`), because identical
   copies defeat Lowe's ratio test. A frame is a *hit* when some card is
   detected; the entity is present when hits >= ``ceil(min_fraction * frames)``
   (default: half the frames, at least one).
4. **State** (only when the line has ``state`` or ``states``; ``null`` when absent):
   in the hit frames, each card is resized into its own detected box (the best card's
   box when it was not detected itself) and compared with the pixels under its mask
   (mean absolute RGB difference); the label with the smallest mean difference wins.
5. **Count** (only when the line has a ``count`` cue): per hit frame, the number of
   copies found (groups), or detect, grey out the box, detect again (single cards),
   at most :data:`MAX_COUNT`; the answer is the most frequent per-frame number (ties:
   the larger); ``0`` when absent.
6. **Instance match** (only with a ``lookalike`` cue naming a readable roster line): in
   each hit frame the found box (plus 10%) is searched again with the entity's best
   card and with the look-alike's cards; ``true`` when the entity's score is at least
   the look-alike's in the majority of hit frames; ``null`` when absent.
7. **Locations**: each frame's HSV histogram is compared (cosine) with that of every
   place image of the deck; the location is present when its place is the nearest in enough
   frames (the rule of step 3); its state is its only label.

Limits: ``old_coin`` has too few SIFT keypoints to be seen reliably (sim stories do not
use it); what the judge cannot read it answers with ``"abstain"``, never a guess.

Container-shot questions (``payload["task"]`` ``mist_gate`` or ``m3_diagnose``) are
answered by :mod:`vidmem.models.backends.judge_sim_mist` instead.

The answer is ``data = {"items": [{entity_id, present, state, count, instance_match}],
"evidence": {entity_id: {"hits", "frames", "best_score"}}}`` with ``status="ok"`` and
``judge="judge/sim-cards"``; a payload without a roster list is ``status="error"``.
"""


from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

from vidmem.errors import UserInputError, VidmemError
from vidmem.models.backends.base import BackendBase
from vidmem.models.backends.judge_common import ManyJudging
from vidmem.models.backends.judge_sim_cards_deck import CardDeck, Look
from vidmem.models.backends.judge_sim_cards_deck import hsv_histogram as _hist
from vidmem.models.backends.judge_sim_cards_sift import CardSift as _CardSift
from vidmem.models.backends.judge_sim_mist import TASKS as HIDDEN_STATE_TASKS
from vidmem.models.backends.judge_sim_mist import answer_hidden_state
from vidmem.models.protocols import JudgeRequest, JudgeResult

# CardDeck, Look (the deck) and _CardSift (the copies-aware SIFT) live beside this module
# and are named here too, so imports from before the split keep working.
__all__ = ["MAX_COUNT", "CardDeck", "Look", "SimCardJudge"]

#: most copies counted per frame.
MAX_COUNT = 6
_ABSTAIN = "abstain"


class SimCardJudge(ManyJudging, BackendBase):
    """``judge/sim-cards``: roster presence by appearance cards and SIFT (module doc).

    Args:
        weights: the card deck folder (:func:`vidmem.sim.cards.write_card_deck`).
        device, dtype, batch_size: the common backend arguments.
        threshold: ``classic/sift`` score threshold for a detection.
        max_frames: most frames examined per request (evenly spaced).
        min_fraction: fraction of the examined frames that must be hits.
    """

    name = "judge/sim-cards"
    #: reads each question's payload, not its prompt, and answers in its own documented
    #: shape (the answer cache then applies only the question's own accept rule)
    answers_from_payload = True
    default_weights = None
    official = False

    def __init__(self, *, weights: Any = None, device: str = "cpu", dtype: str = "float32",
                 batch_size: int = 16, threshold: float = 0.25, max_frames: int = 4,
                 min_fraction: float = 0.5) -> None:
        if weights is None:
            raise UserInputError(
                f"{self.name}: needs the sim's card deck as weights=DIR; found none",
                hint="`vidmem sim build BENCHMARK --out ROOT` writes one at ROOT/_cards, "
                "which `vidmem run|score BENCHMARK --root ROOT` uses by itself; for another "
                "root pass --backend-opt judge/sim-cards:weights=DIR (a deck written by "
                "vidmem.sim.cards.write_card_deck(DIR))")
        if not (isinstance(max_frames, int) and max_frames >= 1 and 0.0 < min_fraction <= 1.0):
            raise UserInputError(
                f"{self.name}: need max_frames >= 1 and 0 < min_fraction <= 1; found "
                f"{max_frames!r}, {min_fraction!r}", hint="omit them for the defaults 4 and 0.5")
        super().__init__(weights=weights, device=device, dtype=dtype, batch_size=batch_size,
                         threshold=float(threshold), max_frames=max_frames,
                         min_fraction=float(min_fraction), detector="classic/sift",
                         kind="offline proxy, not a VLM")
        assert self.weights_path is not None  # resolve_weights raises when it is missing
        self.deck = CardDeck(self.weights_path)
        self.settings["card_scale"] = self.deck.card_scale
        self.threshold = float(threshold)
        self.max_frames = max_frames
        self.min_fraction = float(min_fraction)
        self._sift = _CardSift(threshold=self.threshold)

    # -- protocol --------------------------------------------------------------------

    def judge(self, request: JudgeRequest) -> JudgeResult:
        """Answer the roster question of ``request`` (never raises for bad input)."""
        if (request.payload or {}).get("task") in HIDDEN_STATE_TASKS:  # container shots
            return answer_hidden_state(self, request)
        roster = (request.payload or {}).get("roster")
        if not isinstance(roster, list) or not all(
                isinstance(r, dict) and "entity_id" in r for r in roster):
            return JudgeResult(request.item_id, "error", None, "", 0, self.name,
                               error=f"item {request.item_id}: {self.name} needs payload"
                               "['roster'], a list of dicts with 'entity_id'")
        frames = self._frames(request.images)
        if not frames:
            return JudgeResult(request.item_id, "error", None, "", 0, self.name,
                               error=f"item {request.item_id}: no frames to judge")
        by_id = {str(r["entity_id"]): r for r in roster}
        items, evidence = [], {}
        try:
            for entry in roster:
                item, ev = self._one(entry, frames, by_id)
                items.append(item)
                evidence[item["entity_id"]] = ev
        except VidmemError as exc:  # e.g. a card file edited after the deck was written
            why = exc.message + (f" (fix: {exc.hint})" if exc.hint else "")
            return JudgeResult(request.item_id, "error", None, "", 1, self.name,
                               error=f"item {request.item_id}: {self.name}: {why}")
        except Exception as exc:  # a bug must not stop a run; it is reported per item
            return JudgeResult(request.item_id, "error", None, "", 1, self.name,
                               error=f"item {request.item_id}: {self.name} internal error: "
                               f"{type(exc).__name__}: {exc}")
        data = {"items": items, "evidence": evidence}
        return JudgeResult(request.item_id, "ok", data, json.dumps(data, sort_keys=True), 1,
                           self.name)

    # -- internals -------------------------------------------------------------------

    def _frames(self, images: Sequence[np.ndarray]) -> list[np.ndarray]:
        imgs = [np.ascontiguousarray(im, dtype=np.uint8) for im in images
                if isinstance(im, np.ndarray) and im.ndim == 3 and im.shape[2] == 3]
        if len(imgs) <= self.max_frames:
            return imgs
        idx = np.linspace(0, len(imgs) - 1, self.max_frames).round().astype(int)
        return [imgs[i] for i in idx]

    def _needed(self, n_frames: int) -> int:
        return max(1, math.ceil(self.min_fraction * n_frames - 1e-9))

    def _cards(self, entry: dict[str, Any]) -> dict[str, Look] | None:
        texts = entry.get("states") if isinstance(entry.get("states"), dict) else None
        if not texts:
            texts = {str(entry.get("state") or "current"): entry.get("appearance")}
        cards = {str(k): a for k, v in texts.items() if (a := self.deck.parse(v)) is not None}
        current = self.deck.parse(entry.get("appearance"))
        if current is None:
            return None
        if current not in cards.values():
            cards[str(entry.get("state") or "current")] = current
        return cards

    def _detect(self, frame: np.ndarray, app: Look) -> tuple[float, tuple[float, ...] | None]:
        """Best ``(score, box)`` of a card in a frame (``(0, None)`` when not found)."""
        copies = self._copies(frame, app, 1)
        return copies[0] if copies else (0.0, None)

    def _copies(self, frame: np.ndarray, app: Look,
                most: int) -> list[tuple[float, tuple[float, ...]]]:
        card = np.ascontiguousarray(self.deck.card(app.asset or "", app.state)[..., :3])
        if app.count > 1:  # identical copies: query-side ratio test, repeated fits
            return self._sift.detect_copies(frame, card, most)
        hits = self._sift.detect([frame], image_query=card, threshold=self.threshold)[0]
        return [(hits[0].score, hits[0].box)] if hits else []

    def _one(self, entry: dict[str, Any], frames: list[np.ndarray],
             by_id: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
        eid = str(entry["entity_id"])
        item: dict[str, Any] = {"entity_id": eid, "present": _ABSTAIN, "state": _ABSTAIN,
                                "count": _ABSTAIN if "count" in entry else None,
                                "instance_match": None}
        cards = self._cards(entry)
        if cards is None:
            return item, {"hits": 0, "frames": len(frames), "best_score": None,
                          "why": "appearance outside the sim grammar"}
        need = self._needed(len(frames))
        first = next(iter(cards.values()))
        if first.place is not None:
            hists = self.deck.place_hists
            hits = 0
            for f in frames:
                h = _hist(f)
                sims = {pid: float(h @ ref) for pid, ref in hists.items()}
                hits += max(sims, key=sims.__getitem__) == first.place
            present = hits >= need
            labelled = bool(entry.get("states")) or bool(entry.get("state"))
            item.update(present=present, state=next(iter(cards)) if present and labelled else None)
            return item, {"hits": int(hits), "frames": len(frames), "best_score": None}
        # Per frame: every card's own detection {label: (score, box)}.
        per_frame = [(f, {label: self._detect(f, app) for label, app in cards.items()})
                     for f in frames]
        hit = [(f, dets) for f, dets in per_frame if any(b is not None for _, b in dets.values())]
        present = len(hit) >= need
        labelled = bool(entry.get("states")) or bool(entry.get("state"))
        item["present"] = present
        item["state"] = self._state(hit, cards) if present and labelled else None
        if "count" in entry:
            item["count"] = self._count(hit, cards) if present else 0
        mate = by_id.get(str(entry.get("lookalike"))) if entry.get("lookalike") else None
        mate_cards = self._cards(mate) if mate else None
        if mate_cards and present:
            item["instance_match"] = self._instance(hit, cards, mate_cards)
        best = max((s for _, dets in per_frame for s, _ in dets.values()), default=0.0)
        return item, {"hits": len(hit), "frames": len(frames), "best_score": round(best, 4)}

    @staticmethod
    def _best(dets: dict[str, tuple[float, Any]]) -> tuple[str, float, Any]:
        label = max(dets, key=lambda k: dets[k][0])
        return label, dets[label][0], dets[label][1]

    def _state(self, hit: list[Any], cards: dict[str, Look]) -> str:
        """The card that, aligned by its own detection (else by the best card's),
        differs least from the pixels."""
        if len(cards) == 1:
            return next(iter(cards))
        cost: dict[str, list[float]] = {label: [] for label in cards}
        for f, dets in hit:
            fallback = self._best(dets)[2]
            for label, app in cards.items():
                box = dets[label][1] if dets[label][1] is not None else fallback
                x0, y0, x1, y1 = (int(round(v)) for v in box)
                if x1 - x0 < 4 or y1 - y0 < 4:
                    continue
                card = cv2.resize(np.asarray(self.deck.card(app.asset or "", app.state)),
                                  (x1 - x0, y1 - y0), interpolation=cv2.INTER_AREA)
                m = card[..., 3] > 127
                if m.sum() >= 16:
                    region = f[y0:y1, x0:x1].astype(np.float32)
                    cost[label].append(float(np.abs(region[m] - card[..., :3][m]).mean()))
        scored = {k: float(np.mean(v)) for k, v in cost.items() if v}
        return min(scored, key=lambda k: scored[k]) if scored else self._best(hit[0][1])[0]

    def _instance(self, hit: list[Any], cards: dict[str, Look],
                  mate_cards: dict[str, Look]) -> bool:
        """Is what was found this entity rather than its look-alike? Both cards are
        searched in the found box (10% margin); the entity wins ties."""
        wins = 0
        for f, dets in hit:
            label, _, box = self._best(dets)
            x0, y0, x1, y1 = box
            mx, my = 0.1 * (x1 - x0), 0.1 * (y1 - y0)
            crop = np.ascontiguousarray(f[max(0, int(y0 - my)):int(y1 + my) + 1,
                                          max(0, int(x0 - mx)):int(x1 + mx) + 1])
            own = self._detect(crop, cards[label])[0]
            other = max(self._detect(crop, a)[0] for a in mate_cards.values())
            wins += own >= other
        return wins * 2 > len(hit)

    def _count(self, hit: list[Any], cards: dict[str, Look]) -> int:
        counts = []
        for f, dets in hit:
            app = cards[self._best(dets)[0]]
            if app.count > 1:
                counts.append(len(self._copies(f, app, MAX_COUNT)))
                continue
            img, n = f.copy(), 0
            while n < MAX_COUNT:
                found = self._copies(img, app, 1)
                if not found:
                    break
                x0, y0, x1, y1 = (int(round(v)) for v in found[0][1])
                img[max(0, y0):y1, max(0, x0):x1] = 128
                n += 1
            counts.append(n)
        tally = Counter(counts).most_common()
        top = tally[0][1]
        return max(c for c, k in tally if k == top)
