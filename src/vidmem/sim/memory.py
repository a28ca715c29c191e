"""The sim generator's memory knob and the ways it degrades what is remembered.

Knob grammar (parsed strictly by :func:`parse_memory`):

``perfect``
    everything seen is reproduced exactly.
``none``
    anything that is not on screen at the moment generation starts (CMBench), or any
    revisited view (memory loop), is replaced by a wrong appearance.
``decay:TAU``
    ``TAU`` seconds (a positive number): the fidelity of something last seen ``gap``
    seconds ago is ``exp(-gap / TAU)``.
``leaky:P``
    ``P`` in ``[0, 1]``: memory is otherwise perfect, but each entity that was visible in
    the context (or in a reference image) and that the world has retired is copied
    into the output with probability ``P``.

Fidelity ``f`` is used as a blend weight: the rendered appearance is
``f * truth + (1 - f) * wrong``. "Wrong" is

* for an entity: an *impostor*, a different asset of the same kind (character or
  prop) that is not the entity's look-alike, chosen with the request's random stream;
  when none is left, the entity itself strongly recoloured;
* for a view in CMBench: the same camera pose on a *hallucinated panorama*
  (:func:`hallucinated_panorama`), another part of the world, mirrored and hue-rotated
  (a plausible place, but not the one that was seen);
* for a view in a memory loop: a place-free noise texture (:func:`fog_panorama`), so
  that a forgotten spot differs from the truth by about the same amount wherever the
  loop is (a plausible-looking substitute differs more from some places than from
  others, and that drift along a loop would be read as decay).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from vidmem.errors import UserInputError
from vidmem.sim.assets import ENTITIES

__all__ = [
    "MemoryKnob",
    "fog_panorama",
    "hallucinated_panorama",
    "least_used_hues",
    "impostor_for",
    "parse_memory",
    "request_rng",
]

_DECAY = re.compile(r"^decay:(?P<tau>[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)$")
_LEAKY = re.compile(r"^leaky:(?P<p>[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)$")


@dataclass(frozen=True)
class MemoryKnob:
    """A parsed memory setting.

    Attributes:
        text: the canonical spelling (``"decay:20"``).
        mode: ``perfect``, ``none``, ``decay`` or ``leaky``.
        tau_seconds: decay time for ``decay``, else ``None``.
        leak_probability: ``P`` for ``leaky`` (``0`` otherwise).
    """

    text: str
    mode: str
    tau_seconds: float | None = None
    leak_probability: float = 0.0

    def fidelity(self, gap_seconds: float) -> float:
        """How much of a memory ``gap_seconds`` old survives, in ``[0, 1]``.

        Example:
            >>> parse_memory("decay:10").fidelity(10.0)  # e^-1
            0.36787944117144233
            >>> parse_memory("none").fidelity(0.0), parse_memory("none").fidelity(0.5)
            (1.0, 0.0)
        """
        gap = max(0.0, float(gap_seconds))
        if self.mode == "none":
            return 1.0 if gap <= 1e-9 else 0.0
        if self.mode == "decay" and self.tau_seconds is not None:
            return math.exp(-gap / self.tau_seconds)
        return 1.0

    def fidelities(self, gaps_seconds: np.ndarray) -> np.ndarray:
        """:meth:`fidelity` of every gap in an array (same shape, float64)."""
        gaps = np.maximum(0.0, np.asarray(gaps_seconds, np.float64))
        if self.mode == "none":
            return np.where(gaps <= 1e-9, 1.0, 0.0)
        if self.mode == "decay" and self.tau_seconds is not None:
            return np.exp(-gaps / self.tau_seconds)
        return np.ones_like(gaps)

    def to_dict(self) -> dict[str, Any]:
        return {"memory": self.text, "mode": self.mode, "tau_seconds": self.tau_seconds,
                "leak_probability": self.leak_probability}


def parse_memory(text: object) -> MemoryKnob:
    """Parse a memory knob (grammar in the module docstring).

    Raises:
        UserInputError: anything else, with the accepted forms.

    Example:
        >>> parse_memory("decay:20")
        MemoryKnob(text='decay:20', mode='decay', tau_seconds=20.0, leak_probability=0.0)
        >>> parse_memory("leaky:0.5").leak_probability
        0.5
    """
    hint = ("use perfect, none, decay:TAU_SECONDS (TAU > 0, e.g. decay:20) or leaky:P "
            "(0 <= P <= 1, e.g. leaky:0.5)")
    if not isinstance(text, str):
        raise UserInputError(f"sim generator memory: expected a string, found {text!r}",
                             hint=hint)
    s = text.strip()
    if s in ("perfect", "none"):
        return MemoryKnob(s, s)
    m = _DECAY.match(s)
    if m:
        tau = float(m.group("tau"))
        if not (math.isfinite(tau) and tau > 0):
            raise UserInputError(f"sim generator memory {text!r}: TAU must be > 0 seconds",
                                 hint=hint)
        return MemoryKnob(f"decay:{tau:g}", "decay", tau_seconds=tau)
    m = _LEAKY.match(s)
    if m:
        p = float(m.group("p"))
        if not 0.0 <= p <= 1.0:
            raise UserInputError(f"sim generator memory {text!r}: P must be in [0, 1]",
                                 hint=hint)
        return MemoryKnob(f"leaky:{p:g}", "leaky", leak_probability=p)
    raise UserInputError(f"sim generator memory: unknown setting {text!r}", hint=hint)


def request_rng(seed: int, request_id: str, purpose: str) -> np.random.Generator:
    """A random stream that depends only on (generator seed, request id, purpose)."""
    digest = hashlib.sha256(f"{int(seed)}\0{request_id}\0{purpose}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def impostor_for(asset_id: str, state: str, exclude: Sequence[str],
                 rng: np.random.Generator) -> tuple[str, str]:
    """The wrong appearance a failed memory shows instead of ``asset_id``.

    Args:
        asset_id: the entity that should have been remembered.
        state: its true state (used by the recolour fallback).
        exclude: assets that must not be chosen (e.g. ones already in the scene).
        rng: the request's random stream.

    Returns:
        ``(other_asset, other_state)``.
    """
    a = ENTITIES[asset_id]
    banned = {asset_id, *(exclude or ())}
    if a.lookalike:
        banned.add(a.lookalike)
    pool = sorted(e.id for e in ENTITIES.values()
                  if e.kind == a.kind and e.id not in banned and e.lookalike not in (asset_id,))
    if pool:
        return str(pool[int(rng.integers(len(pool)))]), "base"
    colour = "teal" if state != "recoloured:teal" else "red"
    return asset_id, f"recoloured:{colour}"


def hallucinated_panorama(image: np.ndarray, rng: np.random.Generator, *,
                          mirror: bool = True) -> np.ndarray:
    """A plausible other place: what a forgetful model invents instead of a seen view.

    The panorama rolled by 30-70% of its width, mirrored left-right (when ``mirror``),
    hue-rotated by 90-270 degrees, with the saturation lifted (``S' = 0.35 + 0.65 S``)
    so grey places become coloured.

    Args:
        image: ``(H, W, 3)`` uint8 RGB panorama.
        rng: random stream (roll and hue are drawn from it).
        mirror: mirror left-right.

    Returns:
        ``(H, W, 3)`` uint8 RGB.
    """
    w = image.shape[1]
    out = np.roll(image, int(round(rng.uniform(0.3, 0.7) * w)), axis=1)
    if mirror:
        out = out[:, ::-1]
    hue = float(rng.uniform(90.0, 270.0))
    hsv = cv2.cvtColor(np.ascontiguousarray(out), cv2.COLOR_RGB2HSV_FULL)
    hsv[..., 0] = ((hsv[..., 0].astype(np.int32) + round(hue / 360.0 * 256)) % 256).astype(np.uint8)
    hsv[..., 1] = (89.0 + 0.65 * hsv[..., 1].astype(np.float32)).astype(np.uint8)
    return cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB_FULL)


#: hue sectors used to find the colour a place uses least (45 degrees each, centred
#: on red, as colour histograms usually bin hue).
_FOG_HUE_SECTORS = 8


def least_used_hues(image: np.ndarray, count: int = 1) -> list[float]:
    """Centres (degrees) of the ``count`` hue sectors a panorama uses least.

    Grey pixels have no hue to speak of, so each pixel counts by its saturation; the
    least used sector comes first.

    Example:
        >>> red = np.zeros((4, 4, 3), np.uint8); red[..., 0] = 255
        >>> hues = least_used_hues(red, 2)
        >>> len(hues), 0.0 in hues
        (2, False)
    """
    hsv = cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_RGB2HSV_FULL)
    width = 256.0 / _FOG_HUE_SECTORS
    sector = (np.floor((hsv[..., 0].astype(np.float64) + width / 2) / width).astype(np.int64)
              % _FOG_HUE_SECTORS)
    weight = np.bincount(sector.ravel(), weights=hsv[..., 1].astype(np.float64).ravel(),
                         minlength=_FOG_HUE_SECTORS)
    order = np.argsort(weight, kind="stable")[:count]
    return [float(i) * 360.0 / _FOG_HUE_SECTORS for i in order]


def fog_panorama(shape: tuple[int, int], hue_deg: float, rng: np.random.Generator, *,
                 grain_px: int = 6) -> np.ndarray:
    """A place-free "forgotten" texture: saturated noise of one hue.

    Used for a forgotten view in memory loops. It resembles no place (its structure
    is independent noise, so SSIM against any view is about 0, and its one hue is
    chosen by the caller as one the world hardly uses), so what a similarity measure
    gives for a forgotten spot is about the same everywhere along a loop. Two fogs
    drawn from different streams share the hue but not the grain.

    Args:
        shape: ``(height, width)`` in pixels.
        hue_deg: hue in degrees (jittered by up to +-8 degrees per draw).
        rng: random stream.
        grain_px: side of a noise cell, pixels.

    Returns:
        ``(height, width, 3)`` uint8 RGB.
    """
    h, w = shape
    cells = rng.random((-(-h // grain_px), -(-w // grain_px)))
    value = np.repeat(np.repeat(cells, grain_px, axis=0), grain_px, axis=1)[:h, :w]
    hue = (hue_deg + float(rng.uniform(-8.0, 8.0))) % 360.0
    hsv = np.empty((h, w, 3), np.uint8)
    hsv[..., 0] = round(hue / 360.0 * 256) % 256
    hsv[..., 1] = 230
    hsv[..., 2] = (70.0 + 185.0 * value).astype(np.uint8)
    return cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB_FULL)


def smooth_columns(weights: np.ndarray, sigma: float = 8.0) -> np.ndarray:
    """Gaussian-smooth per-column weights on a cylinder (wrapping around)."""
    n = len(weights)
    radius = int(3 * sigma)
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    kernel = np.exp(-0.5 * (x / sigma) ** 2)
    kernel /= kernel.sum()
    padded = np.concatenate([weights[-radius:], weights, weights[:radius]])
    return np.convolve(padded, kernel, mode="valid")[:n]


def blend_panoramas(true_img: np.ndarray, wrong_img: np.ndarray,
                    column_weight: np.ndarray) -> np.ndarray:
    """``(1 - w[u]) * true + w[u] * wrong`` per panorama column ``u``, uint8."""
    w = np.clip(column_weight, 0.0, 1.0).astype(np.float32)[None, :, None]
    out = true_img.astype(np.float32) * (1.0 - w) + wrong_img.astype(np.float32) * w
    return np.clip(out + 0.5, 0, 255).astype(np.uint8)
