"""A benchmark that lives only in the tests: proof that a folder + one registry line is enough.

Dataset: ``items.jsonl`` rows ``{"id": ..., "rgb": [r, g, b]}``. A generator must write
``<id>.mp4`` showing that colour. The score of an item is 1 - (mean absolute channel error
of the video's frames against the row's colour) / 255; the benchmark score is the mean.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vidmem.benchmarks.contract import (
    Benchmark,
    CliOption,
    Problem,
    Rollout,
    RowValidationReport,
    ScoreItem,
)
from vidmem.benchmarks.jsonl_dataset import VideoFolderScan, scan_video_folder
from vidmem.errors import UserInputError
from vidmem.generators.requests import GenerationRequest
from vidmem.io.hashing import file_sha256
from vidmem.io.video import read_frames


class ToyReport(RowValidationReport):
    rows_file = "items.jsonl"
    row_noun = "item"


@dataclass(frozen=True)
class ToyConfig:
    stride: int = 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _read(root: Path) -> tuple[list[dict[str, Any]], list[Problem]]:
    rows, problems = [], []
    path = root / "items.jsonl"
    if not path.is_file():
        return [], [Problem(str(path), "", "items.jsonl not found")]
    for n, line in enumerate(path.read_text().splitlines(), 1):
        obj = json.loads(line)
        rgb = obj.get("rgb")
        if not (isinstance(rgb, list) and len(rgb) == 3 and all(isinstance(v, int) and 0 <= v <= 255 for v in rgb)):
            problems.append(Problem(obj.get("id", f"line {n}"), "rgb", f"expected 3 ints in 0..255, found {rgb!r}", line=n))
        else:
            rows.append(obj)
    return rows, problems


class Toy(Benchmark):
    analyses = {"worst": "toy_analysis", "generating": "toy_generating_analysis"}
    name = "toy"
    version = "1"
    title = "Toy"
    item_word = "item"
    validate_options = ()
    scorer_options = (CliOption("stride", ("--stride",), int, 1, "Score every N-th frame.", min=1),)

    def load(self, root):
        rows, problems = _read(Path(root))
        if problems:
            raise UserInputError(f"{len(problems)} problem(s) in {root}", hint="vidmem validate toy")
        return {"root": Path(root), "rows": rows}

    def validate(self, root, **options):
        rows, problems = _read(Path(root))
        return ToyReport(Path(root), tuple(problems), n_rows=len(rows) + len(problems))

    def items(self, dataset):
        return dataset["rows"]

    def item_id(self, item):
        return item["id"]

    def rollouts(self, dataset, out_dir, **options):
        return [Rollout(GenerationRequest(request_id=r["id"], benchmark=self.name,
                                          prompt=f"a flat colour {r['rgb']}",
                                          out_path=str(Path(out_dir) / f"{r['id']}.mp4"),
                                          duration_seconds=0.5, fps=8, width=32, height=32))
                for r in dataset["rows"]]

    def find_outputs(self, dataset, videos):
        found, missing, reasons, unexpected = scan_video_folder(Path(videos), [r["id"] for r in dataset["rows"]])
        return VideoFolderScan(found, missing, reasons, unexpected, Path(videos))

    def scorer_config(self, stride=1):
        return ToyConfig(stride)

    def config_from_dict(self, data):
        return ToyConfig(**data)

    def score_items(self, dataset, scan, config, run_dir):
        return [ScoreItem(r["id"], {"rgb": r["rgb"], "video": str(scan.found[r["id"]]),
                                    "video_sha256": file_sha256(scan.found[r["id"]]),
                                    "scorer": config.to_dict()}, unkeyed=("video",))
                for r in dataset["rows"] if r["id"] in scan.found]

    def load_backends(self, config):
        return config  # no models

    def score_item(self, request, backends):
        from vidmem.io.video import probe

        n = probe(request["video"]).n_frames
        if n < 2:
            raise ValueError(f"{request['video']} has {n} frame(s); the toy needs at least 2")
        frames = read_frames(request["video"], list(range(0, n, backends.stride)))
        err = float(np.abs(frames.astype(float) - np.asarray(request["rgb"], float)).mean())
        return {"response": {"mean_abs_error": err}, "score": {"score": 1.0 - err / 255.0}}

    def row(self, item, stored, status):
        return {"id": item["id"], "status": status, "score": stored.score["score"] if stored and status == "scored" else None}

    def aggregate(self, rows, config, outcome):
        scored = [r["score"] for r in rows if r["score"] is not None]
        return {"benchmark": self.name, "mean": float(np.mean(scored)) if scored else None,
                "n_items": outcome.n_items, "errors": [list(e) for e in outcome.errors]}

    def protocol(self, config):
        return {"item_score": "1 - mean |frame - rgb| / 255 over every stride-th frame", "stride": config.stride}

    def run_config(self, dataset, config):
        return {"dataset_root": str(dataset["root"]), "scorer": config.to_dict()}

    def print_summary(self, console, summary: Mapping[str, Any], run):
        console.print(f"toy mean {summary['mean']:.4f} over {summary['n_items']} items")

    def report(self, run):
        from vidmem.report import Report, Table

        rep = Report("toy", "the toy benchmark")
        rep.section("scores").add(Table(["id", "score"], [[r["id"], r["score"]] for r in run.scores()]))
        return rep


BENCHMARK = Toy()
