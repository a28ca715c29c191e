"""Runners: build requests, batch, cache, execute, and write the run log.

Runners hold no formulas; they move plain data between benchmarks, backends and the
metric functions, and make a run resumable:

* :mod:`vidmem.runners.store` -- the run directory (``run.json``, ``items.sqlite``,
  ``scores.jsonl``, ``report/``) and the per-item SQLite store.
* :mod:`vidmem.runners.execute` -- run a function over work items, in-process or in a
  process pool, skipping items already done and saving each result as it finishes.
* :mod:`vidmem.runners.cache` -- a content-addressed on-disk cache for arrays such as
  embeddings, shared across runs.
"""
