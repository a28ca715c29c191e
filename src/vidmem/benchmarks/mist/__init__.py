"""MIST: gate-by-gate scoring of hidden-state reveals, with M3-Agent.

Read top to bottom: :mod:`.schema` and :mod:`.cards` (the case card and loading it),
:mod:`.audit` (the prompt-channel audit), :mod:`.config` and :mod:`.cli` (arms, K,
presets, options), :mod:`.generation` (locked setup and gap shots, the arms' reveal
tries), :mod:`.generation_files` (progress and start images) and
:mod:`.generation_agent` (the M3-Agent arms), :mod:`.questions` and
``prompts/gates.toml`` (the gate questions), :mod:`.scorer` (the rollouts layout, one
judge call per case), :mod:`.aggregate` (factors, classes, paired statistics, running
best-of-K), :mod:`.benchmark` (the contract), :mod:`.protocol`, :mod:`.report` and
:mod:`.report_chains`, :mod:`.demo` and :mod:`.sim_build`.
"""

from vidmem.benchmarks.mist.benchmark import Mist

BENCHMARK = Mist()
