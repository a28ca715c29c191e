"""VMem-Bench Track-B: closed-loop story generation with memory policies.

Read top to bottom: :mod:`.schema` and :mod:`.stories` (the official story files and
loading them), :mod:`.validate` and :mod:`.story_rules` (every problem at once),
:mod:`.stats` (corpus statistics from the files alone), :mod:`.gold_view`,
:mod:`.roster`, :mod:`.answers`, :mod:`.question` and ``prompts/`` (the judge question
of one segment), :mod:`.config` and :mod:`.cli` (presets and options), :mod:`.scorer`
(the rollouts layout, one judge call per story, stored verdicts and the aggregate),
:mod:`.benchmark` (the contract), :mod:`.protocol`, :mod:`.report` and
:mod:`.sim_build`.

This version scores rollouts brought by the user (``vidmem score vmem_track_b``); the
closed-loop generation of the conditions (``vidmem run`` with a generator) is not
built yet.
"""

from vidmem.benchmarks.vmem_track_b.benchmark import TrackB

BENCHMARK = TrackB()
