"""VMem-Bench Track-B as a :class:`~vidmem.benchmarks.contract.Benchmark`: one story, one item.

``vidmem run vmem_track_b --generator NAME`` runs the closed loop: one rollout per
(story, condition) (:meth:`TrackB.rollouts`), each generated segment by segment from its
own earlier clips by :mod:`.loop` (:meth:`TrackB.run_rollout`, resumable per segment),
into ``RUN/rollouts/<story>/<condition>/seg_NNN.mp4``; then the rollouts are scored.
``vidmem score vmem_track_b --rollouts DIR`` scores rollouts brought by the user. A
story is one stored score item -- the cluster of the paired story bootstrap -- keyed by
its gold files' hashes, every clip's hash and the scorer configuration, so a killed run
resumes story by story and every judge answer is kept in the answer cache across runs.
Layout of the rollouts: :mod:`.scorer`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from vidmem.benchmarks.contract import Benchmark, CliOption, Outcome, Rollout, ScoreItem
from vidmem.benchmarks.jsonl_dataset import VideoFolderScan
from vidmem.benchmarks.vmem_track_b import cli
from vidmem.benchmarks.vmem_track_b.config import BASELINE, PRIVILEGED, ScorerConfig
from vidmem.benchmarks.vmem_track_b.stories import Story, load_stories
from vidmem.errors import UserInputError
from vidmem.io.hashing import file_sha256
from vidmem.runners.manifest import InputLocation
from vidmem.runners.store import RunDir

NAME = "vmem_track_b"
VERSION = "0.1"

#: options of ``run`` that shape the closed loop's retrieval (part of each rollout's key)
REQUESTS_OPTIONS = (
    CliOption("retrieval_preset", ("--retrieval-preset",), str, "offline",
              "Encoders of the retrieval conditions: offline (classic/tfidf, classic/hsv-lbp; "
              "no text-image embedder, so no text_frame/seg_frame) or official (Qwen3-"
              "Embedding, SigLIP 2, DINOv3)."),
    CliOption("segment_text_embedder", ("--segment-text-embedder",), str | None, None,
              "Segment-text embedder of the retrieval policies (overrides the preset)."),
    CliOption("frame_embedder", ("--frame-embedder",), str | None, None,
              "Text-image embedder of text_frame/seg_frame (overrides the preset)."),
    CliOption("keyframe_embedder", ("--keyframe-embedder",), str | None, None,
              "Keyframe image embedder of seg_dino_key (overrides the preset)."),
    CliOption("retrieval_opt", ("--retrieval-opt",), list[str] | None, None,
              "NAME:key=value for a retrieval encoder, e.g. dinov3/vitb16:weights=DIR."),
)


@dataclass(frozen=True)
class TrackBDataset:
    """A story root and its validated stories (in story-id order)."""

    root: Path
    stories: tuple[Story, ...]


class StoryRollouts(VideoFolderScan):
    """Which stories have a ``<rollouts>/<story>/`` folder (``found``: story -> folder)."""

    missing_what = "story rollout folder(s)"
    missing_hint = ("write <rollouts>/<story_id>/<condition>/seg_NNN.mp4 for every story, or "
                    "pass --allow-missing to score the stories that have a folder")
    folder_noun = "rollouts"
    id_noun = "story"


class TrackB(Benchmark):
    name = NAME
    version = VERSION
    title = "VMem-Bench Track-B"
    item_word = "story"
    outputs_word = "rollouts"
    outputs_flag = "--rollouts"
    root_flags = ("--gold", "--root")
    generates = True
    asks_judge = True
    requests_options = REQUESTS_OPTIONS
    root_help = ("Track-B story root: the folder holding gt/, gt_source/ and sut_prompts/ "
                 "(the release's trackB/en/).")
    videos_help = ("Rollouts folder: <story_id>/<condition>/seg_NNN.mp4 (or NNN.mp4, N.mp4; "
                   "see --index-base) for every story, condition and segment.")
    allow_missing_help = ("Score the stories that have a rollouts folder (list the others as "
                          "missing) and score a missing clip of a found story as all-absent "
                          "(counted per condition as missing_clips).")
    partial_outputs = True
    validate_options = cli.VALIDATE_OPTIONS
    stats_options = cli.STATS_OPTIONS
    scorer_options = cli.SCORER_OPTIONS
    summary_printer = "vidmem.benchmarks.vmem_track_b.benchmark:print_summary"
    report_builder = "vidmem.benchmarks.vmem_track_b.report:build_track_b_report"
    sim_builder = "vidmem.benchmarks.vmem_track_b.sim_build:build_track_b"
    demo_module = "vidmem.benchmarks.vmem_track_b.demo"
    comparer = "vidmem.benchmarks.vmem_track_b.compare:compare_runs"
    #: `vidmem analyze vmem_track_b RUN` (issue 15's analyses of a scored run)
    analyses = {
        "attribution": "vidmem.benchmarks.vmem_track_b.analysis_attribution",
        "identity": "vidmem.benchmarks.vmem_track_b.analysis_identity",
        "quality": "vidmem.benchmarks.vmem_track_b.analysis_quality",
        "stripping": "vidmem.benchmarks.vmem_track_b.analysis_stripping",
    }
    comparison_printer = "vidmem.benchmarks.vmem_track_b.compare:print_comparison"
    #: `vidmem run vmem_track_b ... --strip-appearance` (issue 15's spelling)
    analysis_flags = {"--strip-appearance": "stripping"}

    # ------------------------------------------------------------------ dataset

    def load(self, root: str | Path) -> TrackBDataset:
        return TrackBDataset(Path(root), tuple(load_stories(root)))

    def validate(self, root: str | Path, *, stories: str | None = None) -> Any:
        from vidmem.benchmarks.vmem_track_b.validate import validate_stories

        return validate_stories(root, stories)

    def validation_summary(self, report: Any) -> str:
        return f"no problems found ({report.n_stories} stories, {report.n_rows} segments)"

    def corpus_stats(self, root: str | Path, *, stories: str | None = None) -> dict[str, Any]:
        from vidmem.benchmarks.vmem_track_b.stats import corpus_stats

        return corpus_stats(root, stories)

    def select(self, dataset: TrackBDataset, config: ScorerConfig) -> TrackBDataset:
        """The stories of ``--stories`` (all without it).

        Raises:
            UserInputError: the selector names no story of the gold.
        """
        chosen = config.selected()
        if chosen is None:
            return dataset
        kept = tuple(s for s in dataset.stories if s.number in chosen)
        if not kept:
            raise UserInputError(f"--stories {config.stories}: no such story under "
                                 f"{dataset.root}", hint="see vidmem stats vmem_track_b")
        return TrackBDataset(dataset.root, kept)

    def items(self, dataset: TrackBDataset) -> list[Story]:
        return list(dataset.stories)

    def item_id(self, item: Story) -> str:
        return item.story_id

    # ------------------------------------------------------------------ rollouts

    def rollouts(self, dataset: TrackBDataset, out_dir: Path, config: ScorerConfig | None = None,
                 **options: Any) -> list[Rollout]:
        """One rollout per (story, condition) of ``config`` (default: the card's six), for
        the stories ``config.stories`` selects; run by :meth:`run_rollout`."""
        from vidmem.benchmarks.options import backend_options_for
        from vidmem.benchmarks.vmem_track_b.config import DEFAULT_CONDITIONS
        from vidmem.benchmarks.vmem_track_b.loop import RetrievalConfig, make_rollouts

        retrieval = RetrievalConfig.from_preset(
            options.get("retrieval_preset"),
            segment_text_embedder=options.get("segment_text_embedder"),
            frame_embedder=options.get("frame_embedder"),
            keyframe_embedder=options.get("keyframe_embedder"),
            seed=0 if config is None else config.seed)
        names = [n for n in (retrieval.segment_text_embedder, retrieval.frame_embedder,
                             retrieval.keyframe_embedder) if n]
        opts = backend_options_for(names, options.get("retrieval_opt"), None, None)
        retrieval = RetrievalConfig.from_dict({**retrieval.to_dict(), "backend_options":
                                               {k: v for k, v in opts.items() if v}})
        conditions = DEFAULT_CONDITIONS if config is None else config.conditions
        chosen = None if config is None else config.selected()
        stories = [s for s in dataset.stories if chosen is None or s.number in chosen]
        return make_rollouts(stories, conditions, out_dir, retrieval, gold_root=dataset.root,
                             benchmark=NAME, version=VERSION)

    def run_rollout(self, rollout: Rollout, generator: Any,  # type: ignore[override]
                    ctx: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Generate one (story, condition) closed-loop rollout (:func:`.loop.run_rollout`)."""
        from vidmem.benchmarks.vmem_track_b.loop import run_rollout

        return run_rollout(rollout, generator, ctx)

    def find_outputs(self, dataset: TrackBDataset, videos: str | Path) -> StoryRollouts:
        from vidmem.benchmarks.vmem_track_b.scorer import story_folder

        folder = Path(videos)
        if not folder.is_dir():
            raise UserInputError(f"{folder}: rollouts folder not found",
                                 hint="pass the folder holding <story_id>/<condition>/seg_NNN.mp4")
        found: dict[str, Path] = {}
        missing: list[str] = []
        reasons: dict[str, str] = {}
        for story in dataset.stories:
            path = story_folder(folder, story)
            if path is None:
                missing.append(story.story_id)
                reasons[story.story_id] = (f"neither {folder / story.story_id} nor "
                                           f"{folder / f'{story.number:04d}'} is a folder")
            else:
                found[story.story_id] = path
        return StoryRollouts(found, missing, reasons, [], folder)

    # ------------------------------------------------------------------ scoring

    def scorer_config(self, **options: Any) -> ScorerConfig:
        from vidmem.benchmarks.command_outputs import command_outputs
        from vidmem.benchmarks.vmem_track_b.config import present_conditions

        config = cli.scorer_config(**options)
        brought = command_outputs()
        if options.get("conditions") is None and brought is not None:
            # vidmem score without --conditions: the card's conditions the rollouts hold
            config = present_conditions(config, brought)
        return config

    def config_from_dict(self, data: Mapping[str, Any]) -> ScorerConfig:
        return ScorerConfig.from_dict(data)

    def score_items(self, dataset: TrackBDataset, scan: Any, config: ScorerConfig,
                    run_dir: Path, *, allow_missing: bool = False,
                    **requests: Any) -> list[ScoreItem]:
        from vidmem.benchmarks.vmem_track_b.scorer import story_clips

        dataset = self.select(dataset, config)
        items = []
        for story in dataset.stories:
            folder = scan.found.get(story.story_id)
            if folder is None:
                continue
            clips = story_clips(folder, story, config.conditions, config.index_base,
                                allow_missing=allow_missing)
            items.append(ScoreItem(story.story_id, {
                "gold_root": str(dataset.root), "number": story.number,
                "gold_sha256": dict(story.sha256),
                "clips": {c: [None if p is None else str(p) for p in paths]
                          for c, paths in clips.items()},
                "clips_sha256": {c: [None if p is None else file_sha256(p) for p in paths]
                                 for c, paths in clips.items()},
                "scorer": config.to_dict(), "version": VERSION,
            }, unkeyed=("gold_root", "clips")))
        return items

    def load_backends(self, config: ScorerConfig) -> Any:
        from vidmem.benchmarks.vmem_track_b.scorer import TrackBScorer

        return TrackBScorer(config)

    def score_item(self, request: Mapping[str, Any], backends: Any) -> dict[str, Any]:
        return backends.score_story(request)

    def row(self, item: Story, stored: Any, status: str) -> dict[str, Any]:
        row = {"story_id": item.story_id, "number": item.number, "status": status}
        return {**row, **stored.score} if status == "scored" else row

    def aggregate(self, rows: list[dict[str, Any]], config: ScorerConfig,
                  outcome: Outcome) -> dict[str, Any]:
        from vidmem.benchmarks.vmem_track_b.scorer import aggregate_rows

        return {
            "benchmark": NAME, "preset": config.preset,
            "official": config.preset == "official" and config.protocol_defaults,
            "protocol_defaults": config.protocol_defaults, "scorer": config.to_dict(),
            "n_stories": outcome.n_items,
            **aggregate_rows(rows, config),
            "missing": {s: outcome.missing_reasons.get(s, "missing") for s in outcome.missing},
            "absent_conditions": list(config.absent_conditions),
            "errors": [list(e) for e in outcome.errors], "execution": dict(outcome.execution),
        }

    optional_backends = {"analyze identity: face_embedder": "face/arcface-onnx"}

    def preset_backends(self) -> dict[str, dict[str, str | None]]:
        from vidmem.benchmarks.vmem_track_b.config import PRESETS
        from vidmem.benchmarks.vmem_track_b.loop_config import RETRIEVAL_PRESETS

        return {p: {**{f"score: {k}": v for k, v in PRESETS[p].items() if k == "judge"},
                    **{f"run (retrieval): {k}": v
                       for k, v in RETRIEVAL_PRESETS.get(p, {}).items()}}
                for p in PRESETS}

    def protocol(self, config: ScorerConfig) -> dict[str, Any]:
        from vidmem.benchmarks.vmem_track_b.loop import PROTOCOL as LOOP
        from vidmem.benchmarks.vmem_track_b.protocol import protocol_block

        block = protocol_block(config)
        block["closed_loop"] = {**LOOP, "privileged": sorted(PRIVILEGED)}
        return block

    def run_config(self, dataset: TrackBDataset, config: ScorerConfig) -> dict[str, Any]:
        # The root is only where the gold is: item keys hold the gold and clip SHA-256s.
        return {"gold_root": InputLocation(dataset.root), "stories": [s.story_id for s in dataset.stories],
                "scorer": config.to_dict()}

    def seeds(self, config: ScorerConfig) -> dict[str, int]:
        return {"roster": config.seed, "bootstrap": config.bootstrap_seed}

    def backend_infos(self, backends: Any) -> dict[str, Any]:
        return {"judge": backends.judge.info()}


def _fmt(v: Any) -> str:
    return "-" if v is None else f"{v:.3f}"


def _delta(d: Mapping[str, Any] | None, rate: str) -> str:
    if not d:
        return "-"
    r = d["rates"][rate]
    if r["difference"] is None:
        return "-"
    ci = "" if r["ci_low"] is None else f" [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]"
    return f"{r['difference']:+.3f}{ci}"


def print_summary(console: Console, summary: Mapping[str, Any], run: RunDir) -> None:
    from rich.table import Table

    table = Table(title=f"VMem-Bench Track-B, {summary['n_stories_scored']} stories, "
                  f"{summary['n_segments']} segments per condition ({summary['preset']} preset)")
    for col in ("condition", "Recall", "Precision", "F1", "Avoid-OK", "dRecall", "dPrecision",
                "dAvoid-OK", "unparsable"):
        table.add_column(col, justify="left" if col == "condition" else "right")
    for cond in summary["conditions"]:
        p = summary["pooled"][cond]
        d = summary["deltas"].get(cond)
        label = cond + (" (privileged)" if cond in PRIVILEGED else "") + \
            (" (baseline)" if cond == BASELINE else "")
        table.add_row(label, _fmt(p["recall"]["value"]), _fmt(p["precision"]["value"]),
                      _fmt(p["f1"]), _fmt(p["avoid_ok"]["value"]), _delta(d, "recall"),
                      _delta(d, "precision"), _delta(d, "avoid_ok"),
                      str(p["unparsable"]["numerator"]))
    console.print(table)
    missing = {c: n for c in summary["conditions"]
               if (n := summary.get("judge", {}).get(c, {}).get("missing_clips", 0))}
    if missing:
        console.print(f"missing clips scored as all-absent (--allow-missing): {missing}",
                      style="yellow", highlight=False)
    if summary.get("absent_conditions"):
        console.print("not scored, no story's rollouts folder has them: "
                      + ", ".join(summary["absent_conditions"])
                      + " (the card's conditions found were scored; --conditions names them)",
                      style="yellow", highlight=False)
    if summary.get("baseline") is None:
        console.print("no 'none' condition: no differences were computed", highlight=False)
    else:
        console.print("d = condition minus none, paired story bootstrap "
                      f"({summary['scorer']['n_resamples']} draws, 95% percentile CI); "
                      "last_seen is a privileged diagnostic, not a deployable policy",
                      highlight=False)
