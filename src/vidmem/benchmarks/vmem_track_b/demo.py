"""The Track-B part of `vidmem demo`: the closed loop on a sim story, checked against its truth.

Builds one sim story (14 five-second segments: introductions, returns, a state change, a
destroyed prop, a look-alike pair, a false friend, temporal references), then runs the
real closed loop (``vidmem run vmem_track_b``: one rollout per condition, each segment
generated from the rollout's own earlier clips) with the sim generator and scores every
clip with the card judge ``judge/sim-cards`` (an offline proxy, not a VLM), twice:

* **clean**: the generator has no memory of its own (``memory=none``), under the
  conditions ``none`` and ``seg_uniform`` (the offline preset's text retrieval); a
  recall is drawn right only when a reference shows the entity, so retrieval must raise
  Recall;
* **leaky**: the generator copies into the clip every entity a reference shows that the
  prompt does not draw (``memory=leaky:1``, even one the story destroyed), under
  ``seg_uniform``; so the same retrieval must lower Avoid-OK.

The checks compare with the sim truth, never with a threshold: for each comparison the
truth (what the generator really drew, from the ``.truth.json`` sidecars, rules in
:mod:`.demo_truth`) must move the rate the expected way, and the judge's pooled rate
must move the same way. The table shows judge and truth side by side, and how often the
judge's presence answers agree with the truth. Judge answers are cached in the demo
folder; a second demo finds its runs finished and asks nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from vidmem.benchmarks.vmem_track_b.config import ScorerConfig
from vidmem.benchmarks.vmem_track_b.demo_truth import PROTOCOL as TRUTH_PROTOCOL
from vidmem.benchmarks.vmem_track_b.demo_truth import agreement, segment_truth, truth_rates
from vidmem.benchmarks.vmem_track_b.loop import segment_name
from vidmem.runners import benchmark_run as runner

SEED = 0
N_STORIES = 1
N_SEGMENTS = 14
#: a return after >= 10 segments counts as long here (the card's 30 needs a longer story)
GAP_LONG = 10
#: the generator's frame rate (the sim's default is 8 fps; 4 keeps the demo quick)
FPS = 4.0
RETRIEVAL = "seg_uniform"
LEAKY = "leaky:1"
#: (arm, the sim generator's memory, conditions)
ARMS = (("clean", "none", ("none", RETRIEVAL)), ("leaky", LEAKY, (RETRIEVAL,)))
ANSWERS = "answers.sqlite"
RATES = ("recall", "avoid_ok", "precision")

#: the line printed before this part runs
ANNOUNCE = ("VMem-Bench Track-B on a sim story: building, generating closed-loop rollouts, "
            "judging every clip ...")

PROTOCOL: dict[str, dict[str, str]] = {
    "demo.story": {
        "rule": f"{N_STORIES} sim story, seed {SEED}, {N_SEGMENTS} segments, long gap >= "
                f"{GAP_LONG}; sim generator at {FPS:g} fps",
        "reason": "every stress family on the shortest story the sim builds, so the part "
                  "stays near a minute on two CPU cores",
        "source": "vidmem demo"},
    "demo.recall_check": {
        "rule": f"generator memory none: the truth Recall of {RETRIEVAL} exceeds that of none, "
                "and the judge's pooled Recall moves the same way",
        "reason": "with no memory of its own the sim draws a returning entity right only from "
                  "a reference",
        "source": "issue 14 (demo); vidmem.sim.gen_story"},
    "demo.avoid_check": {
        "rule": f"condition {RETRIEVAL}: the truth Avoid-OK with generator memory {LEAKY} is "
                "below that with memory none, and the judge's pooled Avoid-OK moves the same way",
        "reason": f"{LEAKY} copies every referenced entity the prompt does not draw, "
                  "destroyed ones too",
        "source": "issue 14 (demo); vidmem.sim.memory leaky:P"},
}


def config() -> dict[str, Any]:
    return {"seed": SEED, "n_stories": N_STORIES, "n_segments": N_SEGMENTS,
            "gap_long_threshold": GAP_LONG, "fps": FPS, "preset": "offline",
            "arms": [{"arm": a, "memory": m, "conditions": list(c)} for a, m, c in ARMS],
            "protocol": {**PROTOCOL, **TRUTH_PROTOCOL}}


def _config(conditions: tuple[str, ...], cards: Path) -> ScorerConfig:
    base = ScorerConfig.from_preset("offline", conditions=conditions, seed=SEED)
    return ScorerConfig.from_dict({**base.to_dict(), "backend_options": {
        base.judge: {"weights": str(cards)}}})


def _build(bench: Any, data: Path) -> None:
    from vidmem.benchmarks.vmem_track_b.sim_build import CARDS_DIR, build_track_b

    if (data / "gt").is_dir() and (data / CARDS_DIR / "deck.json").is_file():
        return
    data.mkdir(parents=True, exist_ok=True)
    build_track_b(data, seed=SEED, n_cases=N_STORIES, n_segments=N_SEGMENTS,
                  gap_long_threshold=GAP_LONG)


def _rates(pooled: dict[str, Any]) -> dict[str, float | None]:
    return {r: pooled[r]["value"] for r in RATES}


def _cell(story_truths: dict[str, Any], ds: Any, run_dir: Path, cond: str,
          rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Truth rates, the leaks and the judge-truth agreement of one (arm, condition)."""
    segs, leaks = [], []
    agree = {"required": 0, "required_total": 0, "forbidden": 0, "forbidden_total": 0}
    by_story = {r["story_id"]: r for r in rows}
    for story in ds.stories:
        truth = story_truths[story.story_id]
        folder = run_dir / "rollouts" / story.story_id / cond
        per_seg = {}
        for i, seg in enumerate(story.segments):
            name = segment_name(seg.segment_id)
            sidecar = json.loads((folder / f"{name}.mp4.truth.json").read_text("utf-8"))
            per_seg[seg.segment_id] = segment_truth(truth, i, sidecar)
            drawn_forbidden = [truth["entities"][e]["name"] for e, absent
                               in per_seg[seg.segment_id]["forbidden"].items() if not absent]
            if drawn_forbidden:
                leaks.append({"story_id": story.story_id, "segment": name,
                              "names": drawn_forbidden})
        segs += list(per_seg.values())
        verdicts = by_story.get(story.story_id, {}).get("conditions", {}).get(cond, {})
        for k, v in agreement(per_seg, verdicts.get("verdicts", [])).items():
            agree[k] += v
    return {"truth": {r: v["value"] for r, v in truth_rates(segs).items()},
            "truth_counts": truth_rates(segs), "agreement": agree, "leaks": leaks}


def _order(a: dict[str, Any], b: dict[str, Any], rate: str, expect: int) -> dict[str, Any]:
    """Does ``rate`` move from ``a`` to ``b`` the ``expect`` way (+1 up, -1 down) in the
    truth, and the same way in the judge's pooled rate?"""
    def sign(x: float | None, y: float | None) -> int:
        return 0 if x is None or y is None or x == y else (1 if y > x else -1)

    truth, judge = sign(a["truth"][rate], b["truth"][rate]), sign(a["judge"][rate], b["judge"][rate])
    return {"rate": rate, "from": a["label"], "to": b["label"], "expected": expect,
            "truth": [a["truth"][rate], b["truth"][rate]], "judge": [a["judge"][rate], b["judge"][rate]],
            "truth_moves_as_expected": truth == expect, "judge_agrees": judge == truth != 0,
            "passed": truth == expect and judge == truth}


def run(bench: Any, base: Path, *, quiet: bool) -> dict[str, Any]:
    """Build the sim story, run both arms, and return the numbers the checks read."""
    from vidmem.benchmarks.vmem_track_b.sim_build import CARDS_DIR
    from vidmem.sim.build import TRUTH_DIR

    data = base / "data"
    _build(bench, data)
    ds = bench.load(data)
    truths = {s.story_id: json.loads((data / TRUTH_DIR / f"{s.story_id}.json").read_text("utf-8"))
              for s in ds.stories}
    cells: dict[str, dict[str, Any]] = {}
    errors: list[list[str]] = []
    reports = {}
    for arm, memory, conditions in ARMS:
        run_dir = base / f"run-{arm}"
        outcome = runner.run_benchmark(
            bench, ds, videos=None, out=run_dir, config=_config(conditions, data / CARDS_DIR),
            gen=("sim", {"memory": memory, "seed": SEED, "fps": FPS}), allow_missing=False,
            workers=1, resume=True, overwrite=False, quiet=quiet, judge_cache=base / ANSWERS,
            argv=[])
        errors += [list(e) for e in outcome.failed]
        reports[arm] = outcome.summary["report"]["html"]
        rows = outcome.run.scores()
        for cond in conditions:
            label = f"{arm}/{cond}"
            cells[label] = {"label": label, "arm": arm, "memory": memory, "condition": cond,
                            "judge": _rates(outcome.summary["pooled"][cond]),
                            **_cell(truths, ds, run_dir, cond, rows)}
    checks = {
        "retrieval_raises_recall": _order(cells["clean/none"], cells[f"clean/{RETRIEVAL}"],
                                          "recall", +1),
        "leaky_lowers_avoid_ok": _order(cells[f"clean/{RETRIEVAL}"], cells[f"leaky/{RETRIEVAL}"],
                                        "avoid_ok", -1),
    }
    return {"dataset": str(data), "stories": [s.story_id for s in ds.stories],
            "segments": sum(len(s.segments) for s in ds.stories), "cells": cells,
            "checks": checks, "errors": errors, "reports": reports, "official": False}


def passed(result: dict[str, Any]) -> bool:
    """Both orders hold in the truth and the judge agrees; every story was scored."""
    return bool(not result["errors"] and all(c["passed"] for c in result["checks"].values()))


def _f(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def _agree(a: dict[str, int]) -> str:
    n = a["required_total"] + a["forbidden_total"]
    return "n/a" if not n else f"{(a['required'] + a['forbidden']) / n:.0%} of {n}"


def check_lines(result: dict[str, Any]) -> list[tuple[bool, str, str]]:
    """Per check: ``(passed, what is claimed, what the truth and the judge say)``."""
    words = {"recall": "Recall", "avoid_ok": "Avoid-OK"}
    claims = {"retrieval_raises_recall": f"generator memory none: {RETRIEVAL} raises Recall "
                                         "over none",
              "leaky_lowers_avoid_ok": f"condition {RETRIEVAL}: generator memory {LEAKY} "
                                       "lowers Avoid-OK below memory none"}
    out = []
    for name, c in result["checks"].items():
        (t0, t1), (j0, j1) = c["truth"], c["judge"]
        out.append((c["passed"], claims.get(name, name),
                    f"{words[c['rate']]} truth {_f(t0)} -> {_f(t1)} "
                    f"({'yes' if c['truth_moves_as_expected'] else 'NO'}), judge {_f(j0)} -> "
                    f"{_f(j1)} ({'agrees' if c['judge_agrees'] else 'DISAGREES'})"))
    return out


def print_result(console: Any, result: dict[str, Any]) -> None:
    """The judge-versus-truth table and the two checks."""
    from rich.table import Table as RichTable

    table = RichTable(title=f"VMem-Bench Track-B on a sim story ({result['segments']} segments, "
                      "offline preset, judge/sim-cards, non-official)", title_justify="left")
    for col in ("generator memory", "condition", "Recall judge", "Recall truth",
                "Avoid-OK judge", "Avoid-OK truth", "Precision judge", "judge = truth"):
        table.add_column(col)
    for c in result["cells"].values():
        table.add_row(c["memory"], c["condition"], _f(c["judge"]["recall"]),
                      _f(c["truth"]["recall"]), _f(c["judge"]["avoid_ok"]),
                      _f(c["truth"]["avoid_ok"]), _f(c["judge"]["precision"]),
                      _agree(c["agreement"]))
    console.print(table)
    for ok, claim, detail in check_lines(result):
        colour = "green" if ok else "red"
        console.print(f"[{colour}]{claim}: {detail}[/{colour}]", highlight=False)
    if result["errors"]:
        console.print(f"[red]Track-B: {len(result['errors'])} stories failed to score[/red]: "
                      f"{result['errors'][0]}", highlight=False)


def _leak_panel(base: Path, result: dict[str, Any]) -> tuple[Any, str] | None:
    """The first leak: the references handed over, the clean clip and the leaky clip."""
    import numpy as np
    from PIL import Image

    from vidmem.io.video import probe, read_frames
    from vidmem.report.images import side_by_side

    leaky = result["cells"].get(f"leaky/{RETRIEVAL}")
    if not leaky or not leaky["leaks"]:
        return None
    leak = leaky["leaks"][0]
    sid, seg = leak["story_id"], leak["segment"]
    images, captions = [], []
    folder = base / "run-leaky" / "rollouts" / sid / RETRIEVAL
    for k, png in enumerate(sorted(folder.glob(f"{seg}.ref*.png")), start=1):
        images.append(np.asarray(Image.open(png).convert("RGB")))
        captions.append(f"reference {k}")
    for arm, label in (("clean", "memory none"), ("leaky", LEAKY)):
        clip = base / f"run-{arm}" / "rollouts" / sid / RETRIEVAL / f"{seg}.mp4"
        if clip.is_file():
            images.append(read_frames(clip, [probe(clip).n_frames // 2])[0])
            captions.append(f"{label}: {seg}")
    return (side_by_side(images, captions, height=110, font_size=11),
            f"{sid} {seg} under {RETRIEVAL}: with {LEAKY} the generator also draws "
            f"{', '.join(leak['names'])}, forbidden here, because a reference shows it")


def report_section(rep: Any, result: dict[str, Any], base: Path, report_dir: Path) -> None:
    """Add the Track-B comparison to the demo report: a leak first, then the numbers."""
    from vidmem.report import ImageGrid, KeyValues, Markdown, Table

    sec = rep.section(
        "VMem-Bench Track-B on a sim story",
        f"One {result['segments']}-segment sim story generated in closed loop by the sim "
        f"generator: with no memory of its own under conditions none and {RETRIEVAL}, and "
        f"with {LEAKY} (it copies every referenced entity the prompt does not draw) under "
        f"{RETRIEVAL}; every clip judged by judge/sim-cards (an offline proxy, not a VLM). "
        "The checks compare with the sim truth: what the generator really drew.")
    panel = _leak_panel(base, result)
    if panel is not None:
        sec.add(ImageGrid([panel], columns=1, thumb_size=900))
    sec.add(Table(["generator memory", "condition", "Recall judge", "Recall truth",
                   "Avoid-OK judge", "Avoid-OK truth", "Precision judge", "judge = truth"],
                  [[c["memory"], c["condition"], c["judge"]["recall"], c["truth"]["recall"],
                    c["judge"]["avoid_ok"], c["truth"]["avoid_ok"], c["judge"]["precision"],
                    _agree(c["agreement"])] for c in result["cells"].values()],
                  caption="pooled over the story's segments; judge = truth: share of required "
                          "and forbidden entries whose presence answer matches the truth"))
    sec.add(KeyValues({claim: f"{'passed' if ok else 'FAILED'}: {detail}"
                       for ok, claim, detail in check_lines(result)}))
    links = [f"[{arm} run report]({os.path.relpath(Path(p), report_dir)})"
             for arm, p in result["reports"].items()]
    sec.add(Markdown(" · ".join(links)))
