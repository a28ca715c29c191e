"""``vidmem compare RUN_A RUN_B``: any two Track-B conditions, of one run or of two runs.

Condition A of run A minus condition B of run B, recomputed from the stored per-segment
verdicts (no judge, no video) over the stories both runs scored, with the paired
story-clustered bootstrap of :mod:`vidmem.stats.paired_bootstrap`.

Rules:

* **defaults**: with two runs, a missing ``--condition-a`` / ``--condition-b`` takes the
  other's value, and ``none`` when both are missing (no memory vs no memory: two
  generators); with one run, condition B defaults to ``none`` and condition A must be
  named.
* **stories**: the stories scored in both runs (sorted by id); the others are listed,
  never compared. None in common is an error.
* **gold**: every shared story must have the same gold file hashes in both runs (read
  from each run's item store); a difference, or a story without a stored hash, is an
  error naming the story -- differences over different gold mean nothing.
* **benchmarks**: both runs must be Track-B runs.
* **statistics**: run A's ``n_resamples``, bootstrap seed and confidence (a note says
  when run B's differ); the vector (dRecall, dPrecision, dAvoid-OK); the same on the
  (story, segment) pairs parsed in both arms (a story with no such segment drops out of
  that bootstrap, counted and named: ``n_stories_dropped``, ``stories_dropped``); each
  stress family's headline rate; and recall per absence-gap bin. Identical arms give
  exactly 0 with [0, 0].
* **notes**: a different judge, roster seed or bootstrap setting between the runs, and a
  privileged condition, are said, not refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from vidmem.benchmarks.vmem_track_b.benchmark import NAME
from vidmem.benchmarks.vmem_track_b.config import BASELINE, PRIVILEGED, ScorerConfig
from vidmem.benchmarks.vmem_track_b.gap_summary import gap_bin_deltas
from vidmem.benchmarks.vmem_track_b.scorer import _family_counts, verdicts_from_json
from vidmem.errors import UserInputError
from vidmem.metrics import track_b as tb
from vidmem.stats.paired_bootstrap import paired_story_bootstrap

__all__ = ["RunSide", "compare_runs", "compare_sides", "load_side", "print_comparison",
           "resolve_conditions"]

_HEAD = {"recall": "Recall", "precision": "Precision", "avoid_ok": "Avoid-OK"}


@dataclass(frozen=True)
class RunSide:
    """What a comparison needs of one run.

    Attributes:
        path: the run directory, as given.
        config: the run's scorer configuration.
        rows: story_id -> its ``scores.jsonl`` row, scored stories only, in file order.
        gold_sha256: story_id -> the gold file hashes the story was scored with
            (``None`` when the item store has no entry for it).
    """

    path: str
    config: ScorerConfig
    rows: Mapping[str, Mapping[str, Any]]
    gold_sha256: Mapping[str, Mapping[str, str] | None]


def load_side(run: Any) -> RunSide:
    """Read one Track-B run directory (an opened :class:`~vidmem.runners.store.RunDir`).

    Raises:
        UserInputError: not a Track-B run, or no scores yet.
    """
    from vidmem.benchmarks.vmem_track_b.run_items import scored_items

    m = run.manifest
    if m.benchmark != NAME:
        raise UserInputError(f"{run.path}: a {m.benchmark} run, not a Track-B run",
                             hint="vidmem compare takes two Track-B run directories")
    scorer = m.config.get("scorer")
    if not isinstance(scorer, Mapping):
        raise UserInputError(f"{run.path}/run.json: no scorer configuration recorded",
                             hint="compare runs written by vidmem score/run vmem_track_b")
    items = scored_items(run)
    return RunSide(str(run.path), ScorerConfig.from_dict(scorer),
                   {i.story_id: i.row for i in items},
                   {i.story_id: None if i.request is None else dict(i.request["gold_sha256"])
                    for i in items})


def resolve_conditions(a: RunSide, b: RunSide, condition_a: str | None,
                       condition_b: str | None, *, same_run: bool) -> tuple[str, str]:
    """The two conditions, by the defaults of the module doc, each checked against its run.

    Example:
        >>> s = RunSide("r", ScorerConfig(conditions=("none", "x")), {}, {})
        >>> resolve_conditions(s, s, "x", None, same_run=True)
        ('x', 'none')
        >>> resolve_conditions(s, s, None, "x", same_run=False)
        ('x', 'x')
    """
    if same_run:
        if condition_a is None:
            raise UserInputError(
                f"{a.path}: comparing a run with itself needs --condition-a (conditions: "
                f"{', '.join(a.config.conditions)})",
                hint=f"e.g. --condition-a {a.config.conditions[-1]} (condition B defaults to "
                f"{BASELINE})")
        ca, cb = condition_a, condition_b or BASELINE
    else:
        ca = condition_a or condition_b or BASELINE
        cb = condition_b or condition_a or BASELINE
    for side, cond, flag in ((a, ca, "--condition-a"), (b, cb, "--condition-b")):
        if cond not in side.config.conditions:
            raise UserInputError(f"{side.path}: condition {cond!r} was not scored in this run "
                                 f"(conditions: {', '.join(side.config.conditions)})",
                                 hint=f"pass {flag} with one of them")
    return ca, cb


def _shared_stories(a: RunSide, b: RunSide) -> list[str]:
    shared = sorted(set(a.rows) & set(b.rows))
    if not shared:
        raise UserInputError(
            f"{a.path} and {b.path} have no scored story in common (A: {len(a.rows)}, "
            f"B: {len(b.rows)} stories)", hint="compare runs over the same stories")
    for sid in shared:
        hashes = []
        for side in (a, b):
            h = side.gold_sha256.get(sid)
            if h is None:
                raise UserInputError(
                    f"{side.path}: story {sid} has no stored gold hashes (its item store "
                    "entry is missing), so its gold cannot be checked",
                    hint="rescore the run (vidmem score ... --resume) to restore the store")
            hashes.append(dict(h))
        ha, hb = hashes
        if ha != hb:
            files = sorted(k for k in set(ha) | set(hb) if ha.get(k) != hb.get(k))
            raise UserInputError(
                f"story {sid}: the two runs scored different gold (files differing: "
                f"{', '.join(files)}); differences over different gold are meaningless",
                hint="rescore one run on the other's gold, or compare other runs")
    return shared


def _arm(side: RunSide, cond: str, stories: Sequence[str]) -> list[tb.SegmentVerdict]:
    segs: list[tb.SegmentVerdict] = []
    for sid in stories:
        segs += verdicts_from_json(sid, side.rows[sid]["conditions"][cond]["verdicts"])
    return segs


def _bootstrap(ca: Mapping[str, Any], cb: Mapping[str, Any], config: ScorerConfig,
               names: Sequence[str] = tb.BOOTSTRAP_RATES) -> dict[str, Any] | None:
    if not ca or set(ca) != set(cb):
        return None
    return paired_story_bootstrap(ca, cb, n_resamples=config.n_resamples,
                                  seed=config.bootstrap_seed, confidence=config.confidence,
                                  names=names).to_dict()


def _notes(a: RunSide, b: RunSide, ca: str, cb: str, shared: Sequence[str]) -> list[str]:
    notes = []
    for what, x, y in (("judge", a.config.judge, b.config.judge),
                       ("roster seed", a.config.seed, b.config.seed)):
        if x != y:
            notes.append(f"the runs differ in {what} ({x} vs {y}): the differences mix it in")
    boot = ("n_resamples", "bootstrap_seed", "confidence")
    if any(getattr(a.config, k) != getattr(b.config, k) for k in boot):
        notes.append("the runs' bootstrap settings differ; run A's are used ("
                     + ", ".join(f"{k} {getattr(a.config, k)}" for k in boot) + ")")
    for cond in dict.fromkeys((ca, cb)):
        if cond in PRIVILEGED:
            notes.append(f"{cond} is a privileged diagnostic (it reads the gold cast), not a "
                         "deployable policy")
    for label, side, other in (("A", a, b), ("B", b, a)):
        alone = sorted(set(side.rows) - set(other.rows))
        if alone:
            notes.append(f"{len(alone)} story(ies) scored only in run {label}, not compared: "
                         + ", ".join(alone[:10]) + (" ..." if len(alone) > 10 else ""))
    if a.path == b.path and ca == cb:
        notes.append("a condition compared with itself: every difference is 0")
    return notes


def compare_sides(a: RunSide, b: RunSide, condition_a: str | None = None,
                  condition_b: str | None = None, *, same_run: bool = False) -> dict[str, Any]:
    """Condition A of ``a`` minus condition B of ``b`` (rules in the module doc).

    Returns:
        JSON-ready: the runs, conditions, compared stories and segments, each arm's
        pooled rates, ``deltas`` (the vector), ``deltas_parsed_in_both`` (with its
        ``n_segments``), ``family_deltas``, ``gap_bin_deltas``, the bootstrap setting and
        ``notes``. Every bootstrap dict is ``paired_story_bootstrap(...).to_dict()``.

    Raises:
        UserInputError: an unknown condition, no story in common, or a shared story
            whose gold hashes differ.
    """
    ca, cb = resolve_conditions(a, b, condition_a, condition_b, same_run=same_run)
    shared = _shared_stories(a, b)
    arm_a, arm_b = _arm(a, ca, shared), _arm(b, cb, shared)
    config = a.config
    pa, pb = tb.parsed_in_both(arm_a, arm_b)
    cut_a = tb.story_counts(pa)
    parsed = tb.parsed_in_both_block(_bootstrap(cut_a, tb.story_counts(pb), config),
                                     stories=shared, kept=cut_a, n_segments=len(pa))
    return {
        "benchmark": NAME, "difference": "condition A of run A minus condition B of run B",
        "run_a": a.path, "run_b": b.path, "condition_a": ca, "condition_b": cb,
        "privileged": sorted(PRIVILEGED & {ca, cb}),
        "stories": list(shared), "n_stories": len(shared),
        "n_segments": len(arm_a),
        "only_in_a": sorted(set(a.rows) - set(b.rows)),
        "only_in_b": sorted(set(b.rows) - set(a.rows)),
        "pooled_a": tb.pooled_rates(arm_a).to_dict(), "pooled_b": tb.pooled_rates(arm_b).to_dict(),
        "deltas": _bootstrap(tb.story_counts(arm_a), tb.story_counts(arm_b), config),
        "deltas_parsed_in_both": parsed,
        "family_deltas": _bootstrap(_family_counts(arm_a, config.confidence),
                                    _family_counts(arm_b, config.confidence), config,
                                    names=tb.FAMILIES),
        "gap_bin_deltas": gap_bin_deltas(arm_a, arm_b, config),
        "bootstrap": {"n_resamples": config.n_resamples, "seed": config.bootstrap_seed,
                      "confidence": config.confidence, "from": "run A"},
        "notes": _notes(a, b, ca, cb, shared),
    }


def compare_runs(run_a: Any, run_b: Any, *, condition_a: str | None = None,
                 condition_b: str | None = None) -> dict[str, Any]:
    """The benchmark's ``comparer``: two opened run directories (the same one allowed)."""
    same = Path(run_a.path).resolve() == Path(run_b.path).resolve()
    a = load_side(run_a)
    b = a if same else load_side(run_b)
    return compare_sides(a, b, condition_a, condition_b, same_run=same)


# ----------------------------------------------------------------------------- printing


def _cell(r: Mapping[str, Any] | None) -> str:
    if not r or r.get("difference") is None:
        return "n/a"
    ci = "" if r["ci_low"] is None else f" [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]"
    mark = ""
    if r["ci_low"] is not None:
        mark = " +" if r["ci_low"] > 0 else " -" if r["ci_high"] < 0 else ""
    return f"{r['difference']:+.3f}{ci}{mark}"


def _rate(v: Any) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def _table(title: str, block: Mapping[str, Any] | None, heads: Mapping[str, str],
           ca: str, cb: str) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("rate", f"A: {ca}", f"B: {cb}", "A - B [95% CI]"):
        table.add_column(col, justify="left" if col == "rate" else "right")
    for key, head in heads.items():
        r = (block or {}).get("rates", {}).get(key)
        table.add_row(head, _rate(r and r["rate_a"]), _rate(r and r["rate_b"]), _cell(r))
    return table


def _parsed_line(block: Mapping[str, Any] | None) -> str:
    """What the parsed-in-both comparison kept and dropped, in words.

    Example:
        >>> _parsed_line({"n_segments": 5, "n_stories": 2, "n_stories_dropped": 1,
        ...               "stories_dropped": ["s3"]})
        'parsed in both arms: 5 segments of 2 stories; 1 story dropped (no segment parsed in both arms: s3)'
    """
    if not block:
        return "parsed in both arms: not computed"
    text = f"parsed in both arms: {block['n_segments']} segments of {block.get('n_stories')} stories"
    dropped = list(block.get("stories_dropped") or [])
    if dropped:
        names = ", ".join(dropped[:10]) + (" ..." if len(dropped) > 10 else "")
        text += (f"; {len(dropped)} stor{'y' if len(dropped) == 1 else 'ies'} dropped (no "
                 f"segment parsed in both arms: {names})")
    return text


def print_comparison(console: Console, result: Mapping[str, Any]) -> None:
    """The benchmark's ``comparison_printer``: rich tables of :func:`compare_runs`' result."""
    ca, cb = result["condition_a"], result["condition_b"]
    boot = result["bootstrap"]
    console.print(f"A = {ca} of {result['run_a']}\nB = {cb} of {result['run_b']}\n"
                  f"{result['n_stories']} stories, {result['n_segments']} segments per arm; "
                  f"paired story bootstrap, {boot['n_resamples']} draws, seed {boot['seed']}, "
                  f"{100 * boot['confidence']:g}% percentile CI; + / -: the CI excludes 0",
                  highlight=False, soft_wrap=True)
    console.print(_table("pooled rates, every segment", result["deltas"], _HEAD, ca, cb))
    parsed = result["deltas_parsed_in_both"]
    n = "no" if not parsed else parsed["n_segments"]
    console.print(_table(f"segments parsed in both arms ({n} segments)", parsed, _HEAD, ca, cb))
    console.print(_parsed_line(parsed), highlight=False, soft_wrap=True)
    console.print(_table("stress families (headline rates)", result["family_deltas"],
                         {f: f for f in tb.FAMILIES}, ca, cb))
    console.print(_table("recall by absence gap (segments away)", result["gap_bin_deltas"],
                         {b: b for b in tb.BIN_ROWS}, ca, cb))
    for note in result["notes"]:
        console.print(f"note: {note}", highlight=False, soft_wrap=True)
