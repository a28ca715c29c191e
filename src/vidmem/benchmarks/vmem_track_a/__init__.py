"""VMem-Bench Track-A: which references a memory policy retrieves from real films, before
generation.

Read top to bottom: :mod:`.schema` and :mod:`.layout` (the official gold and where it
lies), :mod:`.validate`, :mod:`.rules` and :mod:`.gold` (every problem at once, loading,
matching films to videos), :mod:`.stats` (corpus statistics from gold alone),
:mod:`.config` and :mod:`.cli` (presets and options), :mod:`.answers` and ``prompts/``
(the judge's questions), :mod:`.scorer` (causal replay with :mod:`vidmem.memory`, one
judgement per distinct reference, the budget sweep), :mod:`.benchmark` (the contract),
:mod:`.protocol`, :mod:`.report` and :mod:`.sim_build`.
"""

from vidmem.benchmarks.vmem_track_a.benchmark import TrackA

BENCHMARK = TrackA()
