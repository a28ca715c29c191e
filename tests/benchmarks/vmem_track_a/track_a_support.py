"""Shared by the Track-A tests: where the sample gold lies, JSON helpers, and two
test-only benchmarks for the generic ``vidmem stats`` verb (one with corpus statistics,
one without), registered by the CLI test.

The sample (``data/vmem_track_a_sample/``) is an unchanged copy of the release's files
(see its ATTRIBUTION.md): ``spring`` has Chinese gold only; ``caminandes_2_gran_dillama``
has the English variant of its annotations and registry (``gold/variants/en/``) and its
``chunk_index.json`` at ``gold/``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vidmem.benchmarks.contract import Benchmark, CliOption
from vidmem.benchmarks.vmem_track_a.gold import load_gold
from vidmem.benchmarks.vmem_track_a.stats import corpus_stats
from vidmem.benchmarks.vmem_track_a.validate import validate_gold

SAMPLE = Path(__file__).parent / "data" / "vmem_track_a_sample"
BLENDER = SAMPLE / "BlenderOpenMovies"
SPRING = BLENDER / "spring"
CAMINANDES = BLENDER / "caminandes_2_gran_dillama"


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def write(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")


class _GoldOnly(Benchmark):
    """Only the dataset side; nothing here generates or scores."""

    name = "gold_stats_test"
    version = "0"
    title = "Gold stats test"
    item_word = "film"
    root_help = "Track-A gold root."

    def load(self, root):
        return load_gold(root)

    def validate(self, root, **options):
        return validate_gold(root, **options)

    def items(self, dataset):
        return dataset

    def item_id(self, item):
        return item.film_id

    def _none(self, *args, **kwargs):
        raise NotImplementedError("a test-only benchmark: gold only")

    rollouts = find_outputs = scorer_config = config_from_dict = score_items = _none
    load_backends = score_item = row = aggregate = protocol = run_config = _none


class WithStats(_GoldOnly):
    stats_options = (CliOption("lang", ("--lang",), str, "zh", "Gold language: zh or en."),)

    def corpus_stats(self, root, **options):
        return corpus_stats(load_gold(root, options["lang"]))


class WithoutStats(_GoldOnly):
    name = "gold_nostats_test"


BENCHMARK = WithStats()
NO_STATS = WithoutStats()
