"""``vidmem analyze vmem_track_b RUN --only attribution``: where each failure arises.

Every judged miss of a required character/prop and every rendered forbidden entity of a
scored run is attributed to a cause -- writing, selection, synthesis, no memory, judge
disagreement (misses); carried in by a reference or not (renders) -- with the rules of
:mod:`.analysis_attribution_rules`, the reference questions of
:mod:`.analysis_attribution_judge`, and per condition the pooled share of each cause with
a story-clustered bootstrap interval.

Rules (all in :data:`PROTOCOL`):

* **References** are the loop's ``seg_NNN.ref<k>.png`` listed in the rollout's
  ``progress.json``, trusted only when every segment's entry records the scored clip's
  SHA-256; otherwise (brought rollouts) the rollout's references are *unknown* and only
  writing vs the rest is told. Only references of segments with a failure are judged.
* **Judges**: the run's own judge (``run.json`` scorer ``judge`` and backend options;
  ``--backend-opt`` overrides them) reads the references; ``--opt second_judge=NAME``
  (options from ``--backend-opt NAME:k=v``) asks the segment question again of clips
  with a miss. Both go through ``--judge-cache``.
* **Resume**: one work item per story (kind ``analysis:attribution``, keyed by its
  questions' content), so a killed analysis asks only what is left.
* ``--opt frames=N`` (default 4): units per condition shown with their frames in the
  report (reference PNGs, then the clip's middle frame); every unit is in the result.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vidmem.benchmarks.vmem_track_b import analysis_attribution_judge as aj
from vidmem.benchmarks.vmem_track_b import analysis_attribution_rules as rules
from vidmem.errors import UserInputError, VidmemError
from vidmem.io.hashing import file_sha256

__all__ = ["KIND", "NAME", "PROTOCOL", "collect", "report", "run"]

NAME = "attribution"
KIND = f"analysis:{NAME}"
_OPTS = ("second_judge", "frames")
DEFAULT_FRAMES = 4

PROTOCOL: dict[str, dict[str, Any]] = {
    **rules.PROTOCOL,
    "attribution_references": {
        "rule": "the seg_NNN.ref<k>.png files progress.json lists for the segment, used only "
                "when every progress entry of the rollout records the scored clip's SHA-256; "
                "else references unknown (writing vs other only)",
        "reason": "a progress entry describes the scored clip only if it hashed that clip",
        "source": "vmem_track_b/report_drilldown.py (same rule)"},
    "attribution_reference_question": {
        "rule": "one question per reference PNG (prompts/attribution_reference.toml), the "
                "segment's own blinded roster (labels, decoys and seed of the segment "
                "question); the run's judge; only segments with a failure are asked",
        "reason": "the judge layer reads references as Track-A's reference question does; "
                  "the same roster keeps roles hidden",
        "source": "issue 15; the Track-A reference prompt (prompts/reference.toml there)"},
    "attribution_second_judge": {
        "rule": "--opt second_judge=NAME asks the segment question (same roster, frames, "
                "hint) of every clip with a miss; present: true there = judge_disagreement",
        "reason": "a miss one judge alone reports may be the judge's",
        "source": "issue 15"},
}


def _opts(options: Any) -> tuple[str | None, int]:
    opts = dict(options.opts)
    bad = sorted(set(opts) - set(_OPTS))
    if bad:
        raise UserInputError(f"analysis {NAME}: unknown --opt {', '.join(bad)}",
                             hint=f"its options: {', '.join(_OPTS)}")
    try:
        frames = int(opts.get("frames", DEFAULT_FRAMES))
    except ValueError:
        frames = -1
    if frames < 0:
        raise UserInputError(f"analysis {NAME}: --opt frames={opts['frames']!r} is not a "
                             "number >= 0", hint="e.g. --opt frames=4")
    second = opts.get("second_judge") or None
    return second, frames


def _rollout_refs(run: Any, item: Any, cond: str, n: int) -> dict[int, list[dict[str, Any]]] | None:
    """Per segment id the references handed over (``png`` path, ``source``), or ``None``."""
    from vidmem.benchmarks.vmem_track_b.loop import read_progress, segment_name
    from vidmem.benchmarks.vmem_track_b.report_drilldown import _clip_path

    hashes = ((item.request or {}).get("clips_sha256") or {}).get(cond) or []
    clip = _clip_path(run, item, cond, 0) if n else None
    if clip is None or len(hashes) != n:
        return None
    progress = read_progress(clip.parent) or {}
    segments = progress.get("segments") or {}
    out: dict[int, list[dict[str, Any]]] = {}
    for k in range(n):
        entry = segments.get(segment_name(k + 1))
        if not isinstance(entry, Mapping) or entry.get("sha256") != hashes[k]:
            return None
        out[k + 1] = [{"png": str(clip.parent / str(r.get("png", ""))),
                       "source": str(r.get("source"))} for r in entry.get("references") or []]
    return out


def _judges(request: Mapping[str, Any], cache: str | None, loaded: dict[str, Any]) -> tuple[Any, Any]:
    key = repr((request["judge"], request["judge_options"], cache))
    if key not in loaded:
        loaded[key] = aj.load_judge(request["judge"], request["judge_options"], cache)
    second = None
    if request.get("second_judge"):
        skey = repr((request["second_judge"], request["second_options"], cache))
        if skey not in loaded:
            loaded[skey] = aj.load_judge(request["second_judge"], request["second_options"], cache)
        second = loaded[skey]
    return loaded[key], second


def _story_work(request: Mapping[str, Any], cache: str | None, loaded: dict[str, Any]) -> dict[str, Any]:
    """Ask one story's reference (and second-judge) questions."""
    import json

    from vidmem.benchmarks.vmem_track_b.question import segment_request

    gold = json.loads(Path(request["gold_gt"]).read_text(encoding="utf-8"))
    judge, second = _judges(request, cache, loaded)
    seed, sid = int(request["seed"]), request["story_id"]
    asks, rosters = [], []
    for cond, seg, k, png, _sha in request["refs"]:
        req, r = aj.reference_request(gold, seg - 1, Path(png), seed=seed,
                                      item_id=f"{sid}/{cond}/seg_{seg:03d}/ref{k}")
        asks.append(req)
        rosters.append(r)
    shows = [aj.reference_shows(d, r) for d, r in zip(aj.ask(judge, asks), rosters, strict=True)]
    sees: list[list[str] | None] = []
    if second is not None and request["clips"]:
        asks2, rosters2 = [], []
        for cond, seg, clip, _sha, plot in request["clips"]:
            req, r = segment_request(gold, seg - 1, clip, seed=seed, condition=cond, plot=plot)
            asks2.append(req)
            rosters2.append(r)
        sees = [aj.second_sees(d, r) for d, r in zip(aj.ask(second, asks2), rosters2, strict=True)]
    return {"response": {"shows": shows, "sees": sees},
            "score": {"references": len(shows), "unjudged_references": sum(s is None for s in shows),
                      "second_questions": len(sees)}}


def collect(run: Any, options: Any) -> dict[str, Any]:
    """Attribute every failure of ``run`` (the analysis without its report)."""
    from vidmem.benchmarks.vmem_track_b.report_drilldown import _clip_path, _golds
    from vidmem.benchmarks.vmem_track_b.run_items import scored_items
    from vidmem.benchmarks.vmem_track_b.scorer import verdicts_from_json
    from vidmem.runners.execute import execute
    from vidmem.runners.execution_records import WorkItem

    second, _ = _opts(options)
    scorer = dict((run.manifest.config or {}).get("scorer") or {})
    conditions = list(scorer.get("conditions") or [])
    judge = str(scorer.get("judge") or "")
    base_opts = dict((scorer.get("backend_options") or {}).get(judge) or {})
    judge_opts = {**base_opts, **dict(options.backend_options.get(judge, {}))}
    second_opts = dict(options.backend_options.get(second, {})) if second else {}
    items = scored_items(run)
    if not items:
        raise UserInputError(f"analysis {NAME}: {run.path} has no scored story",
                             hint="finish the run first (vidmem run ... --resume)")
    golds = _golds(items)
    rollouts: dict[tuple[str, str], dict[str, Any]] = {}
    work = []
    for it in items:
        if it.request is None:
            raise UserInputError(f"analysis {NAME}: story {it.story_id} has no stored request in "
                                 f"{run.items_path}", hint="rescore the run (vidmem score ...)")
        refs_q, clips_q = [], []
        for cond in conditions:
            verdicts = verdicts_from_json(it.story_id, it.row["conditions"][cond]["verdicts"])
            refs = _rollout_refs(run, it, cond, len(verdicts))
            units = rules.attribute_condition(it.story_id, cond, verdicts, refs, None)
            rollouts[(it.story_id, cond)] = {"verdicts": verdicts, "refs": refs}
            failing = sorted({u.segment_id for u in units})
            missing = sorted({u.segment_id for u in units if u.failure == "miss"})
            for seg in failing if refs is not None else ():
                for k, r in enumerate(refs[seg], start=1):
                    if not Path(r["png"]).is_file():
                        raise UserInputError(
                            f"analysis {NAME}: {it.story_id}/{cond} seg_{seg:03d}: reference "
                            f"{r['png']} listed in progress.json is missing",
                            hint="restore the rollout folder, or delete its progress.json to "
                            "attribute it with references unknown")
                    refs_q.append([cond, seg, k, r["png"], file_sha256(r["png"])])
            story = golds[it.story_id][0]
            for seg in missing if second else ():
                clip = _clip_path(run, it, cond, seg - 1)
                if clip is not None:
                    plot = story.segments[seg - 1].prompt if story is not None else None
                    clips_q.append([cond, seg, str(clip), it.request["clips_sha256"][cond][seg - 1],
                                    plot])
        if not (refs_q or clips_q):
            continue
        story, why = golds[it.story_id]
        if story is None:
            raise UserInputError(f"analysis {NAME}: story {it.story_id}: {why}",
                                 hint="the reference questions need the gold the run scored")
        request = {"story_id": it.story_id, "gold_gt": str(story.files["gt"]),
                   "gold_sha256": dict(story.sha256), "seed": int(scorer.get("seed", 0)),
                   "judge": judge, "judge_options": judge_opts, "second_judge": second,
                   "second_options": second_opts, "refs": refs_q, "clips": clips_q}
        work.append(WorkItem.make(it.story_id, KIND, request))
    loaded: dict[str, Any] = {}
    summary = execute(run.items_path, work, lambda w: _story_work(w.request, options.judge_cache, loaded),
                      workers=1, progress=not options.quiet, quiet=options.quiet)
    answers: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    second_sees: dict[tuple[str, str], dict[tuple[int, str], bool]] = {}
    unjudged = 0
    with run.items() as store:
        for w in work:
            got = store.get(w.key)
            if got is None or got.status != "done":
                raise VidmemError(f"analysis {NAME}: story {w.item_id}: "
                                  f"{getattr(got, 'error', None) or 'not computed'}")
            for (cond, seg, k, _png, _sha), shows in zip(w.request["refs"], got.response["shows"],
                                                         strict=True):
                answers.setdefault((w.item_id, cond, seg), []).append({"k": k, "shows": shows})
                unjudged += shows is None
            for (cond, seg, _c, _s, _p), sees in zip(w.request["clips"], got.response["sees"],
                                                     strict=True):
                d = second_sees.setdefault((w.item_id, cond), {})
                for eid in sees or ():
                    d[(seg, eid)] = True
    units: list[rules.Unit] = []
    for (sid, cond), ro in rollouts.items():
        refs = ro["refs"]
        if refs is not None:
            for seg, lst in refs.items():
                got_k = {a["k"]: a["shows"] for a in answers.get((sid, cond, seg), [])}
                for k, r in enumerate(lst, start=1):
                    r["shows"] = got_k.get(k)
        units += rules.attribute_condition(sid, cond, ro["verdicts"], refs,
                                           second_sees.get((sid, cond), {}) if second else None)
    stories = [it.story_id for it in items]
    kw = {"n_resamples": int(scorer.get("n_resamples", 2000)),
          "seed": int(scorer.get("bootstrap_seed", 20260925)),
          "confidence": float(scorer.get("confidence", 0.95))}
    shares: dict[str, dict[str, Any]] = {}
    for failure, causes in (("miss", rules.MISS_CAUSES), ("render", rules.RENDER_CAUSES)):
        per = rules.tally(units, failure, conditions, stories)
        shares[failure] = {c: rules.share_intervals(per[c], causes, **kw) for c in conditions}
    unknown = sorted({f"{s}/{c}" for (s, c), ro in rollouts.items() if ro["refs"] is None})
    return {"conditions": conditions, "judge": judge, "second_judge": second,
            "shares": shares, "units": [u.to_dict() for u in units],
            "references_unknown": unknown, "unjudged_references": unjudged,
            "questions": {"stories": summary.total, "computed": summary.computed,
                          "cached": summary.cached, "errors": summary.errors}}


def run(run: Any, options: Any) -> dict[str, Any]:
    """The analysis entry point of :mod:`vidmem.runners.analysis_run`."""
    data = collect(run, options)
    data["frames"] = _opts(options)[1]
    return data


def report(rep: Any, data: Mapping[str, Any], run: Any) -> None:
    """Add the attribution sections (shares per condition, then units with frames)."""
    from vidmem.benchmarks.vmem_track_b.analysis_attribution_report import add_sections

    add_sections(rep, data, run)
