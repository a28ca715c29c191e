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
* ``gap_histogram``: cast entries with a gap, binned as the release bins them: ``1-4``
  holds gaps 0..4 (``gap`` counts the segments in between, so 0 is "seen in the previous
  segment"; the release's label says 1-4 and its compiler puts gap 0 there), ``5-29``
  and ``>=30``.
* ``longest_gap``: the largest gap, first in story and segment order on ties.
* ``disagreements``: ``{"file", "key", "summary", "recomputed"}`` for every value of a
  story's ``summary`` block (and every segment's ``memory_probes``: key
  ``segments[i].memory_probes``) that differs from the recomputed one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
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

__all__ = ["GAP_BINS", "STATS_OPTIONS", "corpus_stats", "gap_bin", "segment_probes",
           "story_disagreements", "story_stats", "story_summary"]

#: the absence-gap bins of the report, in the release's spelling
GAP_BINS = ("1-4", "5-29", ">=30")
#: the options of ``vidmem stats vmem_track_b``
STATS_OPTIONS = (CliOption("stories", ("--stories",), str | None, None,
                           "Cohort selector, e.g. 0001-0030 or 0001,0003 (default: every story)."),)
_TAG_ORDER = (*STRESS_FAMILIES.values(), *CONTROL_PROBES)


def gap_bin(gap: int) -> str:
    """The histogram bin of a gap (segments between two appearances).

    Example:
        >>> [gap_bin(g) for g in (0, 4, 5, 29, 30, 64)]
        ['1-4', '1-4', '5-29', '5-29', '>=30', '>=30']
    """
    return GAP_BINS[0] if gap <= 4 else GAP_BINS[1] if gap < 30 else GAP_BINS[2]


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
    """The story's ``summary`` block, recomputed from its segments (same keys and spelling).

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
        "gap_histogram": {b: sum(1 for g in gaps if gap_bin(g[1]) == b) for b in GAP_BINS},
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
        {"1-4", "5-29", ">=30"}, "longest_gap": {"story_id", "eid", "gap", "segment_id"}
        | None, "disagreements": [...]}``; segment ids are ints (1..n).

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
        (1, {'1-4': 1, '5-29': 0, '>=30': 0}, 0)
        >>> stats["disagreements"]
        []
    """
    stories = list(stories)
    tags = Counter(p for st in stories for s in st.segments for p in segment_probes(s, st))
    kinds = Counter(e.kind for st in stories for e in st.entities.values())
    gaps = [(st.story_id, eid, gap, n) for st in stories for eid, gap, n in _gaps(st)]
    top = max(gaps, key=lambda g: g[2], default=None)
    return {
        "stories": len(stories),
        "segments": sum(len(st.segments) for st in stories),
        "hours": sum(st.seconds for st in stories) / 3600.0,
        "entities": {**{k: kinds.get(k, 0) for k in ENTITY_KINDS}, "total": sum(kinds.values())},
        "state_threads": sum(len(_threads(st)) for st in stories),
        "tags": {label: tags.get(label, 0) for label in _TAG_ORDER},
        "gap_histogram": {b: sum(1 for g in gaps if gap_bin(g[2]) == b) for b in GAP_BINS},
        "longest_gap": None if top is None else dict(zip(
            ("story_id", "eid", "gap", "segment_id"), top, strict=True)),
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
