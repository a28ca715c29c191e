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

    # Offline classic backends: core install, no weights. Proxies, never the official protocol.
    backends.add("classic/hsv-lbp", "vidmem.models.backends.classic_embed:HsvLbpEmbedder", "offline proxy: HSV colour histogram + uniform LBP texture (default classic image embedder)", role="image_embedder")
    backends.add("classic/lab-hog", "vidmem.models.backends.classic_embed:LabHogEmbedder", "offline proxy: Lab colour histogram + HOG", role="image_embedder")
    backends.add("classic/hsv-hist", "vidmem.models.backends.classic_embed:HsvHistEmbedder", "offline proxy: HSV colour histogram only", role="image_embedder")
    backends.add("classic/sift", "vidmem.models.backends.classic_sift:SiftDetector", "offline proxy: find an image query by SIFT matching + RANSAC homography (no text queries)", role="detector")
    backends.add("classic/grabcut", "vidmem.models.backends.classic_segment:GrabCutSegmenter", "offline proxy: GrabCut from a box prompt, box fallback", role="segmenter")
    backends.add("classic/box", "vidmem.models.backends.classic_segment:BoxSegmenter", "baseline: the box rectangle as the mask", role="segmenter")
    backends.add("classic/tfidf", "vidmem.models.backends.classic_text:TfidfTextEmbedder", "offline proxy: hashed char n-gram TF(-IDF) text vectors", role="text_embedder")
    backends.add("judge/openai", "vidmem.models.backends.judge_openai:OpenAIJudge", "VLM judge over any OpenAI-compatible chat server (vLLM, SGLang, OpenAI)", role="judge")

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
