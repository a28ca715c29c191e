"""Generic plot helpers that return :class:`matplotlib.figure.Figure` objects.

The figures are built directly from :class:`~matplotlib.figure.Figure`, without
``pyplot``, so they hold no global state, need no display and are freed like any
other object once the report is rendered. They share one light style and a
colour-blind-safe palette (Okabe-Ito). Non-finite values are left out of the drawing
(lines show a gap); the caller decides whether a notice is needed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from vidmem.errors import UserInputError

__all__ = ["PALETTE", "bar_with_ci", "drop_empty_panels", "line_plot", "panel_has_data",
           "scatter_with_curve"]

#: Okabe-Ito colours, distinguishable with the common colour-vision deficiencies.
PALETTE: tuple[str, ...] = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#CC79A7",
    "#56B4E9",
    "#F0E442",
    "#000000",
)

_MAX_POINTS_FOR_AUTO_MARKERS = 30


def _new_figure(figsize: tuple[float, float]) -> tuple[Figure, Any]:
    fig = Figure(figsize=figsize, layout="constrained", facecolor="white")
    ax = fig.add_subplot()
    ax.set_prop_cycle(color=list(PALETTE))
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(True, color="#e5e7eb", linewidth=0.8)
    ax.set_axisbelow(True)
    ax.tick_params(colors="#374151", labelsize=9)
    return fig, ax


def _label(ax: Any, xlabel: str, ylabel: str, title: str) -> None:
    ax.set_xlabel(xlabel, fontsize=10, color="#111827")
    ax.set_ylabel(ylabel, fontsize=10, color="#111827")
    if title:
        ax.set_title(title, fontsize=11, color="#111827", loc="left")


def _as_1d(values: Any, name: str, where: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise UserInputError(
            f"{where}: {name} must be numbers (None allowed for gaps), found "
            f"{type(values).__name__}"
        ) from None
    if arr.ndim != 1:
        raise UserInputError(f"{where}: {name} must be one-dimensional, found shape {arr.shape}")
    return arr


def _as_1d_optional(values: Any, name: str, where: str) -> np.ndarray:
    """Like :func:`_as_1d` but maps ``None`` entries to NaN."""
    if isinstance(values, np.ndarray):
        return _as_1d(values, name, where)
    return _as_1d([np.nan if v is None else v for v in values], name, where)


def _same_length(where: str, **arrays: np.ndarray) -> None:
    lengths = {k: len(v) for k, v in arrays.items()}
    if len(set(lengths.values())) > 1:
        found = ", ".join(f"{k}={n}" for k, n in lengths.items())
        raise UserInputError(f"{where}: expected equal lengths, found {found}")


def line_plot(
    x: Sequence[float],
    ys: Mapping[str, Sequence[float | None]],
    xlabel: str = "",
    ylabel: str = "",
    title: str = "",
    markers: str | Mapping[str, str] | None = None,
    *,
    figsize: tuple[float, float] = (7.0, 4.0),
) -> Figure:
    """Draw one line per series against a shared x axis.

    Args:
        x: x values, length ``N``.
        ys: series label -> ``N`` y values; ``None`` or NaN leaves a gap.
        xlabel: x axis label (include the unit, e.g. ``"gap (s)"``).
        ylabel: y axis label.
        title: optional title, left-aligned.
        markers: ``None`` for automatic (circles when ``N <= 30``), one Matplotlib
            marker for every series (``"o"``, ``""`` for none), or label -> marker.
        figsize: width and height in inches.

    Returns:
        A new figure with one axes; a legend when there is more than one series.

    Raises:
        UserInputError: no series, or a series whose length differs from ``x``.

    Example:
        >>> fig = line_plot([1, 2, 3], {"a": [0.1, 0.2, 0.4]}, "gap (s)", "score")
        >>> len(fig.axes[0].lines)
        1
    """
    where = "line_plot"
    if not ys:
        raise UserInputError(f"{where}: expected at least one series in ys, found none")
    xs = _as_1d(x, "x", where)
    fig, ax = _new_figure(figsize)
    for label, y in ys.items():
        yy = _as_1d_optional(y, f"ys[{label!r}]", where)
        _same_length(where, x=xs, **{f"ys[{label!r}]": yy})
        if isinstance(markers, Mapping):
            marker = markers.get(label, "")
        elif markers is None:
            marker = "o" if len(xs) <= _MAX_POINTS_FOR_AUTO_MARKERS else ""
        else:
            marker = markers
        ax.plot(xs, yy, marker=marker or None, markersize=4, linewidth=1.8, label=str(label))
    _label(ax, xlabel, ylabel, title)
    if len(ys) > 1:
        ax.legend(frameon=False, fontsize=9)
    return fig


def scatter_with_curve(
    x: Sequence[float],
    y: Sequence[float],
    curve_x: Sequence[float],
    curve_y: Sequence[float],
    vlines: Mapping[str, float | None] | None = None,
    xlabel: str = "",
    ylabel: str = "",
    title: str = "",
    *,
    scatter_label: str = "items",
    curve_label: str = "fit",
    figsize: tuple[float, float] = (7.0, 4.0),
) -> Figure:
    """Draw points, a fitted curve over them, and labelled vertical markers.

    Typical use: per-item recall against gap length, the fitted exponential decay,
    and a dashed line at the half-life.

    Args:
        x: point x values, length ``N``.
        y: point y values, length ``N``; non-finite points are not drawn.
        curve_x: curve x values, length ``M`` (sorted).
        curve_y: curve y values, length ``M``.
        vlines: label -> x position of a dashed vertical line; ``None`` or non-finite
            positions are skipped (e.g. a half-life beyond the tested range).
        xlabel: x axis label.
        ylabel: y axis label.
        title: optional title.
        scatter_label: legend label of the points.
        curve_label: legend label of the curve.
        figsize: width and height in inches.

    Returns:
        A new figure with one axes and a legend.

    Raises:
        UserInputError: mismatched lengths.

    Example:
        >>> fig = scatter_with_curve([1, 2], [0.9, 0.5], [0, 3], [1.0, 0.3], {"half-life": 2.0})
        >>> len(fig.axes[0].lines)  # the curve and one vertical line
        2
    """
    where = "scatter_with_curve"
    xs, yv = _as_1d(x, "x", where), _as_1d_optional(y, "y", where)
    cx, cy = _as_1d(curve_x, "curve_x", where), _as_1d_optional(curve_y, "curve_y", where)
    _same_length(where, x=xs, y=yv)
    _same_length(where, curve_x=cx, curve_y=cy)
    fig, ax = _new_figure(figsize)
    ok = np.isfinite(xs) & np.isfinite(yv)
    ax.scatter(
        xs[ok],
        yv[ok],
        s=16,
        alpha=0.55,
        color=PALETTE[0],
        edgecolors="none",
        label=scatter_label,
    )
    ax.plot(cx, cy, color=PALETTE[3], linewidth=2.0, label=curve_label)
    styles = ("--", ":", "-.")
    drawn = 0
    for label, pos in (vlines or {}).items():
        if pos is None or not np.isfinite(float(pos)):
            continue
        ax.axvline(
            float(pos),
            color=PALETTE[(2 + drawn) % len(PALETTE)],
            linestyle=styles[drawn % len(styles)],
            linewidth=1.4,
            label=str(label),
        )
        drawn += 1
    _label(ax, xlabel, ylabel, title)
    ax.legend(frameon=False, fontsize=9)
    return fig


def bar_with_ci(
    labels: Sequence[str],
    values: Sequence[float | None],
    lows: Sequence[float | None],
    highs: Sequence[float | None],
    ylabel: str = "",
    title: str = "",
    *,
    annotate: bool = True,
    figsize: tuple[float, float] | None = None,
) -> Figure:
    """Draw one bar per label with an interval (e.g. a 95% bootstrap CI) on top.

    Args:
        labels: bar labels, length ``N``.
        values: bar heights; ``None`` or NaN leaves the slot empty.
        lows: lower interval ends; ``None`` or NaN draws no interval for that bar.
        highs: upper interval ends, likewise.
        ylabel: y axis label.
        title: optional title.
        annotate: write each value above its bar (four significant digits).
        figsize: width and height in inches; by default it grows with ``N``.

    Returns:
        A new figure with one axes; long labels are rotated.

    Raises:
        UserInputError: mismatched lengths, or an interval that does not contain
            its value.

    Example:
        >>> fig = bar_with_ci(["a", "b"], [0.5, 0.7], [0.4, 0.6], [0.6, 0.8], "score")
        >>> len(fig.axes[0].patches)
        2
    """
    from vidmem.report.model import format_number

    where = "bar_with_ci"
    names = [str(v) for v in labels]
    v = _as_1d_optional(values, "values", where)
    lo = _as_1d_optional(lows, "lows", where)
    hi = _as_1d_optional(highs, "highs", where)
    _same_length(where, labels=np.arange(len(names)), values=v, lows=lo, highs=hi)
    with np.errstate(invalid="ignore"):
        bad = np.isfinite(v) & ((np.isfinite(lo) & (lo > v)) | (np.isfinite(hi) & (hi < v)))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise UserInputError(
            f"{where}: bar {names[i]!r} has value {v[i]} outside its interval [{lo[i]}, {hi[i]}]",
            hint="pass lows and highs as interval ends, not as distances from the value",
        )
    if figsize is None:
        figsize = (max(4.0, min(12.0, 1.0 + 0.8 * len(names))), 4.0)
    fig, ax = _new_figure(figsize)
    ax.grid(False, axis="x")
    pos = np.arange(len(names))
    heights = np.where(np.isfinite(v), v, 0.0)
    ax.bar(pos, heights, width=0.6, color=PALETTE[0], alpha=0.85)
    has_ci = np.isfinite(v) & np.isfinite(lo) & np.isfinite(hi)
    if has_ci.any():
        err = np.vstack([v[has_ci] - lo[has_ci], hi[has_ci] - v[has_ci]])
        ax.errorbar(
            pos[has_ci],
            v[has_ci],
            yerr=err,
            fmt="none",
            ecolor="#111827",
            elinewidth=1.2,
            capsize=4,
        )
    if annotate:
        tops = np.where(has_ci, hi, v)
        for p, val, top in zip(pos, v, tops, strict=True):
            if np.isfinite(val):
                ax.annotate(
                    format_number(float(val)),
                    (p, top),
                    xytext=(0, 3),
                    textcoords="offset points",
                    ha="center",
                    va="bottom",
                    fontsize=8,
                    color="#374151",
                )
    ax.set_xticks(pos, names)
    if names and (max(len(n) for n in names) > 10 or len(names) > 8):
        for tick in ax.get_xticklabels():
            tick.set_rotation(30)
            tick.set_horizontalalignment("right")
    ax.axhline(0.0, color="#9ca3af", linewidth=0.8)
    _label(ax, "", ylabel, title)
    return fig


def _finite_rows(xy: Any) -> bool:
    arr = np.asarray(xy, dtype=float)
    return bool(arr.size) and bool(np.isfinite(arr.reshape(len(arr), -1)).all(axis=1).any())


def panel_has_data(ax: Any) -> bool:
    """Whether an axes draws any finite data: a line through data coordinates with a
    finite point, a collection (error bars, scatter) with a finite point, a bar of
    finite height, or an image. Reference lines (``axvline``/``axhline``), text and
    grids are not data.

    Example:
        >>> fig, ax = _new_figure((2, 2))
        >>> _ = ax.axvline(0.0); panel_has_data(ax)
        False
        >>> _ = ax.plot([0, 1], [np.nan, 2.0]); panel_has_data(ax)
        True
    """
    for line in ax.get_lines():
        if line.get_transform() == ax.transData and _finite_rows(
                np.column_stack([np.asarray(line.get_xdata(), float),
                                 np.asarray(line.get_ydata(), float)])):
            return True
    for coll in ax.collections:
        segments = getattr(coll, "get_segments", None)
        points = [seg for seg in segments()] if segments else [coll.get_offsets()]
        if any(_finite_rows(p) for p in points if len(p)):
            return True
    if any(np.isfinite(patch.get_height())  # a bar of height 0 is a value, NaN is none
           for patch in ax.patches if hasattr(patch, "get_height")):
        return True
    return bool(ax.images)


def drop_empty_panels(fig: Any) -> bool:
    """Remove every axes of ``fig`` that draws no data (:func:`panel_has_data`), so a
    report never shows an empty panel; the panels left in one row of a grid close up.

    Returns:
        Whether any panel is left (``False``: the figure is not worth drawing).

    Example:
        >>> fig = Figure(layout="constrained")
        >>> a, b = fig.subplots(1, 2)
        >>> _ = a.plot([1, 2], [3, 4]); _ = b.plot([1, 2], [np.nan, np.nan])
        >>> drop_empty_panels(fig), len(fig.axes)
        (True, 1)
    """
    axes = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    empty = [ax for ax in axes if not panel_has_data(ax)]
    if not empty:
        return True
    kept = [ax for ax in axes if ax not in empty]
    for ax in empty:
        fig.delaxes(ax)
    specs = [ax.get_subplotspec() for ax in kept]
    if kept and all(sp is not None for sp in specs) and len({sp.rowspan for sp in specs}) == 1:
        grid = fig.add_gridspec(1, len(kept))  # one row: close the gaps the removed left
        for k, ax in enumerate(sorted(kept, key=lambda a: a.get_subplotspec().colspan.start)):
            ax.set_subplotspec(grid[0, k])
            ax.yaxis.set_tick_params(labelleft=k == 0)
    return bool(kept)
