"""Clip-quality :data:`PROTOCOL`: every rule, what differs from VBench, and why.

Part of :mod:`vidmem.metrics.clip_quality` (the overview is there); the run log records it.
"""

from __future__ import annotations

_VB = "Vchitect/VBench vbench/"

#: every rule this package applies: what it is, why, and where it comes from
PROTOCOL: dict[str, dict[str, str]] = {
    "separate": {
        "rule": "quality scores are reported apart from memory scores, never mixed in",
        "reason": "within-clip stability can coexist with entity-level failures",
        "source": "PROTOCOLS.md section 4 (Quality control); seed 000 App. F.5",
    },
    "consistency_formula": {
        "rule": "subject and background consistency: L2-normalised frame embeddings; for "
                "frames i >= 1 the mean of max(0, cos(e_i-1, e_i)) and max(0, cos(e_0, e_i)); "
                "the clip's score is the mean over i (one frame: 1.0)",
        "reason": "VBench's formula, unchanged",
        "source": f"{_VB}subject_consistency.py, background_consistency.py",
    },
    "consistency_embedder": {
        "rule": "DIFFERS: any image embedder (frames -> vectors) is passed in; VBench uses "
                "DINO ViT-B/16 (subject) and CLIP ViT-B/32 (background) at 224 px; the "
                "embedder's name goes to the run log; without one the metric is skipped",
        "reason": "the VBench models need weights; the offline run uses a classic embedder",
        "source": f"{_VB}utils.py init_submodules (dino_vitb16, ViT-B/32)",
    },
    "temporal_flickering": {
        "rule": "(255 - mean over consecutive frame pairs of the mean absolute pixel "
                "difference over all pixels and channels) / 255, on 0..255 RGB",
        "reason": "VBench's formula, unchanged",
        "source": f"{_VB}temporal_flickering.py cal_score",
    },
    "temporal_flickering_scope": {
        "rule": "DIFFERS: every clip is scored; VBench scores only clips its static filter "
                "keeps (a moving clip therefore scores lower here)",
        "reason": "per-clip controls for every Track-B clip; read it with dynamic degree",
        "source": f"{_VB}cli/static_filter.py",
    },
    "motion_smoothness": {
        "rule": "keep frames 0, 2, 4, ...; synthesise the midpoint of each kept pair; score = "
                "(255 - mean over odd frames of the mean absolute difference between the "
                "real odd frame and its synthesised midpoint) / 255 (synthesised frames "
                "rounded to uint8)",
        "reason": "VBench's formula, unchanged",
        "source": f"{_VB}motion_smoothness.py motion_score, vfi_score",
    },
    "motion_smoothness_interpolator": {
        "rule": "DIFFERS: the midpoint is flow-based, not AMT: flows F01 = flow(f0, f2) and "
                "F10 = flow(f2, f0) from the flow function passed in (offline: OpenCV "
                "Farneback); F_t0 = -F01/4 + F10/4, F_t1 = F01/4 - F10/4 (Super SloMo's "
                "linear flow approximation at t = 1/2); midpoint = mean of f0 and f2 "
                "backward-warped (bilinear, border clamped) by F_t0 and F_t1",
        "reason": "AMT needs weights; with the flow approximation a constant motion is "
                  "interpolated exactly and noise is not",
        "source": "Jiang et al., Super SloMo (CVPR 2018) eq. 4; decided here",
    },
    "dynamic_degree": {
        "rule": "frames sampled every max(1, round(fps / 8)); per sampled pair the mean of "
                "the top 5% flow magnitudes (int(H W 0.05) pixels); threshold = max(1, "
                "8 / fps) * 6 * min(H, W) / 256 pixels; the clip is dynamic when at least "
                "round(4 * n_sampled / 16) pairs exceed it",
        "reason": "VBench's rule (fps = the clip's own frame rate, as VBench passes it)",
        "source": f"{_VB}dynamic_degree.py get_score, set_params, check_move, get_frames",
    },
    "dynamic_degree_flow": {
        "rule": "DIFFERS: the flow function passed in (offline: OpenCV Farneback on grey "
                "frames) instead of RAFT (20 iterations, frames padded to a multiple of 8); "
                "the 6-pixel threshold is RAFT's and kept as is",
        "reason": "RAFT needs weights; Farneback under-reads motion in flat regions, which "
                  "the top-5% statistic mostly ignores",
        "source": f"{_VB}dynamic_degree.py; decided here",
    },
    "dynamic_degree_count": {
        "rule": "DIFFERS: at least one pair must exceed the threshold (VBench's count "
                "round(4 n / 16) is 0 for n <= 2 sampled frames, which calls any 2-frame "
                "clip dynamic)",
        "reason": "a frozen clip must never be called dynamic",
        "source": "decided here",
    },
    "frames": {
        "rule": "clips are (T, H, W, 3) RGB, 0..255, T >= 2 (motion smoothness: T >= 3); "
                "every decoded frame is used (VBench decodes all frames too)",
        "reason": "the metrics compare frames with each other",
        "source": f"{_VB}utils.py load_video",
    },
    "spearman": {
        "rule": "rank correlation of per-clip quality with per-clip recall: "
                "scipy.stats.spearmanr over clips where both are finite; None when fewer "
                "than 3 such clips or either side is constant",
        "reason": "the paper reports no metric correlating with recall above rho = 0.17",
        "source": "PROTOCOLS.md section 4; seed 000 App. F.5",
    },
}
