"""World specs: everything needed to re-render a sim scene.

A :class:`WorldSpec` is plain data (JSON round-trip via :meth:`WorldSpec.to_json` /
:meth:`WorldSpec.from_json`): the seed, the background (a cylindrical panorama of
places, or a plain colour), the output format, camera keyframes and entity tracks. It
holds no per-frame truth: boxes are *computed* by the renderer. The spec travels
inside the sim's own media (MP4 ``comment`` tag, PNG text chunk; see
:mod:`vidmem.sim.media`) so that the sim generator knows which world it continues.

Camera poses and the world/camera convention are in :mod:`vidmem.sim.camera`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from vidmem.errors import UserInputError
from vidmem.sim.assets import ENTITIES, PANO_HEIGHT, PLACES, SECTOR_WIDTH, check_state
from vidmem.sim.camera import Pose, smoothstep, spec_number

__all__ = [
    "SIM_VERSION",
    "VIEW_HEIGHT_PX",
    "Background",
    "CameraKey",
    "EntityTrack",
    "Pose",
    "WorldSpec",
    "smoothstep",
]

#: version of the world-spec format and of the renderer; stored in every spec.
SIM_VERSION = "1"
#: height of the view window at zoom 1, in panorama pixels.
VIEW_HEIGHT_PX = 225.0
#: default output format.
DEFAULT_WIDTH, DEFAULT_HEIGHT, DEFAULT_FPS = 320, 180, 8.0
_ROUND = 5


@dataclass(frozen=True)
class CameraKey:
    """The camera is at ``pose`` at time ``t`` (seconds); smoothstep in between."""

    t: float
    pose: Pose


@dataclass(frozen=True)
class EntityTrack:
    """One entity's presence in the world.

    Attributes:
        id: instance id, unique in the spec (usually the asset id).
        asset: key of :data:`vidmem.sim.assets.ENTITIES`.
        t_in, t_out: present while ``t_in <= t < t_out`` (seconds).
        keys: ``(t, u, v)`` positions of the sprite centre in panorama pixels (``u``
            not wrapped), linearly interpolated and held before/after the first/last.
        states: ``(t, state)`` changes; the state at ``t`` is the last one at or before
            ``t`` (the first one before that).
        scale: size relative to the asset's nominal size.
        z: drawing order, larger in front.
        mix: ``(other_asset, other_state, weight)``: draw a cross-fade towards another
            sprite (how the sim generator renders an imperfect memory), or ``None``.
    """

    id: str
    asset: str
    t_in: float
    t_out: float
    keys: tuple[tuple[float, float, float], ...]
    states: tuple[tuple[float, str], ...] = ((0.0, "base"),)
    scale: float = 1.0
    z: int = 0
    mix: tuple[str, str, float] | None = None

    def position(self, t: float) -> tuple[float, float]:
        """Sprite centre ``(u, v)`` in panorama pixels at time ``t``."""
        ts = [k[0] for k in self.keys]
        if t <= ts[0]:
            return self.keys[0][1], self.keys[0][2]
        if t >= ts[-1]:
            return self.keys[-1][1], self.keys[-1][2]
        j = int(np.searchsorted(ts, t, side="right")) - 1
        (ta, ua, va), (tb, ub, vb) = self.keys[j], self.keys[j + 1]
        s = (t - ta) / (tb - ta) if tb > ta else 1.0
        return ua + (ub - ua) * s, va + (vb - va) * s

    def state(self, t: float) -> str:
        """State at time ``t``."""
        current = self.states[0][1]
        for ts, st in self.states:
            if ts <= t + 1e-9:
                current = st
        return current

    def present(self, t: float) -> bool:
        return self.t_in - 1e-9 <= t < self.t_out - 1e-9

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id, "asset": self.asset,
            "t_in": round(self.t_in, _ROUND), "t_out": round(self.t_out, _ROUND),
            "keys": [[round(v, _ROUND) for v in k] for k in self.keys],
            "states": [[round(t, _ROUND), s] for t, s in self.states],
        }
        if self.scale != 1.0:
            d["scale"] = round(self.scale, _ROUND)
        if self.z:
            d["z"] = self.z
        if self.mix is not None:
            d["mix"] = [self.mix[0], self.mix[1], round(self.mix[2], _ROUND)]
        return d

    @classmethod
    def from_dict(cls, d: Any, where: str) -> EntityTrack:
        if not isinstance(d, Mapping):
            raise UserInputError(f"{where}: expected an object, found {type(d).__name__}")
        for key in ("id", "asset", "t_in", "t_out", "keys", "states"):
            if key not in d:
                raise UserInputError(f"{where}: missing field {key!r}",
                                     hint="rebuild the data with `vidmem sim build`")
        keys = tuple(
            (spec_number(k[0], f"{where}.keys[{i}]"), spec_number(k[1], f"{where}.keys[{i}]"),
             spec_number(k[2], f"{where}.keys[{i}]"))
            for i, k in enumerate(d["keys"])
        )
        if not keys:
            raise UserInputError(f"{where}.keys: expected at least one (t, u, v) key")
        states = tuple((spec_number(s[0], f"{where}.states[{i}]"), str(s[1]))
                       for i, s in enumerate(d["states"]))
        if not states:
            raise UserInputError(f"{where}.states: expected at least one (t, state) entry")
        for _, st in states:
            check_state(str(d["asset"]), st, where)
        mix = d.get("mix")
        if mix is not None:
            check_state(str(mix[0]), str(mix[1]), f"{where}.mix")
            mix = (str(mix[0]), str(mix[1]), spec_number(mix[2], f"{where}.mix[2]", low=0.0))
        return cls(str(d["id"]), str(d["asset"]), spec_number(d["t_in"], f"{where}.t_in"),
                   spec_number(d["t_out"], f"{where}.t_out"), keys, states,
                   spec_number(d.get("scale", 1.0), f"{where}.scale", low=1e-3),
                   int(d.get("z", 0)), mix)


@dataclass(frozen=True)
class Background:
    """What the camera sees behind the entities.

    Attributes:
        kind: ``"panorama"`` (places joined in yaw order) or ``"plain"`` (one colour).
        places: place ids for a panorama, in yaw order.
        rgb: colour of a plain background.
        sectors: width of a plain background in place sectors (sets ``W_pano``).
    """

    kind: str = "panorama"
    places: tuple[str, ...] = ()
    rgb: tuple[int, int, int] = (128, 128, 128)
    sectors: int = 6

    @property
    def pano_width(self) -> int:
        """``W_pano``: panorama width in pixels (360 degrees of yaw)."""
        n = len(self.places) if self.kind == "panorama" else self.sectors
        return SECTOR_WIDTH * n

    @property
    def pano_height(self) -> int:
        return PANO_HEIGHT

    def place_at_yaw(self, yaw: float) -> str | None:
        """Place id whose sector contains the view centre at ``yaw`` (panorama only)."""
        if self.kind != "panorama":
            return None
        k = int(math.floor((yaw % 360.0) / 360.0 * len(self.places))) % len(self.places)
        return self.places[k]

    def place_yaw(self, place_id: str) -> float:
        """Yaw (degrees) of the centre of a place's sector."""
        k = self.places.index(place_id)
        return (k + 0.5) * 360.0 / len(self.places)

    def to_dict(self) -> dict[str, Any]:
        if self.kind == "panorama":
            return {"kind": "panorama", "places": list(self.places)}
        return {"kind": "plain", "rgb": list(self.rgb), "sectors": self.sectors}

    @classmethod
    def from_dict(cls, d: Any, where: str) -> Background:
        kind = d.get("kind") if isinstance(d, Mapping) else None
        if kind == "panorama":
            places = tuple(str(p) for p in d.get("places", ()))
            bad = [p for p in places if p not in PLACES]
            if len(places) < 2 or bad:
                raise UserInputError(
                    f"{where}.places: expected >= 2 known place ids, found {list(places)}",
                    hint=f"known places: {', '.join(sorted(PLACES))}")
            return cls("panorama", places)
        if kind == "plain":
            rgb = tuple(int(c) for c in d.get("rgb", (128, 128, 128)))
            return cls("plain", (), (rgb[0], rgb[1], rgb[2]), int(d.get("sectors", 6)))
        raise UserInputError(f"{where}: expected kind 'panorama' or 'plain', found {d!r}")


@dataclass(frozen=True)
class WorldSpec:
    """A re-renderable sim scene (no per-frame truth inside).

    Attributes:
        seed: the seed the scene was built from.
        width, height: output frame size in pixels.
        fps: frames per second.
        n_frames: number of frames; frame ``i`` is at time ``t0 + i / fps``.
        background: see :class:`Background`.
        camera: camera keyframes sorted by time (at least one).
        entities: entity tracks.
        t0: time of frame 0 in world seconds.
        kind: what the scene is (``"cmbench_context"``, ``"loop_start"``, ``"test"``...).
        info: extra plain data (clip boundaries, case ids); never used for rendering.
        version: :data:`SIM_VERSION` of the writer.
    """

    seed: int
    width: int
    height: int
    fps: float
    n_frames: int
    background: Background
    camera: tuple[CameraKey, ...]
    entities: tuple[EntityTrack, ...] = ()
    t0: float = 0.0
    kind: str = "scene"
    info: Mapping[str, Any] = field(default_factory=dict)
    version: str = SIM_VERSION

    # -- time and camera -------------------------------------------------------------

    def time_of(self, i: int) -> float:
        """World time (seconds) of frame ``i``."""
        return self.t0 + i / self.fps

    @property
    def duration_seconds(self) -> float:
        return self.n_frames / self.fps

    def pose_at(self, t: float) -> Pose:
        """Camera pose at world time ``t`` (smoothstep between keyframes)."""
        keys = self.camera
        if t <= keys[0].t:
            return keys[0].pose
        if t >= keys[-1].t:
            return keys[-1].pose
        ts = [k.t for k in keys]
        j = int(np.searchsorted(ts, t, side="right")) - 1
        a, b = keys[j], keys[j + 1]
        s = (t - a.t) / (b.t - a.t) if b.t > a.t else 1.0
        return a.pose.lerp(b.pose, float(smoothstep(s)))

    def poses(self) -> list[Pose]:
        """The pose of every frame."""
        return [self.pose_at(self.time_of(i)) for i in range(self.n_frames)]

    def track(self, track_id: str) -> EntityTrack:
        for tr in self.entities:
            if tr.id == track_id:
                return tr
        raise KeyError(track_id)

    def with_(self, **changes: Any) -> WorldSpec:
        """A copy with some fields replaced."""
        return replace(self, **changes)

    # -- JSON ------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "sim_version": self.version, "kind": self.kind, "seed": self.seed,
            "width": self.width, "height": self.height, "fps": self.fps,
            "n_frames": self.n_frames, "t0": round(self.t0, _ROUND),
            "background": self.background.to_dict(),
            "camera": [[round(k.t, _ROUND), k.pose.to_list()] for k in self.camera],
            "entities": [e.to_dict() for e in self.entities],
            "info": dict(self.info),
        }

    def to_json(self) -> str:
        """Compact, key-sorted JSON (identical specs give identical text)."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"),
                          allow_nan=False)

    @classmethod
    def from_dict(cls, d: Any, where: str = "world spec") -> WorldSpec:
        """Validate and build a spec; errors name ``where`` and the bad field."""
        if not isinstance(d, Mapping):
            raise UserInputError(f"{where}: expected a JSON object, found {type(d).__name__}")
        version = str(d.get("sim_version", ""))
        if version != SIM_VERSION:
            raise UserInputError(
                f"{where}: sim_version {version!r} is not supported (this vidmem writes "
                f"{SIM_VERSION!r})",
                hint="rebuild the data with this version: `vidmem sim build ...`")
        for key in ("seed", "width", "height", "fps", "n_frames", "background", "camera"):
            if key not in d:
                raise UserInputError(f"{where}: missing field {key!r}",
                                     hint="rebuild the data with `vidmem sim build`")
        camera = tuple(
            CameraKey(spec_number(k[0], f"{where}.camera[{i}].t"),
                      Pose.from_list(k[1], f"{where}.camera[{i}].pose"))
            for i, k in enumerate(d["camera"])
        )
        if not camera or any(b.t < a.t for a, b in zip(camera, camera[1:], strict=False)):
            raise UserInputError(f"{where}.camera: expected >= 1 keyframes sorted by time",
                                 hint="rebuild the data with `vidmem sim build`")
        entities = tuple(EntityTrack.from_dict(e, f"{where}.entities[{i}]")
                         for i, e in enumerate(d.get("entities", ())))
        width, height = int(d["width"]), int(d["height"])
        if width < 16 or height < 16 or width % 2 or height % 2:
            raise UserInputError(f"{where}: frame size {width}x{height} must be even and >= 16")
        return cls(
            seed=int(d["seed"]), width=width, height=height,
            fps=spec_number(d["fps"], f"{where}.fps", low=1e-3), n_frames=int(d["n_frames"]),
            background=Background.from_dict(d["background"], f"{where}.background"),
            camera=camera, entities=entities, t0=spec_number(d.get("t0", 0.0), f"{where}.t0"),
            kind=str(d.get("kind", "scene")), info=dict(d.get("info") or {}), version=version,
        )

    @classmethod
    def from_json(cls, text: str, where: str = "world spec") -> WorldSpec:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UserInputError(f"{where}: not valid JSON ({exc.msg})",
                                 hint="the sim metadata was damaged; rebuild the data") from None
        return cls.from_dict(data, where)


def static_track(asset: str, u: float, v: float, *, state: str = "base", track_id: str | None = None,
                 t_in: float = -1e6, t_out: float = 1e6, z: int = 0) -> EntityTrack:
    """An entity standing still at ``(u, v)`` for the whole scene."""
    if asset not in ENTITIES:
        raise UserInputError(f"static_track: unknown asset {asset!r}",
                             hint=f"use one of {', '.join(sorted(ENTITIES))}")
    return EntityTrack(track_id or asset, asset, t_in, t_out, ((0.0, u, v),), ((0.0, state),), z=z)
