"""``vidmem analyze vmem_track_b RUN --only stripping``: presence with and without appearance text.

A long-gap return can look remembered when the prompt itself describes the returning
character. This analysis reruns the no-memory condition on the chosen segments with the
bracketed appearance text removed (:mod:`.stripping`), judges the new clips with the
run's judge, and compares the returning characters' presence with the run's stored
``none`` verdicts of the same segments (the with-text side; nothing is judged again
there). Work and resume: :mod:`.analysis_stripping_work`.

Options (``--opt``): ``segments`` = ``long_gap`` (default; the long-gap character
returns), ``all`` or a list ``seg_070,seg_077`` (``70,77``); ``min_gap`` = the long-gap
threshold in segments (default 30). ``--generator NAME`` (with ``--generator-opt``)
names the generator; without it the run's own generator and options are used. Every
rule is in :data:`PROTOCOL`, which reaches ``RUN/analyses/stripping.json``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from vidmem.benchmarks.vmem_track_b import stripping
from vidmem.benchmarks.vmem_track_b.analysis_stripping_work import (
    CONDITION,
    make_item,
    stripping_work,
)
from vidmem.benchmarks.vmem_track_b.config import BASELINE, ScorerConfig
from vidmem.errors import UserInputError
from vidmem.metrics.track_b.vocabulary import LONG_GAP

__all__ = ["GENERATES", "NAME", "PROTOCOL", "parse_segments", "presence_counts", "report", "run"]

NAME = "stripping"
_OPTS = ("segments", "min_gap")

#: every rule of the analysis (the stripping rules themselves come from .stripping)
#: it generates clips, so `vidmem analyze` runs it only when named in --only
GENERATES = True

PROTOCOL: dict[str, Any] = {
    **{f"strip_{k}": v for k, v in stripping.PROTOCOL.items()},
    "presence": {
        "rule": "per selected (segment, returning character): hit = judged present = true "
                "on its 'required' roster entry; false, 'abstain' and an unparsable segment "
                "are misses; presence = hits / entries, pooled over stories",
        "reason": "the Recall hit rule (gap_bins), restricted to the returning characters",
        "source": "PROTOCOLS.md section 4 (Appearance-stripping analysis); metrics.track_b",
    },
    "with_text": {
        "rule": "the run's stored 'none' verdicts of the same segments (scores.jsonl); "
                "nothing is generated or judged again for that side",
        "reason": "the scored no-memory rollout already answered with the text present",
        "source": "decided here",
    },
    "generation": {
        "rule": "the loop's 'none' request with the stripped prompt: request id "
                "<story>/seg_NNN, no references, the segment's duration; clips in "
                "analyses/stripping/<story>/seg_NNN.mp4, generated in segment order; "
                "generator: --generator (with --generator-opt), else the run's own",
        "reason": "the only difference from the scored 'none' clip is the removed text",
        "source": "vmem_track_b.loop (none condition); PROTOCOLS.md section 4",
    },
    "judge": {
        "rule": f"the run's judge configuration (scorer in run.json, --backend-opt merged "
                f"over it), question.segment_request with the run's roster seed, the "
                f"segment's ORIGINAL prompt as the plot hint, condition {CONDITION!r} in "
                "the item id, answers through the answer cache",
        "reason": "the judge's question differs from the scored run's only in the clip",
        "source": "decided here (seed 000 does not say which plot hint its judge saw)",
    },
    "difference": {
        "rule": "presence(stripped) - presence(with text), paired story-clustered bootstrap "
                "(stats.paired_bootstrap) with the run's draws, seed and confidence; no "
                "interval when no entry was selected",
        "reason": "the stories are the clusters, as for every Track-B difference",
        "source": "PROTOCOLS.md section 4 'Statistics'; paper App. D.1",
    },
    "selection_threshold": {
        "rule": f"--opt min_gap (default {LONG_GAP}) is the long-gap threshold of the "
                "default selection and decides which characters of a listed segment count",
        "reason": "small sim stories have no 30-segment gaps",
        "source": "decided here",
    },
}


def parse_segments(value: str | None) -> str | list[int]:
    """``--opt segments``: ``"long_gap"``, ``"all"`` or sorted segment ids.

    Example:
        >>> parse_segments(None), parse_segments("all"), parse_segments("seg_077, 70")
        ('long_gap', 'all', [70, 77])
    """
    from vidmem.benchmarks.vmem_track_b.scorer import clip_number

    text = (value or "long_gap").strip()
    if text in ("long_gap", "all"):
        return text
    ids = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        n = clip_number(part)
        if n is None or n < 1:
            raise UserInputError(f"stripping analysis: --opt segments: {part!r} is not a "
                                 "segment", hint="segments=long_gap, all or seg_070,seg_077")
        ids.append(n)
    if not ids:
        raise UserInputError("stripping analysis: --opt segments is empty",
                             hint="segments=long_gap, all or seg_070,seg_077")
    return sorted(set(ids))


def _min_gap(value: str | None) -> int:
    try:
        n = int(value) if value is not None else LONG_GAP
    except ValueError:
        n = -1
    if n < 0:
        raise UserInputError(f"stripping analysis: --opt min_gap must be an integer >= 0, "
                             f"found {value!r}", hint=f"the protocol's threshold is {LONG_GAP}")
    return n


def presence_counts(verdicts: Sequence[Any], wanted: Mapping[int, Sequence[str]],
                    where: str) -> dict[tuple[int, str], bool]:
    """Hit or miss of each wanted ``(segment_id, eid)`` in one arm's segment verdicts.

    Example:
        >>> from vidmem.metrics.track_b import EntryVerdict, SegmentVerdict
        >>> e = lambda eid, p: EntryVerdict("s", 2, eid, "character", "required", p,
        ...                             gap=31, op="recall")
        >>> segs = [SegmentVerdict("s", 2, True, [e("E1", True), e("E2", "abstain")])]
        >>> presence_counts(segs, {2: ["E1", "E2"]}, "x")
        {(2, 'E1'): True, (2, 'E2'): False}
    """
    by_seg = {v.segment_id: v for v in verdicts}
    out: dict[tuple[int, str], bool] = {}
    for seg_id, eids in wanted.items():
        seg = by_seg.get(seg_id)
        for eid in eids:
            entry = None if seg is None else next(
                (x for x in seg.entries if x.eid == eid and x.role == "required"), None)
            if entry is None:
                raise UserInputError(f"{where}: no verdict on {eid} in segment {seg_id:03d}",
                                     hint="score the run again (its stored verdicts are "
                                     "incomplete)")
            out[(seg_id, eid)] = bool(seg.parsed) and entry.present is True
    return out


def _generator(run: Any, options: Any) -> tuple[str, dict[str, Any]]:
    if options.generator:
        return options.generator, dict(options.generator_options)
    gen = (run.manifest.config or {}).get("generator") or {}
    if not gen.get("name"):
        raise UserInputError(f"{run.path}: the run names no generator (its rollouts were "
                             "brought)", hint="pass --generator NAME [--generator-opt k=v]")
    return str(gen["name"]), dict(gen.get("options") or {})


def run(run: Any, options: Any) -> dict[str, Any]:
    from vidmem.benchmarks.vmem_track_b.run_items import scored_items
    from vidmem.benchmarks.vmem_track_b.scorer import verdicts_from_json
    from vidmem.benchmarks.vmem_track_b.stories import load_stories
    from vidmem.runners.execute import execute
    from vidmem.runners.generation import generator_info
    from vidmem.stats.paired_bootstrap import paired_story_bootstrap

    unknown = sorted(set(options.opts) - set(_OPTS))
    if unknown:
        raise UserInputError(f"stripping analysis: unknown --opt {unknown}",
                             hint=f"known: {', '.join(_OPTS)}")
    choice = parse_segments(options.opts.get("segments"))
    min_gap = _min_gap(options.opts.get("min_gap"))
    cfg = dict(run.manifest.config or {})
    scorer = ScorerConfig.from_dict(cfg["scorer"])
    if BASELINE not in scorer.conditions:
        raise UserInputError(f"{run.path}: the run has no {BASELINE!r} (no-memory) condition "
                             f"(its conditions: {', '.join(scorer.conditions)})",
                             hint="the stripping analysis compares with the stored no-memory "
                             "verdicts: score a run with --conditions none,...")
    merged = {k: dict(v) for k, v in scorer.backend_options.items()}
    for name, opts in options.backend_options.items():
        merged[name] = {**merged.get(name, {}), **dict(opts)}
    scorer_dict = {**scorer.to_dict(), "backend_options": merged}
    gen_name, gen_opts = _generator(run, options)
    info = generator_info(gen_name, gen_opts)

    stories, items, wanted_by = {}, [], {}
    out_root = Path(run.path) / "analyses" / NAME
    for it in scored_items(run):
        gold_root = (it.request or {}).get("gold_root") or cfg.get("gold_root")
        number = int(it.row["number"])
        (story,) = load_stories(gold_root, number)
        seg_ids = None if choice == "long_gap" else (
            range(1, len(story.segments) + 1) if choice == "all" else choice)
        targets = stripping.strip_targets(story, seg_ids, min_gap=min_gap)
        stories[story.story_id] = (story, targets, it.row)
        wanted_by[story.story_id] = {t.segment_id: t.eids for t in targets}
        if targets:
            items.append(make_item(story, targets, gold_root=str(gold_root),
                                   out_dir=out_root / story.story_id, generator=gen_name,
                                   generator_options=gen_opts, generator_info=info,
                                   scorer=scorer_dict))
    with run.items() as store:
        summary = execute(store, items, partial(stripping_work, judge_cache=options.judge_cache),
                          workers=options.workers, quiet=options.quiet,
                          progress=not options.quiet)
        if summary.errors:
            first = "; ".join(f"{i}: {e}" for i, e in summary.error_samples)
            raise RuntimeError(f"stripping analysis: {summary.errors} story item(s) failed: "
                               f"{first}")
        stored = {it.item_id: store.get(it.key).score for it in items}

    rows, arm_text, arm_strip = [], {}, {}
    for sid, (story, targets, row) in stories.items():
        wanted = wanted_by[sid]
        text_v = verdicts_from_json(sid, row["conditions"][BASELINE]["verdicts"])
        with_text = presence_counts(text_v, wanted, f"stored {BASELINE!r} verdicts of {sid}")
        without: dict[tuple[int, str], bool] = {}
        clips: dict[str, Any] = {}
        if targets:
            got = stored[sid]
            without = presence_counts(verdicts_from_json(sid, got["verdicts"]), wanted,
                                      f"stripped verdicts of {sid}")
            clips = got["clips"]
        n = len(with_text)
        arm_text[sid] = [[sum(with_text.values()), n]]
        arm_strip[sid] = [[sum(without.values()), n]]
        for t in targets:
            name = f"seg_{t.segment_id:03d}"
            rows.append({"story_id": sid, "segment": name, "eids": list(t.eids),
                         "gaps": list(t.gaps), "had_text": t.had_text, "removed": list(t.removed),
                         "prompt": t.prompt, "stripped": t.stripped,
                         "own_text": {e: _own_text(t.prompt, story.entities[e].name)
                                      for e in t.eids},
                         "with_text": {e: with_text[(t.segment_id, e)] for e in t.eids},
                         "stripped_present": {e: without[(t.segment_id, e)] for e in t.eids},
                         "clip": clips.get(name, {}).get("clip")})
    n_entries = sum(v[0][1] for v in arm_text.values())
    result: dict[str, Any] = {
        "selection": choice if isinstance(choice, str) else [f"seg_{s:03d}" for s in choice],
        "min_gap": min_gap, "generator": {"name": gen_name, "options": gen_opts},
        "n_stories": len(stories), "n_segments": len(rows),
        "n_segments_with_text": sum(r["had_text"] for r in rows), "n_entries": n_entries,
        "presence_with_text": _rate(arm_text), "presence_stripped": _rate(arm_strip),
        "difference": None, "segments": rows,
        "execution": {"generated_or_judged": summary.computed, "cached": summary.cached},
    }
    if n_entries:
        boot = paired_story_bootstrap(arm_strip, arm_text, n_resamples=scorer.n_resamples,
                                      seed=scorer.bootstrap_seed, confidence=scorer.confidence,
                                      names=("presence",))
        result["difference"] = {"definition": "presence(stripped) - presence(with text)",
                                **boot.to_dict()["rates"]["presence"],
                                "n_resamples": boot.n_resamples, "confidence": boot.confidence}
    return result


def _own_text(prompt: str, name: str) -> bool:
    """Whether an appearance span follows the character's own name in the prompt.

    Example:
        >>> _own_text("Bruno（A horse） waits", "Bruno"), _own_text("At X（a wall）, Bruno", "Bruno")
        (True, False)
    """
    return any(prompt[:a].endswith(name) for a, _ in stripping.appearance_spans(prompt))


def _rate(arm: Mapping[str, Sequence[Sequence[int]]]) -> dict[str, Any]:
    num = sum(int(v[0][0]) for v in arm.values())
    den = sum(int(v[0][1]) for v in arm.values())
    return {"numerator": num, "denominator": den, "value": num / den if den else None}


def _fmt(v: Any) -> str:
    return "-" if v is None else f"{v:.3f}"


def report(rep: Any, data: Mapping[str, Any], run: Any) -> None:
    from vidmem.report import KeyValues, Markdown, Table

    sec = rep.section("Appearance stripping (analysis)")
    sec.add(Markdown(
        "The no-memory condition regenerated on the selected segments with the bracketed "
        "appearance text removed from the prompt, judged like the scored run; presence of "
        "the returning character(s) with the text (the run's stored no-memory verdicts) "
        "and without it."))
    d = data.get("difference") or {}
    diff = "-" if not d or d.get("difference") is None else f"{d['difference']:+.3f}" + (
        "" if d.get("ci_low") is None else f" [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}]")
    sel = data["selection"]
    wt, st = data["presence_with_text"], data["presence_stripped"]
    sec.add(KeyValues({
        "segments": f"{data['n_segments']} ({sel if isinstance(sel, str) else ', '.join(sel)}, "
                    f"min gap {data['min_gap']}); {data['n_segments_with_text']} had text removed",
        "returning-character entries": data["n_entries"],
        "presence with text": f"{_fmt(wt['value'])} ({wt['numerator']}/{wt['denominator']})",
        "presence stripped": f"{_fmt(st['value'])} ({st['numerator']}/{st['denominator']})",
        "difference (stripped - with text)": diff
        + (f", story bootstrap {d['n_resamples']} draws" if d else ""),
        "generator": data["generator"]["name"],
    }))
    if data["segments"]:
        sec.add(Table(["story", "segment", "characters (gap)", "text removed",
                       "own text removed", "with text", "stripped"],
                      [[r["story_id"], r["segment"],
                        ", ".join(f"{e} ({g})" for e, g in zip(r["eids"], r["gaps"], strict=True))
                        or "-",
                        "; ".join(r["removed"]) or "(none)",
                        ", ".join(e for e, p in r["own_text"].items() if p) or "-",
                        ", ".join(e for e, p in r["with_text"].items() if p) or "-",
                        ", ".join(e for e, p in r["stripped_present"].items() if p) or "-"]
                       for r in data["segments"]],
                      caption="own text removed: characters whose own appearance followed their "
                      "name; with text / stripped: the characters judged present"))
