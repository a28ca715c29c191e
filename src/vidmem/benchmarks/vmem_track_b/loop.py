"""Track-B's closed loop: one (story, condition) rollout, generated segment by segment.

For each segment n of a story, in order, :func:`run_rollout`

1. asks the condition for up to K = 3 references from THIS rollout's own earlier clips:
   a retrieval policy (:mod:`vidmem.memory.policies`) composes with the segment's prompt
   over a :class:`~vidmem.memory.store.MemoryStore` that holds the prompt text and the
   frames decoded from the rollout's own MP4s (1 fps and 2 fps grids, each clip decoded
   once, each frame embedded once per encoder); only references of clips that ended
   before segment n starts are kept (the causal rule of :mod:`vidmem.memory.guard`,
   enforced here again whatever the policy returns). ``none`` retrieves nothing;
   ``last_seen`` is the privileged diagnostic (:func:`last_seen_sources`);
2. writes each reference frame as a PNG next to the clip (``seg_NNN.ref<k>.png``) and
   asks the generator for the segment with only the prompt text, those references
   (``GenerationRequest.references``, ``source`` = the clip's segment id,
   ``source_time_seconds`` = seconds into that clip) and the format fields -- never gold;
3. records the clip's SHA-256 in the rollout's progress file ``progress.json``
   (written atomically after every segment), then lets the store observe the clip.

Rollout time: segment n spans ``[sum of earlier durations, + its duration)`` seconds, so a
frame's time in the store is unique within the rollout; a clip shorter than its segment
simply has fewer frames. A killed rollout resumes at the first segment without a
finished clip (its file exists with the SHA-256 the progress file recorded): earlier
clips are observed again (not generated), later progress entries are dropped. A
progress file made by another generator or retrieval setting starts the rollout over.

Helpers: :mod:`.loop_config` (the retrieval encoders), :mod:`.loop_store` (the clips as
the store's frame source), :mod:`.loop_progress` (the progress file).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from vidmem.benchmarks.contract import Rollout
from vidmem.benchmarks.vmem_track_b.loop_config import (
    NEEDS_FRAME_EMBEDDER,
    RETRIEVAL_PRESETS,
    RetrievalConfig,
    load_encoders,
)
from vidmem.benchmarks.vmem_track_b.loop_progress import (
    PROGRESS,
    finished,
    read_progress,
    write_progress,
)
from vidmem.benchmarks.vmem_track_b.loop_store import ClipFrames
from vidmem.benchmarks.vmem_track_b.stories import Story
from vidmem.errors import UserInputError
from vidmem.generators.requests import GenerationRequest, ReferenceImage
from vidmem.io.hashing import file_sha256
from vidmem.io.safe_paths import check_id, inside
from vidmem.io.video import probe, read_frames_at
from vidmem.memory.frames import Segment as MemorySegment
from vidmem.memory.guard import prepare
from vidmem.memory.policy import FilmContext, Reference, load_policy
from vidmem.memory.store import MemoryStore

__all__ = ["BUDGET", "LOOP_VERSION", "NEEDS_FRAME_EMBEDDER", "PROGRESS", "PROTOCOL",
           "RETRIEVAL_PRESETS", "ClipFrames", "RetrievalConfig", "last_seen_sources",
           "make_rollouts", "read_progress", "run_rollout", "segment_name"]

#: references per segment (the card's K)
BUDGET = 3
#: bumped whenever a rollout's clips would change for the same generator and stories
LOOP_VERSION = "1"
#: conditions that are not retrieval policies
NO_MEMORY, LAST_SEEN = "none", "last_seen"
#: cast ops at which an entity has appeared before
RETURN_OPS = frozenset({"recall", "recall_after_gap", "transform", "persist"})

PROTOCOL: dict[str, Any] = {
    "rollout": "one rollout per (story, condition): an empty store, its own clips in "
               "<run>/rollouts/<story>/<condition>/seg_NNN.mp4, segments strictly in order",
    "budget": BUDGET,
    "store": "the rollout's own segments: prompt text + frames decoded from its own MP4s on "
             "the 1 fps and 2 fps grids of rollout time (segment n spans the summed earlier "
             "durations + its own); each clip decoded once, each frame embedded once per encoder",
    "compose": "the policy composes with segment n's prompt (sut_prompts) before segment n "
               "is generated; the store then observes the written clip",
    "eligibility": "a reference is kept only if it is a Reference with a finite time inside an "
                   "earlier clip that ended at or before segment n's start; then the first K "
                   "in the policy's order",
    "generator_sees": "GenerationRequest with request_id <story>/seg_NNN, the prompt text, the "
                      "reference PNGs (source = seg_MMM of this rollout, source_time_seconds = "
                      "seconds into that clip) and format fields (duration); never gold",
    "none": "no references",
    "last_seen": "PRIVILEGED diagnostic (reads the gold cast, not deployable): the character/"
                 "prop entities required in segment n that appeared before (op recall, "
                 "recall_after_gap, transform, persist), by gap longest first (ties: cast "
                 "order), the first 3; for each the middle frame (index n_frames // 2) of this "
                 "rollout's clip of the latest earlier segment whose cast lists it; references "
                 "of one clip merged; no gold text or pixels reach the generator",
    "resume": "per (story, condition, segment): a clip is finished when its file exists with "
              "the SHA-256 in the rollout's progress.json (written atomically after each "
              "segment); a rerun starts at the first unfinished segment",
}


def segment_name(n: int) -> str:
    """``seg_NNN`` of the 1-indexed segment ``n``."""
    return f"seg_{int(n):03d}"


# --------------------------------------------------------------------------- rollouts


def make_rollouts(stories: Sequence[Story], conditions: Sequence[str], out_dir: Path,
                  retrieval: RetrievalConfig, *, gold_root: Path, benchmark: str,
                  version: str) -> list[Rollout]:
    """One :class:`Rollout` per (story, condition), writing under ``out_dir/<story>/<condition>``.

    The rollout's request is a record of the work, never sent to a generator: its
    ``out_path`` is the progress file, its ``extras`` name the story, the condition and
    the retrieval setting; ``inputs`` hold the gold files' hashes.
    """
    retrieval.check(conditions)
    out = []
    for story in stories:
        for cond in conditions:
            # story and condition name the folder: it must stay under out_dir
            folder = inside(out_dir, Path(out_dir) / check_id(story.story_id, "Track-B story id")
                            / check_id(cond, "Track-B condition"))
            request = GenerationRequest(
                request_id=f"{story.story_id}/{cond}", benchmark=benchmark,
                prompt=f"closed-loop rollout of story {story.story_id} ({len(story.segments)} "
                       f"segments) under condition {cond}",
                out_path=str(folder / PROGRESS),
                extras={"story_id": story.story_id, "number": story.number, "condition": cond,
                        "gold_root": str(gold_root), "n_segments": len(story.segments),
                        "retrieval": retrieval.to_dict(), "loop_version": LOOP_VERSION,
                        "benchmark_version": version})
            out.append(Rollout(request, {f"gold_sha256_{k}": v for k, v in story.sha256.items()}))
    return out


# --------------------------------------------------------------------------- last_seen


def last_seen_sources(story: Story, n: int, budget: int = BUDGET) -> list[tuple[int, list[str]]]:
    """Where the privileged ``last_seen`` condition takes segment ``n``'s references from.

    Args:
        story: the gold story.
        n: the 1-indexed segment being generated.
        budget: how many entities at most.

    Returns:
        ``[(segment m < n, [eids])]``: for the character/prop entities required in
        segment ``n`` that appeared before, ordered by gap (longest first; ties keep the
        cast order), the first ``budget``, each mapped to the latest earlier segment whose
        cast lists it; entities of one segment are merged into one entry, in that order.
    """
    segs = story.segments
    wanted = []
    for pos, c in enumerate(segs[n - 1].cast):
        ent = story.entities.get(c.eid)
        if ent is None or ent.kind not in ("character", "prop") or c.op not in RETURN_OPS:
            continue
        last = next((m for m in range(n - 1, 0, -1)
                     if any(x.eid == c.eid for x in segs[m - 1].cast)), None)
        if last is None:
            continue
        gap = c.gap if c.gap is not None else n - last - 1
        wanted.append((-gap, pos, c.eid, last))
    merged: dict[int, list[str]] = {}
    for _, _, eid, last in sorted(wanted)[:budget]:
        merged.setdefault(last, []).append(eid)
    return list(merged.items())


# --------------------------------------------------------------------------- the loop


def _eligible(ref: Any, start: float, ends: Mapping[int, float]) -> bool:
    if not isinstance(ref, Reference):
        return False
    t = ref.source_seconds
    if isinstance(t, bool) or not isinstance(t, (int, float, np.floating)) or not math.isfinite(float(t)):
        return False
    seg = ref.segment_index
    if seg is None:
        seg = next((k for k, e in ends.items() if float(t) < e), None)
    return seg in ends and ends[seg] <= start + 1e-9 and float(t) < start


def _write_png(frame: np.ndarray, png: Path) -> None:
    tmp = png.with_name(f".{png.name}.tmp.png")
    Image.fromarray(frame).save(tmp)
    os.replace(tmp, png)


class _Clock:
    """Wall and CPU seconds of the phases of one segment (the loop's ``trace``)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.seconds[f"{name}_seconds"] = time.perf_counter() - wall
            self.seconds[f"{name}_cpu_seconds"] = time.process_time() - cpu


def run_rollout(rollout: Rollout, generator: Any, ctx: Mapping[str, Any] | None = None,
                *, story: Story | None = None,
                trace: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Generate one (story, condition) rollout, resuming at its first unfinished segment.

    Args:
        rollout: from :func:`make_rollouts`.
        generator: a :class:`~vidmem.generators.protocol.Generator`.
        ctx: plain data of the run: ``generator_key`` (the generator's identity; a
            progress file of another one starts over).
        story: the loaded story (default: loaded from the rollout's gold root).
        trace: when given, one dict per segment is appended to it (for benchmarks/):
            ``segment``, ``generated``, the wall and CPU seconds (``<phase>_seconds``,
            ``<phase>_cpu_seconds``) of the phases ``retrieve`` (the condition's
            references, PNGs written), ``pick`` (its part spent choosing: compose and the
            eligibility rule), ``generate`` (these three only for a generated segment)
            and ``observe`` (store and policy take the clip: decoding and embedding),
            and the running ``decodes`` and ``embedded`` (items per ``backend/kind``) of
            the rollout's frame source.

    Returns:
        ``{"story_id", "condition", "segments", "generated", "resumed_from", "clips":
        {seg_NNN: sha256}, "references": {seg_NNN: [seg_MMM ...]}}``.

    Raises:
        RuntimeError: the generator failed on a segment (the finished ones are kept).
        UserInputError: the gold changed, or a condition cannot be built.
    """
    from vidmem.benchmarks.vmem_track_b.stories import load_stories

    ex = dict(rollout.request.extras)
    sid, cond = str(ex["story_id"]), str(ex["condition"])
    if story is None:
        found = [s for s in load_stories(ex["gold_root"], int(ex["number"])) if s.story_id == sid]
        if not found:
            raise UserInputError(f"{ex['gold_root']}: story {sid} not found",
                                 hint="rerun with the gold the run was started with")
        story = found[0]
    want = {k.removeprefix("gold_sha256_"): v for k, v in rollout.inputs.items()}
    if want and dict(story.sha256) != want:
        raise UserInputError(f"story {sid}: its gold files changed after the run listed them",
                             hint="rerun with --overwrite (or a new --out)")
    retrieval = RetrievalConfig.from_dict(ex["retrieval"])
    folder = Path(rollout.request.out_path).parent
    if (folder.parent.name, folder.name) != (check_id(sid, "Track-B story id"),
                                             check_id(cond, "Track-B condition")):
        raise UserInputError(f"story {sid}: its rollout folder {folder} is not <story>/"
                             f"{cond}", hint="rerun with --overwrite")  # an edited stored request
    inside(folder.parent.parent, folder)  # no link out of the rollouts folder
    folder.mkdir(parents=True, exist_ok=True)
    identity = {"story_id": sid, "condition": cond, "loop_version": LOOP_VERSION,
                "retrieval": retrieval.to_dict(),
                "generator": (ctx or {}).get("generator_key")}
    progress = read_progress(folder)
    if progress is None or progress.get("identity") != identity:
        progress = {"identity": identity, "segments": {}}
    done: dict[str, Any] = dict(progress.get("segments") or {})

    policy = None
    source = ClipFrames(f"{sid}/{cond}")
    if cond not in (NO_MEMORY, LAST_SEEN):
        policy = load_policy(cond, offered=load_encoders(retrieval))
        prepare(source, [policy])
        policy.reset(FilmContext(f"{sid}/{cond}"))
    store = MemoryStore(source)

    start = 0.0
    ends: dict[int, float] = {}
    kept: dict[str, Any] = {}
    resumed_from = None
    generated = 0
    for seg in story.segments:
        n, name = seg.segment_id, segment_name(seg.segment_id)
        clip = inside(folder, folder / f"{name}.mp4")
        mseg = MemorySegment(n - 1, start, start + float(seg.duration_seconds), text=seg.prompt)
        clock = _Clock()
        if resumed_from is None and finished(folder, done.get(name)):
            kept[name] = done[name]
        else:
            if resumed_from is None:
                resumed_from = n
            with clock.phase("retrieve"):
                refs = _references(cond, story, n, policy, store, mseg, ends, folder, kept,
                                   clock)
            request = GenerationRequest(
                request_id=f"{sid}/{name}", benchmark=rollout.request.benchmark,
                prompt=seg.prompt, out_path=str(clip), references=tuple(r for r, _ in refs),
                duration_seconds=float(seg.duration_seconds))
            with clock.phase("generate"):
                result = generator.generate(request)
            if getattr(result, "status", None) != "ok" or not clip.is_file():
                why = getattr(result, "error", None) or f"{clip} was not written"
                raise RuntimeError(f"rollout {sid}/{cond}, segment {name}: {why}")
            kept[name] = {"clip": clip.name, "sha256": file_sha256(clip),
                          "references": [{"png": Path(r.path).name, "source": r.source,
                                          "source_time_seconds": r.source_time_seconds,
                                          "rollout_seconds": t} for r, t in refs]}
            generated += 1
            write_progress(folder, {"identity": identity, "segments": kept})
        with clock.phase("observe"):
            source.add(mseg.index, clip, start)
            store.observe(mseg)
            if policy is not None:
                policy.observe(mseg, store)
        if trace is not None:
            trace.append({"segment": n, "generated": "generate_seconds" in clock.seconds,
                          **clock.seconds, "decodes": source.decodes,
                          "embedded": {f"{b}/{k}": v for (b, k), v in
                                       sorted(source.embeddings.items.items())}})
        ends[mseg.index] = mseg.end_seconds
        start = mseg.end_seconds
    if generated == 0 and kept != done:
        write_progress(folder, {"identity": identity, "segments": kept})
    return {"story_id": sid, "condition": cond, "segments": len(story.segments),
            "generated": generated, "resumed_from": resumed_from,
            "clips": {k: v["sha256"] for k, v in kept.items()},
            "references": {k: [r["source"] for r in v.get("references", [])]
                           for k, v in kept.items()}}


def _references(cond: str, story: Story, n: int, policy: Any, store: MemoryStore,
                mseg: MemorySegment, ends: Mapping[int, float], folder: Path,
                kept: Mapping[str, Any], clock: _Clock) -> list[tuple[ReferenceImage, float]]:
    """Segment ``n``'s reference images (written as PNGs) with their rollout times."""
    with clock.phase("pick"):
        picks = _picks(cond, story, n, policy, store, mseg, ends, folder, kept)
    name = segment_name(n)
    pngs = [inside(folder, folder / f"{name}.ref{k}.png") for k in range(1, len(picks) + 1)]
    by_clip: dict[int, list[int]] = {}
    for k, (seg, _) in enumerate(picks):
        by_clip.setdefault(seg, []).append(k)
    for seg, ks in by_clip.items():  # one decode per source clip, however many frames it gives
        src = folder / kept[segment_name(seg + 1)]["clip"]
        for k, frame in zip(ks, read_frames_at(src, [picks[k][1] for k in ks]), strict=True):
            _write_png(frame, pngs[k])
    return [(ReferenceImage(str(png), round(into, 6), segment_name(seg + 1)),
             round(_start_of(seg, ends) + into, 6))
            for png, (seg, into) in zip(pngs, picks, strict=True)]


def _picks(cond: str, story: Story, n: int, policy: Any, store: MemoryStore,
           mseg: MemorySegment, ends: Mapping[int, float], folder: Path,
           kept: Mapping[str, Any]) -> list[tuple[int, float]]:
    """The condition's choice for segment ``n``: ``(0-based segment, seconds into its clip)``."""
    picks: list[tuple[int, float]] = []
    if cond == LAST_SEEN:
        for m, _ in last_seen_sources(story, n):
            clip = folder / kept[segment_name(m)]["clip"]
            info = probe(clip)
            mid = (info.n_frames // 2) / info.fps if info.fps else info.duration_seconds / 2
            picks.append((m - 1, float(mid)))
    elif policy is not None:
        store.next_segment_index = mseg.index
        returned = policy.compose(mseg.text, float(mseg.start_seconds), BUDGET, store)
        valid = [r for r in list(returned or []) if _eligible(r, mseg.start_seconds, ends)]
        for r in valid[:BUDGET]:
            seg = r.segment_index if r.segment_index is not None else next(
                k for k, e in ends.items() if float(r.source_seconds) < e)
            picks.append((int(seg), float(r.source_seconds) - _start_of(seg, ends)))
    return picks


def _start_of(seg: int, ends: Mapping[int, float]) -> float:
    return ends.get(seg - 1, 0.0) if seg > 0 else 0.0
