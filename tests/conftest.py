"""Test-wide settings: never touch the network, never write to the user's caches."""

from __future__ import annotations

import os

# Set before any test imports transformers/huggingface_hub: no test may download.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("MPLBACKEND", "Agg")

import json  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import cv2  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from vidmem.generators.protocol import GenerationRequest, GenerationResult  # noqa: E402
from vidmem.sim.build import build  # noqa: E402
from vidmem.sim.generator import SimGenerator  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Point vidmem's content-hash cache at a per-session temp dir."""
    monkeypatch.setenv("VIDMEM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "vidmem-cache"))


# -- shared sim builds (built once per session: they take seconds) -----------------------


@pytest.fixture(scope="session")
def cmbench_root(tmp_path_factory) -> Path:
    """A CMBench build with 2 context videos (4 tasks), seed 0."""
    root = tmp_path_factory.mktemp("sim_cmbench")
    build("cmbench", root, seed=0, n_cases=2)
    return root


@pytest.fixture(scope="session")
def cmbench_rows(cmbench_root) -> list[dict[str, Any]]:
    lines = (cmbench_root / "metadata.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture(scope="session")
def cmbench_truth(cmbench_root) -> Callable[[str], dict[str, Any]]:
    def load(video_id: str) -> dict[str, Any]:
        return json.loads((cmbench_root / "_truth" / f"{video_id}.json").read_text("utf-8"))

    return load


@pytest.fixture(scope="session")
def loop_root(tmp_path_factory) -> Path:
    """A memory-loop build with 1 start image (6 cases), seed 0."""
    root = tmp_path_factory.mktemp("sim_loops")
    build("memory_loop", root, seed=0, n_cases=1)
    return root


@pytest.fixture(scope="session")
def continuation(cmbench_root, cmbench_rows, tmp_path_factory) -> Callable[..., GenerationResult]:
    """Generate (once per arguments) the continuation of a CMBench task."""
    out_dir = tmp_path_factory.mktemp("sim_continuations")
    cache: dict[tuple[Any, ...], GenerationResult] = {}

    def run(task_type: str, memory: str, *, video: int = 0, seed: int = 0,
            duration: float | None = None, tag: str = "") -> GenerationResult:
        key = (task_type, memory, video, seed, duration, tag)
        if key not in cache:
            row = [r for r in cmbench_rows if r["task_type"] == task_type][video]
            req = GenerationRequest(
                request_id=row["task_id"], benchmark="cmbench", prompt=row["continue_prompt"],
                out_path=str(out_dir / f"{row['task_id']}_{memory}_{seed}_{duration}{tag}.mp4"),
                context_video=str(cmbench_root / row["video"]), duration_seconds=duration)
            cache[key] = SimGenerator(memory=memory, seed=seed).generate(req)
        return cache[key]

    return run


def colour_hist(img: np.ndarray) -> np.ndarray:
    """L2-normalised 12 x 4 x 4 HSV histogram of an RGB uint8 image."""
    hsv = cv2.cvtColor(np.ascontiguousarray(img), cv2.COLOR_RGB2HSV)
    h = cv2.calcHist([hsv], [0, 1, 2], None, [12, 4, 4], [0, 180, 0, 256, 0, 256]).ravel()
    return h / max(float(np.linalg.norm(h)), 1e-12)


@pytest.fixture(scope="session")
def hist_cosine() -> Callable[[np.ndarray, np.ndarray], float]:
    return lambda a, b: float(colour_hist(a) @ colour_hist(b))
