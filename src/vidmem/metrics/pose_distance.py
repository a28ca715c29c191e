"""Pose distance of camera tracks, and the checks that admit a pose track.

This is the geometry under :mod:`vidmem.metrics.revisit`: the unitless distance
``d(i, j)`` defined there, computed in blocks of rows, plus the validation of
camera-to-world poses and plain settings that the pairing code shares. It knows
nothing about gaps, excursions or caps, so it lives apart from the pairing rule and
can be used on its own (:func:`pose_distance_matrix`).
"""

from __future__ import annotations

import math

import numpy as np

from vidmem.errors import UserInputError
from vidmem.values import is_number_like

__all__ = ["DEFAULT_ROTATION_WEIGHT", "pose_distance_matrix", "translation_cutoff"]

DEFAULT_ROTATION_WEIGHT = 1.0

#: "No translation" cut-off, relative: the translation term is 0 when the largest
#: departure from frame 0 is at most this fraction of the track's coordinate scale
#: ``max(1, max_k |t_k|)`` world units (see :func:`translation_cutoff`).
TRANSLATION_REL_EPS = 1e-6
#: Largest allowed |R^T R - I| entry and |det R - 1| for a rotation block.
_ORTHO_TOL = 1e-3
#: Distance-matrix entries computed per block.
BLOCK_ENTRIES = 2**18


# --------------------------------------------------------------------- validation


def check_poses(poses: object, where: str) -> np.ndarray:
    """Return ``poses`` as a float64 ``(N, 4, 4)`` array of rigid camera-to-world poses."""
    try:
        arr = np.asarray(poses, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise UserInputError(
            f"{where}: poses must be numbers of shape (N, 4, 4), could not read them ({exc})",
            hint="pass one camera-to-world 4x4 matrix per frame as a numpy array",
        ) from exc
    if arr.ndim != 3 or arr.shape[1:] != (4, 4):
        raise UserInputError(
            f"{where}: poses must have shape (N, 4, 4), found {arr.shape}",
            hint="stack one camera-to-world 4x4 matrix per frame",
        )
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr).all(axis=(1, 2)))[0])
        raise UserInputError(
            f"{where}: pose of frame {bad} holds NaN or infinity",
            hint="drop or repair frames whose camera pose could not be estimated",
        )
    if arr.shape[0]:
        rot = arr[:, :3, :3]
        ortho = np.abs(np.einsum("nki,nkj->nij", rot, rot) - np.eye(3)).max(axis=(1, 2))
        det = np.linalg.det(rot)
        bad_mask = (ortho > _ORTHO_TOL) | (np.abs(det - 1.0) > _ORTHO_TOL)
        if bad_mask.any():
            bad = int(np.flatnonzero(bad_mask)[0])
            raise UserInputError(
                f"{where}: the 3x3 block of pose {bad} is not a rotation "
                f"(max |R^T R - I| = {ortho[bad]:.3g}, det = {det[bad]:.6g})",
                hint="pass rigid camera-to-world poses; remove any scale from the rotation",
            )
    return arr


def check_positive(value: object, name: str, where: str, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float if it is a finite number > 0 (>= 0 with ``allow_zero``)."""
    v = float(value) if is_number_like(value) else math.nan  # type: ignore[arg-type]
    if not (math.isfinite(v) and (v >= 0 if allow_zero else v > 0)):
        need = "a finite number >= 0" if allow_zero else "a finite number > 0"
        raise UserInputError(
            f"{where}: {name} must be {need}, found {value!r}",
            hint=f"pass {name} as a plain number",
        )
    return v


# --------------------------------------------------------------------- distances


def translation_cutoff(positions: np.ndarray) -> float:
    """Largest departure from frame 0 (world units) that still counts as "no translation".

    ``1e-6 * max(1, max_k |t_k|)``: one part in a million of the track's coordinate
    scale, and never less than the protocol reference's fixed ``1e-6`` world units. A
    camera that only turns still shows position jitter from pose estimation or float
    round-off (``1e-7`` units at the origin, about ``6e-8 * |t|`` for float32 poses
    far from it); dividing by a departure of that size would let the jitter dominate
    every distance. Below the cut-off the distance is rotation only, as in the
    reference (which uses the absolute ``1e-6`` alone; vidmem scales it with the
    coordinates so that a track far from its world origin is treated alike).

    Args:
        positions: Camera centres, shape ``(N, 3)``, world units.

    Returns:
        The cut-off in world units (``>= 1e-6``).

    Example:
        >>> translation_cutoff(np.zeros((3, 3)))
        1e-06
        >>> translation_cutoff(np.array([[1000.0, 0.0, 0.0]]))
        0.001
    """
    size = float(np.linalg.norm(positions, axis=1).max()) if len(positions) else 0.0
    return TRANSLATION_REL_EPS * max(1.0, size)


class PoseTrack:
    """Pose features for fast distance rows: scaled positions and flat rotations."""

    def __init__(self, poses: np.ndarray, rotation_weight: float) -> None:
        t = poses[:, :3, 3]
        scale = float(np.linalg.norm(t - t[0], axis=1).max()) if len(t) else 0.0
        moved = len(t) > 0 and scale > translation_cutoff(t)
        self.pos = (t - t[0]) / scale if moved else np.zeros_like(t)
        self.rot = poses[:, :3, :3].reshape(-1, 9)
        self.w = rotation_weight

    def rows(self, start: int, stop: int) -> np.ndarray:
        """Distances ``d(i, k)`` for ``i`` in ``[start, stop)`` and every ``k``, float64.

        The angle comes from ``|R_i - R_k|_F = 2 sqrt(2) sin(theta / 2)``, computed from
        the element differences, which is exact for equal rotations and accurate to
        float64 round-off for small angles (``arccos`` of the trace is off by about
        ``1e-8`` there, enough to decide ties by noise).
        """
        diff = self.pos[start:stop, None, :] - self.pos[None, :, :]
        trans = np.sqrt(np.einsum("bnk,bnk->bn", diff, diff))
        if self.w == 0:
            return trans
        rdiff = self.rot[start:stop, None, :] - self.rot[None, :, :]
        fro = np.sqrt(np.einsum("bnk,bnk->bn", rdiff, rdiff))
        angle = np.degrees(2.0 * np.arcsin(np.clip(fro / (2.0 * math.sqrt(2.0)), 0.0, 1.0)))
        return trans + self.w * angle / 180.0


def pose_distance_matrix(
    poses: np.ndarray, *, rotation_weight: float = DEFAULT_ROTATION_WEIGHT
) -> np.ndarray:
    """All pairwise pose distances of a camera track.

    ``d(i, j) = |t_i - t_j| / L + rotation_weight * angle_deg(R_i, R_j) / 180`` with
    ``L`` the largest departure from frame 0 (translation term 0 when ``L`` is at most
    :func:`translation_cutoff`, ``1e-6 * max(1, max_k |t_k|)`` world units).

    Args:
        poses: Camera-to-world matrices, shape ``(N, 4, 4)``, rigid (rotation block
            orthonormal to ``1e-3``), translation in world units.
        rotation_weight: Weight of the rotation term (``>= 0``).

    Returns:
        Symmetric ``(N, N)`` float32 matrix, unitless, zero on the diagonal.

    Raises:
        UserInputError: if ``poses`` is not a finite ``(N, 4, 4)`` array of rigid poses
            or ``rotation_weight`` is negative or not finite.

    Example:
        >>> import numpy as np
        >>> poses = np.stack([np.eye(4)] * 2)
        >>> poses[1, :3, 3] = [2.0, 0.0, 0.0]  # move 2 units: the whole departure
        >>> np.round(pose_distance_matrix(poses), 6).tolist()
        [[0.0, 1.0], [1.0, 0.0]]
    """
    where = "pose_distance_matrix"
    arr = check_poses(poses, where)
    w = check_positive(rotation_weight, "rotation_weight", where, allow_zero=True)
    n = arr.shape[0]
    track = PoseTrack(arr, w)
    out = np.empty((n, n), dtype=np.float32)
    step = max(1, BLOCK_ENTRIES // max(n, 1))
    for r0 in range(0, n, step):
        out[r0 : r0 + step] = track.rows(r0, min(n, r0 + step))
    return out
