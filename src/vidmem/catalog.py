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
    benchmarks.add("cmbench", "vidmem.benchmarks.cmbench:BENCHMARK", "CMBench: recall of a target seen earlier in a one-minute context")
    benchmarks.add("memory_loop", "vidmem.benchmarks.memory_loop:BENCHMARK", "Memory loop: revisit fidelity and the Memory Half-Life fit")
    benchmarks.add("vmem_track_a", "vidmem.benchmarks.vmem_track_a:BENCHMARK", "VMem-Bench Track-A: which references a memory policy retrieves from real films")
    benchmarks.add("vmem_track_b", "vidmem.benchmarks.vmem_track_b:BENCHMARK", "VMem-Bench Track-B: closed-loop story generation with memory policies", sim_build="vidmem.benchmarks.vmem_track_b.sim_build:build_track_b")
    benchmarks.add("mist", "vidmem.benchmarks.mist:BENCHMARK", "MIST: gate-by-gate scoring of hidden-state reveals, with M3-Agent", sim_build="vidmem.benchmarks.mist.sim_build:build_mist")

    # Offline classic backends: core install, no weights. Proxies, never the official protocol.
    backends.add("classic/hsv-lbp", "vidmem.models.backends.classic_embed:HsvLbpEmbedder", "offline proxy: HSV colour histogram + uniform LBP texture (default classic image embedder)", role="image_embedder")
    backends.add("classic/lab-hog", "vidmem.models.backends.classic_embed:LabHogEmbedder", "offline proxy: Lab colour histogram + HOG", role="image_embedder")
    backends.add("classic/hsv-hist", "vidmem.models.backends.classic_embed:HsvHistEmbedder", "offline proxy: HSV colour histogram only", role="image_embedder")
    backends.add("classic/sift", "vidmem.models.backends.classic_sift:SiftDetector", "offline proxy: find an image query by SIFT matching + RANSAC homography (no text queries)", role="detector")
    backends.add("classic/grabcut", "vidmem.models.backends.classic_segment:GrabCutSegmenter", "offline proxy: GrabCut from a box prompt, box fallback", role="segmenter")
    backends.add("classic/box", "vidmem.models.backends.classic_segment:BoxSegmenter", "baseline: the box rectangle as the mask", role="segmenter")
    backends.add("classic/tfidf", "vidmem.models.backends.classic_text:TfidfTextEmbedder", "offline proxy: hashed char n-gram TF(-IDF) text vectors", role="text_embedder")
    backends.add("classic/farneback", "vidmem.models.backends.classic_flow:FarnebackFlow", "offline proxy: OpenCV Farneback dense optical flow (the quality controls' stand-in for RAFT and AMT)", role="flow")
    # transformers embedders (extra "models"); weights are looked up offline, fetched with `vidmem models fetch`.
    # official=True marks a family a protocol card names (DINOv2, OWL-ViT, SAM 2); the cards name no
    # size, so the variant a run must use to be labelled official is the one in each benchmark's
    # scorer PRESETS["official"] (CMBench: owlvit/base-patch32 + sam2/base-plus + dinov2/base;
    # memory loop: dinov2/base), and the descriptions below only point at it.
    backends.add("dinov2/small", "vidmem.models.backends.dinov2:Dinov2Small", "DINOv2 ViT-S/14 CLS embedding, 384-d", extra="models", role="image_embedder", checkpoint="facebook/dinov2-small", params="22M", vram="~0.5 GB", official=True)
    backends.add("dinov2/base", "vidmem.models.backends.dinov2:Dinov2Base", "DINOv2 ViT-B/14 CLS embedding, 768-d (the official presets' embedder)", extra="models", role="image_embedder", checkpoint="facebook/dinov2-base", params="86M", vram="~1 GB", official=True)
    backends.add("dinov2/large", "vidmem.models.backends.dinov2:Dinov2Large", "DINOv2 ViT-L/14 CLS embedding, 1024-d", extra="models", role="image_embedder", checkpoint="facebook/dinov2-large", params="304M", vram="~2 GB", official=True)
    backends.add("dinov2/giant", "vidmem.models.backends.dinov2:Dinov2Giant", "DINOv2 ViT-g/14 CLS embedding, 1536-d", extra="models", role="image_embedder", checkpoint="facebook/dinov2-giant", params="1.1B", vram="~6 GB", official=True)
    backends.add("dinov3/vits16", "vidmem.models.backends.dinov3:Dinov3ViTS16", "DINOv3 ViT-S/16 CLS embedding, 384-d (gated weights)", extra="models", role="image_embedder", checkpoint="facebook/dinov3-vits16-pretrain-lvd1689m", params="21M", vram="~0.5 GB", official=True)
    backends.add("dinov3/vitb16", "vidmem.models.backends.dinov3:Dinov3ViTB16", "DINOv3 ViT-B/16 CLS embedding, 768-d (gated weights)", extra="models", role="image_embedder", checkpoint="facebook/dinov3-vitb16-pretrain-lvd1689m", params="86M", vram="~1 GB", official=True)
    backends.add("dinov3/vitl16", "vidmem.models.backends.dinov3:Dinov3ViTL16", "DINOv3 ViT-L/16 CLS embedding, 1024-d (gated weights)", extra="models", role="image_embedder", checkpoint="facebook/dinov3-vitl16-pretrain-lvd1689m", params="300M", vram="~2 GB", official=True)
    backends.add("clip/vit-b-32", "vidmem.models.backends.clip:ClipVitB32", "OpenAI CLIP ViT-B/32 image+text embeddings, 512-d", extra="models", role="image_embedder,text_embedder", checkpoint="openai/clip-vit-base-patch32", params="151M", vram="~1 GB")
    backends.add("clip/vit-b-16", "vidmem.models.backends.clip:ClipVitB16", "OpenAI CLIP ViT-B/16 image+text embeddings, 512-d", extra="models", role="image_embedder,text_embedder", checkpoint="openai/clip-vit-base-patch16", params="150M", vram="~1.5 GB")
    backends.add("clip/vit-l-14", "vidmem.models.backends.clip:ClipVitL14", "OpenAI CLIP ViT-L/14 image+text embeddings, 768-d", extra="models", role="image_embedder,text_embedder", checkpoint="openai/clip-vit-large-patch14", params="428M", vram="~3 GB")
    backends.add("siglip/base-patch16-224", "vidmem.models.backends.clip:SiglipBasePatch16", "SigLIP ViT-B/16 224px image+text embeddings, 768-d (texts need sentencepiece)", extra="models", role="image_embedder,text_embedder", checkpoint="google/siglip-base-patch16-224", params="203M", vram="~1.5 GB")
    backends.add("siglip2/base-patch16-224", "vidmem.models.backends.clip:Siglip2BasePatch16", "SigLIP 2 ViT-B/16 224px image+text embeddings, 768-d", extra="models", role="image_embedder,text_embedder", checkpoint="google/siglip2-base-patch16-224", params="375M", vram="~2 GB")
    backends.add("sentence/all-minilm-l6-v2", "vidmem.models.backends.sentence:SentenceEmbedder", "all-MiniLM-L6-v2 mean-pooled sentence embeddings, 384-d", extra="models", role="text_embedder", checkpoint="sentence-transformers/all-MiniLM-L6-v2", params="22.7M", vram="~0.3 GB")
    backends.add("qwen3-embedding/0.6b", "vidmem.models.backends.qwen3_embedding:Qwen3Embedding06B", "Qwen3-Embedding-0.6B last-token text embeddings, 1024-d (MRL 32-1024), instructed queries (embed_queries)", extra="models", role="text_embedder", checkpoint="Qwen/Qwen3-Embedding-0.6B", params="0.6B", vram="~1.5 GB (bf16)")
    backends.add("qwen3-embedding/4b", "vidmem.models.backends.qwen3_embedding:Qwen3Embedding4B", "Qwen3-Embedding-4B last-token text embeddings, 2560-d (MRL 32-2560), instructed queries (embed_queries)", extra="models", role="text_embedder", checkpoint="Qwen/Qwen3-Embedding-4B", params="4B", vram="~9 GB (bf16)")
    backends.add("qwen3-embedding/8b", "vidmem.models.backends.qwen3_embedding:Qwen3Embedding8B", "Qwen3-Embedding-8B last-token text embeddings, 4096-d (MRL 32-4096), instructed queries (embed_queries)", extra="models", role="text_embedder", checkpoint="Qwen/Qwen3-Embedding-8B", params="8B", vram="~17 GB (bf16)")
    # transformers detectors and segmenters (extra "models").
    backends.add("owlvit/base-patch32", "vidmem.models.backends.owlvit:OwlVitBasePatch32", "OWL-ViT B/32 open-vocabulary detector, text or image queries (the official CMBench preset's detector)", role="detector", extra="models", checkpoint="google/owlvit-base-patch32", params="153M", vram="~1.5 GB", official=True)
    backends.add("owlvit/base-patch16", "vidmem.models.backends.owlvit:OwlVitBasePatch16", "OWL-ViT B/16 open-vocabulary detector, text or image queries", role="detector", extra="models", checkpoint="google/owlvit-base-patch16", params="153M", vram="~2 GB")
    backends.add("owlvit/large-patch14", "vidmem.models.backends.owlvit:OwlVitLargePatch14", "OWL-ViT L/14 open-vocabulary detector, text or image queries", role="detector", extra="models", checkpoint="google/owlvit-large-patch14", params="434M", vram="~4 GB")
    backends.add("owlv2/base-patch16-ensemble", "vidmem.models.backends.owlvit:Owlv2BasePatch16Ensemble", "OWLv2 B/16 (ensemble) open-vocabulary detector, text or image queries", role="detector", extra="models", checkpoint="google/owlv2-base-patch16-ensemble", params="155M", vram="~3 GB")
    backends.add("grounding-dino/tiny", "vidmem.models.backends.grounding_dino:GroundingDinoTiny", "Grounding DINO (Swin-T) phrase grounding, text queries only", role="detector", extra="models", checkpoint="IDEA-Research/grounding-dino-tiny", params="172M", vram="~3 GB")
    backends.add("grounding-dino/base", "vidmem.models.backends.grounding_dino:GroundingDinoBase", "Grounding DINO (Swin-B) phrase grounding, text queries only", role="detector", extra="models", checkpoint="IDEA-Research/grounding-dino-base", params="233M", vram="~4 GB")
    backends.add("sam2/tiny", "vidmem.models.backends.sam:Sam2Tiny", "SAM 2.1 Hiera-T box-prompted segmenter", role="segmenter", extra="models", checkpoint="facebook/sam2.1-hiera-tiny", params="39M", vram="~1 GB", official=True)
    backends.add("sam2/small", "vidmem.models.backends.sam:Sam2Small", "SAM 2.1 Hiera-S box-prompted segmenter", role="segmenter", extra="models", checkpoint="facebook/sam2.1-hiera-small", params="46M", vram="~1 GB", official=True)
    backends.add("sam2/base-plus", "vidmem.models.backends.sam:Sam2BasePlus", "SAM 2.1 Hiera-B+ box-prompted segmenter (the official CMBench preset's segmenter)", role="segmenter", extra="models", checkpoint="facebook/sam2.1-hiera-base-plus", params="81M", vram="~1.5 GB", official=True)
    backends.add("sam2/large", "vidmem.models.backends.sam:Sam2Large", "SAM 2.1 Hiera-L box-prompted segmenter", role="segmenter", extra="models", checkpoint="facebook/sam2.1-hiera-large", params="224M", vram="~2.5 GB", official=True)
    backends.add("sam/vit-base", "vidmem.models.backends.sam:SamVitBase", "SAM ViT-B box-prompted segmenter (alternative to SAM 2)", role="segmenter", extra="models", checkpoint="facebook/sam-vit-base", params="94M", vram="~2 GB")
    backends.add("sam/vit-large", "vidmem.models.backends.sam:SamVitLarge", "SAM ViT-L box-prompted segmenter", role="segmenter", extra="models", checkpoint="facebook/sam-vit-large", params="312M", vram="~3.5 GB")
    backends.add("sam/vit-huge", "vidmem.models.backends.sam:SamVitHuge", "SAM ViT-H box-prompted segmenter", role="segmenter", extra="models", checkpoint="facebook/sam-vit-huge", params="641M", vram="~6 GB")
    # face identity (extra "faces": onnxruntime); the user supplies InsightFace's buffalo_l ONNX files.
    backends.add("face/arcface-onnx", "vidmem.models.backends.face_arcface_onnx:ArcFaceOnnx", "ArcFace ONNX (InsightFace buffalo_l w600k_r50, user-supplied) on the largest face; SCRFD det_10g when the pack has it, else OpenCV's Haar cascade", extra="faces", role="face_embedder", checkpoint=None, params="43.6M", vram="~0.3 GB")
    # place_embedder: every image_embedder above plays it on whole frames (vidmem.models.loading.ALSO_PLAYS),
    # and so does any package.module:Class with embed_images (MegaLoc).
    backends.add("judge/openai", "vidmem.models.backends.judge_openai:OpenAIJudge", "VLM judge over any OpenAI-compatible chat server (vLLM, SGLang, OpenAI)", role="judge")
    backends.add("judge/transformers", "vidmem.models.backends.judge_qwen:QwenVLJudge", "local Qwen-VL judge with transformers (any Qwen2-VL / Qwen2.5-VL / Qwen3-VL weights dir; greedy)", extra="models", role="judge", checkpoint=None, params="7-9B", vram="~18-20 GB (bf16)")
    backends.add("judge/qwen2-vl-7b", "vidmem.models.backends.judge_qwen:Qwen2VL7BJudge", "local Qwen2-VL-7B-Instruct judge with transformers (greedy)", extra="models", role="judge", checkpoint="Qwen/Qwen2-VL-7B-Instruct", params="8.3B", vram="~18 GB (bf16)")
    backends.add("judge/qwen2.5-vl-7b", "vidmem.models.backends.judge_qwen:Qwen25VL7BJudge", "local Qwen2.5-VL-7B-Instruct judge with transformers (greedy)", extra="models", role="judge", checkpoint="Qwen/Qwen2.5-VL-7B-Instruct", params="8.3B", vram="~18 GB (bf16)")
    backends.add("judge/qwen3-vl-8b", "vidmem.models.backends.judge_qwen:Qwen3VL8BJudge", "local Qwen3-VL-8B-Instruct judge with transformers (greedy)", extra="models", role="judge", checkpoint="Qwen/Qwen3-VL-8B-Instruct", params="8.8B", vram="~20 GB (bf16)")
    backends.add("judge/sim-cards", "vidmem.models.backends.judge_sim_cards:SimCardJudge", "offline presence judge for sim cases: entity appearance cards + SIFT image-guided detection (not a VLM); weights = a card deck written by vidmem.sim.cards.write_card_deck", role="judge")
    backends.add("rewriter/openai", "vidmem.models.backends.rewriter_openai:OpenAIRewriter", "text LLM that rewrites an instruction's failed move (M3-Agent) over any OpenAI-compatible chat server", role="rewriter")
    backends.add("rewriter/sim-grammar", "vidmem.models.backends.rewriter_sim_grammar:SimGrammarRewriter", "offline: deterministic rewrites of the sim's reveal grammar per failure mode (M3-Agent on the sim; not an LLM)", role="rewriter")

    generators.add("sim", "vidmem.generators.sim:SimGenerator", "offline procedural world with tunable memory (perfect, none, decay:TAU, leaky:P)")
    generators.add("command", "vidmem.generators.command:CommandGenerator", "any generator run as a shell command template")
    generators.add("wan2.2-ti2v-5b", "vidmem.generators.diffusers.wan:Wan22TI2V5B", "Wan2.2-TI2V-5B through diffusers: text-to-video, or image-to-video from a start image / context's last frame (1280x704, 121 frames, 24 fps)", extra="diffusers", checkpoint="Wan-AI/Wan2.2-TI2V-5B-Diffusers", params="5B", vram="~24 GB (bf16; less with offload=model)")
    generators.add("wan2.2-t2v-a14b", "vidmem.generators.diffusers.wan:Wan22T2VA14B", "Wan2.2-T2V-A14B through diffusers: text-to-video with two experts (boundary_ratio, guidance_scale_2)", extra="diffusers", checkpoint="Wan-AI/Wan2.2-T2V-A14B-Diffusers", params="2x14B", vram="~80 GB (bf16; offload=model to fit less)")
    generators.add("wan2.2-i2v-a14b", "vidmem.generators.diffusers.wan:Wan22I2VA14B", "Wan2.2-I2V-A14B through diffusers: image-to-video with two experts (boundary_ratio, guidance_scale_2)", extra="diffusers", checkpoint="Wan-AI/Wan2.2-I2V-A14B-Diffusers", params="2x14B", vram="~80 GB (bf16; offload=model to fit less)")
    generators.add("flux2-wan", "vidmem.generators.diffusers.flux2_wan:Flux2Wan", "the VMem-Bench keyframe stack: FLUX.2 klein keyframe from the references -> Wan2.2-TI2V-5B clip (render 1280x704, deliver 832x480, 121 frames); intermediates kept", extra="diffusers", checkpoint="black-forest-labs/FLUX.2-klein-4B + Wan-AI/Wan2.2-TI2V-5B-Diffusers", params="4B + 5B", vram="~40 GB (bf16; less with offload=model)")
    generators.add("diffusers", "vidmem.generators.diffusers.any_pipeline:AnyPipeline", "any diffusers pipeline over your own weights: pipeline=ClassName,weights=DIR", extra="diffusers")

    # memory policies (vidmem.memory; Track-A replays them, Track-B will generate with them)
    policies.add("text_frame", "vidmem.memory.policies.text_frame:TextFramePolicy", "rank every past frame (1 fps) by text-to-image similarity")
    policies.add("seg_uniform", "vidmem.memory.policies.seg_uniform:SegUniformPolicy", "top-5 past segments by text similarity, their 1 fps frames")
    policies.add("seg_dino_key", "vidmem.memory.policies.seg_dino_key:SegDinoKeyPolicy", "top-5 segments, 3 keyframes each by farthest-point selection (2 fps)")
    policies.add("seg_frame", "vidmem.memory.policies.seg_frame:SegFramePolicy", "top-5 segments' frames re-ranked frame-wise, reciprocal-rank fused (k = 60)")
    policies.add("recency", "vidmem.memory.policies.recency:RecencyPolicy", "control: the most recent earlier frames")
    policies.add("random", "vidmem.memory.policies.random_frames:RandomPolicy", "control: seeded random earlier frames")
    policies.add("none", None, "no memory: the generator sees only the current prompt", status=planned)
    policies.add("last_seen", None, "privileged diagnostic: where each required entity last appeared", status=planned)
