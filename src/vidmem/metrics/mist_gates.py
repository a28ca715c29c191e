"""Gate arithmetic of the delayed-reveal protocol (MIST): judge readings in, factors out.

Per clip a fixed VLM judge gives (PROTOCOLS.md section 5):

* ``setup`` -- one reading of the first shot (the scene is set), in [0, 1];
* ``leak`` -- one reading of the gap shot (it shows the target), in [0, 1];
* ``reveal`` and ``inside`` -- one reading at each of the six reveal positions
  :data:`REVEAL_POSITIONS` (fractions of the reveal shot): the requested action happened
  and the state is readable; the state shown matches s*. A reading is a number in [0, 1]
  (a YES/NO answer is 1/0, a bool is accepted) or ``None`` when the judge's answer could
  not be parsed or the frame could not be read (*unreadable*).

Six readings become one factor each (:func:`clip_gates`):

* **reveal** = the mean of the readable reveal readings (a number in [0, 1]);
* **opened** (the thresholded action class) = reveal >= ``threshold`` (0.5): with yes/no
  readings, the lid is open in at least half of the readable positions (majority);
* **inside** = the mean of the readable inside readings; **inside_last** = the inside
  reading at the *last readable* position (the strict last-frame check);
* **label**: ``unscored`` when no reveal reading is readable; else ``never_open`` when
  not opened; else ``correct`` when inside_last >= ``threshold``; else
  ``open_but_wrong``.

:func:`summarize_gates` reports the four factors apart (means over clips), the label
counts overall and per operation family (R0/R1/R2); it never reports their product.

Every rule is in :data:`PROTOCOL` with its reason and source.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["LABELS", "PROTOCOL", "REVEAL_POSITIONS", "ClipGates", "clip_gates",
           "summarize_gates"]

#: where in the reveal shot the judge reads (fractions of the shot's duration)
REVEAL_POSITIONS = (0.90, 0.93, 0.95, 0.97, 0.99, 0.995)
#: the per-clip classes, in report order
LABELS = ("never_open", "open_but_wrong", "correct")
THRESHOLD = 0.5

PROTOCOL: dict[str, dict[str, str]] = {
    "positions": {
        "rule": "six reveal readings at 0.90, 0.93, 0.95, 0.97, 0.99, 0.995 of the reveal shot",
        "reason": "the protocol's judge positions, frozen across arms",
        "source": "PROTOCOLS.md section 5; seed 001 Table 7 text",
    },
    "reveal_factor": {
        "rule": "reveal = mean of the readable reveal readings; unreadable (None) readings "
                "are left out, not counted as closed",
        "reason": "the paper reports a continuous mean reveal per arm, distinct from the "
                  "thresholded class",
        "source": "seed 001 section 3 ('Never-open is the thresholded action class, not the "
                  "mean reveal'); the six-to-one rule is decided here (no reference code found)",
    },
    "opened": {
        "rule": "opened = reveal >= 0.5 (majority of readable positions for yes/no readings)",
        "reason": "a thresholded action class; a majority resists one misread frame",
        "source": "decided here (the paper gives no threshold)",
    },
    "inside_factor": {
        "rule": "inside = mean of readable inside readings; inside_last = the reading at the "
                "last readable position, used for the class",
        "reason": "inside is the last-frame match with s*; the paper reports both a mean "
                  "inside and a strict last-frame YES rate",
        "source": "PROTOCOLS.md section 5 ('inside (last frame matches s*)'); seed 001 App. "
                  "(mean inside 0.047 vs strict YES 1/43)",
    },
    "label": {
        "rule": "never_open if not opened; correct if opened and inside_last >= 0.5; else "
                "open_but_wrong; unscored when no reveal reading is readable",
        "reason": "one label per clip separates a missing action from a wrong state",
        "source": "PROTOCOLS.md section 5; seed 001 section 4",
    },
    "factors_apart": {
        "rule": "setup, leak, reveal, inside are reported as separate means; no product",
        "reason": "the product cannot tell a missing action from a wrong state",
        "source": "PROTOCOLS.md section 5 ('never only their product'); seed 001 Eq. (1)",
    },
}

Reading = float | int | bool | None


def _reading(value: object, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    if not isinstance(value, (int, float)) or isinstance(value, complex):
        raise ValueError(f"{what}: expected a number in [0, 1], a bool or None, found "
                         f"{type(value).__name__} {value!r}")
    x = float(value)
    if math.isnan(x):
        return None
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"{what}: expected a number in [0, 1], found {x!r}")
    return x


def _six(readings: Sequence[Reading] | Mapping[float, Reading], what: str) -> list[float | None]:
    if isinstance(readings, Mapping):
        extra = sorted(set(readings) - set(REVEAL_POSITIONS))
        if extra:
            raise ValueError(f"{what}: positions must be among {REVEAL_POSITIONS}, found {extra}")
        seq: list[Reading] = [readings.get(p) for p in REVEAL_POSITIONS]
    else:
        seq = list(readings)
        if len(seq) != len(REVEAL_POSITIONS):
            raise ValueError(f"{what}: expected {len(REVEAL_POSITIONS)} readings, one per "
                             f"position {REVEAL_POSITIONS}, found {len(seq)}")
    return [_reading(v, f"{what}[{i}]") for i, v in enumerate(seq)]


@dataclass(frozen=True)
class ClipGates:
    """One clip's gate factors (rules in the module docstring)."""

    setup: float | None
    leak: float | None
    reveal: float | None
    inside: float | None
    inside_last: float | None
    opened: bool | None
    label: str
    n_readable: int

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def clip_gates(
    setup: Reading,
    leak: Reading,
    reveal: Sequence[Reading] | Mapping[float, Reading],
    inside: Sequence[Reading] | Mapping[float, Reading],
    *,
    threshold: float = THRESHOLD,
) -> ClipGates:
    """Turn one clip's judge readings into its gate factors and its label.

    Args:
        setup: the first-shot reading; leak: the gap-shot reading ([0, 1] or None).
        reveal, inside: six readings in :data:`REVEAL_POSITIONS` order, or a mapping
            position -> reading (missing positions are unreadable).
        threshold: the class threshold on reveal and inside_last.

    Example:
        >>> g = clip_gates(1, 0, [0, 0, 1, 1, 1, None], [0, 0, 0, 1, 1, None])
        >>> g.reveal, g.opened, g.inside, g.inside_last, g.label
        (0.6, True, 0.4, 1.0, 'correct')
        >>> clip_gates(1, 0, [0, 0, 0, 0, 1, 1], [0] * 6).label
        'never_open'
        >>> clip_gates(1, 0, [1] * 6, [1, 1, 1, 1, 1, 0]).label
        'open_but_wrong'
        >>> clip_gates(None, None, [None] * 6, [None] * 6).label
        'unscored'
    """
    r = _six(reveal, "reveal")
    i = _six(inside, "inside")
    readable_r = [x for x in r if x is not None]
    readable_i = [x for x in i if x is not None]
    rev = sum(readable_r) / len(readable_r) if readable_r else None
    ins = sum(readable_i) / len(readable_i) if readable_i else None
    last = readable_i[-1] if readable_i else None
    if rev is None:
        opened, label = None, "unscored"
    else:
        opened = rev >= threshold
        label = ("never_open" if not opened else
                 "correct" if last is not None and last >= threshold else "open_but_wrong")
    return ClipGates(_reading(setup, "setup"), _reading(leak, "leak"), rev, ins, last, opened,
                     label, len(readable_r))


def _mean(values: list[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return sum(xs) / len(xs) if xs else None


def summarize_gates(
    clips: Sequence[ClipGates],
    families: Sequence[str] | None = None,
    *,
    threshold: float = THRESHOLD,
) -> dict[str, object]:
    """The factors apart and the label counts, overall and per operation family.

    Args:
        clips: one :class:`ClipGates` per case.
        families: the operation family of each clip (``R0``/``R1``/``R2``), aligned.
        threshold: leak counts count clips with leak >= threshold.

    Returns:
        ``{"n", "setup", "leak", "reveal", "inside", "inside_last", "n_leak",
        "labels": {label: count}, "n_unscored", "by_family": {family: same}}``; a mean
        is None when no clip has a readable value.

    Example:
        >>> a = clip_gates(1, 0, [1] * 6, [1] * 6)
        >>> b = clip_gates(0.5, 0, [0] * 6, [0] * 6)
        >>> s = summarize_gates([a, b], ["R0", "R1"])
        >>> s["reveal"], s["setup"], s["labels"]
        (0.5, 0.75, {'never_open': 1, 'open_but_wrong': 0, 'correct': 1})
        >>> s["by_family"]["R1"]["labels"]["never_open"]
        1
    """
    if families is not None and len(families) != len(clips):
        raise ValueError(f"families: expected one per clip ({len(clips)}), found "
                         f"{len(families)}")

    def block(cs: Sequence[ClipGates]) -> dict[str, object]:
        return {
            "n": len(cs),
            "setup": _mean([c.setup for c in cs]), "leak": _mean([c.leak for c in cs]),
            "reveal": _mean([c.reveal for c in cs]), "inside": _mean([c.inside for c in cs]),
            "inside_last": _mean([c.inside_last for c in cs]),
            "n_leak": sum(c.leak is not None and c.leak >= threshold for c in cs),
            "labels": {k: sum(c.label == k for c in cs) for k in LABELS},
            "n_unscored": sum(c.label == "unscored" for c in cs),
        }

    out = block(clips)
    if families is not None:
        out["by_family"] = {f: block([c for c, g in zip(clips, families, strict=True) if g == f])
                            for f in sorted(set(families))}
    return out
