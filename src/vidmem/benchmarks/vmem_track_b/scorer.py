"""Score one Track-B story from brought rollouts, and aggregate stored verdicts.

Rollouts layout (bring your own)::

    <rollouts>/<story>/<condition>/<segment>.mp4

``<story>`` is the story's file stem (``0001_lighthouse_keeper``) or its four-digit id
(``0001``); ``<condition>`` one name of the configuration's conditions; ``<segment>``
``seg_NNN``, ``NNN`` or ``N``. With index base 1 (the release's spelling) the number is
the segment id; with index base 0 file ``k`` is segment ``k + 1``. A number outside the
story's range for the base, two files for one segment, an ``.mp4`` whose name is not a
segment number, or a missing clip is an error naming story, condition and file or
segment (:func:`story_clips`). Other files (the sim's ``.truth.json`` sidecars) are
ignored. With ``--allow-missing`` a missing clip (or a whole missing condition folder)
of a found story is scored as **all-absent** instead: no judge question, every roster
entry judged not present, the segment parsed, and counted per condition as
``missing_clips`` (so Recall falls and Avoid-OK rises, as for a clip that shows
nothing); the printed summary and the report say how many.

:meth:`TrackBScorer.score_story` builds one judge question per (condition, segment)
(:func:`vidmem.benchmarks.vmem_track_b.question.segment_request`, the segment's
``sut_prompts`` text as the plot hint), asks them all with ONE ``judge_many`` call,
reads each answer (:func:`~vidmem.benchmarks.vmem_track_b.answers.read_answer`) and
turns it into :class:`~vidmem.metrics.track_b.SegmentVerdict` s with the gold's roles
and stress-family fields (:func:`segment_verdict`). The verdicts are stored as plain
JSON (:func:`verdicts_to_json`), so :func:`aggregate_rows` (in
:mod:`~vidmem.benchmarks.vmem_track_b.aggregate`, re-exported here) recomputes every
number with no judge. A judge answer that is not ``ok`` makes its segment unparsable
(every entry ``abstain``, counted per condition); it never raises.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vidmem.benchmarks.vmem_track_b.aggregate import _family_counts as _family_counts
from vidmem.benchmarks.vmem_track_b.aggregate import aggregate_rows as aggregate_rows
from vidmem.benchmarks.vmem_track_b.aggregate import segment_fields
from vidmem.benchmarks.vmem_track_b.answers import SegmentJudgement, read_answer
from vidmem.benchmarks.vmem_track_b.config import ScorerConfig
from vidmem.benchmarks.vmem_track_b.roster import Roster
from vidmem.benchmarks.vmem_track_b.schema import REMOVAL_REASONS, segment_id
from vidmem.benchmarks.vmem_track_b.stories import Segment, Story
from vidmem.errors import UserInputError
from vidmem.metrics import track_b as tb
from vidmem.models.loading import load_backend

__all__ = ["TrackBScorer", "aggregate_rows", "all_absent", "clip_number", "segment_verdict", "story_clips",
           "story_folder", "verdicts_from_json", "verdicts_to_json"]

_CLIP = re.compile(r"^(?:seg_)?(\d+)$")
#: EntryVerdict fields stored only when they differ from their default
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(tb.EntryVerdict)
             if f.default is not dataclasses.MISSING}


# ----------------------------------------------------------------------------- layout


def clip_number(stem: str) -> int | None:
    """The number in a clip's file stem (``seg_007``, ``007`` or ``7``), else ``None``.

    Example:
        >>> clip_number("seg_007"), clip_number("12"), clip_number("clip7")
        (7, 12, None)
    """
    m = _CLIP.match(stem)
    return int(m.group(1)) if m else None


def story_folder(rollouts: Path, story: Story) -> Path | None:
    """``<rollouts>/<stem>/`` or ``<rollouts>/<NNNN>/``, whichever exists (stem first)."""
    for name in (story.story_id, f"{story.number:04d}"):
        if (rollouts / name).is_dir():
            return rollouts / name
    return None


def story_clips(folder: Path, story: Story, conditions: Sequence[str], index_base: int, *,
                allow_missing: bool = False) -> dict[str, list[Path | None]]:
    """Every condition's clips of one story, in segment order (rules in the module doc);
    with ``allow_missing`` a missing clip is ``None`` (a badly named, out-of-range or
    doubled file is still an error).

    Raises:
        UserInputError: a condition folder or a clip missing, a file number outside the
            range of ``index_base``, two files for one segment, or a badly named ``.mp4``.
    """
    n = len(story.segments)
    lo, hi = index_base, n - 1 + index_base
    other = 1 - index_base
    out: dict[str, list[Path | None]] = {}
    for cond in conditions:
        cdir = folder / cond
        where = f"Track-B rollouts of story {story.story_id}, condition {cond}"
        if not cdir.is_dir() and allow_missing:
            out[cond] = [None] * n
            continue
        if not cdir.is_dir():
            raise UserInputError(f"{where}: folder {cdir} not found",
                                 hint=f"write <rollouts>/<story>/{cond}/seg_NNN.mp4 for every "
                                 "segment, or leave the condition out of --conditions")
        found: dict[int, Path] = {}
        for path in sorted(cdir.glob("*.mp4")):
            k = clip_number(path.stem)
            if k is None:
                raise UserInputError(f"{where}: clip {path} is not named seg_NNN.mp4, NNN.mp4 or "
                                     "N.mp4", hint="rename it after its segment number")
            if not lo <= k <= hi:
                raise UserInputError(
                    f"{where}: clip {path.name} is number {k}, outside {lo}..{hi} for index "
                    f"base {index_base} (the story has {n} segments)",
                    hint=f"if the generator numbers segments from {other}, pass --index-base "
                    f"{other}" if other <= k <= n - 1 + other else
                    "the file does not belong to this story's segments")
            seg = k + 1 - index_base
            if seg in found:
                raise UserInputError(f"{where}: segment {segment_id(seg)} has two clips, "
                                     f"{found[seg].name} and {path.name}",
                                     hint="keep one file per segment")
            found[seg] = path
        missing = [s for s in range(1, n + 1) if s not in found]
        if missing and not allow_missing:
            first = missing[0]
            name = f"seg_{first - 1 + index_base:03d}.mp4"
            raise UserInputError(
                f"{where}: clip of segment {segment_id(first)} missing ({name} with index base "
                f"{index_base}); {len(missing)} of {n} segment clip(s) missing",
                hint="generate every segment of the rollout, or pass --allow-missing to "
                "score missing clips as all-absent")
        out[cond] = [found.get(s) for s in range(1, n + 1)]
    return out


# ----------------------------------------------------------------------------- verdicts


def segment_verdict(story: Story, segment: Segment, roster: Roster,
                    judgement: SegmentJudgement) -> tb.SegmentVerdict:
    """The judged segment as a :class:`~vidmem.metrics.track_b.SegmentVerdict`.

    Gold roles come from the roster (cast character/prop -> ``required``, cast location
    -> ``location``, ``forbidden``, ``false_friend_target``, ``decoy``), the family
    fields from the gold cast/forbidden entry; state and count are expected only where
    the roster line asked for them; the judge's instance choice (a gold id) becomes
    ``True`` (this entity), ``False`` (the other member of its active look-alike pair:
    the wrong instance) or ``None`` (a third entity, or no choice), as the reference
    tallies it.
    """
    cast = {c.eid: c for c in segment.cast}
    forbidden = {f.eid: f for f in segment.forbidden}
    twins = {m for la in segment.lookalike_active for m in la.present_members}
    mates: dict[str, set[str]] = {}  # present member -> the other member(s) of its pairs
    for la in segment.lookalike_active:
        for m in la.present_members:
            mates.setdefault(m, set()).update(x for x in la.pair if x != m)
    entries = []
    for label in roster.labels:
        line = roster.line(label)
        eid, role = roster.eid_of(label), roster.role_of(label)
        j = judgement.entities[eid]
        kind = story.entities[eid].kind if eid in story.entities else line.kind
        count = j.count if j.count is not None and j.count >= 0 else None
        match = True if j.instance_match == eid else \
            False if j.instance_match in mates.get(eid, ()) else None
        base = dict(story_id=story.story_id, segment_id=segment.segment_id, eid=eid, kind=kind,
                    role=role, present=j.present, judged_state=j.state, judged_count=count,
                    instance_match=match)
        c = cast.get(eid)
        if role in tb.CAST_ROLES and c is not None:
            base.update(
                gap=c.gap, op=c.op, anchor=bool(c.anchor and c.anchor.type == "temporal"),
                flashback=c.flashback,
                expected_state=c.state if line.state_cue else None,
                expected_count=c.count if line.count_cue else None,
                lookalike=eid in twins,
                confusable_with=c.confusable_with if c.confusable_with != eid else None)
        elif role == "forbidden":
            f = forbidden[eid]
            base.update(reason=f.reason,
                        reference_indirect=bool(f.reference_indirect and f.reason in REMOVAL_REASONS))
        entries.append(tb.EntryVerdict(**base))
    if judgement.flagged:
        return tb.SegmentVerdict.unparsable(story.story_id, segment.segment_id, entries)
    return tb.SegmentVerdict(story.story_id, segment.segment_id, True, entries)


def verdicts_to_json(segments: Sequence[tb.SegmentVerdict]) -> list[dict[str, Any]]:
    """Plain JSON of one condition's segments (an entry keeps its non-default fields)."""
    out = []
    for s in segments:
        entries = []
        for e in s.entries:
            d = {k: v for k, v in dataclasses.asdict(e).items()
                 if k not in ("story_id", "segment_id") and (k not in _DEFAULTS or v != _DEFAULTS[k])}
            entries.append(d)
        out.append({"segment_id": s.segment_id, "parsed": s.parsed, "entries": entries})
    return out


def verdicts_from_json(story_id: str, data: Sequence[Mapping[str, Any]]) -> list[tb.SegmentVerdict]:
    """The inverse of :func:`verdicts_to_json`; a malformed stored segment or entry is an
    error naming story and segment (:func:`~vidmem.metrics.track_b.stored_segment`)."""
    where = "stored Track-B verdicts"
    return [tb.stored_segment(story_id, *segment_fields(story_id, s, where)) for s in data]


def all_absent(roster: Roster) -> dict[str, Any]:
    """The answer a missing clip is scored with: every roster line not present.

    Example:
        >>> class R: labels = ("E1", "E2")
        >>> all_absent(R())["items"]
        [{'entity_id': 'E1', 'present': False}, {'entity_id': 'E2', 'present': False}]
    """
    return {"items": [{"entity_id": label, "present": False} for label in roster.labels]}


# ----------------------------------------------------------------------------- scoring


class TrackBScorer:
    """The loaded judge of one configuration, and the story scoring."""

    def __init__(self, config: ScorerConfig) -> None:
        self.config = config
        opts = {k: dict(v) for k, v in config.backend_options.items()}
        self.judge = load_backend(config.judge, opts.get(config.judge), role="judge")

    def score_story(self, request: Mapping[str, Any]) -> dict[str, Any]:
        from vidmem.benchmarks.vmem_track_b.question import segment_request
        from vidmem.benchmarks.vmem_track_b.roster import build_roster
        from vidmem.benchmarks.vmem_track_b.stories import load_stories

        (story,) = load_stories(request["gold_root"], int(request["number"]))
        if dict(story.sha256) != dict(request["gold_sha256"]):
            raise UserInputError(
                f"story {story.story_id}: its gold files changed after the run listed them",
                hint="rerun with --overwrite (or a new --out) to score the current gold")
        gold = json.loads(Path(story.files["gt"]).read_text(encoding="utf-8"))
        asks, keys, absent = [], [], []
        for cond in self.config.conditions:
            for k, (seg, clip) in enumerate(zip(story.segments, request["clips"][cond], strict=True)):
                if clip is None:  # --allow-missing: no question, the same seeded roster
                    absent.append((cond, seg, build_roster(gold, k, seed=self.config.seed)))
                    continue
                req, roster = segment_request(gold, k, clip, seed=self.config.seed, condition=cond,
                                              plot=seg.prompt)
                asks.append(req)
                keys.append((cond, seg, roster))
        results = self.judge.judge_many(asks) if asks else []
        per: dict[str, list[tb.SegmentVerdict]] = {c: [] for c in self.config.conditions}
        judge_counts: dict[str, Counter[str]] = {c: Counter() for c in self.config.conditions}
        answers: dict[str, list[dict[str, Any]]] = {c: [] for c in self.config.conditions}
        for (cond, seg, roster), res in zip(keys, results, strict=True):
            data = res.data if res.status == "ok" else None
            j = read_answer(data, roster)
            per[cond].append(segment_verdict(story, seg, roster, j))
            c = judge_counts[cond]
            c["segments"] += 1
            c[f"status_{res.status}"] += 1
            c["unparsable"] += j.flagged
            c["unknown_labels"] += j.n_unknown
            c["missing_labels"] += j.n_missing
            c["duplicate_labels"] += j.n_duplicate
            answers[cond].append({"segment_id": seg.segment_id, "status": res.status,
                                  "error": res.error, "data": res.data})
        for cond, seg, roster in absent:
            j = read_answer(all_absent(roster), roster)
            per[cond].append(segment_verdict(story, seg, roster, j))
            judge_counts[cond]["segments"] += 1
            judge_counts[cond]["missing_clips"] += 1
            answers[cond].append({"segment_id": seg.segment_id, "status": "missing_clip",
                                  "error": None, "data": None})
        for cond in per:  # keep segment order whatever was asked
            order = sorted(range(len(per[cond])), key=lambda i: per[cond][i].segment_id)
            per[cond] = [per[cond][i] for i in order]
            answers[cond] = [answers[cond][i] for i in order]
        conditions: dict[str, Any] = {}
        for cond, segs in per.items():
            counts = tb.story_counts(segs)[story.story_id]
            conditions[cond] = {
                "verdicts": verdicts_to_json(segs),
                "pooled": tb.pooled_rates(segs).to_dict(),
                "story_counts": counts.tolist(),
                "judge": dict(judge_counts[cond]),
            }
        score = {"story_id": story.story_id, "number": story.number,
                 "n_segments": len(story.segments), "conditions": conditions}
        return {"response": {**score, "answers": answers}, "score": score}
