"""Real generation requests of the sim world, one per kind, for docs/generators.md.

Builds one small sim dataset per generating benchmark in a temporary folder, asks each
benchmark for its requests exactly as ``vidmem requests`` / ``vidmem run`` do (the
closed loops of Track-B and MIST with the sim generator, recording what each call
received) and prints the Markdown of the examples section of docs/generators.md. Paths
are written relative to the temporary folder (``SIM-...`` datasets, ``gen/`` for the
open-loop outputs, ``RUN/rollouts`` for the closed loops); a memory-loop camera path
keeps its first three rows.

    python docs/generator_requests.py            # print the section
    python docs/generator_requests.py --write     # replace it in docs/generators.md

``tests/test_generators_doc.py`` checks that the page's section is what this prints.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

DOC = Path(__file__).with_name("generators.md")
BEGIN = "<!-- generator-requests:begin (python docs/generator_requests.py --write) -->"
END = "<!-- generator-requests:end -->"
#: Track-B segments recorded: segment 1 (no earlier clip, so no references) to 3.
TRACK_B_SEGMENTS = 3


class _Enough(Exception):
    """Stops a closed loop once the requests wanted are recorded."""


class _Recorder:
    """The sim generator, keeping every request it is given (plain data)."""

    name = "sim"

    def __init__(self, stop_after: int | None = None) -> None:
        from vidmem.generators.sim import SimGenerator

        self.inner = SimGenerator(memory="perfect")
        self.requests: list[dict[str, Any]] = []
        self.stop_after = stop_after

    def info(self) -> dict[str, Any]:
        return self.inner.info()

    def generate(self, request: Any) -> Any:
        if self.stop_after is not None and len(self.requests) >= self.stop_after:
            raise _Enough
        self.requests.append(request.to_dict())
        return self.inner.generate(request)


def _relative(value: Any, root: str) -> Any:
    if isinstance(value, str):
        return value.replace(root + "/", "")
    if isinstance(value, list):
        return [_relative(v, root) for v in value]
    if isinstance(value, dict):
        return {k: _relative(v, root) for k, v in value.items()}
    return value


def collect(work: Path) -> dict[str, list[dict[str, Any]]]:
    """``{title: [request dict, ...]}`` of real requests, paths relative to ``work``."""
    from vidmem.benchmarks.mist.config import MistConfig
    from vidmem.benchmarks.vmem_track_b.config import ScorerConfig
    from vidmem.registry import BENCHMARKS
    from vidmem.runners.sim_build import build

    found: dict[str, list[dict[str, Any]]] = {}
    for name, title in (("cmbench", "CMBench"), ("memory_loop", "Memory loop")):
        bench = BENCHMARKS.load(name)
        build(name, work / f"SIM-{name}", seed=0, n_cases=1)
        rollout = bench.rollouts(bench.load(work / f"SIM-{name}"), work / "gen")[0]
        found[title] = [rollout.request.to_dict()]

    bench = BENCHMARKS.load("vmem_track_b")
    build("vmem_track_b", work / "SIM-trackB", seed=0, n_cases=1)
    config = ScorerConfig(preset="offline", conditions=("seg_uniform",))
    rollout = bench.rollouts(bench.load(work / "SIM-trackB"), work / "RUN" / "rollouts",
                             config)[0]
    recorder = _Recorder(stop_after=TRACK_B_SEGMENTS)
    with contextlib.suppress(_Enough):  # the loop stops once the segments wanted are seen
        bench.run_rollout(rollout, recorder, {"generator_key": "docs"})
    found["VMem-Bench Track-B (condition seg_uniform)"] = recorder.requests

    bench = BENCHMARKS.load("mist")
    build("mist", work / "SIM-mist", seed=0, n_cases=1)
    rollout = bench.rollouts(bench.load(work / "SIM-mist"), work / "RUN" / "rollouts",
                             MistConfig(arms=("baseline",)))[0]
    recorder = _Recorder()
    bench.run_rollout(rollout, recorder, {"generator_key": "docs"})
    found["MIST (arm baseline)"] = recorder.requests

    for requests in found.values():
        for req in requests:
            path = req.get("extras", {}).get("camera_path")
            if path:
                n = len(path["offsets"])
                path["offsets"] = [*path["offsets"][:3], f"... {n - 3} more rows"]
    return {k: _relative(v, str(work)) for k, v in found.items()}


def section(found: dict[str, list[dict[str, Any]]]) -> str:
    """The Markdown between the page's markers."""
    parts = [BEGIN, ""]
    for title, requests in found.items():
        parts += [f"### {title}", ""]
        for req in requests:
            parts += ["```json", json.dumps(req, indent=2, sort_keys=True, ensure_ascii=False), "```", ""]
    parts.append(END)
    return "\n".join(parts)


def current_section(doc: str) -> str:
    """The page's section as it stands (markers included)."""
    start, end = doc.index(BEGIN), doc.index(END) + len(END)
    return doc[start:end]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="replace the section in the page")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        text = section(collect(Path(tmp).resolve()))
    if args.write:
        doc = DOC.read_text(encoding="utf-8")
        DOC.write_text(doc.replace(current_section(doc), text), encoding="utf-8")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
