"""Reading container shots from pixels with the card deck's ``hidden_state`` cards.

Part of ``judge/sim-cards`` (:mod:`vidmem.models.backends.judge_sim_mist` asks, this
module reads). The deck (``deck.json["hidden_state"]``, written by
:func:`vidmem.sim.cards.hidden_state_cards`) holds every container open and closed,
every object and actor, drawn as a 180-pixel-high frame shows them, and the boxes of a
container canvas. The sim is never imported.

Per frame (resized to the deck's ``canon_height`` first), for one container card:

1. **Find it** by its *strip* (the bottom rows of the body, the same in every state):
   masked squared-difference template matching over the frame; found when the RMS
   difference at the best place is at most :data:`FIND_RMS`.
2. **State**: the open and closed cards are compared with the pixels at that place
   (+-2 pixels); the state is the one with the smaller RMS when it is at most
   :data:`STATE_RMS`, else ``unreadable``. The open card's window is transparent, so
   what is inside never counts.
3. **Inside** (open only): each object card is matched inside the window; minima at
   most :data:`OBJECT_RMS` are copies (a copy suppresses others within its own size;
   overlapping copies of different objects keep the better match). The inside is
   *readable* when at least :data:`READABLE_SHARE` of the window pixels outside the
   found copies are the deck's inside colour (every channel within 40) -- an actor in
   front of it makes it unreadable.

The actor is found the same way as a container (its whole card, :data:`FIND_RMS`).
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from PIL import Image

from vidmem.errors import MissingDependencyError, UserInputError

__all__ = ["FIND_RMS", "OBJECT_RMS", "READABLE_SHARE", "STATE_RMS", "ContainerReading",
           "HiddenStateDeck"]

FIND_RMS = 26.0
STATE_RMS = 30.0
OBJECT_RMS = 28.0
READABLE_SHARE = 0.7
_INSIDE_TOL = 40
_PAD = 112


@dataclass
class ContainerReading:
    """What one frame shows of one container.

    Attributes:
        found: the container is in view (its strip matched).
        state: ``open``, ``closed`` or ``unreadable`` (``None`` when not found).
        readable: open and its inside can be read.
        contents: ``{asset: count}`` seen inside (only when readable).
        rms: the match errors, for the judge's reason text.
    """

    found: bool
    state: str | None = None
    readable: bool = False
    contents: dict[str, int] = field(default_factory=dict)
    rms: dict[str, float] = field(default_factory=dict)


def _masked(card: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rgb = np.ascontiguousarray(card[..., :3], dtype=np.float32)
    mask = (card[..., 3] > 127).astype(np.float32)
    return rgb, np.ascontiguousarray(np.repeat(mask[..., None], 3, axis=2))


def _rms_map(image: np.ndarray, templ: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    rgb, mask = templ
    n = max(1.0, float(mask.sum()))
    ssd = cv2.matchTemplate(image, rgb, cv2.TM_SQDIFF, mask=mask)
    return np.sqrt(np.maximum(ssd, 0.0) / n)


class HiddenStateDeck:
    """The ``hidden_state`` part of a card deck folder, read lazily and hash-checked.

    Raises:
        MissingDependencyError: ``deck.json`` is missing.
        UserInputError: the deck has no ``hidden_state`` part (an older deck).
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        path = self.root / "deck.json"
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise MissingDependencyError(f"judge/sim-cards card deck {path}: not found",
                                         hint="write it with vidmem.sim.cards.write_card_deck"
                                         ) from None
        part = doc.get("hidden_state") if isinstance(doc, dict) else None
        if not isinstance(part, dict):
            raise UserInputError(f"judge/sim-cards card deck {path}: no 'hidden_state' cards "
                                 "(container questions need them)",
                                 hint="rewrite the deck with this vidmem version "
                                 "(vidmem.sim.cards.write_card_deck)")
        self.part = part
        self.height = int(part["canon_height"])
        self.strip = tuple(int(v) for v in part["strip"])
        self.window = tuple(int(v) for v in part["window"])
        self.inside_rgb = np.array(part["inside_rgb"], np.float32)
        self._cards: dict[str, np.ndarray] = {}
        self._frames: OrderedDict[str, tuple[np.ndarray, np.ndarray]] = OrderedDict()

    # -- names ---------------------------------------------------------------------

    @staticmethod
    def _plain(text: Any) -> str:
        words = " ".join(str(text or "").lower().split())
        return words[4:] if words.startswith("the ") else words

    def container_key(self, c: Any) -> str | None:
        """The deck key of a payload container (asset, drawn colour, or noun)."""
        if not isinstance(c, dict):
            return None
        conts = self.part["containers"]
        if c.get("asset") in conts:
            return str(c["asset"])
        if c.get("colour") and f"box:{c['colour']}" in conts and c.get("kind") != "sim_asset":
            return f"box:{c['colour']}"
        noun = self._plain(c.get("noun"))
        return next((k for k, v in conts.items() if v["noun"] == noun), None)

    def object_asset(self, o: Any) -> str | None:
        """The deck asset of a payload object (its asset, else its noun or plural)."""
        objs = self.part["objects"]
        if isinstance(o, dict) and o.get("asset") in objs:
            return str(o["asset"])
        noun = self._plain(o.get("noun") if isinstance(o, dict) else o)
        return next((a for a, v in objs.items() if noun in (v["noun"], v["plural"])), None)

    def actor_asset(self, noun: Any) -> str | None:
        plain = self._plain(noun)
        return next((a for a, v in self.part["actors"].items()
                     if self._plain(v["noun"]) == plain), None)

    def container_keys(self) -> list[str]:
        return sorted(self.part["containers"])

    # -- images --------------------------------------------------------------------

    def _card(self, entry: dict[str, str]) -> np.ndarray:
        rel = entry["file"]
        if rel not in self._cards:
            path = self.root / rel
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise UserInputError(f"judge/sim-cards card deck: {path} unreadable ({exc})",
                                     hint="rewrite the deck") from None
            if hashlib.sha256(data).hexdigest() != entry["sha256"]:
                raise UserInputError(f"judge/sim-cards card deck: {path} does not match its "
                                     "SHA-256 in deck.json", hint="rewrite the deck")
            with Image.open(path) as im:
                self._cards[rel] = np.array(im.convert("RGBA"))
        return self._cards[rel]

    def canon(self, frame: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The frame at the deck's height, float32: as is, and padded by grey (cached)."""
        key = hashlib.sha256(np.ascontiguousarray(frame).tobytes()).hexdigest() + str(frame.shape)
        if key not in self._frames:
            img = np.ascontiguousarray(frame[..., :3])
            h, w = img.shape[:2]
            if h != self.height:
                img = cv2.resize(img, (max(1, round(w * self.height / h)), self.height),
                                 interpolation=cv2.INTER_AREA)
            padded = cv2.copyMakeBorder(img, _PAD, _PAD, _PAD, _PAD, cv2.BORDER_CONSTANT,
                                        value=(128, 128, 128))
            self._frames[key] = (img.astype(np.float32), padded.astype(np.float32))
            while len(self._frames) > 32:
                self._frames.popitem(last=False)
        return self._frames[key]

    # -- reading -------------------------------------------------------------------

    def find_actor(self, frame: np.ndarray, asset: str) -> tuple[bool, float]:
        rms = _rms_map(self.canon(frame)[0], _masked(self._card(self.part["actors"][asset])))
        best = float(rms.min())
        return best <= FIND_RMS, round(best, 2)

    def read(self, frame: np.ndarray, key: str,
             objects: list[str] | None = None) -> ContainerReading:
        """Find container ``key`` in ``frame`` and read its state and inside."""
        plain, img = self.canon(frame)
        entry = self.part["containers"][key]
        open_card, closed_card = self._card(entry["open"]), self._card(entry["closed"])
        x0, y0, x1, y1 = self.strip
        rms = _rms_map(plain, _masked(closed_card[y0:y1, x0:x1]))
        sy, sx = np.unravel_index(int(np.argmin(rms)), rms.shape)
        found_rms = float(rms[sy, sx])
        if found_rms > FIND_RMS:
            return ContainerReading(False, rms={"find": round(found_rms, 2)})
        ax, ay = int(sx) - x0 + _PAD, int(sy) - y0 + _PAD  # the canvas, in padded pixels
        ch, cw = closed_card.shape[:2]
        roi = img[ay - 2:ay + ch + 2, ax - 2:ax + cw + 2]
        scores = {state: float(_rms_map(roi, _masked(card)).min())
                  for state, card in (("open", open_card), ("closed", closed_card))}
        state = min(scores, key=scores.__getitem__)
        out = ContainerReading(True, state if scores[state] <= STATE_RMS else "unreadable",
                               rms={"find": round(found_rms, 2),
                                    **{s: round(v, 2) for s, v in scores.items()}})
        if out.state == "open":
            self._inside(img, ax, ay, objects or sorted(self.part["objects"]), out)
        return out

    def _inside(self, img: np.ndarray, ax: int, ay: int, assets: list[str],
                out: ContainerReading) -> None:
        wx0, wy0, wx1, wy1 = self.window
        m = 3
        roi = img[ay + wy0 - m:ay + wy1 + m, ax + wx0 - m:ax + wx1 + m]
        found: list[tuple[float, str, tuple[int, int, int, int]]] = []
        for asset in assets:
            card = self._card(self.part["objects"][asset])
            h, w = card.shape[:2]
            if roi.shape[0] < h or roi.shape[1] < w:
                continue
            rms = _rms_map(roi, _masked(card))
            for _ in range(4):
                y, x = np.unravel_index(int(np.argmin(rms)), rms.shape)
                if rms[y, x] > OBJECT_RMS:
                    break
                found.append((float(rms[y, x]), asset, (int(x), int(y), int(x) + w, int(y) + h)))
                rms[max(0, y - h + 2):y + h - 1, max(0, x - w + 2):x + w - 1] = np.inf
        kept: list[tuple[float, str, tuple[int, int, int, int]]] = []
        for item in sorted(found):
            if all(_iou(item[2], k[2]) < 0.3 for k in kept):
                kept.append(item)
        covered = np.zeros(roi.shape[:2], bool)
        for _, _, (bx0, by0, bx1, by1) in kept:
            covered[by0:by1, bx0:bx1] = True
        inside = np.all(np.abs(roi - self.inside_rgb) <= _INSIDE_TOL, axis=2)
        core = (slice(m, roi.shape[0] - m), slice(m, roi.shape[1] - m))
        free = ~covered[core]
        share = float(inside[core][free].mean()) if free.any() else 0.0
        out.rms["inside_share"] = round(share, 3)
        out.readable = share >= READABLE_SHARE
        if out.readable:
            for _, asset, _ in kept:
                out.contents[asset] = out.contents.get(asset, 0) + 1


def _iou(a: tuple[int, ...], b: tuple[int, ...]) -> float:
    w = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0
