"""VMem-Bench Track-A as a :class:`~vidmem.benchmarks.contract.Benchmark`: one film, one item.

Track-A generates nothing: it replays memory policies over real films (the user's
videos, matched to the official gold) and judges the references they hand over before
generation. A film is one stored item, keyed by its gold files' hashes, its video's hash
and the scorer configuration, so a killed run resumes film by film and every judge
answer is kept in the answer cache across runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from vidmem.benchmarks.contract import Benchmark, Outcome, ScoreItem
from vidmem.benchmarks.jsonl_dataset import VideoFolderScan
from vidmem.benchmarks.vmem_track_a import cli
from vidmem.benchmarks.vmem_track_a.config import CROSS_MODAL, PRESETS, ScorerConfig
from vidmem.benchmarks.vmem_track_a.layout import FilmDir, discover_films
from vidmem.errors import UserInputError
from vidmem.io.hashing import file_sha256
from vidmem.metrics import reference_evidence as ev
from vidmem.runners.manifest import InputLocation
from vidmem.runners.store import RunDir

NAME = "vmem_track_a"
VERSION = "1.0"
#: the run directory's folder of reference thumbnails
THUMBNAILS = "thumbnails"
METRICS = ("precision", "recall", "f1", "r_v", "r_s", "sel_eff", "refs_per_segment")


@dataclass(frozen=True)
class TrackADataset:
    """A gold root and the film folders under it (gold is read per language when scored)."""

    root: Path
    films: tuple[FilmDir, ...]


class FilmVideos(VideoFolderScan):
    missing_what = "film video(s)"
    missing_hint = "put <film_id>.mp4 (or one .mp4 in <film_id>/) for every film in --videos"
    folder_noun = "film video"
    id_noun = "film"


def _film_end_seconds(film: FilmDir) -> float:
    """The last segment's end from ``chunk_index.json`` (the same in every language)."""
    try:
        chunks = json.loads((film.gold_dir / "chunk_index.json").read_text(encoding="utf-8"))["chunks"]
        return max(float(c["seconds_span"][1]) for c in chunks)
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return 0.0  # unreadable gold is reported by the gold loader, with every problem


class TrackA(Benchmark):
    name = NAME
    version = VERSION
    title = "VMem-Bench Track-A"
    item_word = "film"
    outputs_word = "videos"
    outputs_flag = "--videos"
    root_flags = ("--gold", "--root")
    generates = False
    asks_judge = True
    root_help = ("Track-A gold: one film folder (<film>/gold/), a dataset folder "
                 "(BlenderOpenMovies/<film>/gold/) or a folder of datasets.")
    videos_help = "Folder of the films' videos: <film_id>.mp4 or <film_id>/<any>.mp4."
    allow_missing_help = "Score the films that have a video; list the others as missing."
    validate_options = cli.VALIDATE_OPTIONS
    stats_options = cli.STATS_OPTIONS
    scorer_options = cli.SCORER_OPTIONS
    summary_printer = "vidmem.benchmarks.vmem_track_a.benchmark:print_summary"
    report_builder = "vidmem.benchmarks.vmem_track_a.report:build_track_a_report"
    sim_builder = "vidmem.benchmarks.vmem_track_a.sim_build:build_track_a"
    demo_module = "vidmem.benchmarks.vmem_track_a.demo"

    # ------------------------------------------------------------------ dataset

    def load(self, root: str | Path) -> TrackADataset:
        films, problems = discover_films(root)
        if problems:
            first = problems[0]
            raise UserInputError(f"{root}: {first.message}", hint=f"vidmem validate {NAME} --gold {root}")
        return TrackADataset(Path(root), tuple(films))

    def validate(self, root: str | Path, *, lang: str = "zh") -> Any:
        from vidmem.benchmarks.vmem_track_a.validate import validate_gold

        return validate_gold(root, lang)

    def validation_summary(self, report: Any) -> str:
        return f"no problems found ({report.n_films} films, {report.n_rows} segments)"

    def corpus_stats(self, root: str | Path, *, lang: str = "zh") -> dict[str, Any]:
        from vidmem.benchmarks.vmem_track_a.gold import load_gold
        from vidmem.benchmarks.vmem_track_a.stats import corpus_stats

        return corpus_stats(load_gold(root, lang))

    def items(self, dataset: TrackADataset) -> list[FilmDir]:
        return list(dataset.films)

    def item_id(self, item: FilmDir) -> str:
        return item.film_id

    # ------------------------------------------------------------------ videos

    def rollouts(self, dataset: TrackADataset, out_dir: Path, **options: Any) -> list[Any]:
        return []  # nothing to generate

    def find_outputs(self, dataset: TrackADataset, videos: str | Path) -> FilmVideos:
        from vidmem.benchmarks.vmem_track_a.gold import find_film_video
        from vidmem.io.video import probe

        folder = Path(videos)
        found: dict[str, Path] = {}
        missing: list[str] = []
        reasons: dict[str, str] = {}
        for film in dataset.films:
            try:
                path = find_film_video(folder, film.film_id)
                info = probe(path)
            except UserInputError as exc:
                missing.append(film.film_id)
                reasons[film.film_id] = exc.message
                continue
            need = _film_end_seconds(film)
            slack = 1.0 / info.fps if info.fps else 0.0
            if info.duration_seconds + slack < need:
                missing.append(film.film_id)
                reasons[film.film_id] = (f"{path} lasts {info.duration_seconds:.2f} s; the gold's "
                                         f"last segment ends at {need:.2f} s")
                continue
            found[film.film_id] = path
        return FilmVideos(found, missing, reasons, [], folder)

    # ------------------------------------------------------------------ scoring

    def scorer_config(self, **options: Any) -> ScorerConfig:
        return cli.scorer_config(**options)

    def config_from_dict(self, data: Mapping[str, Any]) -> ScorerConfig:
        return ScorerConfig.from_dict(data)

    def score_items(self, dataset: TrackADataset, scan: Any, config: ScorerConfig,
                    run_dir: Path, **requests: Any) -> list[ScoreItem]:
        from vidmem.benchmarks.vmem_track_a.gold import load_gold

        films = {f.film_id: f for f in load_gold(dataset.root, config.lang)}
        items = []
        for film_dir in dataset.films:
            video = scan.found.get(film_dir.film_id)
            if video is None:
                continue
            film = films[film_dir.film_id]
            items.append(ScoreItem(film.film_id, {
                "film_dir": str(film_dir.path), "gold_sha256": dict(film.sha256),
                "video": str(video), "video_sha256": file_sha256(video),
                "scorer": config.to_dict(), "version": VERSION,
                "thumbnails_dir": str(Path(run_dir) / THUMBNAILS),
            }, unkeyed=("film_dir", "video", "thumbnails_dir")))
        return items

    def load_backends(self, config: ScorerConfig) -> Any:
        from vidmem.benchmarks.vmem_track_a.scorer import TrackAScorer

        return TrackAScorer(config)

    def score_item(self, request: Mapping[str, Any], backends: Any) -> dict[str, Any]:
        return backends.score_film(request)

    def row(self, item: FilmDir, stored: Any, status: str) -> dict[str, Any]:
        row = {"film_id": item.film_id, "dataset": item.dataset, "status": status}
        return {**row, **stored.score} if status == "scored" else row

    def aggregate(self, rows: list[dict[str, Any]], config: ScorerConfig,
                  outcome: Outcome) -> dict[str, Any]:
        return {
            "benchmark": NAME, "preset": config.preset,
            "official": config.preset == "official" and config.protocol_defaults,
            "protocol_defaults": config.protocol_defaults, "scorer": config.to_dict(),
            "n_films": outcome.n_items, "budget": config.budget,
            **aggregate_rows(rows, list(config.policies), config.budget),
            "missing": {f: outcome.missing_reasons.get(f, "missing") for f in outcome.missing},
            "errors": [list(e) for e in outcome.errors], "execution": dict(outcome.execution),
        }

    def preset_backends(self) -> dict[str, dict[str, str | None]]:
        from vidmem.benchmarks.vmem_track_a.config import PRESETS

        return {p: {f"score: {k}": v for k, v in slots.items()
                    if k.endswith("_embedder") or k == "judge"} for p, slots in PRESETS.items()}

    def protocol(self, config: ScorerConfig) -> dict[str, Any]:
        from vidmem.benchmarks.vmem_track_a.protocol import protocol_block

        return protocol_block(config)

    def run_config(self, dataset: TrackADataset, config: ScorerConfig) -> dict[str, Any]:
        # The root is only where the gold is: item keys hold the gold files' SHA-256s
        # (checked again when scored) and the video's.
        return {"gold_root": InputLocation(dataset.root), "films": [f.film_id for f in dataset.films],
                "scorer": config.to_dict()}

    def seeds(self, config: ScorerConfig) -> dict[str, int]:
        return {"random_policy": config.seed}

    def backend_infos(self, backends: Any) -> dict[str, Any]:
        infos = {"segment_text_embedder": backends.segment_text.info(),
                 "keyframe_embedder": backends.keyframe.info(),
                 "similarity_embedder": backends.similarity.info(),
                 "judge": backends.judge.info()}
        if backends.frame is not None:
            infos["frame_embedder"] = backends.frame.info()
        return infos


def aggregate_rows(rows: list[dict[str, Any]], policies: list[str], budget: int) -> dict[str, Any]:
    """The Track-A table (per dataset folder x policy, at K = ``budget``), overall means,
    the F1-vs-K curves, dropped and unparsable counts and the judge question counts."""
    scored = [r for r in rows if r.get("status") == "scored"]
    table: dict[str, dict[str, Any]] = {}
    overall: dict[str, Any] = {}
    curves: dict[str, dict[str, Any]] = {}
    dropped: dict[str, dict[str, int]] = {}
    unparsable: dict[str, int] = {}
    for policy in policies:
        curves[policy] = {}
        for k in range(1, budget + 1):
            films: dict[str, dict[str, ev.Averages]] = {}
            for r in scored:
                a = r["policies"][policy]["by_budget"][str(k)]
                films.setdefault(r["dataset"], {})[r["film_id"]] = ev.Averages(**a)
            if not films:
                continue
            per_dataset, total = ev.track_means(films)
            curves[policy][str(k)] = {m: getattr(total, m) for m in ("precision", "recall", "f1")}
            if k == budget:
                overall[policy] = asdict(total)
                for dataset, means in per_dataset.items():
                    table.setdefault(dataset, {})[policy] = asdict(means)
        dropped[policy] = {}
        for r in scored:
            for reason, n in r["policies"][policy]["dropped"].items():
                dropped[policy][reason] = dropped[policy].get(reason, 0) + int(n)
        unparsable[policy] = sum(int(r["policies"][policy]["unparsable"]) for r in scored)
    questions = {key: sum(int(r["judge_questions"][key]) for r in scored)
                 for key in ("references", "asked", "same_view_pairs", "naive_reference_judgements")}
    asked = questions["asked"]
    questions["fewer_than_naive"] = (round(questions["naive_reference_judgements"] / asked, 2)
                                     if asked else None)
    return {"table": table, "overall": overall, "f1_vs_budget": curves, "dropped": dropped,
            "unparsable": unparsable, "judge_questions": questions,
            "precision_note": "Precision is undefined for a segment whose selection is empty: "
            "such segments are left out of the Precision mean and counted in "
            "n_precision_undefined; they count as Recall 0 and F1 0 (the reference code drops "
            "them from the F1 mean; vidmem does not)"}


def print_summary(console: Console, summary: Mapping[str, Any], run: RunDir) -> None:
    from rich.table import Table

    def fmt(v: Any) -> str:
        return "-" if v is None else f"{v:.3f}"

    k = summary["budget"]
    table = Table(title=f"VMem-Bench Track-A, all films, K = {k} ({summary['preset']} preset)")
    for col in ("policy", "Prec", "Recall", "F1", "R_V", "R_S", "SelEff", "refs/seg", "dropped"):
        table.add_column(col, justify="left" if col == "policy" else "right")
    for policy, m in summary["overall"].items():
        table.add_row(policy, *(fmt(m[x]) for x in METRICS[:6]), fmt(m["refs_per_segment"]),
                      str(sum(summary["dropped"].get(policy, {}).values())))
    console.print(table)
    q = summary["judge_questions"]
    console.print(f"judge: {q['asked']} reference questions for {q['naive_reference_judgements']} "
                  f"judged references over all policies and budgets, {q['same_view_pairs']} "
                  f"same-view pairs; unparsable answers per policy: {summary['unparsable']}",
                  highlight=False)
    cross = [p for p in CROSS_MODAL if p not in summary["scorer"]["policies"]]
    if summary["preset"] == "offline" and cross and PRESETS["offline"]["frame_embedder"] is None:
        console.print(f"offline preset: {', '.join(sorted(cross))} need a text-image embedder and "
                      "were not run", highlight=False)
