"""Paired, story-clustered bootstrap of differences between pooled rates of two arms.

Two arms (say a memory policy and the no-memory control) were run on the same stories.
Each arm gives, per story, the (numerator, denominator) counts of a few pooled rates --
for VMem-Bench Track-B Recall, Precision and Avoid-OK, from
:func:`vidmem.metrics.track_b.story_counts`. One bootstrap draw resamples the *stories*
with replacement, applies the same draw to both arms, pools each arm's counts over the
drawn stories (a story drawn twice counts twice), takes each rate and the difference
``a - b``. The interval is the percentile interval of the draws' differences (2.5th to
97.5th percentile at 95%), one per rate: a vector, never one number.

Vectorised: the draw is one ``(n_resamples, n_stories)`` matrix of story indices from a
single ``rng.integers`` call, turned into a multiplicity matrix ``M`` (how often each
story is drawn); pooled counts are ``M @ counts``.

Every choice is in :data:`PROTOCOL`, with its reason and its source, for the run log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from vidmem.errors import UserInputError

__all__ = ["DEFAULT_NAMES", "DEFAULT_SEED", "PROTOCOL", "PairedBootstrap",
           "multiplicities", "paired_story_bootstrap"]

#: the rates of the Track-B vector, in the row order of ``story_counts``
DEFAULT_NAMES = ("recall", "precision", "avoid_ok")
#: the protocol's bootstrap seed (paper App. D.1)
DEFAULT_SEED = 20260925

#: every choice this module makes: what it is, why, and where it comes from
PROTOCOL: dict[str, dict[str, str]] = {
    "unit": {
        "rule": "resample stories with replacement (clusters), never segments",
        "reason": "segments of one story share one closed-loop rollout and are not independent",
        "source": "PROTOCOLS.md section 4 'Statistics'; paper App. D.1",
    },
    "paired": {
        "rule": "the same story draw is applied to both arms",
        "reason": "both arms ran on the same stories; pairing removes story difficulty",
        "source": "PROTOCOLS.md section 4; paper App. D.1",
    },
    "pooling": {
        "rule": "within a draw, counts are summed over the drawn stories (with multiplicity), "
                "then each rate = numerator / denominator",
        "reason": "the reported rates are pooled counts, not means of per-story rates",
        "source": "PROTOCOLS.md section 4 ('pool counts within the draw'); paper App. D.1",
    },
    "draws": {
        "rule": "n_resamples = 2000, seed 20260925, numpy default_rng(seed).integers(0, S, "
                "(n_resamples, S)) over the stories sorted by id",
        "reason": "the protocol's draw count and seed; sorting makes the draw independent of "
                  "input order",
        "source": "PROTOCOLS.md section 4; paper App. D.1; generator and order decided here",
    },
    "difference": {
        "rule": "difference = rate(arm_a) - rate(arm_b); pass the policy as arm_a and the "
                "no-memory control as arm_b",
        "reason": "the paper reports policy minus no memory",
        "source": "paper section 3.3 (Delta_pi = pi - no memory)",
    },
    "interval": {
        "rule": "percentile interval: the (1-c)/2 and (1+c)/2 quantiles of the draws' "
                "differences (numpy linear interpolation), 2.5-97.5 at c = 0.95",
        "reason": "the protocol's percentile bootstrap",
        "source": "PROTOCOLS.md section 4; paper App. D.1; quantile method decided here",
    },
    "undefined": {
        "rule": "a draw whose pooled denominator is 0 in either arm has no difference for that "
                "rate: it is left out of that rate's percentiles and counted (n_undefined); "
                "no interval when every draw is undefined",
        "reason": "never invent a rate; a reader sees how many draws were dropped",
        "source": "decided here (the reference bootstrap code is not published)",
    },
    "point": {
        "rule": "the point estimate is the difference of the two arms' pooled rates over all "
                "stories once",
        "reason": "the estimate the interval describes",
        "source": "PROTOCOLS.md section 4",
    },
    "stories": {
        "rule": "both arms must hold the same story ids; counts are (numerator, denominator) "
                "pairs with 0 <= numerator <= denominator",
        "reason": "a paired bootstrap needs every story in both arms",
        "source": "decided here",
    },
}


def _fail(where: str, expected: str, found: object, fix: str) -> UserInputError:
    return UserInputError(f"{where}: expected {expected}, found {found!r}", hint=fix)


@dataclass(frozen=True)
class PairedBootstrap:
    """The difference vector ``a - b`` with its paired story-bootstrap intervals.

    Tuples are indexed like ``names``; an entry is ``None`` where a rate is undefined.

    Attributes:
        names: the rates, e.g. ``("recall", "precision", "avoid_ok")``.
        difference: point estimates ``rate_a - rate_b`` over all stories.
        low, high: percentile interval bounds of the draws' differences.
        rate_a, rate_b: each arm's pooled rates over all stories.
        n_undefined: per rate, the draws left out (a zero denominator in either arm).
        n_stories, n_resamples, seed, confidence: the bootstrap's setting.
        draws: ``(n_resamples, len(names))`` float array of the draws' differences,
            NaN where undefined (not compared, not printed).
    """

    names: tuple[str, ...]
    difference: tuple[float | None, ...]
    low: tuple[float | None, ...]
    high: tuple[float | None, ...]
    rate_a: tuple[float | None, ...]
    rate_b: tuple[float | None, ...]
    n_undefined: tuple[int, ...]
    n_stories: int
    n_resamples: int
    seed: int
    confidence: float
    draws: np.ndarray = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, object]:
        """Plain data for a summary: per rate its difference, interval and arm rates."""
        return {
            "difference": "a - b",
            "n_stories": self.n_stories, "n_resamples": self.n_resamples, "seed": self.seed,
            "confidence": self.confidence,
            "rates": {n: {"difference": self.difference[i], "ci_low": self.low[i],
                          "ci_high": self.high[i], "rate_a": self.rate_a[i],
                          "rate_b": self.rate_b[i], "n_undefined": self.n_undefined[i]}
                      for i, n in enumerate(self.names)},
        }


def _arm(arm: Mapping[str, object], name: str, k: int | None) -> dict[str, np.ndarray]:
    if not isinstance(arm, Mapping):
        raise _fail(f"paired_story_bootstrap({name})", "a mapping story_id -> (K, 2) counts",
                    type(arm).__name__, "use vidmem.metrics.track_b.story_counts(segments)")
    out: dict[str, np.ndarray] = {}
    for sid, v in arm.items():
        where = f"paired_story_bootstrap({name})[{sid!r}]"
        try:
            x = np.asarray(v, dtype=float)
        except (TypeError, ValueError):
            raise _fail(where, "numeric (numerator, denominator) counts", v,
                        "pass an array of shape (K, 2)") from None
        if x.ndim != 2 or x.shape[1] != 2 or (k is not None and x.shape[0] != k):
            raise _fail(where, f"shape ({k if k is not None else 'K'}, 2)", x.shape,
                        "one (numerator, denominator) row per rate")
        if not np.all(np.isfinite(x)) or np.any(x < 0) or np.any(x[:, 0] > x[:, 1]):
            raise _fail(where, "finite counts with 0 <= numerator <= denominator", x.tolist(),
                        "check the per-story counts")
        out[str(sid)] = x
    return out


def multiplicities(index: np.ndarray, n_stories: int) -> np.ndarray:
    """How often each story is drawn, per draw.

    Args:
        index: ``(n_draws, n)`` integer story indices in ``[0, n_stories)``.
        n_stories: number of stories.

    Returns:
        ``(n_draws, n_stories)`` float64 counts; each row sums to ``n``.

    Example:
        >>> multiplicities(np.array([[0, 0, 2], [1, 2, 0]]), 3).tolist()
        [[2.0, 0.0, 1.0], [1.0, 1.0, 1.0]]
    """
    idx = np.asarray(index, dtype=np.int64)
    b = idx.shape[0]
    flat = (idx + n_stories * np.arange(b, dtype=np.int64)[:, None]).ravel()
    return np.bincount(flat, minlength=b * n_stories).reshape(b, n_stories).astype(np.float64)


def _rates(pooled: np.ndarray) -> np.ndarray:
    """``(..., K, 2)`` counts -> ``(..., K)`` rates, NaN where the denominator is 0."""
    num, den = pooled[..., 0], pooled[..., 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _opt(x: float) -> float | None:
    return None if not np.isfinite(x) else float(x)


def paired_story_bootstrap(
    arm_a: Mapping[str, object],
    arm_b: Mapping[str, object],
    *,
    n_resamples: int = 2000,
    seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
    names: Sequence[str] = DEFAULT_NAMES,
) -> PairedBootstrap:
    """Paired story-clustered bootstrap of ``rate(a) - rate(b)`` for each pooled rate.

    Args:
        arm_a: story_id -> ``(K, 2)`` counts (numerator, denominator per rate) of the
            treatment arm (a memory policy), e.g. ``story_counts(policy_segments)``.
        arm_b: the same for the reference arm (no memory); the same story ids.
        n_resamples: bootstrap draws.
        seed: seed of ``numpy.random.default_rng``.
        confidence: two-sided level of the percentile interval.
        names: the K rate names (default recall, precision, avoid_ok).

    Returns:
        :class:`PairedBootstrap`.

    Raises:
        UserInputError: arms with different stories, bad counts or settings.

    Example:
        >>> a = {"s1": [[8, 10], [8, 9], [3, 4]], "s2": [[6, 10], [6, 8], [2, 4]]}
        >>> b = {"s1": [[5, 10], [5, 5], [4, 4]], "s2": [[4, 10], [4, 4], [4, 4]]}
        >>> r = paired_story_bootstrap(a, b, n_resamples=500)
        >>> [round(d, 4) for d in r.difference]
        [0.25, -0.1765, -0.375]
        >>> r.low[0] <= r.difference[0] <= r.high[0], r.n_undefined
        (True, (0, 0, 0))
    """
    names = tuple(str(n) for n in names)
    if not names:
        raise _fail("paired_story_bootstrap names", "at least one rate name", names,
                    "e.g. ('recall', 'precision', 'avoid_ok')")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) \
            or n_resamples < 1:
        raise _fail("paired_story_bootstrap n_resamples", "an int >= 1", n_resamples, "e.g. 2000")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise _fail("paired_story_bootstrap seed", "an int", seed, "e.g. 20260925")
    if not (isinstance(confidence, (int, float)) and 0.0 < confidence < 1.0):
        raise _fail("paired_story_bootstrap confidence", "a level in (0, 1)", confidence,
                    "e.g. 0.95")
    k = len(names)
    a = _arm(arm_a, "arm_a", k)
    b = _arm(arm_b, "arm_b", k)
    if set(a) != set(b):
        raise _fail("paired_story_bootstrap", "the same stories in both arms",
                    {"only_in_a": sorted(set(a) - set(b)), "only_in_b": sorted(set(b) - set(a))},
                    "score both conditions on the same stories")
    if not a:
        raise _fail("paired_story_bootstrap", "at least one story", 0, "pass scored stories")
    stories = sorted(a)
    s = len(stories)
    ca = np.stack([a[sid] for sid in stories]).reshape(s, 2 * k)
    cb = np.stack([b[sid] for sid in stories]).reshape(s, 2 * k)

    rng = np.random.default_rng(int(seed))
    index = rng.integers(0, s, size=(int(n_resamples), s))
    m = multiplicities(index, s)
    ra = _rates((m @ ca).reshape(-1, k, 2))
    rb = _rates((m @ cb).reshape(-1, k, 2))
    draws = ra - rb

    pa = _rates(ca.sum(axis=0).reshape(k, 2))
    pb = _rates(cb.sum(axis=0).reshape(k, 2))
    alpha = (1.0 - confidence) / 2.0
    low: list[float | None] = []
    high: list[float | None] = []
    undefined: list[int] = []
    for j in range(k):
        col = draws[:, j]
        ok = col[np.isfinite(col)]
        undefined.append(int(col.size - ok.size))
        if ok.size:
            lo, hi = np.percentile(ok, [100.0 * alpha, 100.0 * (1.0 - alpha)])
            low.append(float(lo))
            high.append(float(hi))
        else:
            low.append(None)
            high.append(None)
    return PairedBootstrap(
        names=names,
        difference=tuple(_opt(x) for x in pa - pb),
        low=tuple(low), high=tuple(high),
        rate_a=tuple(_opt(x) for x in pa), rate_b=tuple(_opt(x) for x in pb),
        n_undefined=tuple(undefined), n_stories=s, n_resamples=int(n_resamples),
        seed=int(seed), confidence=float(confidence), draws=draws,
    )
