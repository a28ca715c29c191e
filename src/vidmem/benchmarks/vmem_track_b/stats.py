"""Track-B corpus statistics from the gold alone (no videos), recomputed from the segments,
and every place where a file's own ``summary`` block says otherwise.

Definitions (each recomputed from ``gt/`` segments, never read from ``summary``):

* ``hours``: the summed ``duration_sec`` of the segments / 3600 (the release: 5 s each).
* ``entities``: entities of each kind, per story (one character in two stories counts
  twice).
* ``state_threads``: entities whose state changes during their story -- a ``transform``
  or a removal (forbidden as destroyed or deceased) -- each one chain of states. The
  release's ``summary.n_state_threads`` counts declared state machines, so a
  disagreement there is a machine the segments never use, or a change without one.
* ``tags``: segments per ``memory_probes`` label, recomputed with the rules of the
  release's compiler (``complete_gt.py``), see :func:`segment_probes`; the nine stress
  families of PROTOCOLS.md section 4 map to labels as in
  :data:`~vidmem.benchmarks.vmem_track_b.schema.STRESS_FAMILIES`, the two controls are
  ``first_appearance`` and ``continuity``. A segment counts once per label.
* ``gap_histogram``: cast entries with a gap (any kind), binned by the one absence-gap
  rule of the scores (:func:`vidmem.metrics.track_b.absence_bin`, the official scorer's
  ``_gap_bucket``): ``just_seen`` holds gap 0 (``gap`` counts the segments in between,
  so 0 is "on screen in the previous segment"), then ``1-4``, ``5-29`` and ``>=30``;
  ``gap_histogram_by_kind`` the same per kind (its character and prop rows are the
  support of ``summary.json``'s ``gap_bins``). The release's own ``summary.gap_histogram``
  (its compiler, ``complete_gt.py``) counts gaps 0-4 under the label ``1-4``; it is
  checked against ``just_seen`` + ``1-4`` (:func:`release_gap_histogram`).
* ``longest_gap``: the largest gap, first in story and segment order on ties.
* ``disagreements``: ``{"file", "key", "summary", "recomputed"}`` for every value of a
  story's ``summary`` block (and every segment's ``memory_probes``: key
  ``segments[i].memory_probes``) that differs from the recomputed one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from vidmem.benchmarks.contract import CliOption
from vidmem.benchmarks.vmem_track_b.schema import (
    CONTROL_PROBES,
    ENTITY_KINDS,
    GT_DIR,
    HARD_PROBES,
    REMOVAL_REASONS,
    STRESS_FAMILIES,
    segment_id,
)
from vidmem.benchmarks.vmem_track_b.stories import Segment, Story, load_stories
from vidmem.metrics import track_b as tb

__all__ = ["HISTOGRAM_BINS", "STATS_OPTIONS", "corpus_stats", "gap_histogram",
           "release_gap_histogram", "segment_probes", "story_disagreements", "story_stats",
           "story_summary"]

#: the rows of ``gap_histogram``, in gap order (the bins of :func:`tb.absence_bin`)
HISTOGRAM_BINS = (tb.JUST_SEEN, *tb.GAP_BINS)
#: the options of ``vidmem stats vmem_track_b``
STATS_OPTIONS = (CliOption("stories", ("--stories",), str | None, None,
                           "Cohort selector, e.g. 0001-0030 or 0001,0003 (default: every story)."),)
_TAG_ORDER = (*STRESS_FAMILIES.values(), *CONTROL_PROBES)


def gap_histogram(gaps: Iterable[int]) -> dict[str, int]:
    """Gaps counted per :data:`HISTOGRAM_BINS` row, binned by :func:`tb.absence_bin`.

    Example:
        >>> gap_histogram([0, 0, 1, 4, 5, 29, 30, 64])
        {'just_seen': 2, '1-4': 2, '5-29': 2, '>=30': 2}
    """
    counts = Counter(tb.absence_bin(g) for g in gaps)
    return {b: counts.get(b, 0) for b in HISTOGRAM_BINS}


def release_gap_histogram(histogram: Mapping[str, int]) -> dict[str, int]:
    """:func:`gap_histogram` in the spelling of the release's ``summary.gap_histogram``,
    whose compiler counts gaps 0-4 under the label ``1-4`` (``just_seen`` folded in).

    Example:
        >>> release_gap_histogram({"just_seen": 2, "1-4": 2, "5-29": 2, ">=30": 2})
        {'1-4': 4, '5-29': 2, '>=30': 2}
    """
    near, mid, far = tb.GAP_BINS
    return {near: histogram[tb.JUST_SEEN] + histogram[near], mid: histogram[mid],
            far: histogram[far]}


def segment_probes(segment: Segment, story: Story) -> frozenset[str]:
    """The ``memory_probes`` labels of a segment, recomputed from its cast and forbidden lists.

    The release's rules: ``first_appearance`` an introduction; ``continuity`` a plain
    ``recall``; ``state_change`` a transform; ``persist_state`` a persist;
    ``count_memory`` a count on a recall, recall_after_gap or persist;
    ``false_friend`` an introduction with ``confusable_with``;
    ``lookalike_disambiguation`` an active look-alike pair; ``long_gap_reappearance`` a
    gap >= the story's ``gap_long_threshold``; ``temporal_reference`` a temporal anchor;
    ``reference_indirect`` a forbidden entry marked so; ``deprecation_avoidance`` that, or
    a removal (destroyed, deceased) at most ``avoidance_probe_window`` segments ago.

    Example:
        >>> from vidmem.benchmarks.vmem_track_b.stories import CastEntry
        >>> seg = Segment("s", 40, "S9", 5.0, "cut", "", "", cast=(
        ...     CastEntry("E1", "recall_after_gap", gap=31, last_seen=8, count=2),))
        >>> sorted(segment_probes(seg, Story("s", 1, "", (seg,), {})))
        ['count_memory', 'long_gap_reappearance']
    """
    n, out = segment.segment_id, set()
    for c in segment.cast:
        out.update({"introduce": ("first_appearance",), "recall": ("continuity",),
                    "transform": ("state_change",), "persist": ("persist_state",)}.get(c.op, ()))
        if c.count is not None and c.op in ("recall", "recall_after_gap", "persist"):
            out.add("count_memory")
        if c.confusable_with is not None and c.op == "introduce":
            out.add("false_friend")
        if c.gap is not None and c.gap >= story.gap_long_threshold:
            out.add("long_gap_reappearance")
        if c.anchor is not None and c.anchor.type == "temporal":
            out.add("temporal_reference")
    if segment.lookalike_active:
        out.add("lookalike_disambiguation")
    for f in segment.forbidden:
        if f.reference_indirect:
            out.update(("reference_indirect", "deprecation_avoidance"))
        if (f.reason in REMOVAL_REASONS and f.grounded_by is not None
                and n - f.grounded_by <= story.avoidance_probe_window):
            out.add("deprecation_avoidance")
    return frozenset(out)


def _gaps(story: Story) -> list[tuple[str, int, int]]:
    return [(c.eid, c.gap, s.segment_id) for s in story.segments for c in s.cast
            if c.gap is not None]


def _threads(story: Story) -> set[str]:
    return ({c.eid for s in story.segments for c in s.cast if c.op == "transform"}
            | _removed(story))


def _removed(story: Story) -> set[str]:
    return {f.eid for s in story.segments for f in s.forbidden if f.reason in REMOVAL_REASONS}


def story_summary(story: Story) -> dict[str, Any]:
    """The story's ``summary`` block, recomputed from its segments (same keys and spelling:
    ``gap_histogram`` is the release's, gaps 0-4 under ``1-4``; see :func:`release_gap_histogram`).

    ``hard_probe_balance`` takes each ``target`` from the file's own block (the target
    lives in ``gt_source``, not in the gold); ``ok`` is ``count >= target``.
    """
    probes = Counter(p for s in story.segments for p in segment_probes(s, story))
    gaps = _gaps(story)
    top = max(gaps, key=lambda g: g[1], default=None)
    targets = story.summary.get("hard_probe_balance") or {}
    balance = {}
    for p in HARD_PROBES:
        target = (targets.get(p) or {}).get("target") if isinstance(targets.get(p), dict) else None
        balance[p] = {"count": probes.get(p, 0), "target": target,
                      "ok": None if target is None else probes.get(p, 0) >= target}
    return {
        "n_segments": len(story.segments),
        "n_scenes": len(dict.fromkeys(s.scene_id for s in story.segments)),
        "n_entities": len(story.entities),
        "kind_counts": dict(Counter(e.kind for e in story.entities.values())),
        "n_state_threads": len(_threads(story)),
        "n_removals": len(_removed(story)),
        "op_counts": dict(Counter(c.op for s in story.segments for c in s.cast)),
        "probe_counts": dict(probes),
        "hard_probe_balance": balance,
        "gap_histogram": release_gap_histogram(gap_histogram(g[1] for g in gaps)),
        "longest_gap": None if top is None else {"eid": top[0], "gap": top[1],
                                                 "at": segment_id(top[2])},
    }


def _compare(file: str, key: str, claimed: Any, mine: Any, out: list[dict[str, Any]]) -> None:
    if isinstance(claimed, dict) and isinstance(mine, dict) and key != "summary.longest_gap":
        counters = key.endswith(("_counts", "gap_histogram"))
        for sub in dict.fromkeys([*claimed, *mine]):
            default = 0 if counters else None
            if key.endswith("hard_probe_balance") and sub not in mine:
                continue  # a probe the protocol does not balance
            _compare(file, f"{key}.{sub}", claimed.get(sub, default), mine.get(sub, default), out)
    elif claimed != mine:
        out.append({"file": file, "key": key, "summary": claimed, "recomputed": mine})


def story_disagreements(story: Story) -> list[dict[str, Any]]:
    """Every value of the story's own summary (and segment labels) that the segments
    contradict: ``[{"file", "key", "summary", "recomputed"}]`` (empty: all agree)."""
    file, out = f"{GT_DIR}/{story.story_id}.json", []
    mine = story_summary(story)
    for key, claimed in story.summary.items():
        if key in mine:
            _compare(file, f"summary.{key}", claimed, mine[key], out)
    for i, s in enumerate(story.segments):
        labels = sorted(segment_probes(s, story))
        if sorted(s.memory_probes) != labels:
            out.append({"file": file, "key": f"segments[{i}].memory_probes",
                        "summary": sorted(s.memory_probes), "recomputed": labels})
    return out


def story_stats(stories: Iterable[Story]) -> dict[str, Any]:
    """Counts of a set of Track-B stories, recomputed from their segments (module docstring).

    Returns:
        ``{"stories", "segments", "hours", "entities": {"character", "prop", "location",
        "total"}, "state_threads", "tags": {label: segments}, "gap_histogram":
        {"just_seen", "1-4", "5-29", ">=30"}, "gap_histogram_by_kind": {kind: the same},
        "longest_gap": {"story_id", "eid", "gap", "segment_id"} | None, "disagreements":
        [...]}``; segment ids are ints (1..n).

    Example:
        >>> from vidmem.benchmarks.vmem_track_b.stories import CastEntry, Entity
        >>> segs = (Segment("0001_x", 1, "S1", 5.0, "cut", "", "", ("first_appearance",),
        ...                 (CastEntry("E1", "introduce"),)),
        ...         Segment("0001_x", 2, "S1", 5.0, "continue", "", "", ("continuity",),
        ...                 (CastEntry("E1", "recall", gap=0, last_seen=1),)))
        >>> story = Story("0001_x", 1, "", segs, {"E1": Entity("E1", "character", "Ana", "")})
        >>> stats = story_stats([story])
        >>> stats["segments"], stats["hours"], stats["entities"]["character"]
        (2, 0.002777777777777778, 1)
        >>> stats["tags"]["continuity"], stats["gap_histogram"], stats["longest_gap"]["gap"]
        (1, {'just_seen': 1, '1-4': 0, '5-29': 0, '>=30': 0}, 0)
        >>> stats["disagreements"]
        []
    """
    stories = list(stories)
    tags = Counter(p for st in stories for s in st.segments for p in segment_probes(s, st))
    kinds = Counter(e.kind for st in stories for e in st.entities.values())
    gaps = [(st.story_id, eid, gap, n, st.entities[eid].kind) for st in stories
            for eid, gap, n in _gaps(st)]
    top = max(gaps, key=lambda g: g[2], default=None)
    return {
        "stories": len(stories),
        "segments": sum(len(st.segments) for st in stories),
        "hours": sum(st.seconds for st in stories) / 3600.0,
        "entities": {**{k: kinds.get(k, 0) for k in ENTITY_KINDS}, "total": sum(kinds.values())},
        "state_threads": sum(len(_threads(st)) for st in stories),
        "tags": {label: tags.get(label, 0) for label in _TAG_ORDER},
        "gap_histogram": gap_histogram(g[2] for g in gaps),
        "gap_histogram_by_kind": {k: gap_histogram(g[2] for g in gaps if g[4] == k)
                                  for k in ENTITY_KINDS},
        "longest_gap": None if top is None else dict(zip(
            ("story_id", "eid", "gap", "segment_id"), top[:4], strict=True)),
        "disagreements": [d for st in stories for d in story_disagreements(st)],
    }


def corpus_stats(root: str | Path, stories: Any = None) -> dict[str, Any]:
    """:func:`story_stats` of the stories under ``root`` (what ``vidmem stats`` prints).

    Args:
        root: the folder holding ``gt/``, ``gt_source/`` and ``sut_prompts/``.
        stories: a cohort selector (``"0001-0030"``); ``None``: every story.

    Raises:
        UserInputError: the stories have errors (all listed) or the selector is invalid.
    """
    return story_stats(load_stories(root, stories))
