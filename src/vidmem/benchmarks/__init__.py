"""One folder per benchmark, each implementing :class:`vidmem.benchmarks.contract.Benchmark`.

A benchmark folder holds everything of its benchmark (schema, validation, rollouts,
scoring, aggregation, report, CLI options, sim builder, demo part); the generic runner
(:mod:`vidmem.runners.benchmark_run`) and CLI (:mod:`vidmem.cli.benchmark_commands`)
do the rest. Its one catalog line in :mod:`vidmem.catalog` names it.
"""
