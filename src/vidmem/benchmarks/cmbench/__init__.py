"""CMBench: recall of a target seen earlier in a one-minute context.

Read top to bottom: :mod:`.schema` (the task row), :mod:`.validate` and :mod:`.data`
(loading, every problem at once), :mod:`.references` (reference crops), :mod:`.requests`
(continuation requests, the KV log), :mod:`.scorer` (OWL-ViT + SAM 2 + DINOv2 or the
offline proxies), :mod:`.benchmark` (the contract: items, rows, aggregate, protocol),
:mod:`.cli` (its options), :mod:`.report`, :mod:`.sim_build` and :mod:`.demo`.
"""

from vidmem.benchmarks.cmbench.benchmark import CMBench

BENCHMARK = CMBench()
