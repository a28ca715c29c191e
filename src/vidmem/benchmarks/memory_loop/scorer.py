"""Memory-loop scoring of one video: revisit pairs -> revisit fidelity -> Memory Half-Life.

Follows ``PROTOCOLS.md`` section 2 (seed 002):

1. **Pairs.** With a per-frame camera-to-world pose track (the manifest's ``poses``
   file, else ``<video>.poses.json``), :func:`vidmem.metrics.revisit.revisit_pairs`
   with the protocol parameters (1 s, 0.15, 3x excursion, 24-pair cap). Without one,
   :func:`~vidmem.metrics.revisit.planned_pairs` on the loop's plan resampled to the
   video's real frame count (:func:`~vidmem.metrics.loop_paths.planned_c2w`),
   and the case is **diagnostic**: the pairs say where the camera should have come
   back, not where it did. Gaps are native frame-index differences over the stream's
   fps (:func:`vidmem.io.video.probe`).
2. **Revisit fidelity** of a pair: :func:`vidmem.metrics.fidelity.pair_fidelity` of the
   cosine of the two frames' image embeddings and their SSIM
   (:func:`~vidmem.metrics.fidelity.ssim_pair`: per RGB channel, averaged over the
   whole map, as the protocol's reference; it enters the fidelity clamped at 0, the
   row keeps the raw value); only the paired frames are decoded.
   Sample fidelity = mean over pairs. The return gate
   (:func:`~vidmem.metrics.revisit.return_gate`, measured poses only) is a diagnostic,
   never averaged in.
3. **Half-life**: :func:`vidmem.stats.halflife.fit_half_life` (``t_ref`` 60 s) on
   (gap, fidelity); status ``official`` or ``not_applicable`` with its reason.
4. **Camera compliance** (vidmem, beyond the card): the frame-to-frame optical flow of
   the video against the loop's planned camera path
   (:mod:`vidmem.metrics.camera_motion`); a near-static video is ``not_evaluable``
   with the reason. It never changes the fidelity or the half-life of the case; the
   aggregates show it as a coverage rate beside them.

Scorer presets: ``official`` (DINOv2, ``dinov2/base``) and ``offline`` (the
``classic/hsv-lbp`` colour/texture proxy, never the official protocol).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

import numpy as np

from vidmem.benchmarks.memory_loop import camera_flow
from vidmem.benchmarks.memory_loop.requests import read_pose_track
from vidmem.benchmarks.memory_loop.schema import MemoryLoopCase
from vidmem.errors import UserInputError
from vidmem.io.video import DecodeStats, VideoInfo, iter_frames, probe, read_frames
from vidmem.metrics import camera_motion, revisit
from vidmem.metrics.crop_recall import cosine_rows
from vidmem.metrics.fidelity import pair_fidelity, sample_fidelity, ssim_pair
from vidmem.metrics.loop_paths import planned_c2w
from vidmem.stats import halflife

__all__ = ["PRESETS", "MemoryLoopScorer", "ScorerConfig", "camera_compliance", "select_pairs"]

Preset = Literal["official", "offline"]
PRESETS: dict[str, str] = {"official": "dinov2/base", "offline": "classic/hsv-lbp"}


@dataclass(frozen=True)
class ScorerConfig:
    """Everything that changes a memory-loop score (recorded in run.json and item keys).

    Attributes:
        preset: ``official`` (DINOv2) or ``offline`` (classic proxy).
        embedder: image-embedder backend name.
        batch_size: frames per embedding batch.
        pose_radius: largest pose distance of a revisit pair (protocol 0.15).
        rotation_weight: weight of the rotation term of the pose distance (protocol 1).
        excursion_factor: the camera must go ``excursion_factor * pose_radius`` away
            between the two frames (protocol 3).
        min_gap_seconds: smallest gap of a pair, seconds (protocol 1).
        max_pairs: pairs kept per video, spread over gap lengths (protocol 24).
        t_ref_seconds: reference window of the half-life value (protocol 60).
        backend_options: per backend name, constructor options (weights, device...).
    """

    preset: Preset = "offline"
    embedder: str = PRESETS["offline"]
    batch_size: int = 16
    pose_radius: float = revisit.DEFAULT_MATCH_THRESHOLD
    rotation_weight: float = revisit.DEFAULT_ROTATION_WEIGHT
    excursion_factor: float = revisit.DEFAULT_EXCURSION_FACTOR
    min_gap_seconds: float = revisit.DEFAULT_MIN_GAP_SECONDS
    max_pairs: int = revisit.DEFAULT_MAX_PAIRS
    t_ref_seconds: float = halflife.DEFAULT_T_REF_SECONDS
    backend_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_preset(cls, preset: str, **overrides: Any) -> ScorerConfig:
        """The ``preset`` with any non-``None`` override applied.

        Raises:
            UserInputError: unknown preset or a setting out of range.
        """
        if preset not in PRESETS:
            raise UserInputError(f"unknown memory-loop scorer preset {preset!r}",
                                 hint=f"use one of {sorted(PRESETS)}")
        values: dict[str, Any] = {"preset": preset, "embedder": PRESETS[preset]}
        values.update({k: v for k, v in overrides.items() if v is not None})
        cfg = cls(**values)
        cfg.check()
        return cfg

    def check(self) -> None:
        """Raise :class:`UserInputError` naming the first setting out of range."""
        checks = (
            ("batch_size", self.batch_size, isinstance(self.batch_size, int) and self.batch_size >= 1, "16"),
            ("pose_radius", self.pose_radius, _pos(self.pose_radius), "0.15"),
            ("rotation_weight", self.rotation_weight, _pos(self.rotation_weight, zero=True), "1.0"),
            ("excursion_factor", self.excursion_factor, _pos(self.excursion_factor, zero=True), "3.0"),
            ("min_gap_seconds", self.min_gap_seconds, _pos(self.min_gap_seconds, zero=True), "1.0"),
            ("max_pairs", self.max_pairs, isinstance(self.max_pairs, int) and self.max_pairs >= 2, "24"),
            ("t_ref_seconds", self.t_ref_seconds, _pos(self.t_ref_seconds), "60"),
        )
        for name, value, ok, default in checks:
            if not ok:
                raise UserInputError(f"memory-loop scorer: {name} is out of range, found {value!r}",
                                     hint=f"use the protocol value {default}")

    @property
    def protocol_defaults(self) -> bool:
        """True when pairing and ``t_ref`` are the protocol's."""
        d = ScorerConfig()
        return all(getattr(self, k) == getattr(d, k) for k in (
            "pose_radius", "rotation_weight", "excursion_factor", "min_gap_seconds", "max_pairs",
            "t_ref_seconds"))

    def pairing(self) -> dict[str, Any]:
        """Keyword arguments of :func:`vidmem.metrics.revisit.revisit_pairs`."""
        return {"threshold": self.pose_radius, "rotation_weight": self.rotation_weight,
                "excursion_factor": self.excursion_factor,
                "min_gap_seconds": self.min_gap_seconds, "max_pairs": self.max_pairs}

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["backend_options"] = {k: dict(v) for k, v in self.backend_options.items()}
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScorerConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def _pos(v: Any, *, zero: bool = False) -> bool:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return False
    return v >= 0 if zero else v > 0


def select_pairs(loop_id: str, n_frames: int, fps: float, poses: np.ndarray | None,
                 config: ScorerConfig, *, where: str) -> tuple[list[revisit.RevisitPair], bool]:
    """Revisit pairs of one video: from its pose track, else from the loop's plan.

    Args:
        loop_id: the case's loop.
        n_frames: the video's real frame count.
        fps: the video stream's frame rate (gaps are index differences / fps).
        poses: ``(n_frames, 4, 4)`` measured camera-to-world track, or ``None``.
        config: pairing settings.
        where: the case, for error messages.

    Returns:
        ``(pairs, diagnostic)``; ``diagnostic`` is True when the pairs come from the plan.

    Raises:
        UserInputError: a pose track whose length is not the frame count, or whose
            matrices are not rigid, naming the case.
    """
    if poses is None:
        return revisit.planned_pairs(planned_c2w(loop_id, n_frames), fps, **config.pairing()), True
    if len(poses) != n_frames:
        raise UserInputError(f"{where}: the pose track has {len(poses)} poses but the video has "
                             f"{n_frames} frames",
                             hint="write one camera-to-world matrix per decoded frame, in "
                             "presentation order (or drop the track to score on the plan, "
                             "diagnostic)")
    try:
        return revisit.revisit_pairs(poses, fps, **config.pairing()), False
    except UserInputError as exc:
        raise UserInputError(f"{where}: {exc.message}", hint=exc.hint) from None


def camera_compliance(video: str | Path, info: VideoInfo, loop_id: str) -> dict[str, Any]:
    """The camera-compliance gate of one video (:mod:`vidmem.metrics.camera_motion`).

    Decodes the frames about :data:`~vidmem.metrics.camera_motion.STEP_SECONDS` apart
    (one held at a time), measures the optical flow between neighbours and compares it
    with the loop's plan on the same frame grid.

    Returns:
        :meth:`~vidmem.metrics.camera_motion.CameraGate.to_dict` plus ``frames_decoded``.
    """
    idx = camera_motion.step_frames(info.n_frames, info.fps)
    stride = int(idx[1] - idx[0]) if len(idx) > 1 else 1
    stats = DecodeStats()
    measured: list[float] = []
    prev = None
    for _, frame in iter_frames(video, stride=stride, stats=stats):
        if prev is not None:
            measured.append(camera_flow.flow_motion(prev, frame))
        prev = frame
    planned = camera_motion.planned_step_motion(planned_c2w(loop_id, info.n_frames), idx)
    gate = camera_motion.camera_gate(measured, planned, stride / info.fps)
    return {**gate.to_dict(), "frames_decoded": stats.frames_decoded}


class MemoryLoopScorer:
    """Scores memory-loop videos with a loaded image embedder."""

    def __init__(self, config: ScorerConfig, *, embedder: Any) -> None:
        self.config = config
        self.embedder = embedder

    def _embed(self, frames: np.ndarray) -> np.ndarray:
        size = self.config.batch_size
        parts = [np.asarray(self.embedder.embed_images(list(frames[k:k + size])), np.float64)
                 for k in range(0, len(frames), size)]
        return np.concatenate(parts) if parts else np.zeros((0, 1))

    def score_video(self, case: MemoryLoopCase, video: str | Path, *, source: str = "plan",
                    poses_path: str | Path | None = None) -> dict[str, Any]:
        """Pairs, per-pair fidelity, sample fidelity, half-life and return gate of a video.

        Args:
            case: the case.
            video: its generated video.
            source: where the pose track comes from (``manifest``, ``sidecar``, ``plan``).
            poses_path: the pose-track file (``None`` with ``source="plan"``).

        Returns:
            The stored response (plain JSON data; see the runner's docs).

        Raises:
            UserInputError: a bad pose track, naming the case and the field.
        """
        where = f"case {case.case_id}"
        info = probe(video)
        poses = None
        if poses_path is not None:
            field_name = "poses" if source == "manifest" else "pose sidecar"
            poses = read_pose_track(poses_path, where=f"{where}: {field_name}")
            where = f"{where}: {field_name} {poses_path}"
        pairs, diagnostic = select_pairs(case.loop_id, info.n_frames, info.fps, poses,
                                         self.config, where=where)
        wanted = sorted({p.i for p in pairs} | {p.j for p in pairs})
        stats = DecodeStats()
        frames = read_frames(video, wanted, stats=stats)
        pos = {k: n for n, k in enumerate(wanted)}
        emb = self._embed(frames)
        cos = cosine_rows(emb, emb) if len(emb) else np.zeros((0, 0))
        rows = []
        for p in pairs:
            a, b = pos[p.i], pos[p.j]
            c = float(np.clip(cos[a, b], -1.0, 1.0))
            s = ssim_pair(frames[a], frames[b])
            rows.append({"i": p.i, "j": p.j, "gap_seconds": p.gap_seconds,
                         "distance": round(p.distance, 6), "excursion": round(p.excursion, 6),
                         "cosine": round(c, 6), "ssim": round(s, 6),
                         "fidelity": float(pair_fidelity(c, s))})
        fids = [r["fidelity"] for r in rows]
        fit = halflife.fit_half_life([r["gap_seconds"] for r in rows], fids,
                                     t_ref=self.config.t_ref_seconds)
        gate = None
        if poses is not None:
            g = revisit.return_gate(poses, rotation_weight=self.config.rotation_weight,
                                    threshold=self.config.pose_radius,
                                    excursion_factor=self.config.excursion_factor)
            gate = {"departed": g.departed, "returned": g.returned, "passed": g.passed,
                    "max_departure": round(g.max_departure, 6),
                    "final_distance": round(g.final_distance, 6)}
        camera = camera_compliance(video, info, case.loop_id)
        notes = []
        if abs(info.fps - case.fps) > 1e-6 * case.fps:
            notes.append(f"the video runs at {info.fps:g} fps, the case asked for {case.fps:g}; "
                         "gaps use the video's")
        return {
            "case_id": case.case_id, "loop_id": case.loop_id,
            "video": {"n_frames": info.n_frames, "fps": info.fps, "width": info.width,
                      "height": info.height, "duration_seconds": info.duration_seconds},
            "pose_source": source, "poses_path": None if poses_path is None else str(poses_path),
            "diagnostic": diagnostic, "pairs": rows,
            "frames_read": len(wanted), "frames_decoded": stats.frames_decoded,
            "sample_fidelity": sample_fidelity(fids),
            "half_life": {"status": fit.status, "reason": fit.reason, "value": fit.value,
                          "details": fit.details},
            "return_gate": gate, "camera_gate": camera, "notes": notes,
        }
