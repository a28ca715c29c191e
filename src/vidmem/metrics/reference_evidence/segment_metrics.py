"""Track-A per-segment numbers from label sets: precision, recall, F1, R_V, SelEff, R_S.

Part of :mod:`vidmem.metrics.reference_evidence` (the overview and the rules are there).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence

import numpy as np

from vidmem.errors import UserInputError

#: per-segment values and film means are rounded to this many decimals
SEGMENT_DIGITS = 4


def _fail(where: str, expected: str, found: object, fix: str) -> UserInputError:
    return UserInputError(f"{where}: expected {expected}, found {found!r}", hint=fix)


def _round(x: float, ndigits: int | None) -> float:
    return float(x) if ndigits is None else round(float(x), ndigits)


def _ids(value: object, where: str) -> frozenset[str]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise _fail(where, "a set of entity ids", value, "pass a set, list or tuple of ids")
    return frozenset(str(e) for e in value)


def _labels(shows: Sequence[Iterable[str] | None]) -> list[frozenset[str] | None]:
    return [None if s is None else _ids(s, f"shows[{i}]") for i, s in enumerate(shows)]


def _correct(shows: Sequence[Iterable[str] | None], present: Iterable[str]) -> list[frozenset[str]]:
    """Per reference, the entities of ``present`` it shows (empty for an unparsable one)."""
    p = _ids(present, "present")
    return [frozenset() if s is None else s & p for s in _labels(shows)]


def _view(views: Sequence[Mapping[str, Hashable] | None], i: int, entity: str) -> Hashable:
    row = views[i]
    if row is None or entity not in row:
        raise _fail(f"views[{i}]", f"a view key for entity {entity!r} (reference {i} shows it)",
                    None if row is None else sorted(row), "give every reference a key for "
                    "each present entity it shows")
    key = row[entity]
    try:
        hash(key)
    except TypeError:
        raise _fail(f"views[{i}][{entity!r}]", "a hashable view key", key,
                    "use a str, int or tuple as the key") from None
    return key


def precision(shows: Sequence[Iterable[str] | None], present: Iterable[str], *,
              ndigits: int | None = SEGMENT_DIGITS) -> float | None:
    """Share of the ``k`` references that show an entity on screen in the segment.

    Args:
        shows: per reference in rank order, the roster ids the judge says it shows, or
            ``None`` for an unparsable answer (counts in ``k``, shows nothing).
        present: ``P``, the entity ids on screen in the segment.
        ndigits: decimals to round to (``None``: exact).

    Returns:
        The share, or ``None`` when ``k = 0`` (not defined).

    Example:
        >>> precision([{"a"}, set(), None, {"zz"}], {"a", "b"})
        0.25
        >>> precision([], {"a"}) is None
        True
    """
    if not shows:
        return None
    correct = _correct(shows, present)
    return _round(sum(1 for s in correct if s) / len(correct), ndigits)


def recall(shows: Sequence[Iterable[str] | None], candidates: Iterable[str], *,
           ndigits: int | None = SEGMENT_DIGITS) -> float | None:
    """Share of the candidates ``C`` shown by at least one reference.

    Returns 0.0 for an empty selection and ``None`` when ``C`` is empty (the segment
    enters no recall or F1 mean).

    Example:
        >>> recall([{"a"}, {"a", "x"}, None], {"a", "b"})
        0.5
        >>> recall([], {"a"}), recall([{"a"}], set())
        (0.0, None)
    """
    c = _ids(candidates, "candidates")
    if not c:
        return None
    covered = frozenset().union(*(s for s in _labels(shows) if s is not None))
    return _round(len(c & covered) / len(c), ndigits)


def f1(p: float | None, r: float | None, *, ndigits: int | None = SEGMENT_DIGITS) -> float | None:
    """Per-segment F1 from its precision ``p`` and recall ``r``.

    ``r is None`` (no candidates) gives ``None``; ``p is None`` (empty selection) gives
    0.0, as does ``p + r == 0``.

    Example:
        >>> f1(0.5, 1.0), f1(None, 0.0), f1(0.0, 0.0), f1(1.0, None)
        (0.6667, 0.0, 0.0, None)
    """
    if r is None:
        return None
    if p is None or p + r == 0:
        return 0.0
    return _round(2 * p * r / (p + r), ndigits)


def _repeating(correct: list[frozenset[str]],
               views: Sequence[Mapping[str, Hashable] | None]) -> int:
    """Correct references all of whose (entity, view) pairs rank below an earlier one."""
    if views is None or len(views) != len(correct):
        raise _fail("views", f"one entry per reference ({len(correct)})",
                    None if views is None else len(views),
                    "pass a view-key mapping (or None) for every reference, in rank order")
    seen: set[tuple[str, Hashable]] = set()
    repeating = 0
    for i, entities in enumerate(correct):
        if not entities:
            continue
        pairs = {(e, _view(views, i, e)) for e in sorted(entities)}
        repeating += pairs <= seen
        seen |= pairs
    return repeating


def r_v(shows: Sequence[Iterable[str] | None], present: Iterable[str],
        views: Sequence[Mapping[str, Hashable] | None], *,
        ndigits: int | None = SEGMENT_DIGITS) -> float | None:
    """Share of correct references that repeat views already covered higher in the ranking.

    A correct reference repeats when, for every present entity it shows, a
    higher-ranked reference showed that entity with the same view key.

    Args:
        shows: per reference, roster ids shown (``None``: unparsable).
        present: ``P``.
        views: per reference, ``{entity: view key}`` for the present entities it shows
            (``None`` or anything for a reference that shows none).
        ndigits: decimals to round to (``None``: exact).

    Returns:
        The share, or ``None`` when no reference is correct.

    Example:
        >>> r_v([{"a"}, {"a"}, {"a", "b"}, {"a"}], {"a", "b"},
        ...     [{"a": 1}, {"a": 1}, {"a": 1, "b": 7}, {"a": 2}])
        0.25
    """
    correct = _correct(shows, present)
    n_correct = sum(1 for s in correct if s)
    if n_correct == 0:
        return None
    return _round(_repeating(correct, views) / n_correct, ndigits)


def sel_eff(shows: Sequence[Iterable[str] | None], present: Iterable[str],
            views: Sequence[Mapping[str, Hashable] | None], *,
            ndigits: int | None = SEGMENT_DIGITS) -> float | None:
    """Selection efficiency: correct references that add a new view, over ``k``.

    Equal to ``precision x (1 - r_v)``; 0.0 when no reference is correct, ``None``
    when ``k = 0``.

    Example:
        >>> sel_eff([{"a"}, {"a"}, set(), {"b"}], {"a", "b"}, [{"a": 0}, {"a": 0}, None, {"b": 0}])
        0.5
    """
    if not shows:
        return None
    correct = _correct(shows, present)
    useful = sum(1 for s in correct if s) - _repeating(correct, views)
    return _round(useful / len(correct), ndigits)


def _unit_rows(embeddings: object, k: int) -> np.ndarray:
    x = np.asarray(embeddings, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] != k:
        raise _fail("embeddings", f"a (k={k}, d) array, one row per reference",
                    f"shape {x.shape}", "pass one image embedding per reference, in rank order")
    if not np.isfinite(x).all():
        raise _fail("embeddings", "finite values", "NaN or inf", "re-embed the references")
    return x


def r_s(shows: Sequence[Iterable[str] | None], present: Iterable[str], embeddings: object, *,
        ndigits: int | None = SEGMENT_DIGITS) -> float | None:
    """Pair-weighted mean cosine among references that show the same present entity.

    Args:
        shows: per reference, roster ids shown (``None``: unparsable, in no group).
        present: ``P``.
        embeddings: ``(k, d)`` float image embeddings, one row per reference in rank
            order; rows are scaled to unit length (a zero row in a pair is an error).
        ndigits: decimals to round to (``None``: exact).

    Returns:
        Sum over entity groups of their pairwise cosines divided by the number of
        pairs, or ``None`` when no entity is shown by two references.

    Example:
        >>> r_s([{"a"}, {"a"}, {"a", "b"}, {"b"}], {"a", "b"},
        ...     [[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
        0.5
    """
    correct = _correct(shows, present)
    x = _unit_rows(embeddings, len(correct))
    groups: dict[str, list[int]] = {}
    for i, entities in enumerate(correct):
        for e in entities:
            groups.setdefault(e, []).append(i)
    total, pairs = 0.0, 0
    for e in sorted(groups):
        idx = groups[e]
        if len(idx) < 2:
            continue
        g = x[idx]
        norms = np.linalg.norm(g, axis=1)
        if (norms == 0).any():
            raise _fail("embeddings", "non-zero rows", f"a zero row among references {idx}",
                        "re-embed the references")
        g = g / norms[:, None]
        upper = np.triu_indices(len(idx), 1)
        total += float((g @ g.T)[upper].sum())
        pairs += len(upper[0])
    return None if pairs == 0 else _round(total / pairs, ndigits)
