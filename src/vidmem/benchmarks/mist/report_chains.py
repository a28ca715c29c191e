"""The M3-Agent chains of the MIST report: frame, diagnosis, old and new instruction, score.

Read from the run only: each scored case's row holds the agent steps (from the stored
``agent_run.json``, :func:`vidmem.benchmarks.mist.scorer.MistScorer.score_case`), its
stored request the clip paths, whose last frames are shown. At most :data:`MAX_CASES`
cases are drawn (in case order); a clip that is gone shows as a note, not an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vidmem.benchmarks.mist.config import AGENT_ARMS

__all__ = ["MAX_CASES", "add_chains", "case_requests"]

MAX_CASES = 6


def case_requests(run: Any, rows: list[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Per scored case, the stored request of the item whose score is its row."""
    wanted = {r["case_id"]: {k: v for k, v in r.items() if k != "status"}
              for r in rows if r.get("status") == "scored"}
    out: dict[str, tuple[str, Mapping[str, Any]]] = {}
    with run.items() as store:
        for s in store.iter_items(kind="score", status="done"):
            row = wanted.get(s.item_id)
            if row is None or s.score != row:
                continue
            seen = out.get(s.item_id)
            if seen is None or s.updated_at >= seen[0]:
                out[s.item_id] = (s.updated_at, s.request)
    return {k: v[1] for k, v in out.items()}


def _last_frame(path: str) -> Any:
    from vidmem.io.video import probe, read_frames

    if not Path(path).is_file():
        return None
    return read_frames(path, [probe(path).n_frames - 1])[0]


def _short(text: Any, n: int = 160) -> str:
    s = " ".join(str(text or "").split())
    return s if len(s) <= n else s[: n - 3] + "..."


def add_chains(rep: Any, run: Any) -> None:
    """Add the M3-Agent chains section to ``rep`` (nothing when no case has a chain)."""
    from vidmem.report import ImageGrid, Table

    rows = [r for r in run.scores() if r.get("status") == "scored" and r.get("agent")]
    if not rows:
        return
    requests = case_requests(run, rows)
    sec = rep.section(
        "M3-Agent chains",
        "Per try: the last frame the diagnoser read, the failure mode it named, the "
        "instruction before and after the rewrite (rejected rewrites listed) and the keep "
        "score (the reporting judge's reveal + 0.001 x last inside + 1e-6 x mean inside: an "
        "oracle). Try 0 is the original; the loop "
        f"stops at a diagnosed success. The first {MAX_CASES} cases are shown.")
    for row in rows[:MAX_CASES]:
        req = requests.get(row["case_id"], {})
        for arm in AGENT_ARMS:
            chain = row["agent"].get(arm)
            if not chain:
                continue
            paths = (req.get("arms") or {}).get(arm, [])
            images, table = [], []
            for step in chain["steps"]:
                k = step.get("try")
                frame = _last_frame(paths[k]) if isinstance(k, int) and k < len(paths) else None
                score = step.get("score")
                caption = (f"try {k}: {step.get('failure_mode') or '-'}, score "
                           f"{'-' if score is None else f'{score:.3f}'}")
                if frame is not None:
                    images.append((frame, caption))
                rejected = "; ".join(_short(t[0] if isinstance(t, list | tuple) else t, 60)
                                     for t in step.get("rejected") or [])
                table.append([k, step.get("failure_mode"), _short(step.get("evidence"), 80),
                              _short(step.get("old")), _short(step.get("new")),
                              rejected or "-", score])
            best = chain.get("best")
            title = f"{row['case_id']} ({row['family']}), {arm}: kept try {best}"
            if images:
                sec.add(ImageGrid(images, columns=min(5, len(images)), thumb_size=240,
                                  caption=title))
            sec.add(Table(["try", "diagnosis", "evidence", "old instruction",
                           "new instruction", "rejected", "keep score"], table, caption=title))
