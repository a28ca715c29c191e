"""A worked `command` generator: read vidmem's request JSON, write the MP4 it asks for.

Stands in for a video model to show the contract (docs/generators.md), for every
benchmark, including the closed loops of Track-B and MIST:

    vidmem run mist --root SIM-mist --out runs/mist-example --generator command \\
        --generator-opt template="python docs/examples/request_to_video.py {request}"

Its "model" pans slowly across one picture: the start image (memory loop, MIST's gap and
reveal), else the first reference (Track-B), else the context video's last frame
(CMBench), else a plain grey canvas -- the case of a request with no image at all
(Track-B's first segment and its ``none`` condition, MIST's setup shot). A null fps,
size or duration is this script's choice (8 fps, the picture's own size, 5 s), as the
contract allows. It needs only numpy, Pillow and PyAV (vidmem's own dependencies).
"""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
from PIL import Image

DEFAULT_FPS = 8.0
DEFAULT_SECONDS = 5.0
DEFAULT_SIZE = (256, 256)  # width, height when the request names none and has no picture


def picture(request: dict) -> Image.Image | None:
    """The one image the request lets the model see, or None."""
    if request["start_image"]:
        return Image.open(request["start_image"]).convert("RGB")
    if request["references"]:  # objects in rank order: {"path", "source", ...}
        return Image.open(request["references"][0]["path"]).convert("RGB")
    if request["context_video"]:
        with av.open(request["context_video"]) as container:
            last = None
            for last in container.decode(video=0):  # noqa: B007 -- keep the last frame
                pass
        return None if last is None else last.to_image()
    return None


def frames(image: Image.Image | None, size: tuple[int, int], n: int):
    """``n`` RGB frames of ``size`` panning left to right across ``image``."""
    width, height = size
    if image is None:
        yield from (np.full((height, width, 3), 128, np.uint8) for _ in range(n))
        return
    wide = np.asarray(image.resize((int(width * 1.25), height)))
    travel = wide.shape[1] - width
    for k in range(n):
        x = round(travel * k / max(1, n - 1))
        yield np.ascontiguousarray(wide[:, x:x + width])


def main(request_path: str) -> int:
    request = json.loads(Path(request_path).read_text())
    image = picture(request)
    fps = request["fps"] or DEFAULT_FPS
    seconds = request["duration_seconds"] or DEFAULT_SECONDS
    own = image.size if image is not None else DEFAULT_SIZE
    width, height = request["width"] or own[0], request["height"] or own[1]
    width, height = width - width % 2, height - height % 2  # H.264 4:2:0 needs even sides
    n = max(2, round(seconds * fps))
    out = Path(request["out_path"])
    out.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(out), "w") as container:
        stream = container.add_stream("libx264", rate=Fraction(fps).limit_denominator(1001))
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for rgb in frames(image, (width, height), n):
            for packet in stream.encode(av.VideoFrame.from_ndarray(rgb, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: request_to_video.py REQUEST.json (the {request} placeholder)")
    sys.exit(main(sys.argv[1]))
