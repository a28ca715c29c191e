"""The causal memory store, retrieval policies and the guard that drops future evidence.

* :mod:`~vidmem.memory.frames`: segments, timestamped frames on the 1 fps / 2 fps
  grids, and :class:`~vidmem.memory.frames.FilmFrames` (a film decoded once per segment);
* :mod:`~vidmem.memory.embeddings`: per-film embedding rows, one contiguous matrix per
  backend, each frame and text embedded once;
* :mod:`~vidmem.memory.store`: :class:`~vidmem.memory.store.MemoryStore`, what a policy
  may see of the past;
* :mod:`~vidmem.memory.policy`: the policy protocol, :class:`~vidmem.memory.policy.
  Reference`, the built-in names and ``module:Class`` loading;
* :mod:`~vidmem.memory.policies`: the six Track-A policies, one module each, each with a
  ``PROTOCOL`` dict of the rules it follows;
* :mod:`~vidmem.memory.ranking`: the pure ranking rules (stable order, RRF, farthest point);
* :mod:`~vidmem.memory.guard`: :func:`~vidmem.memory.guard.replay`, the causal driver.
"""
