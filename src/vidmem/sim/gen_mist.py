"""The sim generator's hidden-state container shots: setup, gap and reveal.

A request is a container shot when ``extras["shot"]`` is ``setup``, ``gap`` or
``reveal`` (other extras: ``case_id``, ``arm``, ``try``). The generator sees only the
prompt, the start image and these extras -- never a card's target or history:

* **setup** (no start image): the scene is read from the prompt in the card grammar
  (:func:`vidmem.sim.mist_grammar.parse_setup`): actor, containers, objects, and the
  operations, played out on a table (timelines in :mod:`vidmem.sim.mist_plan`). A
  background place is drawn from the request's stream.
* **gap** and **reveal** continue the world of their start image (the last frame of
  the previous shot). That world -- the scene, where the objects really are, when the
  contents were last visible, the world clock -- travels in the sim's own metadata:
  the PNG text chunk of a start image written by the sim (each shot writes its last
  frame as ``X.mp4.last.png`` with it), else it is found by pixels: a
  ``*.mp4.last.png`` or a sim shot ``*.mp4`` of the same ``case_id`` whose last frame
  equals the start image (PSNR >= 35 dB), searched in the start image's folder and the
  two above it (two levels down from each). It stands in for a model's memory of its
  scene; scorers never read it.
* gap: every lid stays closed; with ``leaky:P`` one container (one with contents when
  there is one) comes open mid-shot with probability ``P`` (a leak of the hidden state).
* reveal: the execution rule and the memory rule of :mod:`vidmem.sim.mist_reveal`
  (baseline sentence 0.29 / 0.26, explicit move 0.88 / 0.80 with one / two containers;
  contents from memory with ``knob.fidelity(gap)``, stated contents copied).

Randomness comes from a stream seeded by ``(seed, request id, shot, try, SHA-256 of the
prompt and of the start image bytes)``: the same request gives the same bytes, another
``try`` another draw. Shots are 5 s (the request's ``duration_seconds`` otherwise) at
320x180 and 8 fps unless the request (or the start world) says otherwise.

Files for ``out_path = X.mp4``: ``X.mp4`` (the world in its ``comment`` tag),
``X.mp4.last.png`` (its last decoded frame, the world in a text chunk) and
``X.mp4.truth.json``: ``{"request_id", "kind", "shot", "case_id", "arm", "try",
"memory", "prompt", "world_source", "scene": {actor, containers, objects, contents},
"move" (reveal: the drawn move, :func:`~vidmem.sim.mist_reveal.draw_move`), "recall"
(reveal: :func:`~vidmem.sim.mist_reveal.recall_contents`, or null), "failure_mode"
(reveal), "leak" (gap: ``{"container", "contents"}`` or null), "frames": [{"frame",
"t", "actor_box", "flying", "containers": {id: {"state", "inside_visible",
"occluded", "contents"}}}]}`` -- for tests and the demo only.

Every rule left open by the protocol is in :data:`PROTOCOL`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from vidmem.errors import UserInputError, VidmemError
from vidmem.io.video import read_frames
from vidmem.sim.assets import PLACES
from vidmem.sim.media import (
    read_png,
    read_png_spec,
    read_video_spec,
    write_sim_png,
    write_sim_video,
)
from vidmem.sim.memory import MemoryKnob, request_rng
from vidmem.sim.mist_grammar import parse_reveal, parse_setup
from vidmem.sim.mist_plan import gap_script, render_script, reveal_script, setup_script
from vidmem.sim.mist_render import layout, stage_background
from vidmem.sim.mist_reveal import HAZARDS, draw_move, failure_mode, recall_contents
from vidmem.sim.mist_sprites import CANON_HEIGHT, container_key
from vidmem.sim.world import Background, CameraKey, Pose, WorldSpec

if TYPE_CHECKING:  # annotations only: the sim never imports the generators layer
    from vidmem.generators.requests import GenerationRequest

__all__ = ["DEFAULT_SIZE", "PROTOCOL", "SHOTS", "SHOT_KIND", "generate_shot", "is_shot"]

SHOTS = ("setup", "gap", "reveal")
#: ``WorldSpec.kind`` of a container shot; its ``info`` holds the scene under SCENE_KEY
SHOT_KIND = "hidden_state_shot"
SCENE_KEY = "hidden_state_scene"
#: default (width, height, fps) and shot length in seconds
DEFAULT_SIZE = (320, 180, 8.0)
SHOT_SECONDS = 5.0
MIN_MATCH_PSNR_DB = 35.0
_SEARCH_UP = 3

PROTOCOL: dict[str, dict[str, str]] = {
    "reveal_execution": {
        "rule": "four move parts fail independently: bind (another container opens; 0.10, "
                "0.03 with a clause naming it), open (nothing opens; 0.40 / 0.04), hold "
                "(closes again; 0.35 / 0.04), view (actor in front of the inside; 0.25 / "
                "0.04); the first that fires is shown. Baseline sentence 0.29 (one "
                "container) / 0.26 (two); explicit open-and-hold 0.88 / 0.80",
        "reason": "like the paper's baseline generator, the move is often skipped unless "
                  "the instruction names it; naming the failed part fixes that part",
        "source": "seed 001 (baseline rarely executes the reveal); the numbers are decided "
                  "here (sim)",
    },
    "contents_memory": {
        "rule": "an executed opening shows the true contents with probability "
                "knob.fidelity(seconds since they were last visible), else a forgotten "
                "version (stale: before the last move; swapped; miscount); contents the "
                "prompt states are copied",
        "reason": "separates a missing action from a wrong memory, the two things the "
                  "gates score apart",
        "source": "decided here (sim); memory knob grammar of vidmem.sim.memory",
    },
    "leak": {
        "rule": "with leaky:P the gap shot opens one container (one with contents first) "
                "from 1.2 to 3.6 s of 5 with probability P",
        "reason": "gives the leak gate something to find",
        "source": "decided here (sim)",
    },
    "world_carry": {
        "rule": "gap and reveal shots continue the world in their start image's sim "
                "metadata, else the sim shot of the same case whose last frame equals it "
                "(PSNR >= 35 dB)",
        "reason": "a caller may write the last frame with any PNG writer; the sim still "
                  "finds the world it drew",
        "source": "decided here (sim)",
    },
    "timing": {
        "rule": "every shot is static from 0.84 of its length; reveals open at 0.24",
        "reason": "the six reveal readings (0.90-0.995) see one settled state",
        "source": "PROTOCOLS.md section 5 positions; timelines decided here",
    },
}


def is_shot(extras: Any) -> bool:
    """Whether a request's extras ask for a container shot."""
    return hasattr(extras, "get") and extras.get("shot") in SHOTS


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _format(req: GenerationRequest, scene: dict[str, Any] | None, fps: float | None,
            duration: float | None) -> tuple[int, int, float, float]:
    w, h = req.width, req.height
    if not (isinstance(w, int) and isinstance(h, int) and w >= 16 and h >= 16
            and not (w % 2 or h % 2)):
        w, h = (scene["width"], scene["height"]) if scene else DEFAULT_SIZE[:2]
    rate = fps or (float(req.fps) if req.fps and req.fps > 0 else None) or (
        float(scene["fps"]) if scene else DEFAULT_SIZE[2])
    seconds = duration or (float(req.duration_seconds) if req.duration_seconds
                           and req.duration_seconds > 0 else SHOT_SECONDS)
    return int(w), int(h), float(rate), float(seconds)


def _new_scene(req: GenerationRequest, rng: np.random.Generator, width: int,
               height: int) -> dict[str, Any]:
    setup = parse_setup(req.prompt)
    if len(setup.containers) > 3:
        raise UserInputError(f"sim container shot: setup prompt {req.prompt!r} names "
                             f"{len(setup.containers)} containers; the sim draws at most 3",
                             hint="name one to three containers")
    xs, home = layout(len(setup.containers), width * CANON_HEIGHT / height)
    containers = [{**c, "key": container_key(c), "x": x} for c, x in zip(setup.containers, xs,
                                                                          strict=True)]
    return {"version": 1, "case_id": req.extras.get("case_id"),
            "actor": {"noun": setup.actor[0], "asset": setup.actor[1]},
            "containers": containers, "objects": setup.objects,
            "operations": setup.operations, "shown_only": setup.shown_only,
            "place": sorted(PLACES)[int(rng.integers(len(PLACES)))], "actor_home": home,
            "contents": {c["id"]: [] for c in containers}, "before_move": {},
            "seen_at": 0.0, "clock": 0.0}


def _after_setup(scene: dict[str, Any], seen_at: float) -> dict[str, Any]:
    assets = {o["id"]: o["asset"] for o in scene["objects"]}
    contents: dict[str, list[dict[str, Any]]] = {c["id"]: [] for c in scene["containers"]}
    before: dict[str, list[dict[str, Any]]] = {}
    for op in scene["operations"]:
        item = {"asset": assets[op["object"]], "count": int(op["count"])}
        if op["op"] == "move":
            before[op["from"]] = [dict(x) for x in contents[op["from"]]]
            before[op["to"]] = [dict(x) for x in contents[op["to"]]]
            contents[op["from"]] = [x for x in contents[op["from"]] if x["asset"] != item["asset"]]
        contents[op["to"]] = [x for x in contents[op["to"]] if x["asset"] != item["asset"]] + [
            {"asset": item["asset"], "count": sum(x["count"] for x in contents[op["to"]]
                                                  if x["asset"] == item["asset"]) + item["count"]}]
    return {**scene, "contents": contents, "before_move": before, "seen_at": seen_at}


def _search_dirs(start: Path) -> list[Path]:
    dirs, here = [], start.parent.resolve()
    for _ in range(_SEARCH_UP):
        dirs.append(here)
        here = here.parent
    return dirs


def _candidates(start: Path, pattern: str) -> list[Path]:
    seen: dict[Path, None] = {}
    for d in _search_dirs(start):
        for depth in ("", "*/", "*/*/"):
            for p in sorted(d.glob(depth + pattern)):
                seen.setdefault(p.resolve(), None)
            if len(seen) > 2000:
                return list(seen)
    return list(seen)


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return 99.0 if mse == 0 else 10.0 * np.log10(255.0**2 / mse)


def _find_world(start: Path, case_id: Any) -> dict[str, Any] | None:
    """The scene of the sim shot whose last frame is the start image (module doc)."""
    image = read_png(start)
    for png in _candidates(start, "*.mp4.last.png"):
        try:
            spec = read_png_spec(png)
        except VidmemError:
            continue
        if spec is None or spec.kind != SHOT_KIND or SCENE_KEY not in spec.info:
            continue
        scene = spec.info[SCENE_KEY]
        if case_id is not None and scene.get("case_id") not in (None, case_id):
            continue
        if np.array_equal(read_png(png), image):
            return dict(scene)
    best: tuple[float, dict[str, Any] | None] = (MIN_MATCH_PSNR_DB, None)
    for clip in _candidates(start, "*.mp4"):
        try:
            spec = read_video_spec(clip)
            if spec is None or spec.kind != SHOT_KIND or SCENE_KEY not in spec.info:
                continue
            scene = spec.info[SCENE_KEY]
            if case_id is not None and scene.get("case_id") not in (None, case_id):
                continue
            last = read_frames(clip, [spec.n_frames - 1])[0]
        except VidmemError:
            continue
        if last.shape == image.shape and (score := _psnr(last, image)) >= best[0]:
            best = (score, dict(scene))
    return best[1]


def _start_scene(req: GenerationRequest) -> tuple[dict[str, Any], str]:
    shot = req.extras.get("shot")
    if not req.start_image:
        raise UserInputError(f"sim container shot {req.request_id}: a {shot} shot needs a "
                             "start image (the previous shot's last frame)",
                             hint="pass start_image=the last frame of the setup (gap) clip")
    start = Path(req.start_image)
    spec = read_png_spec(start)
    if spec is not None and spec.kind == SHOT_KIND and SCENE_KEY in spec.info:
        return dict(spec.info[SCENE_KEY]), "start image metadata"
    scene = _find_world(start, req.extras.get("case_id"))
    if scene is None:
        raise UserInputError(
            f"sim container shot {req.request_id}: start image {start} carries no sim world "
            "and matches the last frame of no sim shot near it",
            hint="pass the last frame of the previous sim shot (its X.mp4.last.png, or the "
            "decoded last frame written losslessly next to the clips)")
    return scene, "matched sim shot"


def _write(out: Path, frames_iter: Any, scene: dict[str, Any], width: int, height: int,
           fps: float, n: int, seed: int, info: dict[str, Any]) -> Path:
    spec = WorldSpec(seed=seed, width=width, height=height, fps=fps, n_frames=n,
                     background=Background("plain", rgb=(128, 128, 128), sectors=2),
                     camera=(CameraKey(0.0, Pose(90.0)),), kind=SHOT_KIND,
                     info={**info, SCENE_KEY: scene})
    written = write_sim_video(out, frames_iter, spec)
    last = read_frames(out, [written - 1])[0]
    png = out.with_name(out.name + ".last.png")
    write_sim_png(png, last, spec.with_(n_frames=1))
    return png


def generate_shot(req: GenerationRequest, out: Path, *, knob: MemoryKnob, seed: int,
                  fps: float | None = None, duration: float | None = None) -> dict[str, Any]:
    """Write one container shot, its last frame and its truth (module docstring).

    Raises:
        UserInputError: an unknown shot, a setup prompt outside the grammar, or a gap /
            reveal start image whose world cannot be found.
    """
    extras = dict(req.extras)
    shot = extras.get("shot")
    if shot not in SHOTS:
        raise UserInputError(f"sim container shot {req.request_id}: extras['shot'] is "
                             f"{shot!r}", hint=f"use one of {', '.join(SHOTS)}")
    start_bytes = Path(req.start_image).read_bytes() if req.start_image and shot != "setup" else b""
    rng = request_rng(seed, req.request_id, f"hidden_state/{shot}/{extras.get('try', 0)}/"
                      f"{_sha(req.prompt.encode())}/{_sha(start_bytes)}")
    if shot == "setup":
        width, height, rate, seconds = _format(req, None, fps, duration)
        scene, source = _new_scene(req, rng, width, height), "setup prompt"
    else:
        scene, source = _start_scene(req)
        width, height, rate, seconds = _format(req, scene, fps, duration)
    n = max(2, round(seconds * rate))
    T, clock0 = seconds / 5.0, float(scene.get("clock", 0.0))
    truth: dict[str, Any] = {"move": None, "recall": None, "failure_mode": None, "leak": None}
    if shot == "setup":
        script = setup_script(scene, seconds)
        after = _after_setup(scene, clock0 + 3.3 * T)
    elif shot == "gap":
        leak = None
        if knob.leak_probability > 0 and float(rng.random()) < knob.leak_probability:
            full = [c["id"] for c in scene["containers"] if scene["contents"].get(c["id"])]
            pool = full or [c["id"] for c in scene["containers"]]
            leak = pool[int(rng.integers(len(pool)))]
            truth["leak"] = {"container": leak, "contents": scene["contents"].get(leak, [])}
        script = gap_script(scene, seconds, leak)
        after = {**scene, "seen_at": clock0 + 3.6 * T} if leak else dict(scene)
    else:
        reveal = parse_reveal(req.prompt, scene["containers"])
        ids = [c["id"] for c in scene["containers"]]
        move = draw_move(reveal.container, reveal.action, reveal.clauses, ids, rng)
        recall = None
        if move["opened"] is not None:
            stated = reveal.stated if move["opened"] == reveal.container else None
            recall = recall_contents(scene, move["opened"], knob,
                                     clock0 + 1.2 * T - float(scene["seen_at"]), rng, stated)
        truth.update(move=move, recall=recall, failure_mode=failure_mode(move, recall))
        script = reveal_script(scene, seconds, move, recall["shown"] if recall else None)
        after = dict(scene)
    after = {**after, "clock": clock0 + seconds, "width": width, "height": height, "fps": rate}
    k = height / CANON_HEIGHT
    frames_truth: list[dict[str, Any]] = []

    def frames():
        for frame, tr in render_script(scene, script, n, rate, stage_background(
                scene["place"], width, height), k):
            frames_truth.append(tr)
            yield frame

    info = {"request_id": req.request_id, "shot": shot, "case_id": extras.get("case_id"),
            "memory": knob.text}
    png = _write(out, frames(), after, width, height, rate, n, seed, info)
    truth_path = out.with_name(out.name + ".truth.json")
    doc = {"request_id": req.request_id, "kind": SHOT_KIND, "shot": shot,
           "case_id": extras.get("case_id"), "arm": extras.get("arm"), "try": extras.get("try"),
           "memory": knob.text, "prompt": req.prompt, "world_source": source,
           "hazards": HAZARDS, "scene": {key: after[key] for key in (
               "actor", "containers", "objects", "operations", "contents", "place")},
           **truth, "frames": frames_truth}
    truth_path.write_text(json.dumps(doc, separators=(",", ":"), sort_keys=True),
                          encoding="utf-8")
    return {"n_frames": n, "fps": rate, "width": width, "height": height, "memory": knob.text,
            "shot": shot, "truth_path": str(truth_path), "last_frame_path": str(png)}
