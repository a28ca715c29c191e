"""Real video generators through diffusers (extra ``diffusers``): Wan2.2 TI2V-5B, T2V-A14B
and I2V-A14B, the paper's FLUX.2 [klein] -> Wan2.2 keyframe stack (``flux2-wan``), and any
other diffusers pipeline by class name (``diffusers``).

Nothing here imports torch or diffusers at import time; a generator loads its
pipelines on first use, once per worker process (:mod:`.runtime`). :mod:`.tiny` builds
tiny random pipelines for tests and benchmarks, offline.
"""
