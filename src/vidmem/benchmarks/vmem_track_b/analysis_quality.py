"""Track-B analysis ``quality``: VBench-style quality controls of every scored clip.

``vidmem analyze vmem_track_b RUN --only quality [--opt embedder=NAME]
[--opt background_embedder=NAME] [--opt flow=NAME] [--opt conditions=a,b]
[--backend-opt NAME:key=value]``

Rules (all in :data:`PROTOCOL`, with the metrics' own rules under ``metrics.*``):

* every clip of every scored (story, condition) is measured with the five controls of
  :mod:`vidmem.metrics.clip_quality`, on every decoded frame at the clip's own fps;
  flow from a ``flow`` backend (default ``classic/farneback``), consistencies from an
  image embedder (default ``classic/hsv-lbp`` for both; VBench uses DINO for the
  subject and CLIP for the background);
* one stored item per story (kind ``analysis:quality``), keyed by the clips' content
  and the backends, so a killed analysis resumes and an unchanged rerun computes
  nothing; a clip whose bytes differ from those scored is measured as it is now and
  flagged ``changed_since_scoring``;
* per condition: each metric's mean with a story-clustered bootstrap interval,
  differences from ``none`` paired over stories, Spearman of each metric with per-clip
  recall (:mod:`.analysis_quality_stats`);
* kept apart from memory scores: its own report section, never mixed into a rate.
"""

from __future__ import annotations

import contextlib
import functools
import json
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from vidmem.errors import UserInputError
from vidmem.metrics.clip_quality import METRICS, clip_quality
from vidmem.metrics.clip_quality import PROTOCOL as METRICS_PROTOCOL

__all__ = ["KIND", "PROTOCOL", "headline", "report", "run"]

#: the item-store kind of this analysis's per-story items
KIND = "analysis:quality"
#: bump when a change alters stored per-clip values (it is part of every item's key)
VERSION = 1
#: the condition differences are taken from
REFERENCE = "none"
DEFAULTS = {"embedder": "classic/hsv-lbp", "flow": "classic/farneback"}
OPTS = ("embedder", "background_embedder", "flow", "conditions")

PROTOCOL: dict[str, dict[str, str]] = {
    "scope": {
        "rule": "every clip of every scored (story, condition) of the run (or of the "
                "conditions given with --opt conditions=a,b); a missing clip (--allow-missing) "
                "is left out and counted",
        "reason": "per-clip controls for every clip the memory scores were computed on",
        "source": "PROTOCOLS.md section 4 (Quality control)",
    },
    "backends": {
        "rule": "flow: --opt flow (default classic/farneback, OpenCV); subject consistency: "
                "--opt embedder (default classic/hsv-lbp); background consistency: --opt "
                "background_embedder (default: the subject's embedder); options from "
                "--backend-opt NAME:key=value; names and options are in the result",
        "reason": "offline by default; VBench's DINO / CLIP / RAFT / AMT need weights",
        "source": "decided here; metrics.* entries say what differs from VBench",
    },
    "clip_bytes": {
        "rule": "clips are read from RUN/rollouts/<story>/<condition>/<file> when there "
                "(a generated run, wherever it now lies), else from the path the scored "
                "request names (brought rollouts); a clip whose sha256 differs from "
                "the scored one is measured as it is and flagged changed_since_scoring",
        "reason": "the numbers describe the files on disk; the flag says when those are not "
                  "the clips that were judged",
        "source": "decided here",
    },
    "items": {
        "rule": "one stored item per story (kind analysis:quality), keyed by the clips' "
                "sha256, the backends and their options and the analysis version",
        "reason": "a killed analysis resumes; nothing unchanged is computed twice",
        "source": "ARCHITECTURE.md (run log); decided here",
    },
    "clip_recall": {
        "rule": "per-clip recall = required entries judged present / required entries of "
                "that segment, from the stored verdicts (abstain and unparsable are not "
                "present, as in pooled Recall); segments with no required entry are left "
                "out of the correlations and counted (n_without_recall)",
        "reason": "the recall the clip itself earned, on the pooled Recall's terms",
        "source": "issue 15; PROTOCOLS.md section 4",
    },
    "means": {
        "rule": "a condition's mean pools its clips over stories (dynamic degree: the share "
                "of dynamic clips; None values left out); interval: percentile bootstrap "
                "over stories (clusters) with the run's n_resamples, bootstrap_seed and "
                "confidence, drawn as in vidmem.stats.paired_bootstrap; one story: none",
        "reason": "clips of one closed-loop rollout are not independent",
        "source": "PROTOCOLS.md section 4 'Statistics'",
    },
    "differences": {
        "rule": "condition - none per metric: vidmem.stats.paired_bootstrap over the "
                "stories both hold, per-story (sum, count) per metric; one story: no interval",
        "reason": "does quality, rather than memory, differ between the arms?",
        "source": "PROTOCOLS.md section 4; paper App. D.1",
    },
    "separate": {
        "rule": "reported in its own section 'Clip quality (not memory)', never mixed into "
                "a memory rate",
        "reason": "within-clip stability can coexist with entity-level failures",
        "source": "PROTOCOLS.md section 4 (Quality control); seed 000 App. F.5",
    },
    **{f"metrics.{k}": v for k, v in METRICS_PROTOCOL.items()},
}


# ------------------------------------------------------------------------------ options


def _settings(options: Any) -> dict[str, Any]:
    opts = dict(options.opts)
    unknown = sorted(set(opts) - set(OPTS))
    if unknown:
        raise UserInputError(f"analysis quality: unknown --opt {unknown}",
                             hint=f"it takes: {', '.join(OPTS)}")
    subject = opts.get("embedder") or DEFAULTS["embedder"]
    names = {"subject": subject, "background": opts.get("background_embedder") or subject,
             "flow": opts.get("flow") or DEFAULTS["flow"]}
    bopts = {k: dict(v) for k, v in options.backend_options.items()}
    backends = {role: {"name": n, "options": bopts.get(n, {})} for role, n in names.items()}
    wanted = opts.get("conditions")
    return {"backends": backends,
            "conditions": None if not wanted else [c.strip() for c in wanted.split(",") if c.strip()]}


# ------------------------------------------------------------------------ stored items


def _clip_path(story_id: str, condition: str, stored: str) -> Path:
    # scored_items already points at the run's own copy when it holds one
    p = Path(stored)
    if p.is_file():
        return p
    raise UserInputError(f"analysis quality: story {story_id}, condition {condition}: clip "
                         f"{stored} is missing", hint="restore the run's rollouts, or "
                         "analyse a run whose clips are on disk")


def _items(run: Any, settings: Mapping[str, Any]) -> tuple[list[Any], list[dict[str, Any]]]:
    from vidmem.benchmarks.vmem_track_b.run_items import scored_items
    from vidmem.io.hashing import file_sha256
    from vidmem.runners.execute import WorkItem

    stories = scored_items(run)
    if not stories:
        raise UserInputError(f"analysis quality: {run.path} has no scored story",
                             hint="score the run first (vidmem run / vidmem score)")
    work, meta = [], []
    for st in stories:
        if st.request is None:
            raise UserInputError(f"analysis quality: story {st.story_id} has no stored score "
                                 "request in items.sqlite", hint="rescore the run with --resume")
        conds = settings["conditions"] or list(st.row["conditions"])
        clips, paths, missing = {}, {}, 0
        for cond in conds:
            if cond not in st.row["conditions"]:
                raise UserInputError(f"analysis quality: story {st.story_id} has no condition "
                                     f"{cond!r}", hint=f"scored: {', '.join(st.row['conditions'])}")
            seg_ids = [s["segment_id"] for s in st.row["conditions"][cond]["verdicts"]]
            stored = st.request["clips"][cond]
            scored_sha = st.request["clips_sha256"][cond]
            clips[cond], paths[cond] = [], []
            for seg, clip, sha in zip(seg_ids, stored, scored_sha, strict=True):
                if clip is None:
                    missing += 1
                    continue
                p = _clip_path(st.story_id, cond, clip)
                now = file_sha256(p)
                clips[cond].append({"segment_id": seg, "sha256": now,
                                    "changed_since_scoring": now != sha})
                paths[cond].append(str(p))
        request = {"story_id": st.story_id, "version": VERSION, "backends": settings["backends"],
                   "clips": clips, "paths": paths}
        work.append(WorkItem.make(st.story_id, KIND, request, unkeyed=["paths"]))
        meta.append({"story": st, "missing": missing})
    return work, meta


_LOADED: dict[str, Any] = {}


def _backend(spec: Mapping[str, Any], role: str) -> Any:
    from vidmem.models.loading import load_backend

    key = json.dumps([spec, role], sort_keys=True)
    if key not in _LOADED:  # once per process: workers keep theirs between stories
        _LOADED[key] = load_backend(spec["name"], spec["options"], role=role)
    return _LOADED[key]


#: set by :func:`run` while it scores in this process: called after each clip with the
#: clip's name and seconds (a worker process never sees it, so it stays ``None`` there)
_ON_CLIP: Callable[[str, float], None] | None = None


@contextlib.contextmanager
def _clip_progress(show: bool, total: int) -> Iterator[None]:
    """A per-clip progress bar (stderr, the runner's columns) fed by :data:`_ON_CLIP`."""
    global _ON_CLIP
    if not show or total == 0:
        yield
        return
    from vidmem.runners.execute import progress_bar

    bar, task = progress_bar("clip quality", total)

    def tick(name: str, seconds: float) -> None:
        bar.update(task, advance=1, note=f"{name} {seconds:.1f} s")

    with bar:
        _ON_CLIP = tick
        try:
            yield
        finally:
            _ON_CLIP = None


def score_story(item: Any) -> dict[str, Any]:
    """Measure every clip of one story's item (module level: picklable for workers)."""
    from vidmem.io.video import probe, read_frames

    req = item.request
    b = req["backends"]
    flow = _backend(b["flow"], "flow")
    subject = _backend(b["subject"], "image_embedder")
    background = _backend(b["background"], "image_embedder")
    out: dict[str, list[dict[str, Any]]] = {}
    for cond, clips in req["clips"].items():
        out[cond] = []
        for clip, path in zip(clips, req["paths"][cond], strict=True):
            t0 = time.perf_counter()
            info = probe(path)
            if not info.fps:
                raise UserInputError(f"analysis quality: {path} declares no frame rate",
                                     hint="re-encode the clip with its fps")
            frames = read_frames(path, range(info.n_frames))
            q = clip_quality(frames, info.fps, flow=flow, subject_embed=subject.embed_images,
                             background_embed=background.embed_images)
            seconds = time.perf_counter() - t0
            out[cond].append({"segment_id": clip["segment_id"], **q.to_dict(),
                              "changed_since_scoring": clip["changed_since_scoring"],
                              "seconds": seconds})
            if _ON_CLIP is not None:
                _ON_CLIP(f"{req['story_id']}/{cond}/{clip['segment_id']}", seconds)
    return {"response": {"story_id": req["story_id"], "clips": out}, "score": None}


# ---------------------------------------------------------------------------- analysis


def _per_clip(meta: Mapping[str, Any], response: Mapping[str, Any]) -> list[dict[str, Any]]:
    from vidmem.benchmarks.vmem_track_b.analysis_quality_stats import clip_recall

    st = meta["story"]
    rows = []
    for cond, clips in response["clips"].items():
        verdicts = {s["segment_id"]: s for s in st.row["conditions"][cond]["verdicts"]}
        for c in clips:
            recall, n_required = clip_recall(verdicts[c["segment_id"]]["entries"])
            rows.append({"story_id": st.story_id, "condition": cond, **c, "recall": recall,
                         "n_required": n_required})
    return rows


def run(run: Any, options: Any) -> dict[str, Any]:
    """Measure (or read back) every clip, then summarise per condition."""
    from vidmem.benchmarks.vmem_track_b.analysis_quality_stats import (
        condition_summary,
        differences_from,
    )
    from vidmem.runners.execute import execute

    settings = _settings(options)
    work, meta = _items(run, settings)
    # in this process the bar counts clips; worker processes report whole stories
    per_clip = options.workers == 1 and not options.quiet
    with run.items() as store:
        todo = [w for w in work if (got := store.get(w.key)) is None or got.status != "done"]
        n_todo = sum(len(c) for w in todo for c in w.request["clips"].values())
        with _clip_progress(per_clip, n_todo):
            summary = execute(store, work, functools.partial(score_story),
                              workers=options.workers, progress=not (options.quiet or per_clip),
                              quiet=options.quiet)
        stored = [store.get(w.key) for w in work]
    failed = [(w.item_id, s.error if s else "not stored") for w, s in zip(work, stored, strict=True)
              if s is None or s.status != "done"]
    if failed:
        sid, msg = failed[0]
        raise UserInputError(f"analysis quality: {len(failed)} of {len(work)} stories failed "
                             f"(first: story {sid}: {msg})", hint="fix the cause and run the "
                             "analysis again: finished stories are kept")
    clips = [r for m, s in zip(meta, stored, strict=True) for r in _per_clip(m, s.response)]
    cfg = run.manifest.config.get("scorer", {})
    boot = {"n_resamples": int(cfg.get("n_resamples", 2000)),
            "seed": int(cfg.get("bootstrap_seed", 20260925)),
            "confidence": float(cfg.get("confidence", 0.95))}
    conditions = list(dict.fromkeys(c["condition"] for c in clips))
    per_condition = {c: condition_summary([r for r in clips if r["condition"] == c], **boot)
                     for c in conditions}
    diffs = {c: differences_from(clips, c, REFERENCE, **boot)
             for c in conditions if c != REFERENCE and REFERENCE in conditions}
    seconds = [r["seconds"] for r in clips]
    return {"backends": settings["backends"], "bootstrap": boot, "metrics": list(METRICS),
            "conditions": per_condition, "differences": diffs,
            "n_clips": len(clips), "n_missing_clips": sum(m["missing"] for m in meta),
            "changed_since_scoring": [f"{r['story_id']}/{r['condition']}/{r['segment_id']}"
                                      for r in clips if r["changed_since_scoring"]],
            "seconds_per_clip": sum(seconds) / len(seconds) if seconds else None,
            "execution": {"stories": summary.total, "computed": summary.computed,
                          "cached": summary.cached},
            "clips": clips}


# ------------------------------------------------------------------------------ report

#: short column names of the terminal summary (the five fit 80 columns with their means)
_SHORT = {"subject_consistency": "subject", "background_consistency": "background",
          "temporal_flickering": "flicker", "motion_smoothness": "smooth",
          "dynamic_degree": "dynamic"}


def headline(data: Mapping[str, Any]) -> dict[str, Any]:
    """The terminal summary of a result: per condition its clips and each metric's mean.

    Returns:
        ``{"title", "columns", "rows", "note"}`` (strings), for ``vidmem analyze`` to
        print as a table after the analysis finishes.

    Example:
        >>> m = {"mean": 0.5, "ci_low": None, "ci_high": None}
        >>> h = headline({"conditions": {"none": {"n_clips": 2, "means": dict.fromkeys(
        ...     METRICS, m)}}, "seconds_per_clip": 1.25, "n_missing_clips": 0})
        >>> h["columns"][:3], h["rows"], h["note"]
        (['condition', 'clips', 'subject'], [['none', '2', '0.500', '0.500', '0.500', '0.500', '0.500']], '1.25 s per clip measured, 0 missing; means (dynamic: share of dynamic clips)')
    """
    def mean(m: Mapping[str, Any]) -> str:
        return "n/a" if m["mean"] is None else f"{m['mean']:.3f}"

    per = data.get("seconds_per_clip")
    timing = "" if per is None else f"{per:.2f} s per clip measured, "
    return {"title": "Clip quality (not memory)",
            "columns": ["condition", "clips", *(_SHORT[m] for m in METRICS)],
            "rows": [[c, str(s["n_clips"]), *(mean(s["means"][m]) for m in METRICS)]
                     for c, s in data["conditions"].items()],
            "note": f"{timing}{data['n_missing_clips']} missing; means (dynamic: share of "
                    "dynamic clips)"}



def _cell(m: Mapping[str, Any]) -> str:
    if m["mean"] is None:
        return "n/a"
    ci = "" if m["ci_low"] is None else f" [{m['ci_low']:.3f}, {m['ci_high']:.3f}]"
    return f"{m['mean']:.3f}{ci}"


def report(rep: Any, data: Mapping[str, Any], run: Any) -> None:
    """The section "Clip quality (not memory)": means, differences, correlations."""
    from vidmem.report import Table

    b = data["backends"]
    per = data["seconds_per_clip"]
    sec = rep.section(
        "Clip quality (not memory)",
        "VBench-style per-clip controls, kept apart from the memory scores: a memory "
        "difference that comes with a quality difference may be a quality effect. Flow "
        f"{b['flow']['name']}, subject embedder {b['subject']['name']}, background embedder "
        f"{b['background']['name']} (proxies where they differ from VBench; see the "
        f"protocol). {data['n_clips']} clips, {data['n_missing_clips']} missing, "
        f"{len(data['changed_since_scoring'])} changed since scoring"
        + ("" if per is None else f", {per:.2f} s per clip") + ".")
    conds = data["conditions"]
    sec.add(Table(["condition", "clips", *METRICS],
                  [[c, s["n_clips"], *(_cell(s["means"][m]) for m in METRICS)]
                   for c, s in conds.items()],
                  caption="mean [story-bootstrap interval]; dynamic_degree = share of "
                          "dynamic clips"))
    diffs = {c: d for c, d in data["differences"].items() if d is not None}
    if diffs:
        sec.add(Table(["difference", *METRICS],
                      [[d["difference"], *(_cell({"mean": d["rates"][m]["difference"],
                                                  "ci_low": d["rates"][m]["ci_low"],
                                                  "ci_high": d["rates"][m]["ci_high"]})
                                           for m in METRICS)] for d in diffs.values()],
                      caption="paired story bootstrap"))

    def rho(s: Mapping[str, Any]) -> str:
        return "n/a" if s["rho"] is None else f"{s['rho']:.3f} (n={s['n']})"

    sec.add(Table(["condition", "clips without recall", *METRICS],
                  [[c, s["n_without_recall"], *(rho(s["spearman"][m]) for m in METRICS)]
                   for c, s in conds.items()],
                  caption="Spearman rho of each metric with per-clip recall"))
