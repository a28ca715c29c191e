"""MIST as a :class:`~vidmem.benchmarks.contract.Benchmark`: one case, one item.

``vidmem run mist --root CARDS --generator NAME`` generates every case (:mod:`.generation`:
the locked setup and gap shots once, then each arm's reveal tries; M3-Agent for the
rewrite arms), into ``RUN/rollouts/<case>/...``, then scores them; ``vidmem score mist
--root CARDS --rollouts DIR`` scores clips brought in the same layout (:mod:`.scorer`).
A case is one stored score item keyed by its card, every clip's hash and the
configuration, so a killed run resumes case by case and the judge answer cache keeps
every answer across runs. ``vidmem audit mist --root CARDS`` lists the prompt-channel
audit (:meth:`Mist.audit`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from vidmem.benchmarks.contract import Benchmark, Outcome, Rollout, ScoreItem
from vidmem.benchmarks.jsonl_dataset import VideoFolderScan
from vidmem.benchmarks.mist import cli
from vidmem.benchmarks.mist.config import AGENT_ARMS, MistConfig
from vidmem.benchmarks.mist.schema import ARMS, Card
from vidmem.errors import UserInputError
from vidmem.io.hashing import file_sha256
from vidmem.runners.manifest import InputLocation
from vidmem.runners.store import RunDir

NAME = "mist"
VERSION = "0.1"


@dataclass(frozen=True)
class MistDataset:
    """A card root and its validated cards (in file order)."""

    root: Path
    cards: tuple[Card, ...]


class CaseRollouts(VideoFolderScan):
    """Which cases have a ``<rollouts>/<case>/`` folder (``found``: case -> folder)."""

    missing_what = "case rollout folder(s)"
    missing_hint = ("write <rollouts>/<case_id>/locked/{setup,gap}.mp4 and "
                    "<rollouts>/<case_id>/<arm>/try_<k>.mp4 for every case, or pass "
                    "--allow-missing to score the cases that have a folder")
    folder_noun = "rollouts"
    id_noun = "case"


class Mist(Benchmark):
    name = NAME
    version = VERSION
    title = "MIST"
    item_word = "case"
    outputs_word = "rollouts"
    outputs_flag = "--rollouts"
    generates = True
    asks_judge = True
    root_help = ("MIST card root: a folder of case cards (cases.jsonl, *.json or *.yaml; "
                 "`vidmem sim build mist` writes one).")
    videos_help = ("Rollouts folder: <case_id>/locked/{setup,gap}.mp4 and <case_id>/<arm>/"
                   "try_<k>.mp4 (baseline: try_0; other arms up to K tries).")
    allow_missing_help = ("Score the cases that have a rollouts folder; list the others as "
                          "missing. Whole cases only: a case folder must hold every clip.")
    scorer_options = cli.SCORER_OPTIONS
    summary_printer = "vidmem.benchmarks.mist.benchmark:print_summary"
    report_builder = "vidmem.benchmarks.mist.report:build_mist_report"
    sim_builder = "vidmem.benchmarks.mist.sim_build:build_mist"
    demo_module = "vidmem.benchmarks.mist.demo"

    # ------------------------------------------------------------------ dataset

    def load(self, root: str | Path) -> MistDataset:
        from vidmem.benchmarks.mist.cards import load_cards

        return MistDataset(Path(root), tuple(load_cards(root)))

    def validate(self, root: str | Path) -> Any:
        from vidmem.benchmarks.mist.cards import validate_cards

        return validate_cards(root)

    def validation_summary(self, report: Any) -> str:
        return f"no problems found ({report.n_rows} card(s))"

    def corpus_stats(self, root: str | Path) -> dict[str, Any]:
        from vidmem.benchmarks.mist.audit import audit_cards

        cards = self.load(root).cards
        audit = audit_cards(cards)
        return {
            "cases": len(cards),
            "families": dict(sorted(Counter(c.family for c in cards).items())),
            "arm_prompts": {a: sum(a in c.arm_prompts() for c in cards) for a in ARMS},
            "task_records": sum(c.task_record is not None for c in cards),
            "audit": {"ok": audit.ok, "leaks": sum(len(c.leaks) for c in audit.cards)},
        }

    def items(self, dataset: MistDataset) -> list[Card]:
        return list(dataset.cards)

    def item_id(self, item: Card) -> str:
        return item.case_id

    # ------------------------------------------------------------------ audit

    def audit(self, root: str | Path) -> Any:
        """The prompt-channel audit of every card under ``root`` (``vidmem audit``)."""
        from vidmem.benchmarks.mist.audit import audit_cards

        return audit_cards(self.load(root).cards)

    def print_audit(self, console: Console, audit: Any) -> None:
        from vidmem.benchmarks.mist.report import print_audit

        print_audit(console, audit)

    # ------------------------------------------------------------------ rollouts

    def rollouts(self, dataset: MistDataset, out_dir: Path, config: MistConfig | None = None,
                 **options: Any) -> list[Rollout]:
        """One rollout per case (:func:`.generation.make_rollouts`)."""
        from vidmem.benchmarks.mist.generation import make_rollouts

        return make_rollouts(dataset.cards, out_dir, config or MistConfig(), benchmark=NAME,
                             version=VERSION)

    def run_rollout(self, rollout: Rollout, generator: Any,  # type: ignore[override]
                    ctx: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Generate one case (:func:`.generation.run_rollout`)."""
        from vidmem.benchmarks.mist.generation import run_rollout

        return run_rollout(rollout, generator, ctx)

    def find_outputs(self, dataset: MistDataset, videos: str | Path) -> CaseRollouts:
        folder = Path(videos)
        if not folder.is_dir():
            raise UserInputError(f"{folder}: rollouts folder not found",
                                 hint="pass the folder holding <case_id>/locked/ and "
                                 "<case_id>/<arm>/try_<k>.mp4")
        found, missing, reasons = {}, [], {}
        for card in dataset.cards:
            path = folder / card.case_id
            if path.is_dir():
                found[card.case_id] = path
            else:
                missing.append(card.case_id)
                reasons[card.case_id] = f"{path} is not a folder"
        return CaseRollouts(found, missing, reasons, [], folder)

    # ------------------------------------------------------------------ scoring

    def scorer_config(self, **options: Any) -> MistConfig:
        return cli.scorer_config(**options)

    def config_from_dict(self, data: Mapping[str, Any]) -> MistConfig:
        return MistConfig.from_dict(data)

    def score_items(self, dataset: MistDataset, scan: Any, config: MistConfig,
                    run_dir: Path, **requests: Any) -> list[ScoreItem]:
        from vidmem.benchmarks.mist.scorer import case_clips

        items = []
        for card in dataset.cards:
            folder = scan.found.get(card.case_id)
            if folder is None:
                continue
            clips = case_clips(folder, card, config)
            items.append(ScoreItem(card.case_id, {
                "card": card.model_dump(mode="json", by_alias=True, exclude_none=True),
                "locked": {s: str(p) for s, p in clips["locked"].items()},
                "locked_sha256": {s: file_sha256(p) for s, p in clips["locked"].items()},
                "arms": {a: [str(p) for p in ps] for a, ps in clips["arms"].items()},
                "arms_sha256": {a: [file_sha256(p) for p in ps]
                                for a, ps in clips["arms"].items()},
                "agent_runs": {a: str(p) for a, p in clips["agent_runs"].items()},
                "agent_runs_sha256": {a: file_sha256(p)
                                      for a, p in clips["agent_runs"].items()},
                "scorer": config.to_dict(), "version": VERSION,
            }, unkeyed=("locked", "arms", "agent_runs")))
        return items

    def load_backends(self, config: MistConfig) -> Any:
        from vidmem.benchmarks.mist.scorer import MistScorer

        return MistScorer(config)

    def score_item(self, request: Mapping[str, Any], backends: Any) -> dict[str, Any]:
        return backends.score_case(request)

    def row(self, item: Card, stored: Any, status: str) -> dict[str, Any]:
        row = {"case_id": item.case_id, "family": item.family, "status": status}
        return {**row, **stored.score} if status == "scored" else row

    def aggregate(self, rows: list[dict[str, Any]], config: MistConfig,
                  outcome: Outcome) -> dict[str, Any]:
        from vidmem.benchmarks.mist.aggregate import aggregate_rows

        return {
            "benchmark": NAME, "preset": config.preset,
            "official": config.preset == "official" and config.protocol_defaults,
            "protocol_defaults": config.protocol_defaults, "scorer": config.to_dict(),
            "n_cases": outcome.n_items, **aggregate_rows(rows, config),
            "missing": {c: outcome.missing_reasons.get(c, "missing") for c in outcome.missing},
            "errors": [list(e) for e in outcome.errors], "execution": dict(outcome.execution),
        }

    def preset_backends(self) -> dict[str, dict[str, str | None]]:
        from vidmem.benchmarks.mist.config import PRESETS

        return {p: {f"score and run: {k}": v for k, v in slots.items()} for p, slots in PRESETS.items()}

    def protocol(self, config: MistConfig) -> dict[str, Any]:
        from vidmem.benchmarks.mist.protocol import protocol_block

        return protocol_block(config)

    def run_config(self, dataset: MistDataset, config: MistConfig) -> dict[str, Any]:
        # The root is only where the cards are: each item key holds its card and clip hashes.
        return {"card_root": InputLocation(dataset.root), "cases": [c.case_id for c in dataset.cards],
                "scorer": config.to_dict()}

    def seeds(self, config: MistConfig) -> dict[str, int]:
        return {"generation": config.seed, "bootstrap": config.bootstrap_seed}

    def backend_infos(self, backends: Any) -> dict[str, Any]:
        return {"judge": backends.judge.info()}


def _f(v: Any) -> str:
    return "-" if v is None else f"{v:.3f}"


def _d(d: Mapping[str, Any] | None) -> str:
    if not d or d["bootstrap"]["mean_diff"] is None:
        return "-"
    b = d["bootstrap"]
    ci = "" if b["ci_low"] is None else f" [{b['ci_low']:+.2f}, {b['ci_high']:+.2f}]"
    return f"{b['mean_diff']:+.2f}{ci}"


def print_summary(console: Console, summary: Mapping[str, Any], run: RunDir) -> None:
    from rich.table import Table

    table = Table(title=f"MIST, {summary['n_cases_scored']} cases, K = {summary['k']} "
                  f"({summary['preset']} preset{'' if summary['official'] else ', non-official'})")
    for col in ("arm", "setup", "leak", "reveal", "inside", "N/W/C", "reveal*", "inside*",
                "d reveal*"):
        table.add_column(col, justify="left" if col == "arm" else "right")
    for arm in summary["arms"]:
        a = summary["arm"][arm]
        f, b = a["first"], a["best"]
        lab = f["labels"]
        table.add_row(arm + (" (M3)" if arm in AGENT_ARMS else ""), _f(f["setup"]),
                      _f(f["leak"]), _f(f["reveal"]), _f(f["inside"]),
                      f"{lab['never_open']}/{lab['open_but_wrong']}/{lab['correct']}",
                      _f(b["reveal"]), _f(b["inside"]),
                      _d((summary["deltas"].get(arm) or {}).get("best", {}).get("reveal")))
    console.print(table)
    console.print("setup..inside and N/W/C (never open / open but wrong / correct): one clip "
                  "per case; * keep-best over K tries with the original eligible, chosen by "
                  "the reporting judge: an oracle estimate; d = minus the baseline, paired "
                  f"case bootstrap ({summary['scorer']['n_resamples']} draws, 95% CI)",
                  highlight=False)
