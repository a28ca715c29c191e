"""Video probing, exact frame access and encoding with PyAV.

Conventions used everywhere in vidmem:

* A **frame** is a ``numpy.ndarray`` of shape ``(H, W, 3)``, dtype ``uint8``, RGB.
  A **batch** is ``(T, H, W, 3)`` uint8.
* **Frame index** ``i`` is the ``i``-th frame in *presentation* order (sorted by PTS),
  counting from 0, whatever the decode order, B-frames or container quirks.
* **Frame time** is the presentation time in seconds *relative to the first frame*:
  frame 0 is always at ``0.0`` even when the file's first PTS is not zero (the absolute
  offset is kept in :attr:`VideoInfo.first_pts_seconds`).
* **Time -> frame** (:func:`index_at_time`, :func:`read_frames_at`): time ``t`` maps to
  the *last frame whose presentation time is <= t + 1e-6*, i.e. the frame that is on
  screen at ``t`` (the 1 microsecond slack absorbs float error in ``t`` computed as
  ``k / fps``). Valid times are ``0 <= t < duration_seconds``.

How frames are found. :func:`probe` demuxes the packets of the video stream (no
decoding), sorts their PTS into presentation order and records which ones are
keyframes; the table is cached per ``(path, size, mtime)``. :func:`read_frames` seeks
to the keyframe at or before each wanted frame (by that keyframe's PTS, so a B-frame
just before a keyframe is never skipped over), decodes forward until the frame whose
PTS equals the wanted one, and keeps decoding forward instead of seeking again when the
next wanted frame lies in the same GOP. Non-reference frames that are not wanted are
skipped by the decoder (``skip_frame=NONREF``), which is exact because no other frame
depends on them. Work done is counted in :data:`decode_stats` (and in an optional
per-call :class:`DecodeStats`).

This module is the public face of the video layer; the code lives in:

* :mod:`vidmem.io.video_container` -- opening a file and finding its video stream;
* :mod:`vidmem.io.video_probe` -- :class:`VideoInfo`, :func:`probe`,
  :func:`index_at_time` and the probe cache;
* :mod:`vidmem.io.video_decoder` -- the seek-and-decode-forward frame reader and
  :class:`DecodeStats`;
* :mod:`vidmem.io.video_read` -- :func:`read_frames`, :func:`read_frames_at`,
  :func:`iter_frames`;
* :mod:`vidmem.io.video_write` -- :func:`write_video`.
"""

from __future__ import annotations

from vidmem.io.video_decoder import DecodeStats, decode_stats
from vidmem.io.video_probe import TIME_EPSILON as TIME_EPSILON  # re-exported
from vidmem.io.video_probe import VideoInfo, clear_probe_cache, index_at_time, probe
from vidmem.io.video_read import iter_frames, read_frames, read_frames_at
from vidmem.io.video_write import write_video

__all__ = [
    "DecodeStats",
    "VideoInfo",
    "clear_probe_cache",
    "decode_stats",
    "index_at_time",
    "iter_frames",
    "probe",
    "read_frames",
    "read_frames_at",
    "write_video",
]
