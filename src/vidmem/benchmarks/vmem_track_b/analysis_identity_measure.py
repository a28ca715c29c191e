"""Identity analysis, measuring: find an entity in a clip's frames and embed what was found.

Rules (in :data:`PROTOCOL`, copied into the analysis result):

* **Frames.** ``frames`` (default 8) frame indices evenly spaced over the clip
  (``linspace(0, n - 1, k)`` rounded, duplicates dropped); a missing clip has none.
* **Localising** a character or prop from its gold appearance text, per frame, keeping
  the best detection over ``threshold``:
  - ``detector=sim-cards`` (offline; the default when the run's judge is
    ``judge/sim-cards``): the appearance text is read with the sim card deck
    (:class:`~vidmem.models.backends.judge_sim_cards.CardDeck`, exactly as the card
    judge reads it) and that card is searched with ``classic/sift`` (image query).
    An image-guided detector finds the *drawn card only*: an impostor is "not
    detected", never "detected and unlike" -- the contrast shows in detection rates.
  - any detector with text queries (``owlvit/...``, ``grounding-dino/...``): one query,
    the entity's name and its gold appearance text (:func:`text_query`), all sampled
    frames of a clip in one ``detect`` call.
* **Crops** are the detected boxes, embedded with ``crop_embedder`` (default
  ``classic/hsv-lbp``); **locations** are whole frames, embedded with
  ``place_embedder`` (default ``classic/hsv-lbp``), always "detected" when the clip has
  frames.
* A :class:`Sighting` is the list of (frame position, unit-norm embedding) of the
  frames where the entity was found; two sightings are compared by the **highest
  cosine over frame pairs** found on both sides (:func:`best_cosine`).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from vidmem.errors import UserInputError

#: what an embedder without mask support sees outside the mask
FILL_GREY = 128
#: the segmenter name of the card's own silhouette (detector sim-cards only)
CARD_MASK = "card-alpha"

__all__ = ["CARD_MASK", "FILL_GREY", "PROTOCOL", "Measurer", "Sighting", "best_cosine",
           "frame_positions", "split_halves", "text_query"]

PROTOCOL: dict[str, dict[str, str]] = {
    "frames": {
        "rule": "k frames (opt frames, default 8) at round(linspace(0, n-1, k)), duplicates "
                "dropped; a missing clip has no frames and nothing is detected in it",
        "reason": "evenly spread over the 5-second segment; a few frames keep SIFT affordable",
        "source": "decided here (the reference frame sampler is not published)",
    },
    "localise_cards": {
        "rule": "detector=sim-cards: the gold appearance text read by the sim card deck "
                "(CardDeck.parse, as judge/sim-cards), that card searched with classic/sift "
                "(score >= threshold, default 0.25); the best box per frame",
        "reason": "offline grounding of 'name + description' in sim clips; an impostor is "
                  "not detected (the card is the remembered look), so impostors lower the "
                  "detection rates rather than the similarity",
        "source": "PROTOCOLS.md section 4 ('localise the entity from its name + "
                  "description'); offline proxy decided here",
    },
    "localise_text": {
        "rule": "a text detector gets one query per entity and side: 'NAME, APPEARANCE' "
                "(text_query: whitespace collapsed, inner periods made commas, the final "
                "period dropped; the name left out when the appearance already contains "
                "it); the best box per frame over threshold, boxes clipped to the frame, "
                "a box under 2 px a side (or not finite) is not a detection",
        "reason": "the protocol localises 'from its name and description'; a period is "
                  "Grounding DINO's phrase separator, so one entity stays one phrase",
        "source": "PROTOCOLS.md section 4; seed 000 App. D.2 ('from its name and "
                  "description'); punctuation handling decided here",
    },
    "embed": {
        "rule": "character/prop: the detected box, masked by segmenter (default: card-alpha, "
                "the found card's alpha resized into its box, with detector sim-cards; else "
                "classic/grabcut; segmenter=none: the whole box), embedded by crop_embedder "
                "(default classic/hsv-lbp; the protocol's is DINOv3) -- with masks= when the "
                "embedder takes masks, else the outside filled with grey 128; location: "
                "the whole frame, by place_embedder (default classic/hsv-lbp)",
        "reason": "the box holds the place behind the entity, which changes between "
                  "segments; masking keeps the entity (as CMBench's crops do)",
        "source": "PROTOCOLS.md section 4 (DINOv3 crops; locations whole frame)",
    },
    "faces": {
        "rule": "with a face_embedder: per found character crop (unmasked), the embedder's "
                "largest face; face similarity = highest cosine over frame pairs with a face "
                "on both sides; faces get their own Youden cut (kind 'face', same controls)",
        "reason": "the protocol's 'faces: largest face in the crop (face embedder)'",
        "source": "PROTOCOLS.md section 4; face/arcface-onnx's own rules for the face",
    },
    "similarity": {
        "rule": "the highest cosine over (frame of side A, frame of side B) pairs where "
                "the entity was found on both sides; none when either side has no frame",
        "reason": "the protocol's 'highest cosine over frame pairs detected on both sides'",
        "source": "PROTOCOLS.md section 4",
    },
}


@dataclass(frozen=True)
class Sighting:
    """Where one entity was found in one clip.

    Attributes:
        positions: positions (0..k-1) among the sampled frames where it was found.
        embeddings: ``(len(positions), D)`` float32, rows unit-norm.
        n_frames: frames sampled from the clip (0: no clip).
        why: why nothing could be searched (``None`` when searched).
    """

    positions: tuple[int, ...]
    embeddings: np.ndarray
    n_frames: int
    why: str | None = None
    face_positions: tuple[int, ...] = ()
    face_embeddings: np.ndarray | None = None

    @property
    def faces(self) -> Sighting:
        """The largest faces found in the crops, as a sighting of their own."""
        emb = self.face_embeddings if self.face_embeddings is not None else np.zeros((0, 1))
        return Sighting(self.face_positions, emb, self.n_frames, self.why)

    @property
    def found(self) -> bool:
        return bool(self.positions)


def frame_positions(n_frames: int, k: int) -> list[int]:
    """Frame indices of a clip of ``n_frames`` frames to sample ``k`` of.

    Example:
        >>> frame_positions(20, 4), frame_positions(3, 8), frame_positions(0, 4)
        ([0, 6, 13, 19], [0, 1, 2], [])
    """
    if n_frames <= 0:
        return []
    return sorted({int(i) for i in np.linspace(0, n_frames - 1, k).round()})


def best_cosine(a: np.ndarray, b: np.ndarray) -> float | None:
    """Highest cosine between any row of ``a`` and any row of ``b`` (unit-norm rows).

    Example:
        >>> best_cosine(np.array([[1.0, 0.0]]), np.array([[0.6, 0.8], [1.0, 0.0]]))
        1.0
        >>> best_cosine(np.zeros((0, 2)), np.array([[1.0, 0.0]])) is None
        True
    """
    if len(a) == 0 or len(b) == 0:
        return None
    return float(np.clip(np.max(np.asarray(a, np.float64) @ np.asarray(b, np.float64).T),
                         -1.0, 1.0))


def split_halves(s: Sighting) -> tuple[np.ndarray, np.ndarray]:
    """A sighting's embeddings at even and at odd frame positions (two disjoint sets).

    Example:
        >>> s = Sighting((0, 1, 3), np.eye(3, dtype=np.float32), 4)
        >>> [h.shape[0] for h in split_halves(s)]
        [1, 2]
    """
    pos = np.asarray(s.positions, int)
    return s.embeddings[pos % 2 == 0], s.embeddings[pos % 2 == 1]


def text_query(name: str, appearance: str) -> str:
    """The one text query of an entity: its name, then its appearance text.

    Example:
        >>> text_query("Kira", "A woman.")
        'Kira, A woman'
        >>> text_query("Mara", "Young Mara: a fisher girl. Blue  scarf.")
        'Young Mara: a fisher girl, Blue scarf'
        >>> text_query("", " A cup. ")
        'A cup'
    """
    look = " ".join(str(appearance).split()).rstrip(". ").replace(". ", ", ").replace(".", ",")
    name = " ".join(str(name).split())
    if not name or name.lower() in look.lower():
        return look
    return f"{name}, {look}" if look else name


def _unit_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


class Measurer:
    """Loads the detector and embedders once; finds and embeds entities in clips.

    Args:
        detector: ``sim-cards`` or a registered detector with text queries.
        deck: the card deck folder (``sim-cards`` only).
        crop_embedder, place_embedder: registered image embedders.
        segmenter: a registered box-prompted segmenter, or ``None`` for the whole box.
        face_embedder: a registered face embedder (``face/arcface-onnx``), or ``None``.
        frames: frames sampled per clip.
        threshold: detection score threshold.
        backend_options: per backend name, its constructor options.
    """

    def __init__(self, *, detector: str, deck: str | None, crop_embedder: str,
                 place_embedder: str, frames: int, threshold: float, segmenter: str | None,
                 face_embedder: str | None,
                 backend_options: Mapping[str, Mapping[str, Any]]) -> None:
        from vidmem.models.backends.place_embedder import load_place_embedder
        from vidmem.models.loading import load_backend

        opts = {k: dict(v) for k, v in backend_options.items()}
        self.frames, self.threshold, self.detector_name = frames, threshold, detector
        if detector == "sim-cards":
            from vidmem.models.backends.judge_sim_cards import CardDeck

            if not deck:
                raise UserInputError(
                    "identity analysis: detector sim-cards needs the sim card deck",
                    hint="--opt deck=DIR (`vidmem sim build` writes ROOT/_cards), or run "
                         "scored with judge/sim-cards:weights=DIR")
            # judge/sim-cards' own classic/sift: it keeps a clip's frame keypoints while
            # every entity of the story is searched in it (same results, one SIFT pass)
            from vidmem.models.backends.judge_sim_cards import _CardSift

            self.deck = CardDeck(Path(deck))
            self.detector = _CardSift(threshold=threshold, **opts.get("classic/sift", {}))
        else:
            self.deck = None
            self.detector = load_backend(detector, opts.get(detector), role="detector")
            if not getattr(self.detector, "supports_text", False):
                raise UserInputError(
                    f"identity analysis: detector {detector} takes no text queries",
                    hint="use a grounded detector (owlvit/..., grounding-dino/...) or "
                         "detector=sim-cards on sim runs")
        self.crop_embedder = load_backend(crop_embedder, opts.get(crop_embedder),
                                          role="image_embedder")
        self.place_embedder = load_place_embedder(place_embedder, opts.get(place_embedder))
        self.face_embedder_name = face_embedder
        self.face = (None if face_embedder is None else
                     load_backend(face_embedder, opts.get(face_embedder), role="face_embedder"))
        if segmenter == CARD_MASK and self.deck is None:
            raise UserInputError(f"identity analysis: segmenter {CARD_MASK} needs "
                                 "detector=sim-cards", hint="use classic/grabcut or none")
        self.segmenter_name = segmenter
        self.segmenter = (None if segmenter in (None, CARD_MASK) else
                          load_backend(segmenter, opts.get(segmenter), role="segmenter"))
        self._masks_ok = "masks" in inspect.signature(self.crop_embedder.embed_images).parameters
        self._clip_frames: dict[str, np.ndarray] = {}

    def clip_frames(self, clip: str | None) -> np.ndarray:
        """The sampled frames of a clip, ``(k, H, W, 3)`` uint8 (cached for one story)."""
        if clip is None:
            return np.zeros((0, 1, 1, 3), np.uint8)
        if clip not in self._clip_frames:
            from vidmem.io.video import probe, read_frames

            self._clip_frames[clip] = read_frames(
                clip, frame_positions(probe(clip).n_frames, self.frames))
        return self._clip_frames[clip]

    def forget_clips(self) -> None:
        self._clip_frames.clear()

    def _best_boxes(self, frames: np.ndarray, appearance: str,
                    name: str) -> list[tuple[float, ...] | None]:
        """Per frame, the best detection's box over threshold (``None``: nothing found)."""
        if self.deck is not None:
            look = self.deck.parse(appearance)
            assert look is not None and look.asset is not None
            card = np.ascontiguousarray(self.deck.card(look.asset, look.state)[..., :3])
            hits = self.detector.detect(list(frames), image_query=card, threshold=self.threshold)
        else:  # one call for the clip: one forward pass per batch, not per frame
            hits = self.detector.detect(list(frames), text_queries=[text_query(name, appearance)],
                                        threshold=self.threshold)
        return [tuple(h[0].box) if h else None for h in hits]

    def sight(self, clip: str | None, kind: str, appearance: str, name: str = "") -> Sighting:
        """Find (or, for a location, take) the entity in the clip's sampled frames.

        ``name`` joins the appearance text in a text detector's query (:func:`text_query`).
        """
        frames = self.clip_frames(clip)
        k = len(frames)
        empty = np.zeros((0, 1), np.float32)
        if k == 0:
            return Sighting((), empty, 0, "no clip")
        if kind == "location":
            emb = _unit_rows(self.place_embedder.embed_images(list(frames)))
            return Sighting(tuple(range(k)), emb, k)
        if self.deck is not None:
            look = self.deck.parse(appearance)
            if look is None or look.asset is None:
                return Sighting((), empty, k, "appearance outside the card deck")
        positions, boxes = [], []
        for i, (frame, box) in enumerate(zip(frames, self._best_boxes(frames, appearance, name),
                                             strict=True)):
            if box is None or not np.all(np.isfinite(box)):
                continue
            h, w = frame.shape[:2]
            x0, y0 = max(0, int(np.floor(box[0]))), max(0, int(np.floor(box[1])))
            x1, y1 = min(w, int(np.ceil(box[2]))), min(h, int(np.ceil(box[3])))
            if x1 - x0 >= 2 and y1 - y0 >= 2:
                positions.append(i)
                boxes.append((x0, y0, x1, y1))
        if not boxes:
            return Sighting((), empty, k)
        images = [frames[i] for i in positions]
        emb = self._embed(images, boxes, appearance)
        if self.face is None or kind != "character":
            return Sighting(tuple(positions), emb, k)
        crops = [np.ascontiguousarray(im[y0:y1, x0:x1]) for im, (x0, y0, x1, y1)
                 in zip(images, boxes, strict=True)]  # unmasked: the face detector's context
        vectors, _ = self.face.embed_faces(crops)
        got = [(p, v) for p, v in zip(positions, vectors, strict=True) if v is not None]
        return Sighting(tuple(positions), emb, k, face_positions=tuple(p for p, _ in got),
                        face_embeddings=np.stack([v for _, v in got]).astype(np.float32)
                        if got else None)

    def _masks(self, images: list[np.ndarray], boxes: list[tuple[int, ...]],
               appearance: str) -> list[np.ndarray]:
        if self.segmenter_name == CARD_MASK:
            look = self.deck.parse(appearance)
            alpha = self.deck.card(look.asset, look.state)[..., 3]
            return [cv2.resize(alpha, (x1 - x0, y1 - y0), interpolation=cv2.INTER_AREA) > 127
                    for x0, y0, x1, y1 in boxes]
        return [m[y0:y1, x0:x1] for m, (x0, y0, x1, y1) in zip(
            self.segmenter.segment(images, [tuple(map(float, b)) for b in boxes]), boxes,
            strict=True)]

    def _embed(self, images: list[np.ndarray], boxes: list[tuple[int, ...]],
               appearance: str) -> np.ndarray:
        crops = [np.ascontiguousarray(im[y0:y1, x0:x1]) for im, (x0, y0, x1, y1)
                 in zip(images, boxes, strict=True)]
        if self.segmenter_name is None:
            return _unit_rows(self.crop_embedder.embed_images(crops))
        masks = self._masks(images, boxes, appearance)
        if self._masks_ok:  # the classic embedders ignore unmasked pixels
            return _unit_rows(self.crop_embedder.embed_images(crops, masks=masks))
        filled = [np.where(m[..., None], c, np.uint8(FILL_GREY)) for c, m in
                  zip(crops, masks, strict=True)]
        return _unit_rows(self.crop_embedder.embed_images(filled))

    def describe(self) -> dict[str, Any]:
        """What measured: backends and settings, for the result."""
        return {"detector": self.detector_name,
                "deck": None if self.deck is None else str(self.deck.root),
                "crop_embedder": self.crop_embedder.info().name
                if hasattr(self.crop_embedder, "info") else str(self.crop_embedder),
                "place_embedder": self.place_embedder.info().name
                if hasattr(self.place_embedder, "info") else str(self.place_embedder),
                "segmenter": self.segmenter_name, "face_embedder": self.face_embedder_name,
                "frames": self.frames, "threshold": self.threshold}

