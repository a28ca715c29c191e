"""The card deck of ``judge/sim-cards``: a folder of plain files, read lazily.

Part of ``judge/sim-cards`` (:mod:`vidmem.models.backends.judge_sim_cards` judges, this
module reads its weights). The deck is written by :func:`vidmem.sim.cards.write_card_deck`
(``deck.json``: the appearance phrases of the sim grammar under the deck's ``key_rule``,
and PNG cards of every entity state and place, each with its SHA-256); the judge knows
the sim only through it, so nothing here imports :mod:`vidmem.sim`.

Rules: a ``deck.json`` of another format or version is refused; a card or place image
whose bytes do not match their SHA-256 in ``deck.json`` is refused (the deck was edited
after it was written); an appearance text outside the phrase table reads as ``None``,
never as a guess.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from PIL import Image

from vidmem.errors import MissingDependencyError, UserInputError

__all__ = ["CardDeck", "Look", "hsv_histogram"]

_DECK_FORMAT = "vidmem-card-deck"
_DECK_VERSIONS = (1,)


@dataclass(frozen=True)
class Look:
    """A phrase of the deck, read: what an appearance text shows.

    Attributes:
        asset: entity asset id, or ``None`` for a location.
        state: the asset's state (``base`` for locations).
        count: copies shown (1 unless a counted group).
        place: place id for a location, else ``None``.
    """

    asset: str | None
    state: str = "base"
    count: int = 1
    place: str | None = None


def _key(text: str) -> str:
    """The deck's ``key_rule``: lower-case, whitespace runs to one space, no trailing '. '."""
    return " ".join(text.lower().split()).rstrip(". ")


def hsv_histogram(img: np.ndarray) -> np.ndarray:
    """The 12 x 4 x 4-bin HSV histogram of an ``(h, w, 3)`` uint8 RGB image, flattened to
    ``(192,)`` float32 at unit L2 norm (how a frame is compared with the deck's places).

    Example:
        >>> h = hsv_histogram(np.full((4, 4, 3), 200, np.uint8))
        >>> h.shape, round(float(np.linalg.norm(h)), 6), int((h > 0).sum())
        ((192,), 1.0, 1)
    """
    hsv = cv2.cvtColor(np.ascontiguousarray(img), cv2.COLOR_RGB2HSV)
    h = cv2.calcHist([hsv], [0, 1, 2], None, [12, 4, 4], [0, 180, 0, 256, 0, 256]).ravel()
    return h / max(float(np.linalg.norm(h)), 1e-12)


class CardDeck:
    """A card deck folder (written by :func:`vidmem.sim.cards.write_card_deck`), read lazily.

    Args:
        root: the deck folder (holding ``deck.json``).

    Raises:
        MissingDependencyError: no readable ``deck.json`` in ``root``.
        UserInputError: ``deck.json`` is not a card deck of a known version.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        doc_path = self.root / "deck.json"
        where = f"judge/sim-cards card deck {doc_path}"
        try:
            doc = json.loads(doc_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise MissingDependencyError(
                f"{where}: not found", hint="write the deck with "
                "vidmem.sim.cards.write_card_deck(DIR) and pass weights=DIR") from None
        except (OSError, ValueError) as exc:
            raise UserInputError(f"{where}: unreadable ({exc})",
                                 hint="rewrite it with vidmem.sim.cards.write_card_deck") from None
        if not (isinstance(doc, dict) and doc.get("format") == _DECK_FORMAT
                and doc.get("version") in _DECK_VERSIONS):
            found = (doc.get("format"), doc.get("version")) if isinstance(doc, dict) else doc
            raise UserInputError(
                f"{where}: expected format {_DECK_FORMAT!r} version {_DECK_VERSIONS}, "
                f"found {found!r}", hint="rewrite it with vidmem.sim.cards.write_card_deck")
        self.card_scale = float(doc["card_scale"])
        self._phrases = {str(k): Look(v[0], str(v[1]), int(v[2]), v[3])
                         for k, v in doc["phrases"].items()}
        self._cards: dict[str, dict[str, str]] = doc["cards"]
        self._places: dict[str, dict[str, str]] = doc["places"]
        self._loaded: dict[str, np.ndarray] = {}

    def parse(self, text: Any) -> Look | None:
        """Read an appearance text; anything outside the deck's phrases gives ``None``."""
        return self._phrases.get(_key(text)) if isinstance(text, str) else None

    def _read(self, entry: dict[str, str], what: str) -> np.ndarray:
        path = self.root / entry["file"]
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise UserInputError(f"judge/sim-cards card deck: {what} {path} unreadable ({exc})",
                                 hint="rewrite the deck with vidmem.sim.cards.write_card_deck"
                                 ) from None
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise UserInputError(
                f"judge/sim-cards card deck: {path} does not match its SHA-256 in deck.json",
                hint="the deck was edited after it was written; rewrite it with "
                "vidmem.sim.cards.write_card_deck")
        with Image.open(path) as im:
            out = np.array(im)
        out.setflags(write=False)
        return out

    def card(self, asset: str, state: str) -> np.ndarray:
        """``(h, w, 4)`` uint8 card of an entity state: RGB over mid grey, alpha last."""
        key = f"{asset}|{state}"
        if key not in self._loaded:
            entry = self._cards.get(key)
            if entry is None:
                raise UserInputError(
                    f"judge/sim-cards card deck {self.root}: no card for {asset!r} in state "
                    f"{state!r}", hint="rewrite the deck with this vidmem version")
            self._loaded[key] = self._read(entry, "card")
        return self._loaded[key]

    @functools.cached_property
    def place_hists(self) -> dict[str, np.ndarray]:
        """Place id -> HSV histogram of its image (unit norm)."""
        return {pid: hsv_histogram(self._read(self._places[pid], "place image"))
                for pid in sorted(self._places)}
