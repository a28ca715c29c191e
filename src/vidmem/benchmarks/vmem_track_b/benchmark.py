"""VMem-Bench Track-B as a :class:`~vidmem.benchmarks.contract.Benchmark`: one story, one item.

This slice scores rollouts brought by the user (``vidmem score vmem_track_b``; ``run``
is the same, ``requests`` is refused): the closed-loop generation of the conditions is
not built yet (``generates = False``). A story is one stored item -- the cluster of the
paired story bootstrap -- keyed by its gold files' hashes, every clip's hash and the
scorer configuration, so a killed run resumes story by story and every judge answer is
kept in the answer cache across runs. Layout of the rollouts: :mod:`.scorer`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from vidmem.benchmarks.contract import Benchmark, Outcome, ScoreItem
from vidmem.benchmarks.jsonl_dataset import VideoFolderScan
from vidmem.benchmarks.vmem_track_b import cli
from vidmem.benchmarks.vmem_track_b.config import BASELINE, PRIVILEGED, ScorerConfig
from vidmem.benchmarks.vmem_track_b.stories import Story, load_stories
from vidmem.errors import UserInputError
from vidmem.io.hashing import file_sha256
from vidmem.runners.store import RunDir

NAME = "vmem_track_b"
VERSION = "0.1"


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
    generates = False
    asks_judge = True
    root_help = ("Track-B story root: the folder holding gt/, gt_source/ and sut_prompts/ "
                 "(the release's trackB/en/).")
    videos_help = ("Rollouts folder: <story_id>/<condition>/seg_NNN.mp4 (or NNN.mp4, N.mp4; "
                   "see --index-base) for every story, condition and segment.")
    allow_missing_help = ("Score the stories that have a rollouts folder; list the others as "
                          "missing. Whole stories only: a story with a folder must hold every "
                          "clip of every condition.")
    validate_options = cli.VALIDATE_OPTIONS
    stats_options = cli.STATS_OPTIONS
    scorer_options = cli.SCORER_OPTIONS
    summary_printer = "vidmem.benchmarks.vmem_track_b.benchmark:print_summary"
    report_builder = "vidmem.benchmarks.vmem_track_b.report:build_track_b_report"
    sim_builder = "vidmem.benchmarks.vmem_track_b.sim_build:build_track_b"

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

    def items(self, dataset: TrackBDataset) -> list[Story]:
        return list(dataset.stories)

    def item_id(self, item: Story) -> str:
        return item.story_id

    # ------------------------------------------------------------------ rollouts

    def rollouts(self, dataset: TrackBDataset, out_dir: Path, **options: Any) -> list[Any]:
        return []  # closed-loop generation is not built yet: bring your own rollouts

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
        return cli.scorer_config(**options)

    def config_from_dict(self, data: Mapping[str, Any]) -> ScorerConfig:
        return ScorerConfig.from_dict(data)

    def score_items(self, dataset: TrackBDataset, scan: Any, config: ScorerConfig,
                    run_dir: Path, **requests: Any) -> list[ScoreItem]:
        from vidmem.benchmarks.vmem_track_b.scorer import story_clips

        chosen = config.selected()
        if chosen is not None:
            unknown = sorted(chosen - {s.number for s in dataset.stories})
            if unknown and not chosen & {s.number for s in dataset.stories}:
                raise UserInputError(f"--stories {config.stories}: no such story under "
                                     f"{dataset.root}", hint="see vidmem stats vmem_track_b")
        items = []
        for story in dataset.stories:
            folder = scan.found.get(story.story_id)
            if folder is None or (chosen is not None and story.number not in chosen):
                continue
            clips = story_clips(folder, story, config.conditions, config.index_base)
            items.append(ScoreItem(story.story_id, {
                "gold_root": str(dataset.root), "number": story.number,
                "gold_sha256": dict(story.sha256),
                "clips": {c: [str(p) for p in paths] for c, paths in clips.items()},
                "clips_sha256": {c: [file_sha256(p) for p in paths] for c, paths in clips.items()},
                "scorer": config.to_dict(), "version": VERSION,
            }, unkeyed=("gold_root", "clips")))
        return items

    def load_backends(self, config: ScorerConfig) -> Any:
        from vidmem.benchmarks.vmem_track_b.scorer import TrackBScorer

        return TrackBScorer(config)

    def with_judges(self, backends: Any, wrap: Any) -> Any:
        backends.judge = wrap(backends.judge)
        return backends

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
            "errors": [list(e) for e in outcome.errors], "execution": dict(outcome.execution),
        }

    def protocol(self, config: ScorerConfig) -> dict[str, Any]:
        from vidmem.benchmarks.vmem_track_b.protocol import protocol_block

        return protocol_block(config)

    def run_config(self, dataset: TrackBDataset, config: ScorerConfig) -> dict[str, Any]:
        return {"gold_root": str(dataset.root), "stories": [s.story_id for s in dataset.stories],
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
    if summary.get("baseline") is None:
        console.print("no 'none' condition: no differences were computed", highlight=False)
    else:
        console.print("d = condition minus none, paired story bootstrap "
                      f"({summary['scorer']['n_resamples']} draws, 95% percentile CI); "
                      "last_seen is a privileged diagnostic, not a deployable policy",
                      highlight=False)
