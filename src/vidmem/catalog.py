"""The one place where vidmem's built-in names are declared.

Adding a benchmark, backend, generator or memory policy means writing its module and
adding one line here; nothing else spells the name. Entries marked ``planned`` are
declared so that `vidmem list` and error messages can say they are coming, and
loading them raises a clear "not implemented yet" error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vidmem.registry import Registry


def declare(benchmarks: Registry, backends: Registry, generators: Registry, policies: Registry) -> None:
    planned = "planned"
    benchmarks.add("cmbench", None, "CMBench: recall of a target seen earlier in a one-minute context", status=planned)
    benchmarks.add("memory_loop", None, "Memory loop: revisit fidelity and the Memory Half-Life fit", status=planned)
    benchmarks.add("vmem_track_a", None, "VMem-Bench Track-A: which references a memory policy retrieves", status=planned)
    benchmarks.add("vmem_track_b", None, "VMem-Bench Track-B: closed-loop story generation with memory policies", status=planned)
    benchmarks.add("mist", None, "MIST: gate-by-gate scoring of hidden-state reveals, with M3-Agent", status=planned)

    generators.add("sim", None, "offline procedural world with tunable memory (perfect, none, decay, leaky)", status=planned)
    generators.add("command", None, "any generator run as a shell command template", status=planned)

    for name, summary in (
        ("none", "no memory: the generator sees only the current prompt"),
        ("recency", "control: the most recent earlier frames"),
        ("random", "control: seeded random earlier frames"),
        ("text_frame", "rank every past frame (1 fps) by text-to-image similarity"),
        ("seg_uniform", "top-5 past segments by text similarity, their 1 fps frames"),
        ("seg_dino_key", "top-5 segments, 3 keyframes each by farthest-point selection"),
        ("seg_frame", "top-5 segments' frames re-ranked frame-wise, reciprocal-rank fused"),
        ("last_seen", "privileged diagnostic: where each required entity last appeared"),
    ):
        policies.add(name, None, summary, status=planned)
