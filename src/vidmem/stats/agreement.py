"""Agreement between two judges answering the same questions, per answer field.

Each judge's parsed answer (a JSON object) is flattened to leaf paths; for every path
both judges gave, categorical fields get raw agreement and Cohen's kappa, continuous
fields get mean absolute difference and Pearson r. Intervals come from a percentile
bootstrap that resamples clusters (items), since questions about one item are not
independent.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.metrics import cohen_kappa_score

_LEAF_TYPES = (type(None), bool, int, float, str)


def flatten_answer(answer: Mapping) -> dict[str, object]:
    """Leaf values of a JSON object keyed by path.

    Nested objects join keys with ``"."``, list elements append ``"[i]"``. An empty
    list or object is itself a leaf (value ``[]`` / ``{}``). Leaves must be ``None``,
    bool, int, float or str.

    Args:
        answer: a parsed JSON object.

    Returns:
        ``{path: leaf value}`` in document order.

    Raises:
        TypeError: ``answer`` is not a mapping, or a leaf has another type.

    Example:
        >>> flatten_answer({"a": {"b": True}, "c": [1, {"d": "x"}], "e": []})
        {'a.b': True, 'c[0]': 1, 'c[1].d': 'x', 'e': []}
    """
    if not isinstance(answer, Mapping):
        raise TypeError(f"flatten_answer: expected a mapping, found {type(answer).__name__}")
    out: dict[str, object] = {}

    def walk(value: object, path: str) -> None:
        if isinstance(value, Mapping) and value:
            for key, sub in value.items():
                walk(sub, f"{path}.{key}" if path else str(key))
        elif isinstance(value, list | tuple) and value:
            for i, sub in enumerate(value):
                walk(sub, f"{path}[{i}]")
        elif isinstance(value, Mapping | list | tuple):
            out[path] = {} if isinstance(value, Mapping) else []
        elif isinstance(value, _LEAF_TYPES):
            out[path] = value
        else:
            raise TypeError(f"flatten_answer: leaf {path!r} has type {type(value).__name__}")

    for key, sub in answer.items():
        walk(sub, str(key))
    return out


def _category(value: object) -> tuple:
    """Sortable category key: type rank first, so ``True != 1``; ``None`` is its own."""
    if value is None:
        return (0, 0)
    if isinstance(value, bool):
        return (1, int(value))
    if isinstance(value, int | float):
        return (2, value)  # 1 == 1.0 and hash alike, so they share a category
    if isinstance(value, str):
        return (3, value)
    return (4, "{}" if isinstance(value, Mapping) else "[]")


def confusion_table(a_values: Sequence, b_values: Sequence) -> tuple[list, np.ndarray]:
    """Cross-tabulate two judges' values as categories.

    Categories are compared by type and value, so ``True`` and ``1`` differ while ``1``
    and ``1.0`` are the same; labels are sorted (None, bools, numbers, strings, empties).

    Args:
        a_values: the first judge's values.
        b_values: the second judge's values, same length.

    Returns:
        ``(labels, matrix)``: ``labels`` the categories used by either judge (first
        value seen for each), ``matrix[i, j]`` the count of questions where the first
        judge said ``labels[i]`` and the second ``labels[j]``.

    Example:
        >>> labels, m = confusion_table(["yes", "no", "yes", True], ["yes", "yes", "no", 1])
        >>> labels
        [True, 1, 'no', 'yes']
        >>> m.tolist()
        [[0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 1]]
    """
    if len(a_values) != len(b_values):
        raise ValueError(f"confusion_table: lengths differ ({len(a_values)} vs {len(b_values)})")
    keys_a = [_category(v) for v in a_values]
    keys_b = [_category(v) for v in b_values]
    first_seen: dict[tuple, object] = {}
    for k, v in zip(keys_a + keys_b, list(a_values) + list(b_values), strict=True):
        first_seen.setdefault(k, v)
    order = sorted(first_seen)
    index = {k: i for i, k in enumerate(order)}
    matrix = np.zeros((len(order), len(order)), dtype=np.int64)
    for ka, kb in zip(keys_a, keys_b, strict=True):
        matrix[index[ka], index[kb]] += 1
    return [first_seen[k] for k in order], matrix


@dataclass(frozen=True)
class FieldAgreement:
    """How well two judges agree on one answer field.

    Attributes:
        field: the flattened path, e.g. ``"objects[0].present"``.
        kind: ``"categorical"`` or ``"continuous"`` (some value a non-integral float).
        n: questions where both judges gave the field.
        agreement: fraction of exactly equal values (categorical only, else ``None``).
        kappa: Cohen's kappa (categorical only); ``None`` when undefined, see ``note``.
        agreement_ci, kappa_ci: ``(low, high)`` cluster-bootstrap intervals, or ``None``.
        mean_abs_diff: mean ``|a - b|`` (continuous only, else ``None``).
        pearson_r: Pearson correlation (continuous only; ``None`` when a side is
            constant or fewer than two pairs).
        n_clusters: distinct clusters (items) among the ``n`` questions.
        confidence, n_resamples, seed: the bootstrap settings.
        note: why something is ``None`` or how many bootstrap draws were skipped.
    """

    field: str
    kind: str
    n: int
    agreement: float | None
    kappa: float | None
    agreement_ci: tuple[float, float] | None
    kappa_ci: tuple[float, float] | None
    mean_abs_diff: float | None
    pearson_r: float | None
    n_clusters: int
    confidence: float
    n_resamples: int
    seed: int
    note: str | None

    def to_dict(self) -> dict[str, object]:
        return {"field": self.field, "kind": self.kind, "n": self.n, "agreement": self.agreement,
                "kappa": self.kappa, "agreement_ci": _as_list(self.agreement_ci),
                "kappa_ci": _as_list(self.kappa_ci),
                "mean_abs_diff": self.mean_abs_diff, "pearson_r": self.pearson_r,
                "n_clusters": self.n_clusters, "confidence": self.confidence,
                "n_resamples": self.n_resamples, "seed": self.seed, "note": self.note}


def _as_list(ci: tuple[float, float] | None) -> list[float] | None:
    return None if ci is None else list(ci)


def _kappa_from_tables(tables: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Observed agreement and kappa (NaN where ``p_e == 1``) for a stack of tables."""
    total = tables.sum(axis=(-2, -1)).astype(float)
    p_o = np.trace(tables, axis1=-2, axis2=-1) / total
    p_e = (tables.sum(axis=-1) * tables.sum(axis=-2)).sum(axis=-1) / total**2
    undefined = np.isclose(p_e, 1.0, rtol=0.0, atol=1e-12)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = np.where(undefined, np.nan, (p_o - p_e) / np.where(undefined, 1.0, 1.0 - p_e))
    return p_o, kappa


def _percentile_ci(draws: np.ndarray, confidence: float) -> tuple[float, float]:
    lo, hi = np.percentile(draws, [50 * (1 - confidence), 50 * (1 + confidence)])
    return float(lo), float(hi)


def _categorical(a: list, b: list, groups: np.ndarray, n_groups: int,
                 confidence: float, n_resamples: int, seed: int) -> tuple:
    labels, table = confusion_table(a, b)
    index = {_category(v): i for i, v in enumerate(labels)}
    codes_a, codes_b = ([index[_category(v)] for v in vs] for vs in (a, b))
    notes: list[str] = []
    agreement = float(np.trace(table) / table.sum())
    kappa = None
    if np.isnan(_kappa_from_tables(table)[1]):
        notes.append(f"kappa undefined: both judges used only the category {labels[0]!r}")
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kappa = float(cohen_kappa_score(codes_a, codes_b, labels=list(range(len(labels)))))
    agreement_ci = kappa_ci = None
    if n_groups >= 2:
        # One confusion table per cluster; a draw's table is a count-weighted sum.
        n_labels = len(labels)
        per_group = np.zeros((n_groups, n_labels * n_labels))
        np.add.at(per_group, (groups, np.array(codes_a) * n_labels + np.array(codes_b)), 1)
        drawn = np.random.default_rng(seed).integers(0, n_groups, size=(n_resamples, n_groups))
        offsets = drawn + n_groups * np.arange(n_resamples)[:, None]
        counts = np.bincount(offsets.ravel(), minlength=n_resamples * n_groups)
        tables = (counts.reshape(n_resamples, n_groups) @ per_group).reshape(
            n_resamples, n_labels, n_labels)
        p_o, kappas = _kappa_from_tables(tables)
        agreement_ci = _percentile_ci(p_o, confidence)
        ok = ~np.isnan(kappas)
        skipped = int(n_resamples - ok.sum())
        if ok.any():
            kappa_ci = _percentile_ci(kappas[ok], confidence)
        if skipped:
            notes.append(f"{skipped} of {n_resamples} bootstrap draws had undefined kappa "
                         "and were skipped")
    else:
        notes.append("no interval: fewer than 2 clusters")
    return agreement, kappa, agreement_ci, kappa_ci, notes


def _is_number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _continuous(a: list, b: list) -> tuple:
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if _is_number(x) and _is_number(y)]
    notes: list[str] = []
    if len(pairs) < len(a):
        notes.append(f"{len(a) - len(pairs)} pairs with a non-numeric value left out")
    if not pairs:
        return None, None, notes
    x, y = np.array(pairs, dtype=float).T
    mad = float(np.mean(np.abs(x - y)))
    r = None
    if len(pairs) < 2:
        notes.append("pearson_r undefined: fewer than 2 numeric pairs")
    elif np.ptp(x) == 0.0 or np.ptp(y) == 0.0:
        notes.append("pearson_r undefined: a judge's values are constant")
    else:
        from scipy import stats as _stats  # 1.2 s to import: only when used
        r = float(_stats.pearsonr(x, y)[0])
    return mad, r, notes


def field_agreement(
    first: Sequence[Mapping],
    second: Sequence[Mapping],
    clusters: Sequence[str] | None = None,
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> list[FieldAgreement]:
    """Per-field agreement between two judges' answers to the same questions.

    Fields are the union of :func:`flatten_answer` paths over both judges, sorted; each
    field uses only the questions where both answers have it. A field is continuous
    when any value of it is a non-integral float; otherwise its values are categories
    (bools, ints, strings, ``None``; ``True != 1``). Intervals: percentile bootstrap
    drawing clusters with replacement (all of a cluster's questions come along) from
    ``numpy.random.default_rng(seed)``, ``n_resamples`` draws; draws with undefined
    kappa are skipped for ``kappa_ci``; no interval with fewer than two clusters.
    Continuous fields get point estimates only.

    Args:
        first: the first judge's parsed answer to each question.
        second: the second judge's answers, aligned with ``first``.
        clusters: the item each question belongs to; default, each its own.
        confidence: interval level in (0, 1).
        n_resamples: bootstrap draws.
        seed: generator seed.

    Returns:
        One :class:`FieldAgreement` per field, sorted by path.

    Example:
        >>> a = [{"ok": True, "s": 0.5}, {"ok": False, "s": 0.25}, {"ok": True}]
        >>> b = [{"ok": True, "s": 0.75}, {"ok": True, "s": 0.25}, {"ok": True}]
        >>> ok, s = field_agreement(a, b, n_resamples=200)
        >>> ok.field, ok.n, round(ok.agreement, 3), ok.kappa
        ('ok', 3, 0.667, 0.0)
        >>> s.kind, s.n, s.mean_abs_diff, s.pearson_r
        ('continuous', 2, 0.125, 1.0)
    """
    if len(first) != len(second):
        raise ValueError(f"field_agreement: {len(first)} first answers, {len(second)} second")
    if clusters is not None and len(clusters) != len(first):
        raise ValueError(f"field_agreement: {len(clusters)} clusters for {len(first)} questions")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"field_agreement: confidence must be in (0, 1), found {confidence}")
    if n_resamples < 1:
        raise ValueError(f"field_agreement: n_resamples must be positive, found {n_resamples}")
    flat_a = [flatten_answer(x) for x in first]
    flat_b = [flatten_answer(x) for x in second]
    cluster_of = list(range(len(first))) if clusters is None else list(clusters)
    results = []
    for field in sorted({p for f in flat_a + flat_b for p in f}):
        seen = [f[field] for f in flat_a + flat_b if field in f]
        continuous = any(isinstance(v, float) and not v.is_integer() for v in seen)
        both = [k for k in range(len(first)) if field in flat_a[k] and field in flat_b[k]]
        a = [flat_a[k][field] for k in both]
        b = [flat_b[k][field] for k in both]
        group_ids: dict[object, int] = {}
        groups = np.array([group_ids.setdefault(cluster_of[k], len(group_ids)) for k in both],
                          dtype=np.int64)
        agreement = kappa = agreement_ci = kappa_ci = mad = r = None
        if not both:
            notes = ["no question where both judges gave the field"]
        elif continuous:
            mad, r, notes = _continuous(a, b)
        else:
            agreement, kappa, agreement_ci, kappa_ci, notes = _categorical(
                a, b, groups, len(group_ids), confidence, n_resamples, seed)
        results.append(FieldAgreement(
            field, "continuous" if continuous else "categorical", len(both), agreement, kappa,
            agreement_ci, kappa_ci, mad, r, len(group_ids), confidence, n_resamples, seed,
            "; ".join(notes) or None))
    return results
