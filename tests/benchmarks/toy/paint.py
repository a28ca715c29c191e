"""A 'generator' for the toy benchmark: paints the colour named in the prompt into an MP4."""

import re
import sys

import numpy as np

from vidmem.io.video import write_video

if __name__ == "__main__":
    prompt, out = sys.argv[1], sys.argv[2]
    rgb = [int(v) for v in re.findall(r"\d+", prompt)[:3]]
    frame = np.broadcast_to(np.asarray(rgb, np.uint8), (32, 32, 3))
    write_video(out, [frame] * 4, 8)
