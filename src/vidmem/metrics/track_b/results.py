"""Track-B result records: pooled proportions, Wilson-interval rates, family and pooled rates.

Part of :mod:`vidmem.metrics.track_b` (the overview is there).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Proportion:
    """A pooled count: ``numerator / denominator``.

    Example:
        >>> Proportion(3, 4).value, Proportion(0, 0).value
        (0.75, None)
    """

    numerator: int
    denominator: int

    @property
    def value(self) -> float | None:
        """The rate, ``None`` when the denominator is 0."""
        return self.numerator / self.denominator if self.denominator else None

    def to_dict(self) -> dict[str, float | int | None]:
        return {"value": self.value, "numerator": self.numerator, "denominator": self.denominator}


@dataclass(frozen=True)
class WilsonRate:
    """A pooled proportion with its Wilson score interval (``None`` bounds when n = 0)."""

    numerator: int
    denominator: int
    low: float | None
    high: float | None
    confidence: float

    @property
    def value(self) -> float | None:
        """The rate, ``None`` when the denominator is 0."""
        return self.numerator / self.denominator if self.denominator else None

    def to_dict(self) -> dict[str, float | int | None]:
        return {"value": self.value, "numerator": self.numerator,
                "denominator": self.denominator, "ci_low": self.low, "ci_high": self.high,
                "confidence": self.confidence}


@dataclass(frozen=True)
class FamilyRate:
    """One stress family: its named rates, the first being the family's headline rate."""

    family: str
    rates: dict[str, WilsonRate]

    @property
    def headline(self) -> WilsonRate:
        """The family's own rate (recall, accuracy, exact rate, correct-instance rate,
        correct-id rate or Avoid-OK)."""
        return next(iter(self.rates.values()))

    def to_dict(self) -> dict[str, object]:
        return {"family": self.family, "headline": next(iter(self.rates)),
                "rates": {k: v.to_dict() for k, v in self.rates.items()}}


@dataclass(frozen=True)
class PooledRates:
    """The pooled Track-B rates of one condition (see :func:`pooled_rates`).

    Attributes:
        recall: required character/prop entries judged present / required entries.
        precision: required entries judged present / non-location entries judged present
            among required, forbidden and false-friend-target entries.
        f1: harmonic mean of the two rates (0 when both are 0; ``None`` if undefined).
        avoid_ok: forbidden entries not judged present / forbidden entries.
        decoy_fpr: decoys judged present / decoys.
        abstain: entries answered 'abstain' / roster entries.
        unparsable: unparsable segments / segments.
        recall_by_kind: recall per kind: character, prop (required entries) and location
            (cast locations).
    """

    recall: Proportion
    precision: Proportion
    f1: float | None
    avoid_ok: Proportion
    decoy_fpr: Proportion
    abstain: Proportion
    unparsable: Proportion
    recall_by_kind: dict[str, Proportion]

    @property
    def n_segments(self) -> int:
        return self.unparsable.denominator

    def to_dict(self) -> dict[str, object]:
        return {"recall": self.recall.to_dict(), "precision": self.precision.to_dict(),
                "f1": self.f1, "avoid_ok": self.avoid_ok.to_dict(),
                "decoy_fpr": self.decoy_fpr.to_dict(), "abstain_rate": self.abstain.to_dict(),
                "unparsable": self.unparsable.to_dict(), "n_segments": self.n_segments,
                "recall_by_kind": {k: v.to_dict() for k, v in self.recall_by_kind.items()}}
