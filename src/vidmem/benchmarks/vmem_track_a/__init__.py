"""The vmem_track_a benchmark: VMem-Bench Track-A (reference evidence before generation).

The official gold of a film (``schema``), where it lies on disk (``layout``), its
validation (``validate``), loading and source-video matching (``gold``) and the corpus
statistics computed from gold alone (``stats``).
"""
