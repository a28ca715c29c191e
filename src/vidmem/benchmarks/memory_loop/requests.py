"""Memory-loop requests and outputs: generation requests, the video scan, pose tracks.

A generator sees the start image and the prompt (and the requested duration and frame
rate) and, in ``extras["camera_path"]``, the loop's planned camera path frame by frame
(:func:`camera_path`; format in ``docs/memory_loop_camera_and_poses.md``); it writes
``<case_id>.mp4`` into an output folder, optionally with a pose track
``<case_id>.mp4.poses.json`` beside it (the ``sim`` generator writes one). Scoring then
pairs frames from the pose track (:func:`pose_source`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vidmem.benchmarks.jsonl_dataset import VideoFolderScan
from vidmem.benchmarks.memory_loop.schema import BENCHMARK, MemoryLoopCase, MemoryLoopDataset
from vidmem.errors import UserInputError
from vidmem.generators.requests import GenerationRequest, read_manifest, write_manifest
from vidmem.io.safe_paths import inside
from vidmem.io.video import VideoInfo
from vidmem.metrics.loop_paths import loop_offsets
from vidmem.values import is_int

__all__ = [
    "POSES_SUFFIX",
    "CAMERA_PATH_COLUMNS",
    "CAMERA_PATH_FORMAT",
    "VideoScan",
    "camera_path",
    "find_videos",
    "generation_requests",
    "pose_source",
    "read_manifest",
    "read_pose_track",
    "write_manifest",
]

#: A video ``X.mp4`` may come with its pose track ``X.mp4.poses.json``.
POSES_SUFFIX = ".poses.json"


#: Version tag of the planned camera path put into every request.
CAMERA_PATH_FORMAT = "vidmem.memory_loop.camera_path/1"
#: Column names of ``camera_path["offsets"]`` (:func:`vidmem.metrics.loop_paths.loop_offsets`).
CAMERA_PATH_COLUMNS = ("d_yaw_degrees", "d_pitch_degrees", "zoom_factor", "d_truck", "d_dolly")


def camera_path(case: MemoryLoopCase) -> dict[str, object]:
    """The planned camera path of a case, as plain JSON for a generation request.

    One row of offsets from the start pose per frame of the requested video
    (``max(2, round(duration_seconds * fps))`` frames; frame ``k`` at ``k / fps`` s), so a
    generator knows the loop it is asked to perform and its pace. The camera-compliance
    gate compares a video's measured motion with this same plan.

    Example:
        >>> c = MemoryLoopCase(case_id="c", start_image="s.png", loop_id="yaw_loop_180",
        ...                    prompt="p", duration_seconds=1.0, fps=5.0)
        >>> path = camera_path(c)
        >>> path["n_frames"], [round(row[0], 1) for row in path["offsets"]]
        (5, [0.0, 104.9, 180.0, 104.9, 0.0])
    """
    n = max(2, round(float(case.duration_seconds) * float(case.fps)))
    off = loop_offsets(case.loop_id, n)
    return {
        "format": CAMERA_PATH_FORMAT, "loop_id": case.loop_id, "fps": float(case.fps),
        "n_frames": n, "columns": list(CAMERA_PATH_COLUMNS),
        "convention": "offsets from the start pose: turn right (yaw), look up (pitch), "
        "magnify by dollying along the view axis (zoom factor), truck right and dolly "
        "forward in units of the start's distance to the scene; camera axes x right, y "
        "down, z forward (vidmem.metrics.loop_paths.offsets_c2w gives camera-to-world)",
        "offsets": [[round(float(v), 6) for v in row] for row in off],
    }


def generation_requests(ds: MemoryLoopDataset, out_dir: str | os.PathLike[str], *,
                        seed: int = 0) -> list[GenerationRequest]:
    """One generation request per case: perform the loop from the start image.

    Nothing is written; the output folder need not exist yet.

    Args:
        ds: a loaded dataset.
        out_dir: folder where the videos go, one ``<case_id>.mp4`` each.
        seed: generation seed written into every request.

    Returns:
        Requests in case order: ``benchmark="memory_loop"``, ``request_id`` = case id,
        ``prompt`` = the case's prompt, ``start_image`` = absolute image path,
        ``duration_seconds`` and ``fps`` from the case, ``out_path`` =
        ``out_dir/<case_id>.mp4`` (absolute), ``extras`` = ``{"loop_id",
        "camera_path"}`` (:func:`camera_path`).

    Raises:
        UserInputError: ``out_dir`` is not a path or ``seed`` is not an int.
    """
    if not isinstance(out_dir, (str, os.PathLike)):
        raise UserInputError(f"generation_requests: out_dir must be a path, found "
                             f"{type(out_dir).__name__}",
                             hint="pass the folder where the generator writes <case_id>.mp4")
    if not is_int(seed):
        raise UserInputError(f"generation_requests: seed must be an int, found {seed!r}",
                             hint="pass e.g. seed=0")
    out = Path(out_dir).expanduser().absolute()
    return [
        GenerationRequest(
            request_id=c.case_id, benchmark=BENCHMARK, prompt=c.prompt,
            out_path=str(inside(out, out / f"{c.case_id}.mp4")),  # the id stays a file name
            start_image=str(ds.start_image_path(c).absolute()),
            duration_seconds=float(c.duration_seconds), fps=float(c.fps), seed=seed,
            extras={"loop_id": c.loop_id, "camera_path": camera_path(c)},
        )
        for c in ds.cases
    ]


@dataclass(frozen=True)
class VideoScan(VideoFolderScan):
    """Which case videos exist. Unpacks as ``found, missing = scan``.

    Attributes:
        found: case id -> readable ``<videos_dir>/<case_id>.mp4``.
        missing: case ids (dataset order) whose video is absent, empty or unreadable.
        reasons: case id -> why it is in ``missing``.
        unexpected: ``.mp4`` file names in the folder that match no case id.
        videos_dir: the folder scanned.
    """

    missing_what = "case video(s)"
    missing_hint = (
        "the generator must write <case_id>.mp4 for every case; rerun it for the listed "
        "cases, or pass --allow-missing to score the others and list these as missing"
    )


def _too_few_frames(p: Path, info: VideoInfo) -> str | None:
    if info.n_frames < 2:
        return f"{p} has {info.n_frames} frame(s); a loop needs at least 2"
    return None


def find_videos(ds: MemoryLoopDataset, videos_dir: str | os.PathLike[str]) -> VideoScan:
    """Look for ``<videos_dir>/<case_id>.mp4`` for every case and check it opens.

    Each file is probed (:func:`vidmem.io.video.probe`, demux only); a missing,
    zero-byte or unreadable file puts the case in ``missing`` with the reason.

    Args:
        ds: the dataset.
        videos_dir: folder holding the generated videos.

    Returns:
        A :class:`VideoScan`.

    Raises:
        UserInputError: ``videos_dir`` is not a folder.
    """
    return VideoScan.of(videos_dir, ds.case_ids, check=_too_few_frames)


def pose_source(ds: MemoryLoopDataset, case: MemoryLoopCase, video: str | os.PathLike[str]
                ) -> tuple[str, Path | None]:
    """Where the pose track of a case's video comes from.

    The manifest's ``poses`` path wins (the user named it for this case); otherwise a
    sidecar ``<video>.poses.json`` beside the video; otherwise there is none and pairs
    come from the planned loop (diagnostic).

    Returns:
        ``("manifest", path)``, ``("sidecar", path)`` or ``("plan", None)``.
    """
    manifest = ds.poses_path(case)
    if manifest is not None:
        return "manifest", manifest
    side = Path(f"{video}{POSES_SUFFIX}")
    if side.is_file():
        return "sidecar", side
    return "plan", None


def read_pose_track(path: str | os.PathLike[str], *, where: str = "pose track") -> np.ndarray:
    """Read a pose track: camera-to-world ``4x4`` matrices, one per video frame.

    Accepted JSON: ``{"c2w": [[[...4], ...4], ...N]}`` (what the sim generator writes;
    other keys are ignored) or a bare ``N x 4 x 4`` list.

    Args:
        path: the JSON file.
        where: who asks, for error messages (e.g. ``"case X: field 'poses'"``).

    Returns:
        ``(N, 4, 4)`` float64 array, finite. Whether each block is a rotation is checked
        by :mod:`vidmem.metrics.revisit` when the track is used.

    Raises:
        UserInputError: missing file, bad JSON, wrong shape or non-finite numbers.
    """
    p = Path(path)
    fix = ("write {\"c2w\": [...]} with one camera-to-world 4x4 matrix per video frame, in "
           "presentation order")
    if not p.is_file():
        raise UserInputError(f"{where}: pose track {p} not found", hint=fix)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UserInputError(f"{where}: pose track {p} is not valid JSON ({exc})", hint=fix) from None
    data = doc.get("c2w") if isinstance(doc, dict) else doc
    if data is None:
        raise UserInputError(f"{where}: pose track {p} has no 'c2w' key (found keys "
                             f"{sorted(doc)[:8]})", hint=fix)
    try:
        arr = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError):
        raise UserInputError(f"{where}: pose track {p}: 'c2w' is not a regular N x 4 x 4 array "
                             "of numbers", hint=fix) from None
    if arr.ndim != 3 or arr.shape[1:] != (4, 4) or arr.shape[0] < 1:
        raise UserInputError(f"{where}: pose track {p}: expected shape (N, 4, 4), found "
                             f"{arr.shape}", hint=fix)
    bad = ~np.isfinite(arr).all(axis=(1, 2))
    if bad.any():
        raise UserInputError(f"{where}: pose track {p}: pose of frame {int(np.flatnonzero(bad)[0])}"
                             " holds NaN or infinity", hint="repair or re-estimate that frame's "
                             "pose; every frame needs one")
    return arr
