"""The memory loop: revisit fidelity and the Memory Half-Life fit.

Read top to bottom: :mod:`.schema` (the case row), :mod:`.validate` and :mod:`.data`,
:mod:`.requests` (rollout requests, pose tracks), :mod:`.scorer` (pairs, fidelity, the
half-life fit per case), :mod:`.aggregate`, :mod:`.benchmark` (the contract), :mod:`.cli`
(its options), :mod:`.report`, :mod:`.sim_build` and :mod:`.demo`.
"""

from vidmem.benchmarks.memory_loop.benchmark import MemoryLoop

BENCHMARK = MemoryLoop()
