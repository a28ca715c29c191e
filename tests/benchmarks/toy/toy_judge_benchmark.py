"""The toy benchmark scored by a VLM judge: proof that a judge-asking benchmark gets the
answer cache, schema-constrained answers and ``vidmem judge-agreement`` from the runner.

Each item's first and last frames are shown to ``judge/openai`` with the versioned
prompt ``prompts/colour.toml``; the score is 1 - (mean absolute error of the judged
colours against the row's colour) / 255.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from toy_benchmark import Toy

from vidmem.benchmarks.contract import CliOption
from vidmem.benchmarks.prompts import load_prompt
from vidmem.io.video import probe, read_frames
from vidmem.registry import BACKENDS

HERE = Path(__file__).parent


class ColourAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rgb: list[int] = Field(min_length=3, max_length=3)


@dataclass(frozen=True)
class ToyJudgeConfig:
    judge_url: str
    judge_model: str = "colour-vlm"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ToyJudge(Toy):
    name = "toy_judge"
    title = "Toy judged"
    asks_judge = True
    scorer_options = (
        CliOption("judge_url", ("--judge-url",), str, None, "The judge server."),
        CliOption("judge_model", ("--judge-model",), str, "colour-vlm", "The served model."),
    )

    @property
    def prompt(self):
        return load_prompt(HERE, "colour")

    def scorer_config(self, judge_url=None, judge_model="colour-vlm"):
        return ToyJudgeConfig(judge_url, judge_model)

    def config_from_dict(self, data):
        return ToyJudgeConfig(**data)

    def load_backends(self, config):
        judge = BACKENDS.load("judge/openai")(base_url=config.judge_url, model=config.judge_model,
                                              timeout_seconds=5, max_retries=0)
        return {"judge": judge}

    def backend_infos(self, backends):
        return {"judge": backends["judge"].info().to_dict()}

    def score_item(self, request, backends):
        video = request["video"]
        n = probe(video).n_frames
        frames = read_frames(video, [0, n - 1])
        item = Path(video).stem
        asks = [self.prompt.request(f"{item}/frame-{k}", [f], frame=k)
                for k, f in zip((0, n - 1), frames, strict=True)]
        results = backends["judge"].judge_many(asks)
        bad = [r for r in results if r.status != "ok"]
        if bad:
            raise ValueError(f"judge {bad[0].status} for {bad[0].item_id}: {bad[0].error}")
        err = float(np.mean([np.abs(np.asarray(r.data["rgb"], float) - request["rgb"]).mean()
                             for r in results]))
        return {"response": {"answers": [r.data for r in results]},
                "score": {"score": 1.0 - err / 255.0}}

    def protocol(self, config):
        return {"judge_prompts": {"colour": self.prompt.describe()}}


BENCHMARK = ToyJudge()
