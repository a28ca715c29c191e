"""Score one MIST case: its locked shots and every reveal clip, with one judge call.

Rollouts layout (what ``vidmem run mist`` writes, and what ``vidmem score mist
--rollouts DIR`` reads)::

    <rollouts>/<case_id>/locked/setup.mp4      shot 1, generated once per case
    <rollouts>/<case_id>/locked/gap.mp4        shot 2, from shot 1's last frame
    <rollouts>/<case_id>/<arm>/try_<k>.mp4     shot 3 of arm <arm>, try k (from the gap's
                                               last frame)
    <rollouts>/<case_id>/<arm>/agent_run.json  M3-Agent's log (rewrite arms; optional)

Tries (:func:`case_clips`): ``baseline`` has ``try_0`` only (the original clip); the
other fixed arms (``answer_only``, ``open_and_hold``, ``same_sentence_resample``)
``try_0`` .. ``try_<K-1>``; the M3-Agent arms ``try_0`` (the original, a copy of the
baseline's) up to ``try_<K-1>``, contiguous, because the loop stops at a diagnosed
success. A missing locked shot, arm folder or try, a try number outside that range, or
a gap in the M3 tries is an error naming case, arm and file. Other files are ignored.

:meth:`MistScorer.score_case` builds the case's questions
(:mod:`vidmem.benchmarks.mist.questions`: setup and leak once, reveal and inside at six
positions per reveal clip), asks them with ONE ``judge_many`` call, reads each answer
strictly and stores, per clip, the twelve readings, the gate factors and class
(:func:`~vidmem.metrics.mist_gates.clip_gates`), the hard cuts inside the clip and the
seam (grey MAD between the gap's last and the clip's first frame,
:mod:`vidmem.metrics.hard_cuts`). Aggregates recompute from the stored readings without
the judge (:mod:`vidmem.benchmarks.mist.aggregate`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from vidmem.benchmarks.mist.config import AGENT_ARMS, MistConfig
from vidmem.benchmarks.mist.questions import (
    clip_id,
    locked_requests,
    read_answer,
    reveal_requests,
)
from vidmem.benchmarks.mist.schema import Card
from vidmem.errors import UserInputError
from vidmem.metrics.hard_cuts import THRESHOLD as CUT_MAD
from vidmem.metrics.hard_cuts import frame_pair_mad, grey
from vidmem.metrics.mist_gates import REVEAL_POSITIONS, clip_gates

__all__ = ["AGENT_RUN", "LOCKED", "MistScorer", "case_clips", "clip_continuity",
           "try_name"]

LOCKED = "locked"
AGENT_RUN = "agent_run.json"
_TRY = re.compile(r"^try_(\d+)$")


def try_name(k: int) -> str:
    """``try_<k>.mp4``, the file of try ``k``."""
    return f"try_{int(k)}.mp4"


def case_clips(folder: Path, card: Card, config: MistConfig) -> dict[str, Any]:
    """Every clip of one case under ``folder`` (rules in the module docstring).

    Returns:
        ``{"locked": {"setup": Path, "gap": Path}, "arms": {arm: [Path, ...]},
        "agent_runs": {arm: Path}}`` in arm order.

    Raises:
        UserInputError: a clip missing, misnamed, out of range, or a gap in the M3 tries.
    """
    where = f"MIST rollouts of case {card.case_id}"
    locked = {}
    for shot in ("setup", "gap"):
        path = folder / LOCKED / f"{shot}.mp4"
        if not path.is_file():
            raise UserInputError(f"{where}: locked {shot} shot {path} not found",
                                 hint="write <rollouts>/<case>/locked/setup.mp4 and gap.mp4 "
                                 "(generated once per case, shared by every arm)")
        locked[shot] = path
    arms: dict[str, list[Path]] = {}
    runs: dict[str, Path] = {}
    for arm in config.arms:
        adir = folder / arm
        n_max = config.tries(arm)
        if not adir.is_dir():
            raise UserInputError(f"{where}: arm folder {adir} not found",
                                 hint=f"write {adir}/try_0.mp4 ... or leave {arm} out of --arms")
        found: dict[int, Path] = {}
        for path in sorted(adir.glob("*.mp4")):
            m = _TRY.match(path.stem)
            if m is None:
                raise UserInputError(f"{where}, arm {arm}: clip {path.name} is not named "
                                     "try_<k>.mp4", hint="rename it after its try number")
            k = int(m.group(1))
            if k >= n_max:
                raise UserInputError(
                    f"{where}, arm {arm}: {path.name} is try {k}, outside 0..{n_max - 1}",
                    hint="the baseline has one try (the original); the other arms K "
                    f"(--k {config.k}); remove the file or raise --k")
            found[k] = path
        n = max(found, default=-1) + 1
        if arm in AGENT_ARMS:
            missing = [k for k in range(max(n, 1)) if k not in found]
        else:
            missing = [k for k in range(n_max) if k not in found]
        if missing:
            hint = ("M3-Agent arms hold try_0 (the original) up to the try where the loop "
                    "stopped, without gaps" if arm in AGENT_ARMS else
                    f"generate every try of the arm ({n_max})")
            raise UserInputError(f"{where}, arm {arm}: {try_name(missing[0])} missing "
                                 f"({len(missing)} try(s) missing in {adir})", hint=hint)
        arms[arm] = [found[k] for k in sorted(found)]
        if (adir / AGENT_RUN).is_file():
            runs[arm] = adir / AGENT_RUN
    return {"locked": locked, "arms": arms, "agent_runs": runs}


def clip_continuity(path: str | Path, previous_last: np.ndarray | None = None
                    ) -> dict[str, Any]:
    """Frames, hard cuts and the seam of one clip (one pass over its frames).

    Returns:
        ``{"n_frames", "hard_cuts": [k, ...], "max_mad", "seam_mad", "seam_cut",
        "last": the last frame}``; ``seam_*`` compare ``previous_last`` with the first
        frame (``None`` without one).
    """
    from vidmem.io.video import iter_frames

    seen: dict[str, Any] = {"n": 0}

    def frames() -> Any:
        # one pass, two grey frames held at a time: a 5 s clip at full size stays small
        for _, frame in iter_frames(path):
            seen.setdefault("first", frame)
            seen["last"] = frame
            seen["n"] += 1
            yield frame

    mad = frame_pair_mad(frames())
    first, last = seen.get("first"), seen.get("last")
    cuts = [int(k) + 1 for k in np.flatnonzero(mad >= CUT_MAD)]
    seam = None
    if previous_last is not None and first is not None and previous_last.shape == first.shape:
        seam = float(np.abs(grey(first) - grey(previous_last)).mean())
    return {"n_frames": seen["n"], "hard_cuts": cuts,
            "max_mad": float(mad.max()) if mad.size else 0.0,
            "seam_mad": seam, "seam_cut": None if seam is None else seam >= CUT_MAD,
            "last": last}


def _agent_summary(path: Path) -> dict[str, Any] | None:
    """The steps of a stored agent run, as the report shows them (plain JSON)."""
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    steps = []
    for s in data.get("steps") or []:
        diag = s.get("diagnosis") or {}
        rew = s.get("rewrite") or {}
        steps.append({"try": s.get("try_index"), "instruction": s.get("instruction"),
                      "failure_mode": diag.get("failure_mode"), "evidence": diag.get("evidence"),
                      "diagnosis_status": diag.get("status"), "old": rew.get("old"),
                      "new": rew.get("new"), "rejected": rew.get("rejected") or [],
                      "score": s.get("score")})
    return {"steps": steps, "best": data.get("best"), "running_best": data.get("running_best")}


class MistScorer:
    """The loaded judge of one configuration, and the case scoring."""

    def __init__(self, config: MistConfig, judge: Any | None = None) -> None:
        self.config = config
        if judge is None:
            from vidmem.models.loading import load_backend

            opts = {k: dict(v) for k, v in config.backend_options.items()}
            judge = load_backend(config.judge, opts.get(config.judge), role="judge")
        self.judge = judge

    def score_case(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Score one case's stored request (see :meth:`Mist.score_items`)."""
        card = Card.model_validate(request["card"])
        cfg = self.config
        locked = {k: Path(v) for k, v in request["locked"].items()}
        asks = locked_requests(card, locked["setup"], locked["gap"],
                               setup_frames=cfg.setup_frames, leak_frames=cfg.leak_frames)
        keys: list[tuple[str, int]] = []
        asked: dict[str, int] = {}  # clip SHA-256 -> its block of 12 answers
        blocks: list[int] = []
        shas = request.get("arms_sha256") or {}
        for arm, paths in request["arms"].items():
            for k, path in enumerate(paths):
                sha = (shas.get(arm) or [None] * len(paths))[k] or f"{arm}/{k}"
                if sha not in asked:  # M3's try 0 is the baseline's clip: asked once
                    asked[sha] = len(asked)
                    asks += reveal_requests(card, path, clip_id(card.case_id, arm, k))
                blocks.append(asked[sha])
                keys.append((arm, k))
        results = self.judge.judge_many(asks) if asks else []
        answers = []
        counts: Counter[str] = Counter()
        readings = []
        for req, res in zip(asks, results, strict=True):
            a = read_answer(res)
            readings.append(a["reading"])
            counts["questions"] += 1
            counts[f"status_{a['status']}"] += 1
            counts["unreadable"] += a["reading"] is None
            answers.append({"item_id": req.item_id, **a,
                            "error": getattr(res, "error", None)})
        setup, leak = readings[0], readings[1]
        cont = {shot: clip_continuity(p) for shot, p in locked.items()}
        gap_last = cont["gap"].pop("last")
        cont["setup"].pop("last")
        arms: dict[str, list[dict[str, Any]]] = {}
        n6 = len(REVEAL_POSITIONS)
        for (arm, k), b in zip(keys, blocks, strict=True):
            block = readings[2 + 2 * n6 * b: 2 + 2 * n6 * (b + 1)]
            rev, ins = block[:n6], block[n6:]
            c = clip_continuity(request["arms"][arm][k], gap_last)
            c.pop("last")
            gates = clip_gates(setup, leak, rev, ins, threshold=cfg.threshold)
            arms.setdefault(arm, []).append({
                "try": k, "reveal_readings": rev, "inside_readings": ins,
                "gates": gates.to_dict(), **c})
        agent = {}
        for arm, path in (request.get("agent_runs") or {}).items():
            summary = _agent_summary(Path(path))
            if summary is not None:
                agent[arm] = summary
        score = {"case_id": card.case_id, "family": card.family, "setup": setup, "leak": leak,
                 "locked": cont, "arms": arms, "agent": agent, "judge": dict(counts),
                 "n_clips": len(keys)}
        return {"response": {**score, "answers": answers}, "score": score}

