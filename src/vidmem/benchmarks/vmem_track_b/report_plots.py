"""The Track-B report's figures, from ``summary.json`` only: the forest plot and recall by gap.

Rules: the forest plot has one panel per rate of the vector (dRecall, dPrecision,
dAvoid-OK) and one row per condition other than ``none``, a dot at the difference from
``none`` with its paired story-bootstrap interval, a hollow square for the same on the
segments parsed in both arms, a line at zero; privileged conditions (``last_seen``) are
grey, labelled "(privileged)" and drawn last. The gap plot has recall per absence-gap bin
with Wilson intervals, one line per condition: ``none`` dotted, privileged ones grey
dashed (the paper's Fig. 15a). Undefined values are left out. Figures are plain
:class:`matplotlib.figure.Figure` objects in the style and palette of
:mod:`vidmem.report.plots` (no pyplot).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from vidmem.report.plots import PALETTE, line_plot

__all__ = ["RATES", "forest_plot", "forest_rows", "gap_bin_plot"]

#: the vector's rates and their panel titles
RATES = {"recall": "dRecall", "precision": "dPrecision", "avoid_ok": "dAvoid-OK"}
_GREY = "#6b7280"


def forest_rows(summary: Mapping[str, Any]) -> list[str]:
    """The conditions drawn, top to bottom: the policies in run order, privileged ones last.

    Example:
        >>> forest_rows({"conditions": ["none", "last_seen", "a"], "baseline": "none",
        ...              "privileged": ["last_seen"]})
        ['a', 'last_seen']
    """
    priv = set(summary.get("privileged") or ())
    rest = [c for c in summary.get("conditions", []) if c != summary.get("baseline")]
    return [c for c in rest if c not in priv] + [c for c in rest if c in priv]


def _point(block: Mapping[str, Any] | None, rate: str) -> tuple[float, float, float] | None:
    r = (block or {}).get("rates", {}).get(rate)
    if not r or r.get("difference") is None or r.get("ci_low") is None:
        return None
    return float(r["difference"]), float(r["ci_low"]), float(r["ci_high"])


def _style(ax: Any) -> None:
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(True, axis="x", color="#e5e7eb", linewidth=0.8)
    ax.set_axisbelow(True)
    ax.tick_params(colors="#374151", labelsize=9)


def forest_plot(summary: Mapping[str, Any]) -> Figure | None:
    """The forest plot of the vector minus ``none`` (rules in the module doc); ``None`` when
    there is nothing to draw (no baseline, or no other condition)."""
    rows = forest_rows(summary)
    deltas = summary.get("deltas") or {}
    if not summary.get("baseline") or not rows:
        return None
    parsed = summary.get("deltas_parsed_in_both") or {}
    priv = set(summary.get("privileged") or ())
    fig = Figure(figsize=(9.0, 1.4 + 0.45 * len(rows)), layout="constrained",
                 facecolor="white")
    axes = fig.subplots(1, len(RATES), sharey=True)
    ys = np.arange(len(rows))[::-1].astype(float)
    for ax, (rate, title) in zip(axes, RATES.items(), strict=True):
        _style(ax)
        ax.axvline(0.0, color="#9ca3af", linewidth=1.0)
        for y, cond in zip(ys, rows, strict=True):
            colour = _GREY if cond in priv else PALETTE[0]
            for block, dy, marker, face, label in (
                    (deltas.get(cond), 0.12, "o", colour, "all segments"),
                    (parsed.get(cond), -0.12, "s", "white", "parsed in both")):
                p = _point(block, rate)
                if p is None:
                    continue
                d, lo, hi = p
                ax.errorbar([d], [y + dy], xerr=[[d - lo], [hi - d]], fmt=marker, color=colour,
                            markerfacecolor=face, markersize=5, elinewidth=1.4, capsize=3,
                            label=label)
        ax.set_title(title, fontsize=11, color="#111827", loc="left")
        ax.set_xlabel("condition minus none", fontsize=9, color="#111827")
    axes[0].set_yticks(ys, [f"{c} (privileged)" if c in priv else c for c in rows])
    axes[0].set_ylim(-0.6, len(rows) - 0.4)
    handles, labels = axes[0].get_legend_handles_labels()
    seen = dict(zip(labels, handles, strict=True))
    if seen:
        fig.legend(list(seen.values()), list(seen), loc="outside lower center", ncols=2,
                   frameon=False, fontsize=9)
    return fig


def gap_bin_plot(summary: Mapping[str, Any]) -> Figure | None:
    """Recall per absence-gap bin and condition with Wilson intervals; ``None`` without bins."""
    gaps = summary.get("gap_bins") or {}
    bins = list(gaps.get("bins") or [])
    rates = gaps.get("rates") or {}
    conds = [c for c in summary.get("conditions", []) if c in rates]
    if not bins or not conds:
        return None
    values = {c: [rates[c]["bins"][b]["value"] for b in bins] for c in conds}
    fig = line_plot(list(range(len(bins))), values, xlabel="absence gap (segments away)",
                    ylabel="recall of required returns", markers="o", figsize=(7.0, 4.0))
    ax = fig.axes[0]
    priv = set(summary.get("privileged") or ())
    # conditions side by side within a bin, so that their intervals do not overlap
    offsets = (np.arange(len(conds)) - (len(conds) - 1) / 2) * min(0.08, 0.5 / len(conds))
    for line, cond, off in zip(ax.get_lines(), conds, offsets, strict=True):
        line.set_xdata(np.arange(len(bins)) + off)
        if cond == summary.get("baseline"):
            line.set_linestyle(":")
        if cond in priv:
            line.set_color(_GREY)
            line.set_linestyle("--")
            line.set_label(f"{cond} (privileged)")
        rows = [rates[cond]["bins"][b] for b in bins]
        x = [i for i, r in enumerate(rows) if r["value"] is not None and r["ci_low"] is not None]
        if x:
            v = np.array([rows[i]["value"] for i in x])
            err = np.array([[v[j] - rows[i]["ci_low"], rows[i]["ci_high"] - v[j]]
                            for j, i in enumerate(x)]).T
            ax.errorbar(np.array(x) + off, v, yerr=err, fmt="none", ecolor=line.get_color(), elinewidth=1.0,
                        capsize=3, alpha=0.7)
    ax.set_xticks(range(len(bins)), bins)
    ax.set_xlim(-0.4, len(bins) - 0.6)
    ax.set_ylim(-0.03, 1.03)
    ax.legend(frameon=False, fontsize=9)
    return fig
