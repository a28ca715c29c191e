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
from typing import Any

from vidmem.generators.requests import GenerationRequest
from vidmem.runners.execute import ExecutionSummary, WorkItem, execute
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
    return {"response": result.to_dict(), "score": None}


def make_item(request: GenerationRequest, generator: str, options: dict[str, Any],
              inputs: dict[str, str]) -> WorkItem:
    """A generation item; ``inputs`` holds the input files' hashes."""
    return WorkItem.make(request.request_id, "generate", {
        "generation": request.to_dict(), "generator": generator, "generator_options": options,
        "generator_info": generator_info(generator, options), **inputs,
    })


def run_generation(store: ItemStore, items: list[WorkItem], *, workers: int = 1,
                   quiet: bool = False) -> ExecutionSummary:
    """Generate every item not yet done whose video exists; redo those whose video is gone."""
    for item in items:
        stored = store.get(item.key)
        out = Path(item.request["generation"]["out_path"])
        if stored is not None and stored.status == "done" and not out.is_file():
            store.put(item.key, item_id=item.item_id, kind=item.kind, request=item.request,
                      status="error", error=f"{out} was deleted after it was generated; generating again")
    return execute(store, items, generate_item, workers=workers, progress=not quiet, quiet=quiet)
