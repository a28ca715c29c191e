"""The ``sim`` generator: plays a video model with a memory you can dial.

The adapter between the Generator protocol and the sim world engine (:mod:`vidmem.sim`):
it implements :class:`vidmem.generators.protocol.Generator` and receives exactly what
a real model receives: a context video (CMBench) or a start image (memory loop), or
neither (a Track-B story segment), optional reference images, and a prompt. It reads the world it is continuing from the
sim's own metadata in those files (:mod:`vidmem.sim.media`) -- this metadata stands in
for a model's knowledge of its world and is never used by scorers -- and renders the
continuation with a chosen memory:

* ``perfect``, ``none``, ``decay:TAU`` (fidelity ``exp(-gap / TAU)``) and ``leaky:P``
  (memory knob grammar in :mod:`vidmem.sim.memory`);
* what to do is read from the request's shape, never from its benchmark name: a
  ``context_video`` is continued (CMBench semantics, :mod:`vidmem.sim.gen_cmbench`); a
  ``start_image`` starts a camera rollout (memory-loop semantics,
  :mod:`vidmem.sim.gen_loop`); a request with neither is a story segment (VMem-Bench
  Track-B: prompt, references and the rollout's earlier clips, identified by
  ``extras`` ``story_id`` + ``segment_id``/``segment_index`` or a request id ending in
  ``seg_NNN``; :mod:`vidmem.sim.gen_story`); a request whose ``extras["shot"]`` is
  ``setup``, ``gap`` or ``reveal`` is a hidden-state container shot
  (:mod:`vidmem.sim.gen_mist`), whatever else it carries;
* ``ignore_references=P`` (default 0, story segments only): a name the generator would
  copy from a reference image is drawn as an impostor instead with probability ``P``
  (truth source ``reference_ignored``: a synthesis failure, :mod:`vidmem.sim.gen_story`);
* the prompt grammar in :mod:`vidmem.sim.prompts`: ``The <label> comes back into
  view.``, ``The camera pans back to the <place>.``, the six loop prompts; anything
  else is ignored (the continuation then just continues the last view).

Files written for a request with ``out_path = X.mp4``: the video ``X.mp4`` (with its
world spec in the ``comment`` tag), ``X.mp4.truth.json`` (what the sim really drew:
per-frame entity boxes and poses for CMBench, per-frame revisit matches and fidelities
for loops, what each named entity was drawn as and why for Track-B segments; for
validation only) and, for loops, ``X.mp4.poses.json`` (``{"c2w":
[N x 4 x 4], "poses": [N x [yaw, pitch, zoom, tx, ty]], "fps", "n_frames",
"loop_id", "convention"}``, the camera-to-world matrices actually used, a real model
would not give one).

Randomness (impostors, hallucinations, leaks) comes from a stream seeded by
``(seed, request_id)`` and a label (``request.benchmark`` for a continuation,
``loop`` and ``trackb`` for the other two): the same request gives the same bytes.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from vidmem.errors import UserInputError
from vidmem.generators.protocol import GenerationRequest, GenerationResult, generate_or_error
from vidmem.io.video import probe, read_frames
from vidmem.sim.gen_cmbench import analyse_context, plan_continuation
from vidmem.sim.gen_loop import LOOP_FORGETTING_VERSION, plan_rollout, rollout_frames
from vidmem.sim.gen_mist import generate_shot, is_shot
from vidmem.sim.media import read_png_spec, read_video_spec, write_sim_video
from vidmem.sim.memory import parse_memory, request_rng
from vidmem.sim.prompts import parse_prompt
from vidmem.sim.render import Backdrop, iter_render, render_frames, render_view
from vidmem.sim.story_memory import segment_key
from vidmem.sim.world import SIM_VERSION, WorldSpec

__all__ = ["SimGenerator"]

#: default continuation length for a context video (CMBench), seconds.
CONTEXT_SECONDS = 8.0
#: default rollout length from a start image (memory loop), seconds.
LOOP_SECONDS = 60.0
#: a context whose last frame differs from its spec's render by more is rejected.
MIN_MATCH_PSNR_DB = 25.0
POSE_CONVENTION = ("camera-to-world 4x4, OpenCV axes (x right, y down, z forward), "
                   "R = R_y(yaw) R_x(pitch); see vidmem.sim.world")


def _positive(value: Any, name: str) -> float | None:
    if value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = float("nan")
    if isinstance(value, bool) or not math.isfinite(v) or v <= 0:
        raise UserInputError(f"sim generator {name}: expected a positive number, found {value!r}",
                             hint=f"pass e.g. {name}=8 or leave it out")
    return v


def _probability(value: Any, name: str) -> float:
    try:
        p = float(value)
    except (TypeError, ValueError):
        p = float("nan")
    if isinstance(value, bool) or not 0.0 <= p <= 1.0:  # NaN fails the range too
        raise UserInputError(f"sim generator {name}: expected a probability in [0, 1], "
                             f"found {value!r}", hint=f"pass e.g. {name}=0.5, or 0 for none")
    return p


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return 99.0 if mse == 0 else 10.0 * math.log10(255.0**2 / mse)


class SimGenerator:
    """A deterministic stand-in for a video model, with a tunable memory.

    Args:
        memory: ``perfect``, ``none``, ``decay:TAU_SECONDS`` or ``leaky:P``.
        seed: generator seed (with the request id, seeds every random choice).
        duration_seconds: when given, overrides the length every request asks for
            (defaults otherwise: the request's, else 8 s after a context video, 60 s
            from a start image).
        fps: when given, overrides the frame rate (default: the request's, else the
            context's / start image's).
        ignore_references: probability in ``[0, 1]`` that a story segment ignores a
            reference that shows a name (drawn as an impostor); ``0`` (the default)
            changes nothing.

    Raises:
        UserInputError: an unknown memory setting or a bad number.
    """

    name = "sim"

    def __init__(self, memory: str = "perfect", seed: int | str = 0,
                 duration_seconds: float | str | None = None,
                 fps: float | str | None = None,
                 ignore_references: float | str = 0.0) -> None:
        self.memory = parse_memory(memory)
        try:
            self.seed = int(str(seed).strip())
        except ValueError:
            raise UserInputError(f"sim generator seed: expected an integer, found {seed!r}",
                                 hint="pass e.g. seed=0") from None
        self.duration_seconds = _positive(duration_seconds, "duration_seconds")
        self.fps = _positive(fps, "fps")
        self.ignore_references = _probability(ignore_references, "ignore_references")

    def info(self) -> dict[str, Any]:
        """Plain data for the run log, including the memory knob."""
        # loop_forgetting: version of the memory-loop forgetting model (gen_loop), so a
        # run store never serves loop videos made by an older one.
        info = {"name": self.name, "version": SIM_VERSION,
                "loop_forgetting": LOOP_FORGETTING_VERSION, **self.memory.to_dict(),
                "seed": self.seed, "duration_seconds": self.duration_seconds, "fps": self.fps}
        if self.ignore_references > 0:  # only then: the default keeps every cache key
            info["ignore_references"] = self.ignore_references
        return info

    # -- protocol --------------------------------------------------------------------

    def generate(self, request: GenerationRequest) -> GenerationResult:
        """Write ``request.out_path``; failures come back as ``status="error"``."""
        return generate_or_error("sim generator", request, self._generate)

    # -- internals -------------------------------------------------------------------

    def _size(self, req: GenerationRequest, spec: WorldSpec) -> tuple[int, int]:
        w, h = req.width, req.height
        if isinstance(w, int) and isinstance(h, int) and w >= 16 and h >= 16 and not (w % 2 or h % 2):
            return w, h
        return spec.width, spec.height

    def _generate(self, req: GenerationRequest) -> dict[str, Any]:
        out = Path(req.out_path)
        out.parent.mkdir(parents=True, exist_ok=True)
        if is_shot(req.extras):
            return generate_shot(req, out, knob=self.memory, seed=self.seed, fps=self.fps,
                                 duration=self.duration_seconds)
        if req.context_video:
            spec = read_video_spec(req.context_video)
            if spec is None:
                raise UserInputError(
                    f"context video {req.context_video} carries no sim world spec",
                    hint="the sim generator only continues videos written by `vidmem sim "
                    "build`; use a real generator (e.g. `command`) for other data")
            return self._continue(req, spec, out)
        if req.start_image:
            spec = read_png_spec(req.start_image)
            if spec is None:
                raise UserInputError(
                    f"start image {req.start_image} carries no sim world spec",
                    hint="the sim generator only starts from images written by `vidmem sim "
                    "build`")
            return self._rollout(req, spec, out)
        return self._segment(req, out)

    def _reference_entities(self, req: GenerationRequest) -> list[tuple[str, str]]:
        seen: list[tuple[str, str]] = []
        for ref in req.references:
            if not str(ref.path).lower().endswith(".png"):
                continue
            spec = read_png_spec(ref.path)
            if spec is None:
                continue
            _, ents = render_view(Backdrop.for_background(spec.background),
                                  spec.pose_at(spec.t0), spec.t0, spec.entities, spec.width,
                                  spec.height, colour=False)
            seen += [(e["asset"], e["state"]) for e in ents if (e["asset"], e["state"]) not in seen]
        return seen

    def _check_context(self, path: str, spec: WorldSpec) -> None:
        info = probe(path)
        if info.n_frames != spec.n_frames:
            raise UserInputError(
                f"context video {path} has {info.n_frames} frames but its sim world spec "
                f"says {spec.n_frames}", hint="the video was cut or re-encoded; rebuild it")
        last = read_frames(path, [spec.n_frames - 1])[0]
        truth = render_frames(spec, [spec.n_frames - 1])[0][0]
        if last.shape != truth.shape or _psnr(last, truth) < MIN_MATCH_PSNR_DB:
            raise UserInputError(
                f"context video {path}: its pixels do not match its sim world spec",
                hint="the video was edited after `vidmem sim build`; rebuild it")

    def _continue(self, req: GenerationRequest, spec: WorldSpec, out: Path) -> dict[str, Any]:
        assert req.context_video is not None
        self._check_context(req.context_video, spec)
        mem = analyse_context(spec)
        actions, ignored = parse_prompt(req.prompt)
        fps = self.fps or _positive(req.fps, "request fps") or spec.fps
        duration = (self.duration_seconds or _positive(req.duration_seconds, "request duration")
                    or CONTEXT_SECONDS)
        width, height = self._size(req, spec)
        rng = request_rng(self.seed, req.request_id, req.benchmark)
        cont, backdrop, report = plan_continuation(
            spec, mem, actions, self.memory, rng, n_frames=max(1, round(duration * fps)),
            fps=fps, width=width, height=height, extra_seen=self._reference_entities(req),
            request_id=req.request_id)
        truth: list[dict[str, Any]] = []

        def frames():
            for frame, tr in iter_render(cont, backdrop=backdrop):
                truth.append(tr)
                yield frame

        n = write_sim_video(out, frames(), cont)
        truth_path = out.with_name(out.name + ".truth.json")
        doc = {"request_id": req.request_id, "kind": "cmbench_continuation",
               "memory": self.memory.text, "context_video": req.context_video, **report,
               "frames": truth}
        truth_path.write_text(json.dumps(doc, separators=(",", ":"), sort_keys=True),
                              encoding="utf-8")
        return {"n_frames": n, "fps": fps, "width": width, "height": height,
                "memory": self.memory.text, "actions": [[a.kind, a.name] for a in actions],
                "ignored_sentences": ignored, "truth_path": str(truth_path),
                "leaked": [x["asset"] for x in report["leaked"]],
                "unknown_names": report["unknown_names"]}

    def _segment(self, req: GenerationRequest, out: Path) -> dict[str, Any]:
        """A request with no context video and no start image: one story segment."""
        try:
            segment_key(req.request_id, req.extras)
        except UserInputError:
            raise UserInputError(
                "the request has no context_video, no start_image and names no story segment",
                hint="give a context video to continue, a start image to start from, or a "
                "story segment: a request id ending in seg_NNN (e.g. 0001_sim_s0/seg_007) or "
                "extras={'story_id': ..., 'segment_id': 'seg_007'}") from None
        from vidmem.sim.gen_story import generate_segment

        return generate_segment(req, out, knob=self.memory, seed=self.seed, fps=self.fps,
                                duration=self.duration_seconds,
                                ignore_references=self.ignore_references)

    def _rollout(self, req: GenerationRequest, spec: WorldSpec, out: Path) -> dict[str, Any]:
        actions, ignored = parse_prompt(req.prompt)
        loops = [a.name for a in actions if a.kind == "loop"]
        loop_id = loops[0] if loops else None
        fps = self.fps or _positive(req.fps, "request fps") or spec.fps
        duration = (self.duration_seconds or _positive(req.duration_seconds, "request duration")
                    or LOOP_SECONDS)
        n = max(2, round(duration * fps))
        width, height = self._size(req, spec)
        start = spec.pose_at(spec.t0)
        rng = request_rng(self.seed, req.request_id, "loop")
        poses, labels, info = plan_rollout(start, loop_id, self.memory, rng, n_frames=n,
                                           fps=fps, pano_width=spec.background.pano_width)
        record = spec.with_(n_frames=n, fps=fps, width=width, height=height, kind="loop_rollout",
                            info={"request_id": req.request_id, "loop_id": loop_id,
                                  "memory": self.memory.text,
                                  "note": "frames mix true and hallucinated views; see truth"})
        fractions: list[float] = []
        written = write_sim_video(out, rollout_frames(spec, poses, labels, rng, width=width,
                                                      height=height, fps=fps,
                                                      true_fraction=fractions), record)
        for row, frac in zip(info, fractions, strict=True):
            row["true_fraction"] = round(frac, 6)
        poses_path = out.with_name(out.name + ".poses.json")
        poses_doc = {"request_id": req.request_id, "loop_id": loop_id, "fps": fps,
                     "n_frames": n, "convention": POSE_CONVENTION,
                     "poses": [p.to_list() for p in poses],
                     "c2w": [[[round(float(v), 9) for v in row] for row in p.c2w()] for p in poses]}
        poses_path.write_text(json.dumps(poses_doc, separators=(",", ":")), encoding="utf-8")
        truth_path = out.with_name(out.name + ".truth.json")
        truth_doc = {"request_id": req.request_id, "kind": "loop_rollout", "loop_id": loop_id,
                     "memory": self.memory.text, "frames": info}
        truth_path.write_text(json.dumps(truth_doc, separators=(",", ":"), sort_keys=True),
                              encoding="utf-8")
        return {"n_frames": written, "fps": fps, "width": width, "height": height,
                "memory": self.memory.text, "loop_id": loop_id,
                "actions": [[a.kind, a.name] for a in actions], "ignored_sentences": ignored,
                "poses_path": str(poses_path), "truth_path": str(truth_path)}
