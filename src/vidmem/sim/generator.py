"""Old home of the ``sim`` generator, now :mod:`vidmem.generators.sim` (a shim).

The adapter moved to the generators layer, which may import the sim (the sim may import
only io). This module keeps ``vidmem.sim.generator:SimGenerator`` working -- the
catalog's target and older imports -- and goes away once the catalog line and those
imports name :class:`vidmem.generators.sim.SimGenerator`.
"""

from __future__ import annotations

from vidmem.generators.sim import SimGenerator

__all__ = ["SimGenerator"]
