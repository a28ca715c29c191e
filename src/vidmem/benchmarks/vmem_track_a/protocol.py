"""Every Track-A rule a run follows, for run.json's ``protocol`` block."""

from __future__ import annotations

import importlib
from typing import Any

from vidmem.benchmarks.prompts import load_prompt
from vidmem.benchmarks.vmem_track_a.config import CROSS_MODAL, PRESETS, ScorerConfig
from vidmem.memory import guard, store
from vidmem.metrics import reference_evidence
from vidmem.registry import POLICIES

PACKAGE = "vidmem.benchmarks.vmem_track_a"

RULES = {
    "item": "one film; its segments in gold order; the film's video is decoded once for all "
            "policies and each frame embedded once per encoder",
    "instruction": "a segment's instruction g_n is its gold prompt (chunk_annotations prompt), "
                   "in the chosen --lang",
    "candidates": "C = the segment's present entities minus its first appearances",
    "judge_question": "each distinct (segment, reference frame) over all policies and budgets is "
                      "asked once: the reference image (longer side shrunk to judge_image_side "
                      "px) and the segment's gold roster (its present entities, descriptions cut "
                      "at 70 characters); the answer is the roster ids the image shows, a strict "
                      "JSON list whose schema enumerates the roster (reference scorer "
                      "visual-coverage 3.0: no segment frames or prompt are sent); a segment "
                      "without present entities asks nothing (nothing could be shown)",
    "judge_reply": "strict JSON list, official v3 parser rule: the whole reply, stripped of "
                   "whitespace (Python str.strip), must parse with json.loads as one object "
                   "{\"entity_ids\": [...]} with exactly that key, its ids unique strings of "
                   "the roster; a code fence, prose before or after, single quotes, trailing "
                   "commas or a second object make it unparsable (Suchenl/VMem-Bench "
                   "visual_coverage.py _parse_v3_reference; prompts/reference.toml "
                   "strict_json = true). NaN/Infinity are refused too (vidmem's rule for "
                   "every judge; the schema admits no number there, so no decision changes)",
    "judge_max_tokens": "a reference question asks for at most 256 tokens (visual_coverage.py "
                        "_judge_v3_reference) and a same-view question for at most 64 (2.2 "
                        "_distinct_views, the nearest official question), from the prompt "
                        "files' max_tokens; a judge option set explicitly (judge/openai "
                        "max_tokens, a local judge's max_new_tokens) overrides them and is "
                        "recorded with the judge's settings",
    "same_view_reply": "read tolerantly (the first JSON object in the reply), as the reference's "
                       "near-duplicate question digs its number out of free text "
                       "(visual_coverage.py 2.2 _distinct_views, a regex)",
    "unparsable": "a reference whose answer is unparsable or an error after the judge's one "
                  "JSON-only follow-up shows nothing and is counted per policy (the reference "
                  "scorer asks no follow-up and stops the run on the first invalid reply)",
    "r_v": "with same_view on, every pair of references of one ranking that the judge says "
           "show the same entity is asked once (two images and the entity's description): a "
           "reference repeats a covered view of entity e when a higher-ranked reference of e "
           "was judged the same view (or is the same frame). The reference code's "
           "visual-coverage 3.0 leaves R_V undefined for multi-label references and 2.2 asked "
           "a distinct-view count per group; the pairwise question keeps one answer valid for "
           "every K. With same_view off, R_V and SelEff are undefined",
    "r_s": "the similarity encoder's cosine over pairs of references showing the same "
           "entity, pair-weighted over the segment's entity groups",
    "budget_sweep": "K = 1..budget are prefixes of each policy's one ranking per segment; no "
                    "retrieval or judge question is repeated for another K",
    "averages": "per film the unweighted mean over its segments, then the unweighted mean over "
                "films per dataset folder; overall = the mean over all films",
    "empty_selection": "Recall 0, F1 0, Precision undefined (counted, never averaged in); the "
                       "published code drops such segments from the F1 mean, vidmem does not",
    "judge_calls": "summary.judge_questions: 'asked' = reference questions put to the judge "
                   "(before the answer cache), 'naive_reference_judgements' = one judgement per "
                   "policy, K and returned reference",
}


def _policy_rules(name: str) -> Any:
    if ":" in name:
        return {"policy": name, "rules": "user policy (module:Class); see its own docs"}
    target = POLICIES.get(name).target or ""
    module, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    return {"policy": name, "class": target, "rules": dict(getattr(cls, "PROTOCOL", {}))}


def protocol_block(config: ScorerConfig) -> dict[str, Any]:
    offline_missing = sorted(CROSS_MODAL - set(config.policies)) if config.frame_embedder is None else []
    return {
        "rules": RULES,
        "guard": dict(guard.PROTOCOL),
        "store": dict(store.PROTOCOL),
        "metrics": dict(reference_evidence.PROTOCOL),
        "policies": {p: _policy_rules(p) for p in config.policies},
        "policies_not_run": ({p: "needs a text-image embedder (none in this configuration)"
                              for p in offline_missing}),
        "judge_prompts": {n: load_prompt(PACKAGE, n).describe() for n in ("reference", "same_view")},
        "encoders": {"segment_text": config.segment_text_embedder, "frame": config.frame_embedder,
                     "keyframe": config.keyframe_embedder, "similarity": config.similarity_embedder},
        "encoder_note": "the release names the families (qwen3_embedding, siglip2, dinov3) and no "
                        "size; the official preset takes qwen3-embedding/0.6b, "
                        "siglip2/base-patch16-224 and dinov3/vitb16",
        "preset": config.preset, "preset_values": {k: (list(v) if isinstance(v, tuple) else v)
                                                   for k, v in PRESETS[config.preset].items()},
        "budget": config.budget, "seed": config.seed, "lang": config.lang,
        "judge": config.judge, "same_view": config.same_view,
        "judge_image_side": config.judge_image_side,
    }
