"""``vidmem analyze vmem_track_b RUN --only identity``: is a returning entity the same one?

The presence judge checks a returning entity against its description only; this
analysis compares it with its own previous appearance in the same rollout:

1. **Units** from the gold (:mod:`.identity_units`), each with its previous appearance.
2. **Measure** (one stored item per story, :mod:`.analysis_identity_story`): find the
   entity in both clips and embed the crops (:mod:`.analysis_identity_measure`); score
   = highest cosine over frame pairs found on both sides; control pairs alongside.
3. **Calibrate, then freeze**: a Youden cut per kind from the controls of every story
   (:mod:`.analysis_identity_stats`), frozen in run.json (``calibration.identity``, one
   entry per measuring settings: :meth:`RunDir.freeze_calibration`) before a single unit
   is called (``vidmem calibrate vmem_track_b RUN`` shows it). A frozen entry is reused
   when the controls are the same and refused when they changed (more stories scored
   since): ``--opt recalibrate=true`` replaces it.
4. **Score** every condition with the frozen cuts: mean similarity, detection rates,
   same-entity rates per family and per gap bin (:mod:`.analysis_identity_gaps`),
   differences vs ``none`` (paired story bootstrap).
5. **Pairwise VLM check** (only with ``--opt pair_judge=NAME``;
   :mod:`.analysis_identity_judge`).

Options (``--opt key=value``): ``detector`` (``sim-cards`` -- the default on a run
scored by judge/sim-cards -- or a text detector), ``deck`` (the sim card deck; default
the run's ``judge/sim-cards`` weights), ``crop_embedder`` / ``place_embedder`` (default
``classic/hsv-lbp``), ``frames`` (8), ``threshold`` (0.25), ``locations`` (true),
``face_embedder`` (e.g. ``face/arcface-onnx``; none: faces are skipped, and the result
says so), ``segmenter`` (``card-alpha`` with sim-cards, else ``classic/grabcut``;
``none``), ``pair_judge``, ``recalibrate`` (false).
Backend options: ``--backend-opt NAME:key=value``. Every rule is in :data:`PROTOCOL`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vidmem.benchmarks.vmem_track_b import analysis_identity_gaps as gaps
from vidmem.benchmarks.vmem_track_b import analysis_identity_measure as measure
from vidmem.benchmarks.vmem_track_b import analysis_identity_stats as stats
from vidmem.benchmarks.vmem_track_b import analysis_identity_story as story_mod
from vidmem.benchmarks.vmem_track_b.identity_units import FAMILIES
from vidmem.benchmarks.vmem_track_b.identity_units import PROTOCOL as UNITS_PROTOCOL
from vidmem.errors import UserInputError
from vidmem.io.hashing import content_hash
from vidmem.runners.frozen_calibration import controls_sha256
from vidmem.stats.calibration import PROTOCOL as CALIBRATION_PROTOCOL

__all__ = ["NAME", "PROTOCOL", "calibration_key", "read_calibration", "report", "run"]

NAME = "identity"
#: the settings that decide the control scores, so they name a frozen calibration
_MEASURING = ("detector", "deck", "crop_embedder", "place_embedder", "frames", "threshold",
              "segmenter", "face_embedder", "backend_options", "locations")

_DEFAULTS = {"crop_embedder": "classic/hsv-lbp", "place_embedder": "classic/hsv-lbp",
             "frames": "8", "threshold": "0.25", "locations": "true"}
_KNOWN = {"detector", "deck", "face_embedder", "pair_judge", "segmenter", "recalibrate",
          *_DEFAULTS}

PROTOCOL: dict[str, Any] = {
    "faces": {
        "rule": "faces are compared only through a configured face_embedder (largest face in "
                "the crop; kind 'face', its own cut); without one they are skipped and the "
                "result says so",
        "reason": "a face number is never made up; face/arcface-onnx needs user-supplied "
                  "ONNX files",
        "source": "PROTOCOLS.md section 4 ('faces: largest face in the crop')",
    },
    "pair_judge": {
        "rule": "only with --opt pair_judge=NAME: 3 frames at 15/50/85% of each clip, "
                "previous then current, through the judge layer; same-individual rate among "
                "pairs the judge calls visible in both; judge/sim-cards is refused",
        "reason": "the card judge answers roster presence, not 'is this the same "
                  "individual'",
        "source": "PROTOCOLS.md section 4 (pairwise VLM check)",
    },
    "units": UNITS_PROTOCOL,
    "measure": measure.PROTOCOL,
    "story": story_mod.PROTOCOL,
    "calibration": CALIBRATION_PROTOCOL,
    "statistics": stats.PROTOCOL,
    "by_gap": gaps.PROTOCOL,
}


def _bool(key: str, value: str) -> bool:
    v = str(value).strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off"):
        return False
    raise UserInputError(f"identity analysis: --opt {key}={value!r} is not a yes/no value",
                         hint=f"--opt {key}=true or --opt {key}=false")


def _number(key: str, value: str, kind: type, low: float) -> Any:
    try:
        x = kind(str(value))
    except ValueError:
        x = None
    if x is None or x < low:
        what = "an integer" if kind is int else "a number"
        raise UserInputError(f"identity analysis: --opt {key}={value!r} must be {what} >= {low}",
                             hint=f"e.g. --opt {key}={_DEFAULTS[key]}")
    return x


def _settings(run: Any, options: Any, scorer: dict[str, Any]) -> dict[str, Any]:
    opts = {**_DEFAULTS, **{k: str(v) for k, v in dict(options.opts).items()}}
    unknown = sorted(set(opts) - _KNOWN)
    if unknown:
        raise UserInputError(f"identity analysis: unknown option(s) {', '.join(unknown)}",
                             hint=f"known options: {', '.join(sorted(_KNOWN))}")
    backend_options = {k: dict(v) for k, v in dict(scorer.get("backend_options") or {}).items()}
    for name, extra in dict(options.backend_options).items():
        backend_options.setdefault(name, {}).update(dict(extra))
    deck = opts.get("deck") or backend_options.get("judge/sim-cards", {}).get("weights")
    detector = opts.get("detector") or ("sim-cards" if scorer.get("judge") == "judge/sim-cards"
                                        else None)
    if detector is None:
        raise UserInputError(
            f"identity analysis of {run.path}: no detector to localise entities with",
            hint="--opt detector=owlvit/base-patch32 (any detector with text queries), or "
                 "--opt detector=sim-cards --opt deck=DIR on a sim run")
    segmenter = opts.get("segmenter") or (measure.CARD_MASK if detector == "sim-cards"
                                          else "classic/grabcut")
    if opts.get("pair_judge"):
        from vidmem.benchmarks.vmem_track_b.analysis_identity_judge import check_pair_judge

        check_pair_judge(opts["pair_judge"])
    face = opts.get("face_embedder") or None
    from vidmem.registry import BACKENDS

    for name in (None if detector == "sim-cards" else detector, opts["crop_embedder"],
                 opts["place_embedder"], None if segmenter in ("none", measure.CARD_MASK)
                 else segmenter, face):
        if name is not None and ":" not in name:  # a module:Class place embedder is a plugin
            BACKENDS.get(name)  # an unknown name fails now, with "did you mean"
    used = {n: backend_options[n] for n in (detector, "classic/sift", opts["crop_embedder"],
                                           opts["place_embedder"], segmenter, face)
            if n in backend_options}
    return {"detector": detector, "deck": None if detector != "sim-cards" else
            (str(Path(deck).resolve()) if deck else None),
            "crop_embedder": opts["crop_embedder"], "place_embedder": opts["place_embedder"],
            "frames": _number("frames", opts["frames"], int, 2),
            "threshold": _number("threshold", opts["threshold"], float, 0.0),
            "segmenter": None if segmenter.lower() == "none" else segmenter,
            "backend_options": used, "locations": _bool("locations", opts["locations"]),
            "pair_judge": opts.get("pair_judge") or None, "face_embedder": face}


def read_calibration(run_path: str | Path) -> dict[str, Any] | None:
    """The frozen calibrations of a run, from run.json: settings key -> entry (``kinds``:
    kind -> cut, ROC...; ``settings``, ``controls_sha256``, ``frozen_at``); ``None`` when
    the analysis has frozen none."""
    from vidmem.runners.manifest import read_manifest

    return dict(read_manifest(run_path).calibration.get(NAME) or {}) or None


def calibration_key(settings: dict[str, Any]) -> str:
    """The name of the measuring settings' frozen calibration: readable, then a short hash
    of every setting that changes a control score.

    Example:
        >>> calibration_key({"crop_embedder": "a/b", "place_embedder": "c/d", "frames": 8}
        ...                 ).startswith("a/b crops / c/d frames #")
        True
    """
    measuring = {k: settings.get(k) for k in _MEASURING}
    return (f"{settings['crop_embedder']} crops / {settings['place_embedder']} frames "
            f"#{content_hash(measuring, length=10)}")


def _control_scores(controls: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per side and kind, the sorted scores the cuts are fitted on (what the hash covers)."""
    out: dict[str, dict[str, list[float]]] = {}
    for side, rows in controls.items():
        for c in rows:
            if c["score"] is not None:
                out.setdefault(side, {}).setdefault(str(c["kind"]), []).append(float(c["score"]))
    return {side: {k: sorted(v) for k, v in kinds.items()} for side, kinds in out.items()}


def _freeze(run: Any, options: Any, settings: dict[str, Any], name: str,
            calibration: dict[str, Any], controls: dict[str, list[dict[str, Any]]]
            ) -> tuple[str, dict[str, Any]]:
    """Freeze the cuts in run.json (or reuse the entry frozen from the same controls)."""
    key = calibration_key(settings)
    replace = _bool("recalibrate", str(dict(options.opts).get("recalibrate", "false")))
    entry = run.freeze_calibration(
        NAME, key, {"name": name, "settings": {k: settings[k] for k in _MEASURING},
                    "n_controls": {k: len(v) for k, v in controls.items()},
                    "kinds": calibration},
        controls_sha256=controls_sha256(_control_scores(controls)), replace=replace,
        fix=f"rerun vidmem analyze vmem_track_b {run.path} --only identity with the same "
            f"options and --opt recalibrate=true to replace it (every condition is then "
            f"scored with the new cut)")
    return key, entry


def _weights_fingerprints(settings: dict[str, Any]) -> dict[str, str | None]:
    """Per registered backend the analysis loads, a cheap identity of its weights (names,
    sizes, mtimes: :func:`~vidmem.models.weights.weights_fingerprint`); plug-ins
    (``module:Class``) and the card deck's own detector have none here."""
    from vidmem.models.weights import weights_fingerprint

    names = {settings.get(k) for k in ("detector", "crop_embedder", "place_embedder",
                                       "segmenter", "face_embedder")}
    names -= {None, "sim-cards", measure.CARD_MASK}
    opts = settings["backend_options"]
    return {n: weights_fingerprint(n, dict(opts.get(n, {}))) for n in sorted(names)
            if ":" not in n}


def _measure(run: Any, options: Any, settings: dict[str, Any],
             scorer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    from vidmem.benchmarks.vmem_track_b.run_items import scored_items
    from vidmem.runners.execute import execute
    from vidmem.runners.execution_records import WorkItem

    items = []
    fingerprints = _weights_fingerprints(settings)
    for it in scored_items(run):
        if it.request is None:
            raise UserInputError(f"story {it.story_id}: the run's item store has no stored "
                                 f"request for its row, so its clips are unknown",
                                 hint="rescore the run (vidmem score vmem_track_b ...)")
        req = {"gold_root": it.request["gold_root"], "number": it.request["number"],
               "gold_sha256": it.request["gold_sha256"], "clips": it.request["clips"],
               "clips_sha256": it.request.get("clips_sha256"),
               "conditions": list(scorer["conditions"]), "seed": int(scorer.get("seed", 0)),
               "locations": settings["locations"],
               "settings": {k: settings[k] for k in ("detector", "deck", "crop_embedder",
                                                    "place_embedder", "frames", "threshold",
                                                    "segmenter", "face_embedder",
                                                    "backend_options")},
               # new weights behind the same name or path measure the story again
               "weights": fingerprints}
        items.append(WorkItem.make(it.story_id, story_mod.KIND, req))
    if not items:
        raise UserInputError(f"{run.path}: no scored stories to analyse",
                             hint="score the run first (vidmem score/run vmem_track_b)")
    with run.items() as store:
        done = execute(store, items, story_mod.measure_story, workers=options.workers,
                       progress=not options.quiet, quiet=options.quiet)
        if done.errors:
            first = "; ".join(f"{i}: {e}" for i, e in done.error_samples)
            raise UserInputError(f"identity analysis: {done.errors} of {done.total} stories "
                                 f"failed to measure ({first})",
                                 hint="fix the cause and rerun; measured stories are kept")
        return {it.item_id: dict(store.get(it.key).response) for it in items}


def _faces(settings: dict[str, Any], units: dict[str, Any], calibration: dict[str, Any],
           scorer: dict[str, Any]) -> dict[str, Any]:
    if not settings["face_embedder"]:
        return {"status": "skipped", "why": "no face_embedder configured (--opt "
                "face_embedder=face/arcface-onnx with its ONNX files as weights)"}
    table, counts = stats.condition_table(stats.face_rows(units), calibration)
    baseline = "none" if "none" in scorer["conditions"] else scorer["conditions"][0]
    return {"status": "ok", "embedder": settings["face_embedder"], "table": table,
            "deltas": stats.deltas(counts, baseline,
                                   n_resamples=int(scorer.get("n_resamples", 2000)),
                                   seed=int(scorer.get("bootstrap_seed", 20260925)),
                                   confidence=float(scorer.get("confidence", 0.95)))}


def run(run: Any, options: Any) -> dict[str, Any]:
    """Measure, calibrate (and write the cut), then score every condition (module doc)."""
    scorer = dict(run.manifest.config.get("scorer") or {})
    if not scorer.get("conditions"):
        raise UserInputError(f"{run.path}/run.json: no Track-B scorer configuration",
                             hint="analyse a run written by vidmem score/run vmem_track_b")
    settings = _settings(run, options, scorer)
    per_story = _measure(run, options, settings, scorer)
    controls: dict[str, list[dict[str, Any]]] = {"positive": [], "negative": []}
    for sid, res in per_story.items():
        for side in controls:
            controls[side] += [{**c, "story_id": sid} for c in res["controls"][side]]
    name = f"{settings['crop_embedder']} crops / {settings['place_embedder']} frames"
    kinds = (*stats.KINDS, stats.FACE) if settings["face_embedder"] else stats.KINDS
    key, frozen = _freeze(run, options, settings, name,
                          stats.calibrate(controls, name=name, kinds=kinds), controls)
    calibration = frozen["kinds"]  # the stored cuts, whatever the fitting code says today
    units = {sid: res["units"] for sid, res in per_story.items()}
    table, counts = stats.condition_table(units, calibration)
    baseline = "none" if "none" in scorer["conditions"] else scorer["conditions"][0]
    diffs = stats.deltas(counts, baseline, n_resamples=int(scorer.get("n_resamples", 2000)),
                         seed=int(scorer.get("bootstrap_seed", 20260925)),
                         confidence=float(scorer.get("confidence", 0.95)))
    result: dict[str, Any] = {
        "calibration": calibration, "calibration_key": key,
        "calibration_frozen_at": frozen["frozen_at"], "settings": settings, "baseline": baseline,
        "conditions": list(scorer["conditions"]), "stories": sorted(per_story),
        "families": [*FAMILIES, "all", "location:return_after_absence",
                     "location:recent_return_sample"],
        "table": table, "deltas": diffs, "counts": counts,
        "n_controls": {k: len(v) for k, v in controls.items()},
        "faces": _faces(settings, units, calibration, scorer),
        "by_gap": gaps.gap_table(units, calibration, baseline,
                                 n_resamples=int(scorer.get("n_resamples", 2000)),
                                 seed=int(scorer.get("bootstrap_seed", 20260925)),
                                 confidence=float(scorer.get("confidence", 0.95))),
        "units": units,
    }
    if settings["pair_judge"]:
        from vidmem.benchmarks.vmem_track_b.analysis_identity_judge import pair_check

        result["pair_judge"] = pair_check(run, options, settings["pair_judge"], units, scorer)
    else:
        result["pair_judge"] = {"status": "skipped", "why": "no --opt pair_judge=NAME given"}
    return result


def report(rep: Any, data: dict[str, Any], run: Any) -> None:
    """Sections: the frozen cuts, then rates per condition and family, then deltas."""
    from vidmem.report import KeyValues, Table

    cal = data["calibration"]
    rows = [[k, c.get("cut"), c.get("tpr"), c.get("fpr"), c.get("auc"), c.get("n_positive"),
             c.get("n_negative"), c.get("why", "")] for k, c in cal.items()]
    sec = rep.section("Identity: calibration (frozen before scoring)",
                      "Youden cut per kind on control pairs (positive: two disjoint frame sets "
                      "of one clip; negative: two entities of the same kind and story), "
                      f"frozen in run.json as {data.get('calibration_key', '?')!r}.")
    sec.add(Table(["kind", "cut", "TPR", "FPR", "AUC", "positives", "negatives", "note"], rows))
    fams = [f for f in data["families"] if any(f in data["table"].get(c, {})
                                               for c in data["conditions"])]
    rows = []
    for cond in data["conditions"]:
        for fam in fams:
            r = data["table"].get(cond, {}).get(fam)
            if r:
                rows.append([cond, fam, r["n_found_current"], r["found_current"],
                             r["found_both"], r["mean_similarity"], r["same_if_found"],
                             r["same_all"]])
    sec = rep.section("Identity: per condition and family",
                      "found = the entity was localised; similarity = highest cosine over "
                      "frame pairs found on both sides; same = cosine >= the frozen cut "
                      "(same_all counts a unit not found on both sides as not the same).")
    sec.add(Table(["condition", "family", "units", "found now", "found both",
                   "mean similarity", "same | found", "same (all)"], rows))
    rows = []
    for cond, fams_d in data["deltas"].items():
        for fam in ("all", "return_after_absence", "changed_long_gap"):
            d = fams_d.get(fam)
            for rate in ("found_both", "same_all", "mean_similarity") if d else ():
                x = d["rates"][rate]
                rows.append([cond, fam, rate, x["difference"], x["ci_low"], x["ci_high"]])
    if rows:
        rep.section(f"Identity: differences from {data['baseline']}").add(
            Table(["condition", "family", "rate", "difference", "low", "high"], rows))
    by_gap = data.get("by_gap")  # absent from results written before it existed
    if by_gap:
        sec = rep.section("Identity: by absence gap",
                          "Units of the 'all' row binned by segments since the previous "
                          "appearance (just_seen: the sampled gap-0 returns); same frozen cuts.")
        sec.add(Table(["condition", "gap", "units", "found both", "mean similarity",
                       "same (all)"], gaps.report_rows(by_gap, data["conditions"])))
        rows = gaps.delta_rows(by_gap)
        if rows:
            sec.add(Table(["condition", "gap", "rate", f"difference from {data['baseline']}",
                           "low", "high"], rows))
    faces = data["faces"]
    if faces["status"] == "ok":
        rows = [[cond, fam, r["n_found_current"], r["found_both"], r["mean_similarity"],
                 r["same_if_found"]] for cond, fams_d in faces["table"].items()
                for fam, r in fams_d.items()]
        rep.section(f"Identity: faces ({faces['embedder']}, largest face in the crop)").add(
            Table(["condition", "family", "characters", "face on both sides",
                   "mean face similarity", "same | faces"], rows))
    rep.section("Identity: what was and was not measured").add(KeyValues({
        "faces": faces.get("why", f"measured with {faces.get('embedder')}"),
        "pair judge": data["pair_judge"].get("why", data["pair_judge"].get("status"))}))
