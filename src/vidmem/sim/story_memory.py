"""What the sim generator knows when it writes a Track-B segment: its rollout and references.

**Rollout.** Segment requests of one story rollout are identified by a *story key* and
a 1-indexed *segment index*: from ``request.extras`` (``story_id``, ``segment_id``
``"seg_007"`` or ``segment_index`` 7) when given, else from the request id, which must
end with ``seg_NNN`` (``0001_sim_s0/seg_007``, ``0001_sim_s0_seg_007``...; the story
key is what comes before). Every segment clip the sim writes carries, in its world
spec's ``info`` (:mod:`vidmem.sim.media`):

``story`` / ``segment_index``
    the key and index;
``script``
    ``name -> {"kind", "asset" | "place", "state", "count", "last_segment"}``: what
    the prompts of the rollout so far established about every name (its appearance at
    introduction or last change, and the last segment it was asked to appear in);
``tracks``
    ``track id -> name`` of the entities drawn;
``location``
    ``{"name", "place"}``: the place drawn (``None`` for a plain background).

The generator's memory of the rollout is the ``script`` of the most recent earlier clip
of the same story in the output folder (:func:`previous_clip`): clips of one rollout
must share a folder, and different rollouts of a story must not. This metadata stands
in for what a model knows of the story it is generating; how much of it the generator
*uses* is the memory knob. Scorers never read it.

**References.** A reference image tells the generator what it shows (:func:`reference_view`):
a PNG written by the sim (:func:`write_reference_png`) carries the clip's spec moved to
the frame's time; a plain PNG whose ``source`` names a segment (``seg_003``) of the
rollout is looked up in that clip at ``source_time_seconds`` (seconds into the clip;
default its middle). Entities count as shown when at least half of the sprite is
visible.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vidmem.errors import UserInputError
from vidmem.io.video import read_frames
from vidmem.sim.media import read_png_spec, read_video_spec, write_sim_png
from vidmem.sim.render import Backdrop, render_view
from vidmem.sim.world import WorldSpec

__all__ = ["FRAME_KIND", "SEGMENT_KIND", "ReferenceView", "previous_clip", "reference_view",
           "segment_key", "write_reference_png"]

#: ``WorldSpec.kind`` of a Track-B segment clip and of a frame taken from one.
SEGMENT_KIND = "trackb_segment"
FRAME_KIND = "trackb_frame"
_SEG = re.compile(r"^(?P<story>.*?)[/_:.\-]*seg_(?P<n>\d+)$")
_MIN_VISIBLE = 0.5


def segment_key(request_id: str, extras: Mapping[str, Any] | None = None) -> tuple[str, int]:
    """``(story key, 1-indexed segment index)`` of a story-segment (Track-B) request.

    Raises:
        UserInputError: neither the extras nor the request id give a segment index.

    Example:
        >>> segment_key("0001_sim_s0/seg_007"), segment_key("x", {"story_id": "s", "segment_id": "seg_002"})
        (('0001_sim_s0', 7), ('s', 2))
    """
    ex = dict(extras or {})
    m = _SEG.match(str(request_id))
    story = ex.get("story_id") or (m.group("story") if m else None)
    index = ex.get("segment_index")
    if index is None and isinstance(ex.get("segment_id"), str):
        sm = re.fullmatch(r"seg_(\d+)", ex["segment_id"])
        index = int(sm.group(1)) if sm else None
    if index is None and m:
        index = int(m.group("n"))
    if story is None or not isinstance(index, int) or isinstance(index, bool) or index < 1:
        raise UserInputError(
            f"story-segment request {request_id!r}: cannot tell the story and 1-indexed segment",
            hint="end the request id with seg_NNN (e.g. 0001_sim_s0/seg_007) or pass "
            "extras={'story_id': ..., 'segment_id': 'seg_007'}")
    return str(story), index


@functools.lru_cache(maxsize=4096)
def _spec_cached(path: str, mtime_ns: int, size: int) -> WorldSpec | None:
    try:
        return read_video_spec(path)
    except Exception:  # not a readable sim clip: it is simply not part of the rollout
        return None


def _clip_spec(path: Path) -> WorldSpec | None:
    st = path.stat()
    return _spec_cached(str(path), st.st_mtime_ns, st.st_size)


def rollout_clips(folder: Path, story: str, before: int) -> dict[int, tuple[Path, WorldSpec]]:
    """Sim segment clips of ``story`` in ``folder`` with an index below ``before``."""
    found: dict[int, tuple[Path, WorldSpec]] = {}
    if not folder.is_dir():
        return found
    for p in sorted(folder.glob("*.mp4")):
        spec = _clip_spec(p)
        if spec is None or spec.kind != SEGMENT_KIND or spec.info.get("story") != story:
            continue
        k = int(spec.info.get("segment_index", 0))
        if 0 < k < before and k not in found:
            found[k] = (p, spec)
    return found


def previous_clip(clips: Mapping[int, tuple[Path, WorldSpec]]) -> WorldSpec | None:
    """The spec of the most recent earlier clip, or ``None`` for a fresh rollout."""
    return clips[max(clips)][1] if clips else None


@dataclass
class ReferenceView:
    """What a set of reference images shows.

    Attributes:
        entities: name -> ``(asset, state, count)`` as drawn, in reference order.
        locations: location name -> place id.
        unreadable: references whose content the generator could not tell.
    """

    entities: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    locations: dict[str, str] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)

    def add(self, spec: WorldSpec, t: float) -> None:
        """Add what ``spec`` shows at time ``t``."""
        names = spec.info.get("tracks", {})
        _, ents = render_view(Backdrop.for_background(spec.background), spec.pose_at(t), t,
                              spec.entities, spec.width, spec.height, colour=False)
        counts: dict[str, list[tuple[str, str]]] = {}
        for e in ents:
            if e["visible_fraction"] >= _MIN_VISIBLE and e["id"] in names:
                counts.setdefault(names[e["id"]], []).append((e["asset"], e["state"]))
        for name, drawn in counts.items():
            self.entities.setdefault(name, (drawn[0][0], drawn[0][1], len(drawn)))
        loc = spec.info.get("location") or {}
        if loc.get("name") and loc.get("place"):
            self.locations.setdefault(str(loc["name"]), str(loc["place"]))


def reference_view(references: Sequence[Any],
                   clips: Mapping[int, tuple[Path, WorldSpec]]) -> ReferenceView:
    """Read what the references show (rules in the module docstring)."""
    view = ReferenceView()
    for ref in references:
        path = str(getattr(ref, "path", ref))
        spec = None
        if path.lower().endswith(".png") and os.path.isfile(path):
            spec = read_png_spec(path)
        if spec is not None and spec.kind in (FRAME_KIND, SEGMENT_KIND):
            view.add(spec, spec.t0)
            continue
        m = re.search(r"seg_(\d+)", str(getattr(ref, "source", "") or ""))
        if m and int(m.group(1)) in clips:
            clip = clips[int(m.group(1))][1]
            t = getattr(ref, "source_time_seconds", None)
            if t is None or not 0.0 <= float(t) < clip.duration_seconds:
                t = clip.duration_seconds / 2.0
            view.add(clip, clip.t0 + float(t))
            continue
        view.unreadable.append(path)
    return view


def write_reference_png(clip: str | os.PathLike[str], frame_index: int,
                        out_png: str | os.PathLike[str]) -> Path:
    """Save one frame of a sim segment clip as a reference PNG that says what it shows.

    Args:
        clip: an MP4 written by the sim generator for a Track-B request.
        frame_index: 0-based frame of the clip.
        out_png: the PNG to write (its folder must exist).

    Returns:
        The PNG path.

    Raises:
        UserInputError: the clip carries no Track-B sim spec, or a bad frame index.
    """
    spec = read_video_spec(clip)
    if spec is None or spec.kind != SEGMENT_KIND:
        raise UserInputError(f"{clip}: not a sim Track-B segment clip",
                             hint="pass a clip the sim generator wrote for a story-segment "
                             "request (no context video, no start image)")
    if not 0 <= int(frame_index) < spec.n_frames:
        raise UserInputError(f"{clip}: frame {frame_index} is outside 0..{spec.n_frames - 1}",
                             hint="pass a frame index of the clip")
    frame = read_frames(clip, [int(frame_index)])[0]
    single = spec.with_(t0=spec.time_of(int(frame_index)), n_frames=1, kind=FRAME_KIND)
    write_sim_png(out_png, frame, single)
    return Path(out_png)
