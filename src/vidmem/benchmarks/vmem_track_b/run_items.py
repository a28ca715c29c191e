"""A scored Track-B run read back: each story's row, stored request and stored response.

Rules: a story's row comes from ``scores.jsonl`` (status ``scored``); its request
(gold root, gold hashes, clip paths and hashes) and response (verdicts, judge answers)
are the item-store entry whose score *is* that row -- the store may also hold items of
earlier gold or clips under the same run configuration, and those are never used; of
two equal entries the newest wins. Nothing is judged or decoded here.

Clip paths: a run made with ``vidmem run`` stores the absolute paths of its clips under
``RUN/rollouts``. When the run's own folder holds a clip of that name
(``RUN/rollouts/<story>/<condition>/<file>``) that file is the one read, else the stored
path (brought rollouts live elsewhere): a run moved *or copied* with its clips reads its
own files, never the original's that may still exist beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["StoryItem", "own_clips", "scored_items"]


@dataclass(frozen=True)
class StoryItem:
    """One scored story of a run.

    Attributes:
        story_id: the story.
        row: its ``scores.jsonl`` row.
        request: the stored score request (``gold_root``, ``number``, ``gold_sha256``,
            ``clips``, ``clips_sha256``, ``scorer``); ``None`` when the store has no
            entry for the row (a store deleted or replaced).
        response: the stored response (``conditions`` and ``answers``), or ``None``.
    """

    story_id: str
    row: Mapping[str, Any]
    request: Mapping[str, Any] | None
    response: Mapping[str, Any] | None


def scored_items(run: Any) -> list[StoryItem]:
    """The run's scored stories in ``scores.jsonl`` order, with their stored items.

    Args:
        run: an opened :class:`~vidmem.runners.store.RunDir`.

    Raises:
        StoreError: ``scores.jsonl`` is missing (the run has not finished).
    """
    rows = [r for r in run.scores() if r.get("status") == "scored"]
    wanted = {r["story_id"]: {k: v for k, v in r.items() if k != "status"} for r in rows}
    found: dict[str, Any] = {}
    if Path(run.items_path).is_file():
        with run.items() as store:
            for s in store.iter_items(kind="score", status="done"):
                if wanted.get(s.item_id) != s.score:
                    continue
                seen = found.get(s.item_id)
                if seen is None or s.updated_at >= seen.updated_at:
                    found[s.item_id] = s
    out = []
    for r in rows:
        s = found.get(r["story_id"])
        request = None if s is None else own_clips(run.path, r["story_id"], s.request)
        out.append(StoryItem(r["story_id"], r, request, None if s is None else s.response))
    return out


def own_clips(run_path: str | Path, story_id: str,
              request: Mapping[str, Any]) -> Mapping[str, Any]:
    """``request`` with each clip path replaced by the run's own copy when it has one.

    Example:
        >>> import tempfile
        >>> run = Path(tempfile.mkdtemp())
        >>> (run / "rollouts" / "s1" / "none").mkdir(parents=True)
        >>> _ = (run / "rollouts" / "s1" / "none" / "seg_001.mp4").write_bytes(b"x")
        >>> req = {"clips": {"none": ["/old/run/rollouts/s1/none/seg_001.mp4",
        ...                          "/old/run/rollouts/s1/none/seg_002.mp4", None]}}
        >>> got = own_clips(run, "s1", req)["clips"]["none"]
        >>> got[0] == str(run / "rollouts" / "s1" / "none" / "seg_001.mp4"), got[1:]
        (True, ['/old/run/rollouts/s1/none/seg_002.mp4', None])
    """
    clips = request.get("clips")
    if not isinstance(clips, Mapping):
        return request
    base = Path(run_path) / "rollouts" / story_id

    def pick(condition: str, stored: str | None) -> str | None:
        if stored is None:
            return None
        own = base / condition / Path(stored).name
        return str(own) if own.is_file() else stored

    return {**request, "clips": {cond: [pick(cond, p) for p in paths]
                                 for cond, paths in clips.items()}}
