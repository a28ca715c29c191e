"""Running a generator over a benchmark's requests, resumably.

Each request is one stored item keyed by the request, the generator's name, options and
``info()`` (so a new generator version regenerates) and the input files' hashes. A
finished item whose video has since disappeared is generated again instead of being
trusted from the store.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from rich.console import Console

from vidmem.generators.requests import GenerationRequest
from vidmem.io.hashing import file_sha256
from vidmem.runners.execute import ExecutionSummary, ExecutorSpec, WorkItem, execute
from vidmem.runners.item_store import ItemStore


@cache
def _generator(spec: str, options_json: str) -> Any:
    from vidmem.generators.loading import load_generator

    return load_generator(spec, json.loads(options_json))


def generator_info(spec: str, options: dict[str, Any]) -> dict[str, Any]:
    return _generator(spec, json.dumps(options, sort_keys=True)).info()


def generate_item(item: WorkItem) -> dict[str, Any]:
    """Run one generation request (picklable for worker processes)."""
    req = item.request
    gen = _generator(req["generator"], json.dumps(req["generator_options"], sort_keys=True))
    result = gen.generate(GenerationRequest.from_dict(req["generation"]))
    if result.status != "ok":
        raise RuntimeError(result.error or f"generation of {item.item_id} failed")
    # What the generator wrote, so that a file changed after generation is noticed.
    written = {"video_sha256": file_sha256(req["generation"]["out_path"])}
    return {"response": {**result.to_dict(), **written}, "score": None}


def make_item(request: GenerationRequest, generator: str, options: dict[str, Any],
              inputs: dict[str, str]) -> WorkItem:
    """A generation item; ``inputs`` holds the input files' hashes."""
    # Paths stay data, out of the key: the inputs' hashes stand for their content, and the
    # output is checked on disk (a run directory moved elsewhere is still served).
    return WorkItem.make(request.request_id, "generate", {
        "generation": request.to_dict(), "generator": generator, "generator_options": options,
        "generator_info": generator_info(generator, options), **inputs,
    }, unkeyed=("generation.out_path", "generation.context_video", "generation.start_image"))


def run_generation(store: ItemStore, items: list[WorkItem], *, workers: int = 1,
                   quiet: bool = False, executor: ExecutorSpec | None = None) -> ExecutionSummary:
    """Generate every item not yet done; redo those whose video is gone or was changed.

    A finished item is trusted only while its video is the file the generator wrote (the
    stored SHA-256); a deleted or edited video is generated again and said so on stderr.
    Partial files a killed writer left in the output folders are removed first.
    """
    _remove_partials({Path(it.request["generation"]["out_path"]).parent for it in items})
    redo: list[str] = []
    for item in items:
        stored = store.get(item.key)
        if stored is None or stored.status != "done":
            continue
        out = Path(item.request["generation"]["out_path"])
        wrote = (stored.response or {}).get("video_sha256")
        if not out.is_file():
            why = f"{out} was deleted after it was generated; generating again"
        elif wrote is not None and file_sha256(out) != wrote:
            why = f"{out} changed after it was generated (SHA-256 differs); generating again"
        else:
            continue
        redo.append(f"{item.item_id}: {why}")
        store.put(item.key, item_id=item.item_id, kind=item.kind, request=item.request,
                  status="error", error=why)
    if redo:
        Console(stderr=True).print("[yellow]regenerating:[/yellow] " + "; ".join(redo[:5])
                                   + (f" (and {len(redo) - 5} more)" if len(redo) > 5 else ""),
                                   highlight=False)
    return execute(store, items, generate_item, workers=workers, progress=not quiet, quiet=quiet,
                   executor=executor)


def _remove_partials(folders: set[Path]) -> None:
    """Delete ``.<name>.partial-*`` files (see :func:`vidmem.io.video.write_video`)."""
    for folder in folders:
        if folder.is_dir():
            for partial in folder.glob(".*.partial-*"):
                partial.unlink(missing_ok=True)


# ----------------------------------------------------------------------------- rollouts
# A benchmark with ``run_rollout`` (see vidmem.benchmarks.contract.Benchmark) runs a
# rollout as many requests (Track-B: one per segment, in order); the runner stores one
# item per rollout and lets the benchmark resume inside it.


class StoredRollout(NamedTuple):
    """A rollout back from its stored item: the contract's ``Rollout`` fields (the runner
    sits below the contract, so it rebuilds the record without importing it)."""

    request: GenerationRequest
    inputs: dict[str, str]


def generator_key(generator: str, options: dict[str, Any]) -> str:
    """The generator's identity (name, options, ``info()``) as one JSON string."""
    return json.dumps({"generator": generator, "options": options,
                       "info": generator_info(generator, options)}, sort_keys=True, default=str)


def make_rollout_item(rollout: Any, generator: str, options: dict[str, Any]) -> WorkItem:
    """A multi-request rollout item; the gold root and out path are data, not key."""
    request = rollout.request
    return WorkItem.make(request.request_id, "generate", {
        "generation": request.to_dict(), "generator": generator, "generator_options": options,
        "generator_info": generator_info(generator, options), "rollout": True,
        "inputs": dict(rollout.inputs),
    }, unkeyed=("generation.out_path", "generation.extras.gold_root"))


def rollout_work(bench: Any, item: WorkItem, judge_cache: str | None = None) -> dict[str, Any]:
    """Run one rollout with the benchmark's ``run_rollout`` (picklable with ``partial``).

    ``judge_cache`` (the run's judge answer cache file, or ``None``) reaches the rollout as
    ``ctx["judge_cache"]``, outside the item's key: a cache only saves questions, so a
    run resumed with another cache, or none, resumes the same items.
    """
    req = item.request
    gen = _generator(req["generator"], json.dumps(req["generator_options"], sort_keys=True))
    rollout = StoredRollout(GenerationRequest.from_dict(req["generation"]), dict(req["inputs"]))
    ctx = {"generator_key": generator_key(req["generator"], req["generator_options"])}
    if judge_cache is not None:
        ctx["judge_cache"] = judge_cache
    summary = bench.run_rollout(rollout, gen, ctx)
    return {"response": summary, "score": None}


def _rollout_changed(item: WorkItem, stored: Any) -> str | None:
    folder = Path(item.request["generation"]["out_path"]).parent
    clips = (stored.response or {}).get("clips") if isinstance(stored.response, dict) else None
    for name, sha in (clips or {}).items():
        path = folder / f"{name}.mp4" if not str(name).endswith(".mp4") else folder / name
        if not path.is_file():
            return f"{path} was deleted after it was generated; resuming the rollout"
        if file_sha256(path) != sha:
            return f"{path} changed after it was generated (SHA-256 differs); resuming the rollout"
    return None


def run_rollouts(store: ItemStore, items: list[WorkItem], bench: Any, *, workers: int = 1,
                 quiet: bool = False, executor: ExecutorSpec | None = None,
                 judge_cache: str | None = None) -> ExecutionSummary:
    """Run every rollout not yet done; rerun those with a clip deleted or changed since
    (the benchmark's ``run_rollout`` then resumes at the first unfinished clip).
    ``judge_cache``: see :func:`rollout_work`."""
    from functools import partial

    _remove_partials({Path(it.request["generation"]["out_path"]).parent for it in items})
    redo: list[str] = []
    for item in items:
        stored = store.get(item.key)
        if stored is None or stored.status != "done":
            continue
        why = _rollout_changed(item, stored)
        if why is None:
            continue
        redo.append(f"{item.item_id}: {why}")
        store.put(item.key, item_id=item.item_id, kind=item.kind, request=item.request,
                  status="error", error=why)
    if redo and not quiet:
        Console(stderr=True).print("[yellow]regenerating:[/yellow] " + "; ".join(redo[:5])
                                   + (f" (and {len(redo) - 5} more)" if len(redo) > 5 else ""),
                                   highlight=False)
    return execute(store, items, partial(rollout_work, bench, judge_cache=judge_cache),
                   workers=workers, progress=not quiet, quiet=quiet, executor=executor)
