"""Camera poses of the sim world and their camera-to-world matrices.

World and camera convention
---------------------------
The world is a cylinder of radius 1 whose inside wall carries the panorama; the camera
stands near its axis. Axes follow OpenCV: ``x`` right, ``y`` down, ``z`` forward; at
``yaw = pitch = 0`` the camera looks along world ``+z`` at panorama column 0.

A :class:`Pose` is ``(yaw, pitch, zoom, tx, ty)``:

* ``yaw`` (degrees): rotation about the up axis; positive turns right. It maps to the
  panorama column ``u = yaw / 360 * W_pano`` at the view centre.
* ``pitch`` (degrees): positive looks up (kept small: the panorama is only
  :data:`~vidmem.sim.assets.PANO_HEIGHT` pixels tall).
* ``zoom`` (>= 0.5): the dolly. The camera moves ``d = 1 - 1 / zoom`` along its view
  axis, which magnifies the wall straight ahead by ``zoom`` (radius ``1`` over the
  remaining distance ``1 - d``); the renderer shows a window ``zoom`` times smaller.
* ``tx``, ``ty`` (world units = cylinder radii): truck right and pedestal down in the
  camera's own frame. Rendered as a shift of the view centre by ``tx`` (``ty``) times
  ``W_pano / (2 pi)`` panorama pixels (small-angle approximation).

Camera-to-world matrix (:meth:`Pose.c2w`): ``R = R_y(yaw) @ R_x(pitch)`` with
``R_y(a) = [[cos a, 0, sin a], [0, 1, 0], [-sin a, 0, cos a]]`` and
``R_x(a) = [[1, 0, 0], [0, cos a, -sin a], [0, sin a, cos a]]`` (so positive pitch
tilts the forward axis towards ``-y``, i.e. up), and camera centre
``c = R @ (tx, ty, 1 - 1 / zoom)``. The 4x4 matrix is ``[[R, c], [0, 0, 0, 1]]`` and
maps camera coordinates to world coordinates.

View window: at zoom 1 the view is :data:`vidmem.sim.world.VIEW_HEIGHT_PX` (225)
panorama pixels tall and ``225 * width / height`` wide (400 pixels = 60 degrees for
16:9 output).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from vidmem.errors import UserInputError

__all__ = ["Pose", "smoothstep"]

_ROUND = 5


def smoothstep(s: float | np.ndarray) -> float | np.ndarray:
    """Ease ``s`` in ``[0, 1]`` with zero slope at both ends: ``3 s^2 - 2 s^3``.

    Example:
        >>> smoothstep(0.0), smoothstep(0.5), smoothstep(1.0)
        (0.0, 0.5, 1.0)
    """
    s = np.clip(s, 0.0, 1.0)
    out = s * s * (3.0 - 2.0 * s)
    return float(out) if np.ndim(out) == 0 else out


def spec_number(value: Any, where: str, *, low: float | None = None) -> float:
    """A finite number (``>= low`` when given) read from a world spec, as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise UserInputError(
            f"{where}: expected a finite number, found {value!r}",
            hint="world specs are written by vidmem.sim; rebuild the data instead of editing them",
        )
    if low is not None and value < low:
        raise UserInputError(f"{where}: expected a number >= {low}, found {value!r}",
                             hint="rebuild the data with `vidmem sim build`")
    return float(value)


@dataclass(frozen=True)
class Pose:
    """A camera pose; see the module docstring for units and the convention.

    Attributes:
        yaw: degrees, positive turns right (not wrapped: 360 is a full turn).
        pitch: degrees, positive looks up.
        zoom: dolly magnification (1 = start distance).
        tx: truck right, world units.
        ty: pedestal down, world units.
    """

    yaw: float = 0.0
    pitch: float = 0.0
    zoom: float = 1.0
    tx: float = 0.0
    ty: float = 0.0

    def rotation(self) -> np.ndarray:
        """``(3, 3)`` float64 camera-to-world rotation ``R_y(yaw) @ R_x(pitch)``."""
        a, b = math.radians(self.yaw), math.radians(self.pitch)
        ry = np.array([[math.cos(a), 0.0, math.sin(a)], [0.0, 1.0, 0.0],
                       [-math.sin(a), 0.0, math.cos(a)]])
        rx = np.array([[1.0, 0.0, 0.0], [0.0, math.cos(b), -math.sin(b)],
                       [0.0, math.sin(b), math.cos(b)]])
        return ry @ rx

    def c2w(self) -> np.ndarray:
        """``(4, 4)`` float64 camera-to-world matrix (OpenCV axes, see module docs).

        Example:
            >>> Pose(yaw=90).c2w()[:3, 2].round(6).tolist()  # forward axis now +x
            [1.0, 0.0, 0.0]
            >>> Pose(zoom=2.0).c2w()[:3, 3].tolist()  # dolly half way to the wall
            [0.0, 0.0, 0.5]
        """
        r = self.rotation()
        m = np.eye(4)
        m[:3, :3] = r
        m[:3, 3] = r @ np.array([self.tx, self.ty, 1.0 - 1.0 / self.zoom])
        return m

    def to_list(self) -> list[float]:
        return [round(v, _ROUND) for v in (self.yaw, self.pitch, self.zoom, self.tx, self.ty)]

    @classmethod
    def from_list(cls, data: Any, where: str = "pose") -> Pose:
        if not isinstance(data, (list, tuple)) or len(data) != 5:
            raise UserInputError(f"{where}: expected [yaw, pitch, zoom, tx, ty], found {data!r}",
                                 hint="rebuild the data with `vidmem sim build`")
        yaw, pitch, zoom, tx, ty = (spec_number(v, f"{where}[{i}]") for i, v in enumerate(data))
        if zoom < 0.5:
            raise UserInputError(f"{where}: zoom must be >= 0.5, found {zoom}",
                                 hint="zoom is a dolly magnification; 1 is the start distance")
        return cls(yaw, pitch, zoom, tx, ty)

    def lerp(self, other: Pose, s: float) -> Pose:
        """Component-wise interpolation, ``s = 0`` gives ``self``."""
        return Pose(*(a + (b - a) * s for a, b in zip(self.to_tuple(), other.to_tuple(), strict=True)))

    def to_tuple(self) -> tuple[float, float, float, float, float]:
        return (self.yaw, self.pitch, self.zoom, self.tx, self.ty)
